#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ecsnet/ecs/scheduler.hpp"
#include "ecsnet/protocol/registry.hpp"
#include "ecsnet/server/admission/admission.hpp"
#include "ecsnet/server/config.hpp"
#include "ecsnet/server/game.hpp"
#include "ecsnet/server/operations/client_reports.hpp"
#include "ecsnet/server/operations/health_publisher.hpp"
#include "ecsnet/server/operations/logging.hpp"
#include "ecsnet/server/operations/metrics.hpp"
#include "ecsnet/server/operations/stats_log.hpp"
#include "ecsnet/server/persistence/persistence.hpp"
#include "ecsnet/server/replication/interest.hpp"
#include "ecsnet/server/replication/replicator.hpp"
#include "ecsnet/server/session/session.hpp"
#include "ecsnet/server/session/session_hub.hpp"
#include "ecsnet/server/simulation/tick_pipeline.hpp"

namespace ecsnet::server {

// The ecsnet service. The world runs on the one thread that runs the io_context: the tick
// timer, the systems, command application, the accept loop, admission (Hello) and the owner
// registry; nothing else touches the world, so it needs no lock. The sessions' socket I/O
// (reads, writes, TLS, timeouts) runs on --io-threads threads (the session hub's io_pool). The
// two sides hand work to each other by posting handlers, never by sharing fields: a tick's
// frames are immutable shared buffers posted to every session; a session posts Hello, its
// commands, its resync requests and its end back (docs/SERVER.md, "Threads").
//
// The class is the composition of the server's parts, one object each (docs/ARCHITECTURE.md,
// "The parts"): what a game reads is this public surface.
//
// Each tick, on absolute deadlines: apply the commands received since the last tick in
// arrival order -> run the systems (each followed by a sync point) -> take the change set ->
// the interest policy catches up -> the replicator makes each joined client's frames (one
// delta encoded once for all, or under interest management each client's own) and the
// checksums -> queued to the sessions. Nothing else writes to the world, so a snapshot taken
// between ticks and the deltas after it always agree.
class server final {
public:
    using clock = std::chrono::steady_clock;

    // A server running `g` (its components, systems and first entities); without a game,
    // only the core's Owner replicates.
    server(boost::asio::io_context& io, server_config config, const game& g);
    server(boost::asio::io_context& io, server_config config);
    server(const server&) = delete;
    server& operator=(const server&) = delete;
    ~server();

    // Binds, listens and starts ticking. Throws std::runtime_error ("cannot listen on
    // 0.0.0.0:7777: bind: Address already in use") when it cannot.
    void start();
    // Graceful shutdown: stop accepting and ticking, send every client Disconnect "shutting
    // down", flush for at most the shutdown grace; io_context::run() then returns by itself
    // (once every session has closed). The destructor joins the I/O threads.
    void stop();
    // stop() for a reason a supervisor must see (the journal cannot be written): every client
    // gets Disconnect `reason` at once, replies it is still owed withheld; failure() names it,
    // and run() exits 1. Any later failure of the stop itself (the final checkpoint) too.
    void fail(std::string reason);
    // Why the server stopped failing; empty while it runs and after a clean stop.
    [[nodiscard]] const std::string& failure() const noexcept { return failure_; }
    // Called once stop() has done its part, however it was reached (a signal, fail()): run()
    // releases what keeps its io_context busy (the signal set) so that run() returns.
    std::function<void()> on_stop;
    // The first step of a drain (SIGTERM with --drain-seconds): stop accepting (the listener
    // closes, health().draining turns true at once) but keep ticking and serving the clients
    // that are connected. stop() ends it.
    void drain();
    // Safe to call from any thread (the admin endpoint runs on its own).
    [[nodiscard]] server_health health() const { return health_.health(); }
    // The joined connections as of the last report (at most a second old). Any thread.
    [[nodiscard]] clients_report client_list() const { return health_.client_list(); }
    // An observer (the web inspector): a WebSocket upgrade the admin endpoint read and checked
    // (token, Origin) on its connection. The server answers the upgrade and runs a session
    // that takes no player slot (docs/SERVER.md, "Observers"). Any thread.
    void adopt_observer(released_socket socket, upgrade_request request);

