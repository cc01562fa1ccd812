// client_probe_server: a game of the test folder alone, so that the stock ecsnet-client shows
// components it was never compiled with. One entity, the server's: probe {level -7, ratio
// 0.1, lit true, heat 1.1}, value {count 2^64 - 1} and label "probe \"one\"".
#include <cstdint>
#include <limits>
#include <string>

#include "ecsnet/server/run.hpp"
#include "ecsnet/server/server.hpp"
#include "probe_generated.h"  // flatc, from probe.fbs

namespace protocol = ecsnet::protocol;

struct Probe {
    std::int16_t level;
    double ratio;
    bool lit;
    float heat;
};
struct Tally {
    std::uint64_t count;
};
struct Label {
    std::string text;
};

template <>
struct protocol::replicated<Probe> : protocol::replicate<probe::wire::Probe, "probe"> {};
template <>
struct protocol::replicated<Tally> : protocol::replicate<probe::wire::Tally, "value"> {};
template <>
struct protocol::replicated<Label>
    : protocol::replicate<protocol::string_value, "label",
                          protocol::replicate_options{.max_bytes = 32}> {};

int main(int argc, char** argv) {
    ecsnet::server::game game;
    game.name = "probe";
    game.register_components = [](protocol::component_registry& types) {
        types.add<Probe>();
        types.add<Tally>();
        types.add<Label>();
    };
    game.setup = [](ecsnet::server::server& service) {
        auto& world = service.world();
        const auto e = world.create();
        world.emplace<Probe>(e, std::int16_t{-7}, 0.1, true, 1.1F);
        world.emplace<Tally>(e, std::numeric_limits<std::uint64_t>::max());
        world.emplace<Label>(e, std::string{"probe \"one\""});
    };
    return ecsnet::server::run(argc, argv, game);
}
