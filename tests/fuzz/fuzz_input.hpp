// The session fuzzer's game: the demo game plus a player input type, so that Input frames
// reach the server's input path (docs/PROTOCOL.md, "Protocol 4").
#pragma once

#include "ecsnet/demo/game.hpp"
#include "ecsnet/protocol/registry.hpp"
#include "ecsnet/server/game.hpp"
#include "fuzz_input_generated.h"

namespace ecsnet::fuzz {

struct Pad {
    float x{};
    float y{};
    bool fire{};
};

}  // namespace ecsnet::fuzz

template <>
struct ecsnet::protocol::replicated<ecsnet::fuzz::Pad>
    : replicate<ecsnet::fuzz_input::wire::Pad, "pad",
                replicate_options{.quantized = {.min = -1.0, .max = 1.0, .step = 1.0 / 32.0},
                                  .input = true}> {};

namespace ecsnet::fuzz {

[[nodiscard]] inline server::game fuzz_game() {
    server::game g = demo::game();
    g.register_components = [demo = g.register_components](protocol::component_registry& types) {
        demo(types);
        types.add<Pad>();
    };
    return g;
}

// The same types without a server (the corpus writer).
[[nodiscard]] inline protocol::component_registry fuzz_types() {
    protocol::component_registry types;
    fuzz_game().register_components(types);
    return types;
}

}  // namespace ecsnet::fuzz
