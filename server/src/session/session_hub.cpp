#include "ecsnet/server/session/session_hub.hpp"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "ecsnet/server/session/session.hpp"
#include "ecsnet/server/transport/stream.hpp"
#include "../transport/use_tuple.hpp"

namespace ecsnet::server {

namespace asio = boost::asio;
using detail::use_tuple;

namespace {

// After an accept error such as EMFILE the connection stays in the backlog: retrying at once
// would spin. Wait, then retry.
constexpr auto accept_backoff = std::chrono::milliseconds{150};

void log_if_failed(const char* what, const std::exception_ptr& e) {
    if (!e) {
        return;
    }
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& ex) {
        spdlog::critical("{} failed: {}", what, ex.what());
    } catch (...) {
        spdlog::critical("{} failed", what);
    }
}

}  // namespace

session_hub::session_hub(const world_side& world)
    : world_{world},
      ws_options_{world.config.ws_allowed_origins},
      pool_{world.config.io_threads},
      listener_{world.context},
      ws_listener_{world.context},
      connections_{world.context},
      commands_{world.context},
      connection_lines_{world.config.connection_log_lines == 0
                            ? std::numeric_limits<std::size_t>::max()
                            : world.config.connection_log_lines,
                        std::chrono::seconds{10}} {
    const server_config& config = world.config;
    if (!config.web_root.empty()) {
        ws_options_.web_root.emplace(config.web_root);
        ws_options_.pages = page_budget{page_limits{config.web_chunk_bytes, config.web_memory_bytes,
                                                    config.web_max_per_address,
                                                    config.web_stall_timeout}};
    }
}

session_hub::~session_hub() { pool_.stop(); }

void session_hub::listen() {
    const server_config& config = world_.config;
    if (!config.tls_cert.empty()) {
        tls_.emplace(make_server_tls_context(config.tls_cert, config.tls_key));
    }
    port_ = listen_on(listener_, config.bind, config.port, "--bind", "");
    if (config.ws_port >= 0) {
        ws_port_ = listen_on(ws_listener_, config.bind, static_cast<std::uint16_t>(config.ws_port),
                             "--bind", "WebSocket ");
    }
}

void session_hub::start_accepting() {
    const server_config& config = world_.config;
    accepting_ = true;
    spdlog::info("listening on {}:{} ({} I/O threads)", config.bind, port_, pool_.size());
    asio::co_spawn(world_.context, accept_loop(listener_, false),
                   [](const std::exception_ptr& e) { log_if_failed("accept loop", e); });
    if (!ws_listener_.is_open()) {
        return;
    }
    spdlog::info("WebSocket listening on {}:{} ({}; Origin: {})", config.bind, ws_port_,
                 tls_ ? "wss" : "ws",
                 config.ws_allowed_origins.empty()
                     ? std::string{"same host only"}
                     : fmt::format("{}", fmt::join(config.ws_allowed_origins, ", ")));
    if (ws_options_.web_root) {
        spdlog::info("the WebSocket port serves {} to plain HTTP GET (http{}://{}:{}/)",
                     config.web_root, tls_ ? "s" : "", config.bind, ws_port_);
    }
    asio::co_spawn(world_.context, accept_loop(ws_listener_, true),
                   [](const std::exception_ptr& e) { log_if_failed("WebSocket accept loop", e); });
}

void session_hub::stop_accepting(bool stopped) {
    accepting_ = false;
    stopped_ = stopped_ || stopped;
    boost::system::error_code ignored;
    listener_.close(ignored);
    ws_listener_.close(ignored);
}

void session_hub::disconnect_all(const std::string& failure) {
    // Copied first: a disconnect may close its session at once (closed() erases it).
    std::vector<std::shared_ptr<session>> all;
    for (const auto& [id, s] : connections_.sessions()) {
        all.push_back(s);
    }
    for (const auto& s : all) {
        if (failure.empty()) {
            s->disconnect("shutting down", disconnect_reason::shutdown);
        } else {
            s->disconnect_withholding_results(failure, disconnect_reason::shutdown);
        }
    }
}

