#pragma once

// Where connections meet the world: the listeners (TCP or TLS, WebSocket) and the I/O threads
// their sessions live on, the inspector's observers handed over by the admin endpoint, each
// session's Hello answered (admission: identity, seats; Welcome and the snapshot), its commands
// and inputs queued for the tick, its resyncs, and its end (the owner's reconnect grace). It is
// the sessions' host (session_host); the server owns it and runs the tick. World thread, but
// for what session_host says runs on any thread.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "ecsnet/protocol/registry.hpp"
#include "ecsnet/server/admission/admission.hpp"
#include "ecsnet/server/config.hpp"
#include "ecsnet/server/operations/logging.hpp"
#include "ecsnet/server/operations/metrics.hpp"
#include "ecsnet/server/replication/interest.hpp"
#include "ecsnet/server/replication/replicator.hpp"
#include "ecsnet/server/session/command_queue.hpp"
#include "ecsnet/server/session/connections.hpp"
#include "ecsnet/server/session/session_host.hpp"
#include "ecsnet/server/simulation/tick_pipeline.hpp"
#include "ecsnet/server/transport/io_pool.hpp"
#include "ecsnet/server/transport/released_socket.hpp"
#include "ecsnet/server/transport/websocket_stream.hpp"

namespace ecsnet::server {

class session_hub final : private session_host {
public:
    // The server's parts the sessions reach, and its tick counters.
    struct world_side {
        boost::asio::io_context& context;  // the world thread's
        const server_config& config;
        server_metrics& metrics;
        const protocol::component_registry& types;
        ecs::World& world;
        admission& identity;
        tick_pipeline& simulation;
        replicator& replication;
        interest_manager& interest;
        const std::uint64_t& tick;                   // the tick being run or last run
        const std::atomic<std::uint64_t>& ticks_done;  // the same, for other threads
    };
    explicit session_hub(const world_side& world);
    session_hub(const session_hub&) = delete;
    session_hub& operator=(const session_hub&) = delete;
    // Stops the I/O threads first: they use the config, the counters, the log limiters.
    ~session_hub();
    // The same, earlier: before the server's other parts go.
    void stop_io_threads() noexcept { pool_.stop(); }

    // Something /readyz or /status shows changed (a join, a refusal, a close, an accept).
    std::function<void()> on_change;
    // A command came after stop(): no tick will apply it, and its session waits for the reply.
    std::function<void()> on_command_after_stop;

    // Binds the listeners (the TLS context first, with --tls-cert). Throws std::runtime_error
    // ("cannot listen on 0.0.0.0:7777: bind: Address already in use").
    void listen();
    // Accepts on the listeners (coroutines on the world's context) until stop_accepting().
    void start_accepting();
    // Closes the listeners; observers are refused from now on. `stopped`: the server stops
    // (commands that still come are answered through on_command_after_stop).
    void stop_accepting(bool stopped);
    // The listener is open: from listen() until stop_accepting().
    [[nodiscard]] bool accepting() const noexcept { return listener_.is_open(); }
    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    [[nodiscard]] std::uint16_t ws_port() const noexcept { return ws_port_; }
    [[nodiscard]] std::size_t io_threads() const noexcept { return pool_.size(); }
    [[nodiscard]] page_stats web_pages() const { return ws_options_.pages.stats(); }
    // An observer's WebSocket upgrade, read and checked by the admin endpoint. Any thread.
    void adopt_observer(released_socket socket, upgrade_request request);

