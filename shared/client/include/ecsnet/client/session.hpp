#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "ecsnet/client/connect_options.hpp"
#include "ecsnet/client/interpolation.hpp"
#include "ecsnet/client/prediction.hpp"
#include "ecsnet/client/server_clock.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/protocol/mirror.hpp"

// A game's connection to ecsnet-server (docs/CLIENT.md): never blocks the game loop. The
// constructor starts connecting; update(), called once per frame, applies what arrived, fires
// the events, and sends the due input, a Ping now and then, and what the game queued. A lost
// connection is resumed with Welcome's resume key. Used from one thread, the game's; the
// sockets run there too (inside update()) or on a network thread of the session's own.
//
// Re-entrancy: events run inside update(). They may read the session (mirror, sample, state,
// ...), call send, set_input, clear_input and close, and replace events() (the new ones serve
// from the next update()). update() from an event throws std::logic_error. After close(), no
// event fires any more, not even the rest of the frame being applied. Never destroy the
// session from one of its events.
namespace ecsnet::client {

enum class session_state {
    connecting,    // the first connection: until Welcome and the whole snapshot
    joined,        // the mirror follows the server
    reconnecting,  // the connection was lost; resuming with the resume key
    closed,        // for good: closed_reason() says why
};
[[nodiscard]] const char* to_string(session_state state) noexcept;

struct session_options {
    // Where and who (TCP, TLS, WebSocket or wss). `timeout` bounds each attempt: connect, TLS,
    // the WebSocket upgrade, Welcome and the snapshot.
    // `join` must stay true: a session always joins.
    connect_options connect;
    // Sockets on a thread of the session's own; else they run inside update().
    bool network_thread = false;
    std::chrono::milliseconds ping_interval{1000};  // round trips feed the server clock
    // A joined connection that receives nothing this long is lost (the server sends every tick).
    std::chrono::milliseconds silence_timeout{5000};
    // Bytes queued for the server and not yet written; more is a lost connection, not growth.
    std::size_t max_send_queue_bytes = 1024 * 1024;
    // Network thread only: reading pauses while this much waits for update().
    std::size_t max_receive_queue_bytes = 16 * 1024 * 1024;
    struct reconnect_policy {
        bool enabled = true;
        std::chrono::milliseconds first_delay{100};  // doubling after each failed attempt
        std::chrono::milliseconds max_delay{2000};
        // Keep it below the server's --reconnect-grace (30 s by default): after it the player's
        // entities are gone.
        std::chrono::milliseconds within{10'000};
    } reconnect;
    server_clock::options clock_options;                 // `rate` comes from Welcome
    interpolation::options interpolation_options;
    // Client-side prediction (docs/PREDICTION.md). Set, the session predicts the entities this
    // player owns (events().owned) at its input tick, with the input set_input gives at once,
    // and reconciles with each server tick. `predict` declares the predicted types and adds the
    // game's predicted systems: the same registration code its server runs. Called after each
    // Welcome (a reconnect starts a new prediction).
    std::function<void(prediction&)> predict;
    prediction_options predict_options;
};

// Sent, received, reconnected: for a game's network graph.
struct session_stats {
    // The frames' bytes and, over WebSocket, each message's header (connection::bytes_received).
    std::uint64_t bytes_received{0};
    std::uint64_t frames_received{0};
    std::uint64_t bytes_sent{0};   // queued for the connection
    std::uint64_t frames_sent{0};
    std::uint64_t input_frames_sent{0};  // both forms
    std::uint64_t input_ticks_sent{0};
    std::uint64_t compact_input_frames_sent{0};  // of input_frames_sent, compact (protocol 6)
    std::uint64_t reconnects{0};
};

// Set the ones the game wants; all run inside update(), on the game's thread.
struct session_events {
    // The first Welcome and snapshot are in: the snapshot's entities were reported (spawned)
    // just before. Under interest management the snapshot is empty: entities enter after.
    std::function<void(const protocol::welcome&)> joined;
    // Resumed after a loss: what changed meanwhile was reported just before (destroyed or
    // left for what is gone, spawned or entered for what is new, updated, removed).
    std::function<void(const protocol::welcome&)> reconnected;
    // Once per loss. will_reconnect: the session is reconnecting; else it is closed for good
    // (refused, kicked, schema mismatch, or no reconnect within the policy). A loss whose
    // reconnect fails is told twice: true, then false.
    std::function<void(const std::string& reason, bool will_reconnect)> disconnected;
    // The mirror's changes (protocol::mirror::callbacks for the details and order).
    std::function<void(ecs::Entity)> spawned;
    std::function<void(ecs::Entity)> entered;  // came into view (interest management)
    std::function<void(ecs::Entity, std::uint32_t type)> updated;
    std::function<void(ecs::Entity)> left;       // went out of view; still readable
    std::function<void(ecs::Entity)> destroyed;  // still readable
    std::function<void(ecs::Entity, std::uint32_t type)> removed;
    // An entity of this player's (its core `owner` is client_id()) is in the mirror: it was
    // spawned or came into view owned by this client, or its owner became this client. Once
    // per entity while it stays; after the spawned, entered or updated event that brought it.
    // A game finds its player's entity here: a server makes it when the player joins, so it
    // arrives with a tick after `joined`, not in it.
    std::function<void(ecs::Entity)> owned;
    std::function<void(const protocol::input_rejected&)> input_rejected;
    std::function<void(const protocol::command_result&)> command_result;
};

class session {
public:
    using clock = std::chrono::steady_clock;