asio::awaitable<void> session_hub::accept_loop(asio::ip::tcp::acceptor& listener, bool websocket) {
    const server_config& config = world_.config;
    server_metrics& metrics = world_.metrics;
    asio::steady_timer backoff{world_.context};
    while (accepting_) {
        // The socket is opened on the I/O thread its session will live on (round robin).
        auto context = pool_.next();
        auto [ec, socket] = co_await listener.async_accept(
            asio::any_io_executor{context->get_executor()}, use_tuple);
        if (!accepting_ || !listener.is_open()) {
            break;  // stop() or drain()
        }
        if (ec) {
            metrics.accept_error();
            std::size_t suppressed = 0;
            if (accept_warnings_.allow(suppressed)) {
                spdlog::warn("accept failed: {}; retrying in {} ms", ec.message(),
                             accept_backoff.count());
            }
            backoff.expires_after(accept_backoff);
            co_await backoff.async_wait(use_tuple);
            continue;
        }
        boost::system::error_code ignored;
        socket.set_option(asio::ip::tcp::no_delay(true), ignored);
        metrics.accepted(websocket);
        std::unique_ptr<byte_stream> stream;
        if (websocket) {
            stream = tls_ ? make_websocket_stream(std::move(socket), *tls_, ws_options_)
                          : make_websocket_stream(std::move(socket), ws_options_);
        } else {
            stream = tls_ ? make_tls_stream(std::move(socket), *tls_)
                          : make_tcp_stream(std::move(socket));
        }
        auto s = connections_.open(std::move(context), std::move(stream), *this);
        // Before Hello a connection holds no player slot, only one of --max-pending: silent
        // sockets cannot lock players out. One address may hold only so many; past the global
        // bound the oldest waiting connection makes room, so a prompt Hello still gets in.
        admission& identity = world_.identity;
        if (identity.pending_from(s->remote_address()) >= config.max_pending_per_address) {
            metrics.refused(refusal_reason::pending);
            s->refuse("too many connections from " + s->remote_address() + " waiting for Hello");
            changed();
            continue;
        }
        if (identity.pending() >= config.max_pending) {
            const auto oldest = connections_.find(identity.oldest_pending());
            metrics.pending_evicted();
            if (oldest != nullptr) {
                // Its slot is free at once; closed() forgets it when it has closed.
                end_pending(*oldest);
                oldest->close_now("closed to make room: too many connections waiting for Hello",
                                  disconnect_reason::refused);
            }
        }
        identity.pending_started(s->id(), s->remote_address());
        s->set_pending(true);
        spdlog::debug("client {} connected from {} ({})", s->id(), s->remote(), s->transport());
        s->start();
        changed();
    }
}

void session_hub::adopt_observer(released_socket socket, upgrade_request request) {
    asio::post(world_.context,
               [this, socket = std::move(socket), request = std::move(request)]() mutable {
                   start_observer(std::move(socket), std::move(request));
               });
}

void session_hub::start_observer(released_socket released, upgrade_request request) {
    if (!accepting_) {
        return;  // stopped or draining: the connection closes with `released`
    }
    auto context = pool_.next();
    asio::ip::tcp::socket socket{context->get_executor()};
    try {
        socket = released.attach(asio::any_io_executor{context->get_executor()});
    } catch (const std::exception& e) {
        spdlog::warn("observer connection lost before its session started: {}", e.what());
        return;
    }
    boost::system::error_code ignored;
    socket.set_option(asio::ip::tcp::no_delay(true), ignored);
    world_.metrics.accepted(true);
    auto s = connections_.open(
        context, make_websocket_stream(std::move(socket), std::move(request), ws_options_), *this,
        true);
    if (connections_.observers_open() > world_.config.max_observers) {
        world_.metrics.refused(refusal_reason::observers);
        s->refuse("too many observers (" + std::to_string(world_.config.max_observers) + ")");
    } else {
        spdlog::debug("observer {} connected from {}", s->id(), s->remote());
        s->start();
    }
    changed();
}

void session_hub::hello(const std::shared_ptr<session>& s, const protocol::hello& message) {
    if (s->observer() ? s->joined() || connections_.find(s->id()) == nullptr : !s->pending()) {
        return;  // evicted or closed meanwhile: it is closing and needs no answer
    }
    bool read_only = false;
    auto refused = s->observer() ? admit_observer(*s, message, read_only) : admit(*s, message);
    std::optional<std::string> text;
    if (refused) {
        world_.metrics.refused(refused->reason);
        text = std::move(refused->text);
    }
    // After Welcome and the snapshot, in the same queue.
    s->admitted(std::move(text), read_only);
    // /readyz and /status see a join or a refusal at once, not at the end of the next tick: a
    // server that just became full must not be reported ready for another up to one period.
    changed();
}

