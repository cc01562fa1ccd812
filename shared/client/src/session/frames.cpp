// The frame pump of a session: each frame that arrived, in order, applied to the mirror and the
// connection's state, and the events it fires (session/impl.hpp).
#include <algorithm>
#include <variant>

#include "ecsnet/protocol/components.hpp"
#include "impl.hpp"

namespace ecsnet::client {

namespace asio = boost::asio;
using time_point = std::chrono::steady_clock::time_point;
using std::chrono::milliseconds;

void session::impl::handle_frame(std::span<const std::uint8_t> bytes, time_point at) {
    std::string why;
    if (protocol::is_compact(protocol::read_prefix(bytes.first<protocol::frame_prefix_bytes>()))) {
        auto message = protocol::decode_compact_server_frame(bytes, &why);
        if (!message) {
            finish("invalid compact frame from the server at " + endpoint + ": " + why);
            return;
        }
        ++stats.frames_received;
        control(std::move(*message), at);
        completion.handled(nullptr);
        return;
    }
    const wire::ServerMessage* message = protocol::verify_server_frame(bytes, &why);
    if (message == nullptr) {
        finish("malformed frame from the server at " + endpoint + ": " + why);
        return;
    }
    ++stats.frames_received;
    switch (message->body_type()) {
        case wire::ServerBody::Snapshot:
        case wire::ServerBody::Delta:
        case wire::ServerBody::Checksum:
            if (!welcomed) {
                finish("the server at " + endpoint + " sent world state before Welcome");
                return;
            }
            replicate(*message, at);
            break;
        default:
            control(*message, at);
    }
    completion.handled(message);
}

void session::impl::replicate(const wire::ServerMessage& message, time_point at) {
    applying_snapshot = message.body_type() == wire::ServerBody::Snapshot;
    snapshot_done = false;
    struct reset {
        bool& flag;
        ~reset() { flag = false; }
    } done{applying_snapshot};
    bool applied = false;
    try {
        applied = mirror.apply(message);  // the world's events fire in here
    } catch (...) {
        // An event threw. A snapshot's last chunk is in all the same (its events come after
        // the swap): histories restart, and joined fires at the next update().
        const auto* snapshot = message.body_as_Snapshot();
        if (!snapshot_done && snapshot != nullptr &&
            snapshot->chunk() + 1 == snapshot->chunk_count() && mirror.ready() &&
            mirror.tick() == snapshot->tick()) {
            restart_histories(snapshot->tick());
            snapshot_done = true;
        }
        join_pending = snapshot_done;
        throw;
    }
    if (state == session_state::closed) {
        return;
    }
    if (!applied) {
        // Inconsistent: the mirror waits for a new snapshot, asked for once per inconsistency.
        if (auto reason = mirror.take_resync_reason()) {
            (void)enqueue(protocol::resync_request{reason->substr(0, protocol::max_reason_bytes)});
        }
        return;
    }
    if (message.body_type() == wire::ServerBody::Delta) {
        clock.on_tick(message.body_as_Delta()->tick(), at);
        if (history) {
            // A tick with no interpolated change is news too: what did not move stands still
            // instead of being extrapolated along its last step.
            history->on_tick(message.body_as_Delta()->tick());
        }
    }
    if (snapshot_done) {
        clock.on_tick(mirror.tick(), at);
        snapshot_completed();
    }
}

void session::impl::control(const wire::ServerMessage& message, time_point at) {
    std::string why;
    auto decoded = protocol::decode_server_control(message, &why);
    if (!decoded) {
        finish("invalid message from the server at " + endpoint + ": " + why);
        return;
    }
    control(std::move(*decoded), at);
}

void session::impl::control(protocol::server_control message, time_point at) {
    auto* decoded = &message;
    if (auto* w = std::get_if<protocol::welcome>(&*decoded)) {
        welcomed_by(std::move(*w), at);
    } else if (const auto* r = std::get_if<protocol::command_result>(&*decoded)) {
        fire(active.command_result, *r);
    } else if (const auto* p = std::get_if<protocol::pong>(&*decoded)) {
        const auto it = std::find_if(pings.begin(), pings.end(),
                                     [&](const auto& sent) { return sent.first == p->nonce; });
        if (it != pings.end()) {
            clock.on_pong(it->second, at);
            pings.erase(pings.begin(), it + 1);
        }
    } else if (const auto* a = std::get_if<protocol::input_ack>(&*decoded)) {
        last_ack = *a;
        clock.on_input_ack(*a, at);
        if (predicted) {
            predicted->acknowledge(*a);
        }
    } else if (const auto* rejected = std::get_if<protocol::input_rejected>(&*decoded)) {
        last_rejected = *rejected;
        if (rejected->code == wire::ErrorCode::Malformed || rejected->code == wire::ErrorCode::InvalidValue) {
            input_reference.reset();  // the server forgot its reference: the next Input goes full
        }
        fire(active.input_rejected, *rejected);
    } else if (const auto* d = std::get_if<protocol::disconnect>(&*decoded)) {
        // The server's word is final: a refusal (token, version, full) or an end (kicked,
        // signed in elsewhere, shutting down). Reconnecting would only repeat it.
        const std::string reason = d->reason.empty() ? "no reason given" : d->reason;
        if (!welcomed) {
            finish("the server at " + endpoint + " refused" +
                   (state == session_state::reconnecting ? " the reconnect: " : ": ") + reason);
        } else {
            finish("disconnected by the server at " + endpoint + ": " + reason);
        }
    }
}

void session::impl::welcomed_by(protocol::welcome w, time_point at) {
    if (welcomed) {
        finish("the server at " + endpoint + " sent a second Welcome");
        return;
    }
    for (const protocol::component_info& expected : options.connect.expected_types) {
        if (const auto* actual = w.components.find(expected.name)) {
            if (auto problem = protocol::incompatibility(expected, *actual)) {
                finish("the schema of the server at " + endpoint +
                       " does not match this client: " + *problem);
                return;
            }
        }
    }
    if (!(w.tick_rate > 0.0F)) {
        finish("the server at " + endpoint + " announced a tick rate of " +
               std::to_string(w.tick_rate));
        return;
    }
    if (!history || w.components != mirror.types()) {
        // Other types (a reconnect found a changed server): what the mirror held is gone.
        mirror.each([&](ecs::Entity e) { fire(active.destroyed, e); });
        mirror.set_schema(w.components);
        history.emplace(w.components, options.interpolation_options);
        interpolated.clear();
        is_interpolated.assign(w.components.size(), false);
        for (const auto& info : w.components.types()) {
            if (info.interpolated && !info.is_string) {
                interpolated.push_back(info.id);
                is_interpolated[info.id] = true;
            }
        }
    }
    if (!welcome || welcome->tick_rate != w.tick_rate || w.current_tick < mirror.tick()) {
        auto o = options.clock_options;
        o.rate = static_cast<double>(w.tick_rate);
        clock = server_clock{o};
    }
    clock.on_welcome(w.current_tick, at);
    if (welcome && welcome->client_id != w.client_id) {
        // The server forgot the player (a restart, no tokens): its entity is not ours any more.
        input = {};
        input_entity = {};
        owned.clear();  // the snapshot tells anew what is ours
        owned_index.clear();
    }
    welcome = std::move(w);
    welcomed = true;
    // A new stream of pings, inputs and acks (the server counts per connection).
    next_ping = {};
    pings.clear();
    next_input_tick = 0;
    input_reference.reset();
    last_ack.reset();
    start_prediction();
}

void session::impl::snapshot_completed() {
    if (state == session_state::connecting) {
        state = session_state::joined;
        fire(active.joined, *welcome);
    } else if (state == session_state::reconnecting) {
        state = session_state::joined;
        ++stats.reconnects;
        fire(active.reconnected, *welcome);
    }
}

void session::impl::check_owner(ecs::Entity e) {
    const auto owner = mirror.get<protocol::Owner>(e);
    const bool mine = owner && welcome && owner->client == welcome->client_id;
    const bool listed = e.index() < owned_index.size() && owned_index[e.index()];
    if (mine && !listed) {
        if (e.index() >= owned_index.size()) {
            owned_index.resize(static_cast<std::size_t>(e.index()) + 1);
        }
        owned_index[e.index()] = true;
        owned.push_back(e);
        if (predicted) {
            (void)predicted->track(e, mirror);
        }
        fire(active.owned, e);
    } else if (!mine && listed) {
        forget_owned(e);
    }
}

void session::impl::forget_owned(ecs::Entity e) {
    if (e.index() >= owned_index.size() || !owned_index[e.index()]) {
        return;
    }
    owned_index[e.index()] = false;
    std::erase_if(owned, [&](ecs::Entity o) {
        if (o.index() != e.index()) {
            return false;
        }
        if (predicted) {
            predicted->untrack(o);
        }
        return true;
    });
}

void session::impl::record(ecs::Entity e, std::uint32_t type) {
    if (history && type < is_interpolated.size() && is_interpolated[type]) {
        history->on_tick(mirror.event_tick());
        history->record(e, type, mirror.value(e, type));
    }
}

void session::impl::record_all(ecs::Entity e) {
    if (!history) {
        return;
    }
    history->appeared(e);
    for (const std::uint32_t type : interpolated) {
        if (mirror.has(e, type)) {
            record(e, type);
        }
    }
}

void session::impl::install_mirror_events() {
    auto& on = mirror.events();
    on.on_spawn = [this](ecs::Entity e) {
        record_all(e);
        fire(snapshot_of_view() ? active.entered : active.spawned, e);
        check_owner(e);
    };
    on.on_enter = [this](ecs::Entity e) {
        record_all(e);
        fire(active.entered, e);
        check_owner(e);
    };
    on.on_update = [this](ecs::Entity e, std::uint32_t type) {
        record(e, type);
        fire(active.updated, e, type);
        if (type == protocol::owner_wire_id) {
            check_owner(e);
        }
    };
    on.on_remove = [this](ecs::Entity e, std::uint32_t type) {
        if (history) {
            history->forget(e, type);
        }
        fire(active.removed, e, type);
    };
    on.on_destroy = [this](ecs::Entity e) {
        forget_owned(e);
        fire(snapshot_of_view() ? active.left : active.destroyed, e);
        if (history) {
            history->forget(e);
        }
    };
    on.on_leave = [this](ecs::Entity e) {
        forget_owned(e);
        fire(active.left, e);
        if (history) {
            history->forget(e);
        }
    };
    on.on_snapshot = [this](std::uint64_t tick, std::size_t) {
        snapshot_done = true;
        restart_histories(tick);
    };
}

void session::impl::restart_histories(std::uint64_t tick) {
    // From the snapshot's tick: no interpolation across the gap before it.
    if (history) {
        history->clear();
        history->on_tick(tick);
        mirror.each([&](ecs::Entity e) { record_all(e); });
    }
}
}  // namespace ecsnet::client