    [[nodiscard]] const connections& sessions() const noexcept { return connections_; }
    [[nodiscard]] command_queue& commands() noexcept { return commands_; }
    // Size of the last snapshot sent (all chunks). Any thread.
    [[nodiscard]] std::size_t snapshot_bytes() const noexcept override { return snapshot_bytes_; }
    // Every session: Disconnect "shutting down" after what it is owed, or, when the server
    // fails, `failure` at once without the replies the journal could not make durable.
    void disconnect_all(const std::string& failure);
    // Joins, leaves and refusals not logged (past --connection-log-lines) since the last call.
    [[nodiscard]] std::size_t take_unlogged_connection_lines() noexcept {
        return connection_lines_.take_suppressed();
    }

private:
    // session_host
    [[nodiscard]] const server_config& config() const noexcept override { return world_.config; }
    [[nodiscard]] const protocol::component_registry& types() const noexcept override {
        return world_.types;
    }
    [[nodiscard]] std::uint64_t ticks_done() const noexcept override {
        return world_.ticks_done.load(std::memory_order_relaxed);
    }
    [[nodiscard]] session_counters& counters() noexcept override { return world_.metrics; }
    [[nodiscard]] log_limiter& client_warnings() noexcept override { return client_warnings_; }
    [[nodiscard]] log_limiter& connection_lines() noexcept override { return connection_lines_; }
    [[nodiscard]] boost::asio::io_context& world_context() noexcept override {
        return world_.context;
    }
    void hello(const std::shared_ptr<session>& s, const protocol::hello& message) override;
    void queue_command(const std::shared_ptr<session>& s, protocol::client_message message) override;
    void queue_result(const std::shared_ptr<session>& s, protocol::command_result result) override;
    // A resync's snapshot: send_snapshot(), then snapshot_sent().
    void resync(const std::shared_ptr<session>& s) override;
    void set_focus(session& s, const protocol::focus& focus) override;
    // Checks an Input against the world and the buffer (tick_pipeline::offer_input); a
    // refusal goes back to the session (InputRejected).
    void queue_input(const std::shared_ptr<session>& s, protocol::input input) override;
    void closed(session& s, const std::string& reason) override;
    void finished() override;

    // Sessions over `listener`: TCP (or TLS), or WebSocket (wss with the TLS context).
    boost::asio::awaitable<void> accept_loop(boost::asio::ip::tcp::acceptor& listener, bool websocket);
    void start_observer(released_socket socket, upgrade_request request);
    // Why a Hello is refused: the metric's label and the text the client gets.
    struct refusal {
        refusal_reason reason;
        std::string text;
    };
    [[nodiscard]] std::optional<refusal> admit(session& s, const protocol::hello& hello);
    // An observer's Hello: an owner only with --inspector-writes and a credential; `read_only`
    // when it has none.
    [[nodiscard]] std::optional<refusal> admit_observer(session& s, const protocol::hello& hello,
                                                        bool& read_only);
    // Welcome, the snapshot, the join's log line: `s` is seated and gets every tick from now.
    void join(session& s, const protocol::hello& hello, const protocol::welcome& welcome);
    [[nodiscard]] protocol::welcome welcome_for(const protocol::hello& hello) const;
    // A newer connection of the same player took this one's seat.
    void give_up_seat(session& s);
    // Player connections of an owner (its connections that are not observers).
    [[nodiscard]] std::size_t player_connections(std::uint32_t owner) const;
    void end_pending(session& s);
    void send_snapshot(session& s);
    void changed() {
        if (on_change) {
            on_change();
        }
    }

    world_side world_;
    std::optional<boost::asio::ssl::context> tls_;
    websocket_options ws_options_;
    // After what sessions use, before the sessions: stopped first (in ~session_hub), its
    // contexts outlive every session.
    io_pool pool_;
    boost::asio::ip::tcp::acceptor listener_;
    boost::asio::ip::tcp::acceptor ws_listener_;
    std::uint16_t port_{0};
    std::uint16_t ws_port_{0};
    bool accepting_{false};
    bool stopped_{false};
    connections connections_;
    command_queue commands_;
    std::atomic<std::size_t> snapshot_bytes_{0};  // read by sessions (their queue bound)
    log_limiter accept_warnings_{10, std::chrono::seconds{10}};
    log_limiter client_warnings_{10, std::chrono::seconds{10}};  // a client misbehaved
    log_limiter connection_lines_;  // joins, leaves, refusals: --connection-log-lines
};

}  // namespace ecsnet::server
