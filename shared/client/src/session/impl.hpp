#pragma once

// The game-client session's inside (session.hpp is its outside), private to the client library.
// Its parts, each in its own file of this folder:
// - attempts.cpp: the connection attempts and reconnecting, the bytes in and out of the network
//   side (link.hpp), the deadlines;
// - frames.cpp: the frame pump: each arrived frame applied to the mirror, in order, and the
//   events it fires;
// - input.cpp: what goes out each update: input per tick and the pings that keep the clock.
// Re-entrancy (session.hpp): events fire on the thread that calls update(), from inside it; a
// handler may call the session's other functions (send, set_input, close), but update() again
// throws std::logic_error (in_update). A handler may replace `events`: the rest of this update()
// fires `active`, the copy taken when it began.

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ecsnet/client/session.hpp"
#include "../tick_completion.hpp"

namespace ecsnet::client {

namespace asio = boost::asio;
using time_point = std::chrono::steady_clock::time_point;
using std::chrono::milliseconds;

namespace detail {

// Why a connection attempt ended. `connecting`: before the connection was up, and `text` is a
// whole sentence ("cannot connect to ..."); else `text` is the cause alone ("server closed the
// connection") and the session says what it ended.
struct link_failure {
    std::string text;
    bool connecting{false};
};

// What the two sides of one connection attempt hand each other, under `mutex`: the network
// side (link, on the thread that runs the io_context) appends what it reads and writes what
// update() queued; update() takes what was read and queues what to send. Nothing else of the
// session is shared between threads.
struct channel {
    struct chunk {
        std::vector<std::uint8_t> bytes;
        std::size_t wire_bytes;  // bytes and what carried them (WebSocket headers)
        time_point at;
    };

    explicit channel(std::size_t max_received) : max_received_bytes{max_received} {}

    std::mutex mutex;
    const std::size_t max_received_bytes;
    std::vector<chunk> received;
    std::size_t received_bytes{0};
    bool read_paused{false};  // received_bytes reached the bound: resume once taken
    bool connected{false};    // TCP (and TLS) up
    time_point last_received{};
    std::optional<link_failure> failure;
    std::deque<protocol::frame> outgoing;
    std::size_t unsent_bytes{0};  // queued or being written
};

class link;

}  // namespace detail

// The game's side: everything here runs on the thread that calls update() (and the network
// side too, without a network thread).
struct session::impl {
    explicit impl(session_options o);
    impl(const impl&) = delete;
    impl& operator=(const impl&) = delete;
    ~impl();

    // ---- the connection attempts ----------------------------------------------------------
    void start_attempt(time_point now);
    // Stops the current attempt's sockets and forgets what it had not delivered.
    void drop_link() noexcept;
    void post_flush();
    void poll();
    bool enqueue(protocol::frame f);
    bool enqueue(const protocol::client_message& message) {
        return enqueue(protocol::encode(message, mirror.types()));
    }

    // ---- what arrived, in order -------------------------------------------------------------
    void receive();
    void handle_frame(std::span<const std::uint8_t> bytes, time_point at);
    void replicate(const wire::ServerMessage& message, time_point at);
    void control(const wire::ServerMessage& message, time_point at);
    void control(protocol::server_control message, time_point at);
    void welcomed_by(protocol::welcome w, time_point at);
    void snapshot_completed();

    // ---- state changes ----------------------------------------------------------------------
    void lost(const detail::link_failure& failure, time_point now);
    // Closed for good, with the last event: disconnected(reason, false).
    void finish(std::string reason);
    void check_deadlines(time_point now);

    // ---- what goes out each frame -----------------------------------------------------------
    void send_ping(time_point now);
    void send_input();