    // Starts connecting and returns at once. Throws client_error only for what is wrong here
    // (join false, a CA file that does not load); a server that is not there ends in closed.
    explicit session(session_options options);
    session(const session&) = delete;
    session& operator=(const session&) = delete;
    // Closes; waits for a DNS lookup in progress, if any.
    ~session();

    // Once per frame, on the game's thread: see the top of this file.
    void update();

    [[nodiscard]] session_state state() const noexcept;
    // Why the session closed ("cannot connect to 127.0.0.1:7777: connection refused"); empty
    // until then.
    [[nodiscard]] const std::string& closed_reason() const noexcept;
    // The latest Welcome; throws client_error before the first.
    [[nodiscard]] const protocol::welcome& welcome() const;
    [[nodiscard]] std::uint32_t client_id() const noexcept;  // 0 before the first Welcome
    // The entities in the mirror that this player owns (events().owned told of each), in the
    // order they came.
    [[nodiscard]] const std::vector<ecs::Entity>& owned_entities() const noexcept;
    [[nodiscard]] const protocol::mirror& mirror() const noexcept;
    [[nodiscard]] const server_clock& server_time() const noexcept;
    [[nodiscard]] session_stats stats() const noexcept;
    session_events& events() noexcept;

    // ---- input: the player's controls, sent once per server tick -----------------------
    // Sets the current value of input types (protocol::replicate_options::input) for the
    // player's entity; update() stamps it for each tick that falls due (server_clock::
    // input_tick()), ticks missed by a slow frame batched in one Input of up to 16. Another
    // entity starts over. Throws client_error before the first Welcome or for a type that is
    // not one of the server's input types.
    void set_input(ecs::Entity entity, const protocol::component_set& values);
    template <protocol::replicated_component T>
    void set_input(ecs::Entity entity, const T& value) {
        set_input(entity, protocol::component_set{}.set(value));
    }
    // Stops sending input (the server repeats the last one it applied).
    void clear_input() noexcept;
    // The newest tick the server applied this player's input for (InputAck.applied_tick).
    [[nodiscard]] std::uint64_t acked_input_tick() const noexcept;
    // The newest tick an Input was sent for; 0 before the first.
    [[nodiscard]] std::uint64_t last_input_tick() const noexcept;
    [[nodiscard]] const std::optional<protocol::input_ack>& last_input_ack() const noexcept;
    [[nodiscard]] const std::optional<protocol::input_rejected>& last_input_rejected() const noexcept;

    // ---- interpolation ---------------------------------------------------------------------
    [[nodiscard]] double render_tick() const noexcept { return server_time().render_tick(); }
    // T's value to show for e: interpolated at the render tick when the server marks T
    // interpolated, else the mirror's latest.
    template <protocol::replicated_component T>
    [[nodiscard]] std::optional<T> sample(ecs::Entity e) const {
        return sample<T>(e, render_tick());
    }
    template <protocol::replicated_component T>
    [[nodiscard]] std::optional<T> sample(ecs::Entity e, double render_tick) const;

    // ---- prediction (session_options::predict) -----------------------------------------------
    // The prediction, or null (no predict set, or before the first Welcome). A game may track
    // more entities on it (prediction switching) and read its statistics.
    [[nodiscard]] prediction* predictor() noexcept;
    [[nodiscard]] const prediction* predictor() const noexcept;
    // What to draw for e, at one call site: the predicted value with its correction's offset
    // decaying when e is predicted and T is one of the predicted types, else sample<T>(e).
    template <protocol::replicated_component T>
    [[nodiscard]] std::optional<T> rendered(ecs::Entity e) const {
        if constexpr (!protocol::detail::is_string_v<T>) {
            if (const prediction* p = predictor(); p != nullptr && p->tracks(e)) {
                if (auto value = p->template rendered<T>(e)) {
                    return value;
                }
            }
        }
        return sample<T>(e);
    }

    // ---- commands ----------------------------------------------------------------------------
    // Queues a message for the server (written by the next update() at the latest). False,
    // nothing queued, unless joined: what was queued for a lost connection is dropped, never
    // replayed on the next. Throws client_error for Hello or a message that does not encode
    // against the server's schema, protocol::schema_mismatch for a type compiled differently.
    bool send(const protocol::client_message& message);
    [[nodiscard]] std::uint32_t next_request_id() noexcept;

    // Closes for good ("closed by the client"), at once: nothing more is sent or reported.
    void close() noexcept;

private:
    struct impl;
    [[nodiscard]] const interpolation* history() const noexcept;

    std::unique_ptr<impl> impl_;
};

template <protocol::replicated_component T>
std::optional<T> session::sample(ecs::Entity e, double render_tick) const {
    if constexpr (!protocol::detail::is_string_v<T>) {
        const protocol::component_info* info =
            mirror().types().checked(protocol::compiled_layout<T>());
        const interpolation* h = history();
        if (info != nullptr && info->interpolated && h != nullptr) {
            if (auto value = h->template sample<T>(e, render_tick)) {
                return value;
            }
        }
    }
    return mirror().get<T>(e);
}

}  // namespace ecsnet::client
