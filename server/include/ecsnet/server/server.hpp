#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fmt/format.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <mutex>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "ecsnet/ecs/scheduler.hpp"
#include "ecsnet/protocol/checksum.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/protocol/replication.hpp"
#include "ecsnet/server/simulation/commands.hpp"
#include "ecsnet/server/config.hpp"
#include "ecsnet/server/admission/connect_token.hpp"
#include "ecsnet/server/game.hpp"
#include "ecsnet/server/simulation/input_buffer.hpp"
#include "ecsnet/server/replication/interest.hpp"
#include "ecsnet/server/transport/io_pool.hpp"
#include "ecsnet/server/operations/logging.hpp"
#include "ecsnet/server/operations/health_publisher.hpp"
#include "ecsnet/server/operations/metrics.hpp"
#include "ecsnet/server/admission/owners.hpp"
#include "ecsnet/server/persistence/persistence.hpp"
#include "ecsnet/server/admission/replay_cache.hpp"
#include "ecsnet/server/replication/replicator.hpp"
#include "ecsnet/server/session/session_host.hpp"
#include "ecsnet/server/transport/websocket_stream.hpp"

namespace ecsnet::server {

class session;



// A connected TCP socket taken out of its io_context (basic_socket::release()), for another
// thread to attach to one of its own; closed when destroyed untaken.
class released_socket {
public:
    explicit released_socket(boost::asio::ip::tcp::socket& socket);  // throws system_error
    released_socket(released_socket&& other) noexcept;
    released_socket(const released_socket&) = delete;
    released_socket& operator=(const released_socket&) = delete;
    released_socket& operator=(released_socket&&) = delete;
    ~released_socket();
    // The connection as a socket of `executor`'s context. Throws system_error.
    [[nodiscard]] boost::asio::ip::tcp::socket attach(const boost::asio::any_io_executor& executor);

private:
    boost::asio::ip::tcp protocol_;
    boost::asio::ip::tcp::socket::native_handle_type handle_;
};

// The ecsnet service. The world runs on the one thread that runs the io_context: the tick
// timer, the systems, command application, the accept loop, admission (Hello) and the owner
// registry; nothing else touches the world, so it needs no lock. The sessions' socket I/O
// (reads, writes, TLS, timeouts) runs on --io-threads threads of the server's io_pool. The two
// sides hand work to each other by posting handlers, never by sharing fields: a tick's frames
// are immutable shared buffers posted to every session; a session posts Hello, its commands,
// its resync requests and its end back (docs/SERVER.md, "Threads").
//
// Each tick, on absolute deadlines: apply the commands received since the last tick in
// arrival order -> run the systems (each followed by a sync point) -> take the change set ->
// the interest policy catches up -> the replicator makes each joined client's frames (one
// delta encoded once for all, or under interest management each client's own) and the
// checksums -> queued to the sessions. Nothing else writes to the world, so a snapshot taken
// between ticks and the deltas after it always agree.
class server final : private session_host {
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

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    // The WebSocket port (--ws-port); 0 when off.
    [[nodiscard]] std::uint16_t ws_port() const noexcept { return ws_port_; }
    // The --web-root page connections' counters (any thread).
    [[nodiscard]] page_stats web_pages() const { return ws_options_.pages.stats(); }
    [[nodiscard]] std::uint64_t tick() const noexcept { return tick_; }
    [[nodiscard]] const ecs::World& world() const noexcept { return *world_; }
    [[nodiscard]] ecs::World& world() noexcept { return *world_; }
    [[nodiscard]] ecs::Scheduler& scheduler() noexcept { return scheduler_; }
    // The replicated component types, as Welcome describes them.
    [[nodiscard]] const protocol::component_registry& types() const noexcept override {
        return types_;
    }
    // The world's counters and the sessions' (added from the I/O threads), as of now, read
    // from the metrics. Any thread.
    [[nodiscard]] server_stats stats() const;
    // GET /metrics: the Prometheus text exposition (format 0.0.4). Any thread; never waits
    // for a tick.
    [[nodiscard]] std::string metrics_text() const { return metrics_.text(); }
    [[nodiscard]] const server_config& config() const noexcept override { return config_; }
    // Size of the last snapshot sent (all chunks); 0 before the first join.
    // Any thread.
    [[nodiscard]] std::size_t snapshot_bytes() const noexcept override { return snapshot_bytes_; }
    [[nodiscard]] std::size_t clients() const noexcept { return active_; }
    // Joined observers (not in clients()).
    [[nodiscard]] std::size_t observers() const noexcept { return observers_; }
    // Connections that have not completed Hello.
    [[nodiscard]] std::size_t pending_connections() const noexcept { return pending_ids_.size(); }
    [[nodiscard]] const owner_registry& owners() const noexcept { return owners_; }
    // Interest management (docs/INTEREST.md): off until the game sets a policy, e.g.
    // interest().use_grid<Position>(...); the defaults come from --interest-*, --client-budget.
    [[nodiscard]] interest_manager& interest() noexcept { return interest_; }
    // The view of a connection (by session id) under interest management, or null.
    [[nodiscard]] const client_view* view_of(std::uint64_t session_id) const noexcept {
        return replicator_.view(session_id);
    }
    // Session ids of the joined connections, in connection order.
    [[nodiscard]] std::vector<std::uint64_t> joined_sessions() const;

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
    // session_host: what sessions call (posted to this thread, but for the first group).
    [[nodiscard]] session_counters& counters() noexcept override { return metrics_; }
    [[nodiscard]] log_limiter& client_warnings() noexcept override { return client_warnings_; }
    [[nodiscard]] log_limiter& connection_lines() noexcept override { return connection_lines_; }
    [[nodiscard]] boost::asio::io_context& world_context() noexcept override { return io_; }
    [[nodiscard]] std::uint64_t ticks_done() const noexcept override {
        return ticks_done_.load(std::memory_order_relaxed);
    }
    void hello(const std::shared_ptr<session>& s, const protocol::hello& message) override;
    void queue_command(const std::shared_ptr<session>& s, protocol::client_message message) override;
    void queue_result(const std::shared_ptr<session>& s, protocol::command_result result) override;
    // A resync's snapshot: send_snapshot(), then snapshot_sent().
    void resync(const std::shared_ptr<session>& s) override;
    void set_focus(session& s, const protocol::focus& focus) override;
    // Checks an Input against the world (owner, entity) and the buffer (too early), keeps it
    // for its ticks; a refusal goes back to the session (InputRejected).
    void queue_input(const std::shared_ptr<session>& s, protocol::input input) override;
    void closed(session& s, const std::string& reason) override;
    void finished() override;

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
    [[nodiscard]] std::optional<refusal> refuse_version(const protocol::hello& hello) const;
    void start_observer(released_socket socket, upgrade_request request);
    // Player connections of an owner (its connections that are not observers).
    [[nodiscard]] std::size_t player_connections(std::uint32_t owner) const;
    // The /clients report and the bytes per second, at most once a second (`now`: always).
    void publish_clients(bool now = false);
    void send_snapshot(session& s);

