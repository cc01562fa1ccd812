#pragma once

#include <algorithm>

#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/protocol/schema.hpp"

namespace ecsnet::client::detail {

// Whether the mirror's tick holds all of that tick's state yet. A tick's owner-only Delta
// comes right after its Delta or Snapshot (docs/PROTOCOL.md, "Owner-only types"), so between
// the two the mirror holds the previous tick's owner-only values under the new tick. Prediction
// compares a tick only once it is whole: from the first frame after its Delta, whatever that
// frame is (the owner-only Delta, a Checksum, the InputAck that ends every tick of a client
// sending input), or at once when no type is owner-only. Comparing earlier took the ammo of
// the tick before for the server's and counted two mispredictions at every reload. A tick the
// mirror leaves before it was whole is not compared (comparing it as the next Delta arrives
// reached back before the prediction's first tick and replayed the ship's kept timers out of
// step): the next whole one is.
class tick_completion {
public:
    // A Welcome's schema: whether any tick can have an owner-only Delta.
    void restart(const protocol::schema& types) noexcept {
        // std::any_of: the WebAssembly module's libc++ 14 has no ranges algorithms.
        const auto all = types.types();
        owner_only_types_ = std::any_of(all.begin(), all.end(), [](const protocol::component_info& t) {
            return t.owner_only && t.replicated;
        });
        whole_ = false;
    }

    // After each frame was handled: `message` is null for a compact frame (an InputAck).
    void handled(const wire::ServerMessage* message) noexcept {
        whole_ = message == nullptr || !leaves_tick(*message) || !owner_only_types_;
    }

    [[nodiscard]] bool whole() const noexcept { return whole_; }

private:
    // True when `message` moves the mirror to another tick (a Delta or a Snapshot chunk).
    [[nodiscard]] static bool leaves_tick(const wire::ServerMessage& message) noexcept {
        if (const auto* delta = message.body_as_Delta()) {
            return !delta->owner_only();
        }
        return message.body_type() == wire::ServerBody::Snapshot;
    }

    bool owner_only_types_{false};
    bool whole_{false};
};

}  // namespace ecsnet::client::detail
