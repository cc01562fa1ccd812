// Driving several ecsnet::client::connection from one test thread: poll each in turn until a
// condition holds, bounded in time; and the entities a mirror holds.
#pragma once

#include <chrono>
#include <functional>
#include <set>
#include <vector>

#include "ecsnet/client/connection.hpp"
#include "ecsnet/ecs/entity.hpp"
#include "ecsnet/protocol/mirror.hpp"

namespace ecsnet::test {

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