    // Sessions over `listener`: TCP (or TLS), or WebSocket (wss with the TLS context).
    boost::asio::awaitable<void> accept_loop(boost::asio::ip::tcp::acceptor& listener, bool websocket);
    boost::asio::awaitable<void> tick_loop();
    boost::asio::awaitable<void> stats_loop();
    void run_tick();
    // ecsnet_system_failures_total at 0 for every system and hook not exported yet.
    void export_system_failures();
    // Applies the commands queued since the last tick and sends every reply owed, in order.
    void apply_pending_commands();
    // Despawns the entities of owners whose reconnect grace ended without a connection.
    void despawn_departed();
    // Applies this tick's player inputs (input_buffer), before the systems.
    void apply_inputs();
    // Logs (rate-limited, on game_errors_) a failure of the game's code, counted already:
    // `so_far` of its kind.
    template <typename... Args>
    void report_game_failure(std::uint64_t so_far, fmt::format_string<Args...> text,
                             Args&&... args);
    // Publishes what health() reports (health_); once per tick and on state changes.
    // `tick_ms`: the work time of the tick that ended, for /status.
    void publish_health(bool tick_ended = false, double tick_ms = 0.0);
    void tick_loop_ended(const std::exception_ptr& e);
    // Queues the tick's frames (replicator) to every joined session.
    void broadcast_tick(const ecs::World::change_set_type& changes);
    // Each budgeted client's bytes this tick against its budget (ecsnet_client_budget_use_ratio).
    void measure_budgets();

    struct pending_command {
        std::weak_ptr<session> from;
        std::uint32_t client;
        std::variant<protocol::client_message, protocol::command_result> what;
    };
    void start_pending(const std::shared_ptr<session>& s);
    void end_pending(session& s);
    // The owner a Hello's credential names (resume key, or a connect token), or why it is
    // refused; creates nothing the refusal would leave behind but an idle owner. A verified,
    // fresh token's claims go to `token`, remembered once the connection is admitted.
    [[nodiscard]] std::optional<std::string> identify(const protocol::hello& hello,
                                                      protocol::welcome& welcome,
                                                      std::optional<connect_token_claims>& token);
    // A newer connection of the same owner took this one's seat.
    void give_up_seat(session& s);

    boost::asio::io_context& io_;
    server_config config_;
    // Before the sessions and the I/O threads, which count into it.
    server_metrics metrics_;
    protocol::component_registry types_;
    std::shared_ptr<ecs::World> world_;
    ecs::World::change_set_type changes_;  // this tick's; kept so its lists keep their capacity
    ecs::Scheduler scheduler_;
    command_processor commands_;
    interest_manager interest_;
    replicator replicator_;
    input_buffer inputs_;