protocol::welcome session_hub::welcome_for(const protocol::hello& hello) const {
    return protocol::welcome{0,
                             hello.version,
                             static_cast<float>(world_.config.tick_rate),
                             world_.tick,
                             world_.config.checksum_interval,
                             {},
                             {},
                             world_.types.types()};
}

std::optional<session_hub::refusal> session_hub::admit_observer(session& s,
                                                                const protocol::hello& hello,
                                                                bool& read_only) {
    if (auto refused = admission::refuse_version(hello.version)) {
        return refusal{refusal_reason::version, std::move(*refused)};
    }
    // No --auth-token: the admin endpoint admitted it (--inspector-token, Origin), and the
    // inspector page does not know the players' shared secret.
    protocol::welcome welcome = welcome_for(hello);
    // With writes, an owner exactly as a player's Hello would get one; without a credential
    // in token mode, none: it stays read-only rather than refused.
    admission& identity = world_.identity;
    std::uint32_t owner = 0;
    if (world_.config.inspector_writes && identity.has_credential(hello)) {
        std::optional<connect_token_claims> token;
        if (auto refused = identity.identify(hello, welcome, token)) {
            return refusal{refusal_reason::identity, std::move(*refused)};
        }
        if (token) {
            identity.remember(*token);
        }
        owner = welcome.client_id;
        identity.owners().connected(owner);
        connections_.observer_acts_for(owner);
        identity.returned(owner);  // back within its reconnect grace: its entities stay
    }
    read_only = owner == 0;
    s.set_owner_id(owner);
    join(s, hello, welcome);
    return std::nullopt;
}

std::optional<session_hub::refusal> session_hub::admit(session& s, const protocol::hello& hello) {
    admission& identity = world_.identity;
    const server_config& config = world_.config;
    if (auto refused = admission::refuse_version(hello.version)) {
        return refusal{refusal_reason::version, std::move(*refused)};
    }
    if (!identity.secret_accepted(hello.auth_token)) {
        return refusal{refusal_reason::auth, "bad auth token"};
    }
    protocol::welcome welcome = welcome_for(hello);
    std::optional<connect_token_claims> token;
    if (auto refused = identity.identify(hello, welcome, token)) {
        return refusal{refusal_reason::identity, std::move(*refused)};
    }
    const std::uint32_t owner = welcome.client_id;
    const connections::seating seat = connections_.find_seat(
        owner, s.remote_address(),
        connections::seat_limits{config.max_clients, config.max_connections_per_player,
                                 config.max_clients_per_address, identity.uses_tokens()});
    if (seat.refused) {
        (void)identity.owners().forget_if_idle(owner);  // a new owner this Hello made goes
        return refusal{*seat.refused, seat.why};
    }
    for (session* other : seat.taken_over) {
        give_up_seat(*other);
    }
    if (token) {
        identity.remember(*token);
    }
    s.set_owner_id(owner);
    identity.owners().connected(owner);
    if (player_connections(owner) == 1) {
        world_.simulation.player_joined(owner, world_.simulation.commands().owned_by(owner) > 0);
    }
    identity.returned(owner);  // back within its reconnect grace: its entities stay
    if (interest_manager& interest = world_.interest; interest.enabled()) {
        const player_interest& p = interest.player(owner);
        welcome.interest_radius = p.radius;
        welcome.client_budget = static_cast<std::uint32_t>(
            std::min(interest.budget_of(p), double{std::numeric_limits<std::uint32_t>::max()}));
    }
    end_pending(s);
    join(s, hello, welcome);
    return std::nullopt;
}

void session_hub::join(session& s, const protocol::hello& hello, const protocol::welcome& welcome) {
    s.set_joined_as(hello.client_name, world_.tick);
    s.set_protocol_version(hello.version);
    connections_.seat(s);
    world_.replication.add_client(s.id(), s.owner_id(), s.observer());  // observers: the world
    s.set_joined(true);
    s.send(protocol::encode(protocol::server_control{welcome}));
    send_snapshot(s);
    if (!connection_lines_.allow()) {
        return;
    }
    if (s.observer()) {
        spdlog::info("observer {} ({}, {}) joined from {} at tick {}", s.id(),
                     printable(hello.client_name),
                     s.owner_id() == 0 ? std::string{"read-only"}
                                       : "owner " + std::to_string(s.owner_id()),
                     s.remote(), world_.tick);
    } else {
        spdlog::info("client {} ({}, owner {}{}) joined from {} at tick {}", s.id(),
                     printable(hello.client_name), welcome.client_id,
                     welcome.player_id.empty() ? std::string{}
                                               : ", player " + printable(welcome.player_id),
                     s.remote(), world_.tick);
    }
}