    [[nodiscard]] std::uint16_t port() const noexcept { return sessions_.port(); }
    // The WebSocket port (--ws-port); 0 when off.
    [[nodiscard]] std::uint16_t ws_port() const noexcept { return sessions_.ws_port(); }
    // The --web-root page connections' counters (any thread).
    [[nodiscard]] page_stats web_pages() const { return sessions_.web_pages(); }
    [[nodiscard]] std::uint64_t tick() const noexcept { return tick_; }
    [[nodiscard]] const ecs::World& world() const noexcept { return *world_; }
    [[nodiscard]] ecs::World& world() noexcept { return *world_; }
    [[nodiscard]] ecs::Scheduler& scheduler() noexcept { return simulation_.scheduler(); }
    // The replicated component types, as Welcome describes them.
    [[nodiscard]] const protocol::component_registry& types() const noexcept { return types_; }
    // The world's counters and the sessions' (added from the I/O threads), as of now, read
    // from the metrics. Any thread.
    [[nodiscard]] server_stats stats() const;
    // GET /metrics: the Prometheus text exposition (format 0.0.4). Any thread; never waits
    // for a tick.
    [[nodiscard]] std::string metrics_text() const { return metrics_.text(); }
    [[nodiscard]] const server_config& config() const noexcept { return config_; }
    // Size of the last snapshot sent (all chunks); 0 before the first join.
    // Any thread.
    [[nodiscard]] std::size_t snapshot_bytes() const noexcept { return sessions_.snapshot_bytes(); }
    [[nodiscard]] std::size_t clients() const noexcept { return sessions_.sessions().players(); }
    // Joined observers (not in clients()).
    [[nodiscard]] std::size_t observers() const noexcept { return sessions_.sessions().observers(); }
    // Connections that have not completed Hello.
    [[nodiscard]] std::size_t pending_connections() const noexcept { return admission_.pending(); }
    [[nodiscard]] const owner_registry& owners() const noexcept { return admission_.owners(); }
    // Interest management (docs/INTEREST.md): off until the game sets a policy, e.g.
    // interest().use_grid<Position>(...); the defaults come from --interest-*, --client-budget.
    [[nodiscard]] interest_manager& interest() noexcept { return interest_; }
    // The view of a connection (by session id) under interest management, or null.
    [[nodiscard]] const client_view* view_of(std::uint64_t session_id) const noexcept {
        return replicator_.view(session_id);
    }
    // Lag compensation (docs/PREDICTION.md): the render tick `owner`'s client was showing when
    // it set the input this tick applied (protocol 5); a game's hitscan system rewinds that
    // player's shots to it (server::lag_history). nullopt when the client never said.
    [[nodiscard]] std::optional<double> input_view(std::uint32_t owner) const noexcept {
        return simulation_.inputs().view(owner);
    }
    // Session ids of the joined connections, in connection order.
    [[nodiscard]] std::vector<std::uint64_t> joined_sessions() const {
        return sessions_.sessions().joined();
    }

    // With --state-dir: what the server restored at start (docs/PERSISTENCE.md); empty for a
    // new world. A game's setup() spawns its first entities only when this is empty.
    [[nodiscard]] const std::optional<restore_summary>& restored() const noexcept {
        return restored_;
    }

    // Players coming and going, for the game (set them in setup()): a player's first
    // connection joined, or its last one left. Called at the start of the next tick, on the
    // world thread, after the clients' commands: the game may change the world, and what it
    // does goes out with that tick. `resumed`: the player still owns entities (it came back
    // within the reconnect grace, or --keep-entities-on-disconnect kept them). A throw is
    // counted with the systems' failures and the tick goes on.
    std::function<void(std::uint32_t owner, bool resumed)> on_player_joined;
    std::function<void(std::uint32_t owner)> on_player_left;

private:
    boost::asio::awaitable<void> tick_loop();
    void tick_loop_ended(const std::exception_ptr& e);
    boost::asio::awaitable<void> stats_loop();
    void run_tick();
    // The clients' commands queued since the last tick, applied; with --journal, the tick's
    // batch (their records) made durable before their replies go.
    void apply_commands();
    // Queues the tick's frames (replicator) to every joined session.
    void broadcast_tick(const ecs::World::change_set_type& changes);
    // What health() reports and the world's gauges; once per tick and on state changes.
    // `tick_ms`: the work time of the tick that ended, for /status.
    void publish_health(bool tick_ended = false, double tick_ms = 0.0);
    // The /clients report, at most once a second (`now`: always).
    void publish_clients(bool now = false);
    [[nodiscard]] client_reports::sources report_sources() noexcept {
        return {sessions_.sessions(), admission_.owners(), replicator_, interest_};
    }
    // With --state-dir: the world, owners and tokens of the last run, its owners in their
    // reconnect grace.
    void restore();
    // With --journal, the journal; else null.
    [[nodiscard]] journal_writer* journal() noexcept {
        return persistence_ ? persistence_->journal() : nullptr;
    }

    boost::asio::io_context& io_;
    server_config config_;
    // Before the sessions and the I/O threads, which count into it.
    server_metrics metrics_;
    protocol::component_registry types_;
    std::shared_ptr<ecs::World> world_;
    std::uint64_t tick_{0};
    std::atomic<std::uint64_t> ticks_done_{0};  // tick_, for other threads (the sessions' Pongs)
    // The parts (docs/ARCHITECTURE.md): the systems, commands and inputs run each tick; who
    // may join and as whom; what each client sees; the connections.
    tick_pipeline simulation_;
    admission admission_;
    interest_manager interest_;
    replicator replicator_;
    // After what sessions use; its I/O threads stop first (in its destructor).
    session_hub sessions_;
    tick_hand_off hand_off_;  // broadcast_tick's frames, posted once it served every client
    boost::asio::steady_timer tick_timer_;
    boost::asio::steady_timer stats_timer_;
    bool running_{false};
    bool draining_{false};
    std::string failure_;
    // --state-dir: after everything it reads (types, metrics), destroyed before them.
    std::optional<persistence> persistence_;
    std::optional<restore_summary> restored_;
    bool restoring_{false};
    // What other threads read (health(), client_list()) and what the logs and metrics show.
    health_publisher health_;
    client_reports client_reports_;
    stats_log stats_log_;
    tick_profile profile_;  // the current tick's time by stage
    log_limiter tick_warnings_{10, std::chrono::seconds{10}};  // overruns, skipped ticks
};

}  // namespace ecsnet::server