    std::optional<boost::asio::ssl::context> tls_;
    websocket_options ws_options_;
    // After what sessions use (config, types, TLS context), before the sessions: stopped first
    // (in ~server), its contexts outlive every session.
    io_pool pool_;
    boost::asio::ip::tcp::acceptor acceptor_;
    boost::asio::ip::tcp::acceptor ws_acceptor_;
    boost::asio::steady_timer tick_timer_;
    boost::asio::steady_timer stats_timer_;
    std::uint16_t port_{0};
    std::uint16_t ws_port_{0};
    bool running_{false};
    bool draining_{false};

    std::map<std::uint64_t, std::shared_ptr<session>> sessions_;
    // Until every session has closed its socket, the io_context's run() must not return: they
    // flush on the I/O threads after closed(), and post finished() here at the very end.
    std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>>
        sessions_work_;
    std::size_t unfinished_sessions_{0};
    std::uint64_t next_session_id_{1};  // connection numbers, for logs; 64 bits never wrap
    owner_registry owners_;
    std::optional<token_verifier> tokens_;  // set: identity by connect tokens
    replay_cache admitted_tokens_;
    std::set<std::uint64_t> pending_ids_;  // before Hello, oldest first
    std::unordered_map<std::string, std::size_t> pending_per_address_;
    std::size_t active_{0};
    std::size_t observers_{0};          // joined
    std::size_t observer_sessions_{0};  // connected, joined or not: --max-observers
    std::unordered_map<std::uint32_t, std::size_t> observer_connections_;  // by owner
    clock::time_point clients_reported_at_{};
    std::uint64_t bytes_out_reported_{0};
    std::uint64_t bytes_in_reported_{0};
    std::vector<pending_command> pending_;
    // Owners whose last connection left, in the order their reconnect grace ends (the grace is
    // one length for all); an entry is stale when the owner came back or left again since.
    struct player_event {
        std::uint32_t owner;
        bool joined;  // else left
        bool resumed;
    };
    std::vector<player_event> player_events_;  // for on_player_joined/left at the next tick
    std::size_t systems_exported_{0};
    std::array<bool, 2> hooks_exported_{};  // on_player_joined, on_player_left
    void tell_player_events();
    struct departure {
        clock::time_point despawn_at;
        std::uint32_t owner;
    };
    std::deque<departure> departures_;
    std::unordered_map<std::uint32_t, clock::time_point> departed_;  // owner -> its despawn_at

    std::uint64_t tick_{0};
    std::atomic<std::uint64_t> ticks_done_{0};  // tick_, for the sessions' Pongs
    std::atomic<std::size_t> snapshot_bytes_{0};  // read by sessions (their queue bound)

    input_counters inputs_counted_{};     // inputs_.counters() as the metrics last counted them
    std::vector<double> budget_ratios_;   // measure_budgets()'s, kept for their capacity
    // --state-dir: after everything it reads (types, metrics), destroyed before them.
    std::optional<persistence> persistence_;
    std::optional<restore_summary> restored_;
    bool restoring_{false};
    // Journal writes end on the journal's thread; what they release is posted here, and must
    // not reach a server that is gone.
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
    std::string failure_;
    // With --journal: the replies of this tick's commands wait until the journal has them.
    using held_results = std::vector<std::pair<std::weak_ptr<session>, protocol::command_result>>;
    held_results held_results_;
    void record_in_journal(journal_writer& journal, const protocol::client_message& message,
                           const protocol::command_result& result);
    // What the tick's systems, hooks and despawns created or destroyed, beside its commands'
    // records: a replay then gives back every entity and id (docs/PERSISTENCE.md).
    void journal_structure(journal_writer& journal, const ecs::World::change_set_type& changes);
    // The tick's batch: its records made durable, then its held replies sent.
    void commit_journal();
    // An admitted connect token: refused from now on, after a restart too.
    void remember_token(const connect_token_claims& token);
    void send_when_durable(journal_writer& journal,
                           std::vector<std::pair<std::weak_ptr<session>, protocol::command_result>> results);

    std::vector<double> tick_ms_;  // since the last stats line
    std::vector<double> interest_ms_;  // ms per tick serving the views, since the last stats line
    std::uint64_t bytes_at_last_stats_{0};
    log_limiter server_warnings_{10, std::chrono::seconds{10}};   // accept errors, overruns
    log_limiter game_errors_{10, std::chrono::seconds{10}};       // the game's code failed
    log_limiter client_warnings_{10, std::chrono::seconds{10}};   // a client misbehaved
    log_limiter connection_lines_;  // joins, leaves, refusals: --connection-log-lines

    // What health() and client_list() return to other threads: published by this thread.
    health_publisher health_;
};

}  // namespace ecsnet::server