void session_hub::give_up_seat(session& s) {
    world_.replication.remove_client(s.id());
    s.set_joined(false);
    connections_.unseat(s);
    world_.metrics.seat_taken_over();
    spdlog::info("client {} (owner {}) signed in elsewhere: its seat goes to a newer connection",
                 s.id(), s.owner_id());
    s.disconnect("signed in elsewhere", disconnect_reason::taken_over);
}

std::size_t session_hub::player_connections(std::uint32_t owner) const {
    return world_.identity.owners().connections(owner) - connections_.observers_acting_for(owner);
}

void session_hub::end_pending(session& s) {
    if (!s.pending()) {
        return;
    }
    s.set_pending(false);
    world_.identity.pending_ended(s.id(), s.remote_address());
}

void session_hub::queue_command(const std::shared_ptr<session>& s, protocol::client_message message) {
    commands_.push(s, std::move(message));
    if (stopped_ && on_command_after_stop) {
        on_command_after_stop();
    }
}

void session_hub::queue_result(const std::shared_ptr<session>& s, protocol::command_result result) {
    commands_.push(s, std::move(result));
    if (stopped_ && on_command_after_stop) {
        on_command_after_stop();
    }
}

void session_hub::resync(const std::shared_ptr<session>& s) {
    if (!s->joined()) {
        return;  // closed meanwhile
    }
    send_snapshot(*s);
    s->snapshot_sent();
}

void session_hub::send_snapshot(session& s) {
    replicator& replication = world_.replication;
    for (auto& f : replication.start_frames(world_.world, s.id(), world_.tick)) {
        s.send_snapshot_chunk(std::move(f));
    }
    world_.metrics.snapshot_sent(replication.snapshot_bytes());
    snapshot_bytes_ = replication.snapshot_bytes();
}

void session_hub::queue_input(const std::shared_ptr<session>& s, protocol::input input) {
    if (!s->joined() || s->owner_id() == 0) {
        return;  // closed meanwhile
    }
    if (auto refused = world_.simulation.offer_input(s->owner_id(), input, world_.tick)) {
        world_.metrics.input_refused();
        s->refuse_input(std::move(*refused));
    }
}

void session_hub::set_focus(session& s, const protocol::focus& focus) {
    interest_manager& interest = world_.interest;
    if (interest.enabled() && interest.accepts_client_focus() && s.owner_id() != 0) {
        interest.set_focus(s.owner_id(), point{focus.x, focus.y});
    }
}

void session_hub::closed(session& s, const std::string& /*reason*/) {
    end_pending(s);
    world_.replication.remove_client(s.id());
    s.set_joined(false);
    connections_.closed(s);  // the session stays alive until this call returns
    owner_registry& owners = world_.identity.owners();
    const std::uint32_t owner = s.owner_id();
    const std::size_t remaining = owner == 0 ? 1 : owners.disconnected(owner);
    // A player's last connection went: the game hears of it even while an observer acting for
    // the same owner stays (and of nothing when that one goes).
    if (owner != 0 && !s.observer() && player_connections(owner) == 0) {
        world_.simulation.player_left(owner);
    }
    if (remaining == 0) {
        if (owners.forget_if_idle(owner)) {
            world_.interest.forget(owner);
        } else if (!world_.config.keep_entities_on_disconnect) {
            // At the first tick after the grace (only ticks write the world), and only if the
            // owner has not come back by then; the owner is forgotten once its last entity is
            // gone.
            world_.identity.left(owner, admission::clock::now() + world_.config.reconnect_grace);
        }
    }
    changed();  // a freed slot makes a full server ready at once
}

void session_hub::finished() {
    // A closing session still flushes (Disconnect, then FIN) after closed(): the world's
    // run() must not return, and the pool stop, before it is done.
    connections_.finished();
}

}  // namespace ecsnet::server