    // ---- events -------------------------------------------------------------------------------
    void install_mirror_events();
    template <typename Fn, typename... Args>
    void fire(const Fn& fn, Args&&... args) {
        if (state != session_state::closed && fn) {
            fn(std::forward<Args>(args)...);
        }
    }
    // Snapshots under interest management hold what is in view: what they drop went out of
    // view, it was not destroyed.
    [[nodiscard]] bool snapshot_of_view() const noexcept {
        return applying_snapshot && welcome && welcome->interest_radius > 0.0F;
    }
    // events().owned and owned_entities(): checks e's owner after it came or its owner changed.
    void check_owner(ecs::Entity e);
    void forget_owned(ecs::Entity e);
    void record_all(ecs::Entity e);
    void record(ecs::Entity e, std::uint32_t type);
    void restart_histories(std::uint64_t tick);

    session_options options;
    std::string endpoint;

    // The TLS context outlives the io_context, whose handlers hold links that use it.
    std::optional<asio::ssl::context> tls;
    asio::io_context io;
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
    std::thread network;
    std::mutex network_mutex;
    std::optional<std::string> network_error;  // a handler threw on the network thread

    // The current attempt; null between attempts and once closed.
    std::shared_ptr<detail::link> link;
    std::shared_ptr<detail::channel> channel;
    std::uint64_t attempt{0};
    protocol::frame_reader reader;
    // Bytes fed to the reader and taken out as frames, and when the bytes up to each offset
    // arrived: a frame arrived with its last byte.
    std::uint64_t fed{0};
    std::uint64_t consumed{0};
    std::deque<std::pair<std::uint64_t, time_point>> arrivals;
    std::optional<detail::link_failure> failure;  // taken from the channel, handled after its frames
    time_point attempt_deadline{};
    time_point last_received{};
    bool welcomed{false};  // this attempt's Welcome arrived
    bool flush_wanted{false};

    session_state state{session_state::connecting};
    std::string closed_reason;
    session_events events;
    session_events active;  // this update()'s: events may replace `events`
    bool in_update{false};

    time_point reconnect_deadline{};
    time_point next_attempt{};
    milliseconds backoff{0};

    protocol::mirror mirror;
    std::optional<protocol::welcome> welcome;
    std::optional<interpolation> history;
    std::vector<std::uint32_t> interpolated;  // wire ids
    std::vector<bool> is_interpolated;
    server_clock clock;
    bool applying_snapshot{false};
    bool snapshot_done{false};
    bool join_pending{false};

    std::vector<ecs::Entity> owned;  // owned_entities(), in arrival order
    std::vector<bool> owned_index;   // by entity index: in `owned` (a spawn or destroy is O(1))

    // session_options::predict: made at each Welcome.
    std::unique_ptr<prediction> predicted;
    std::uint64_t reconciled_tick{0};
    detail::tick_completion completion;  // when the mirror's tick may be compared
    time_point last_update{};
    void start_prediction();
    void predict(time_point now);

    ecs::Entity input_entity{};
    protocol::component_set input;
    std::uint64_t next_input_tick{0};  // 0: the next Input starts at the input tick
    // The render tick shown when the game's set_input last changed the input: what the
    // player saw as it pressed, not the later frame an Input is sent from.
    std::optional<double> input_shown;
    // A button (a bool field) pressed and released before any Input carried it: the value
    // with the press, sent for one tick by the next Input, and the render tick of its frame.
    // sent_input: the value the last Input ended with.
    protocol::component_set sent_input;
    std::optional<protocol::component_set> unsent_press;
    std::optional<double> unsent_press_shown;
    std::uint64_t last_input_tick{0};
    // Protocol 6: the last full Input sent on this connection; one that matches it goes compact.
    std::optional<protocol::input_reference> input_reference;
    std::optional<protocol::input_ack> last_ack;
    std::optional<protocol::input_rejected> last_rejected;

    time_point next_ping{};
    std::uint64_t ping_nonce{0};
    std::deque<std::pair<std::uint64_t, time_point>> pings;  // nonce, sent

    std::uint32_t last_request_id{0};
    session_stats stats;
};

}  // namespace ecsnet::client
