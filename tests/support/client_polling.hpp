// Clients in a test: a player joining a server on 127.0.0.1 (ecsnet::client::connection);
// several of them driven from one test thread, each polled in turn until a condition holds,
// bounded in time; and the entities a mirror holds.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ecsnet/client/connection.hpp"
#include "ecsnet/ecs/entity.hpp"
#include "ecsnet/protocol/mirror.hpp"

namespace ecsnet::test {

// A player `name` joining 127.0.0.1:`port`, with a timeout sanitized builds meet; a test adds
// its credential, transport or resume key.
inline client::connect_options join_options(std::uint16_t port, std::string name) {
    client::connect_options options;
    options.port = port;
    options.name = std::move(name);
    options.timeout = std::chrono::seconds{10};
    return options;
}

// That player joined (Welcome and the snapshot read). Throws when it cannot join.
inline std::unique_ptr<client::connection> join(std::uint16_t port, const std::string& name) {
    return std::make_unique<client::connection>(join_options(port, name));
}

// Polls every client in turn (5 ms each) until pred() holds, at most `timeout`; pred() is
// checked after each round and once more at the end.
inline bool poll_all_until(const std::vector<client::connection*>& clients,
                           const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        for (client::connection* c : clients) {
            c->poll_for(std::chrono::milliseconds{5});
        }
        if (pred()) {
            return true;
        }
    }
    return pred();
}

// The entities `m` holds.
inline std::set<ecs::Entity> held(const protocol::mirror& m) {
    std::set<ecs::Entity> out;
    m.each([&](ecs::Entity e) { out.insert(e); });
    return out;
}

}  // namespace ecsnet::test
