// The arena's prediction module (ecsnet_add_prediction_module): what arena::predict declares,
// for the browser. The page passes "size=<the server's --arena-size>" (the walls).
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "ecsnet/arena/predicted.hpp"
#include "ecsnet/client/prediction_module.h"

void ecsnet::client::declare_prediction(prediction& p, std::string_view config) {
    float size = arena::default_arena_size;
    if (!config.empty()) {
        constexpr std::string_view key = "size=";
        const std::string text{config};  // strtof: libc++ 14 has no from_chars for floats
        char* end = nullptr;
        const float parsed = text.starts_with(key) ? std::strtof(text.c_str() + key.size(), &end) : 0.0F;
        if (end != text.c_str() + text.size() || !(parsed > 0)) {
            throw std::invalid_argument("the arena's prediction config is \"size=<the arena's side>\", not \"" +
                                        std::string{config} + "\"");
        }
        size = parsed;
    }
    arena::predict(p, size);
}
