#include "ecsnet/server/server.hpp"

#include <fmt/ranges.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "ecsnet/protocol/checksum.hpp"
#include "ecsnet/server/admission/connect_token.hpp"
#include "ecsnet/server/session/session.hpp"

namespace ecsnet::server {

namespace asio = boost::asio;
using asio::awaitable;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
// After an accept error such as EMFILE the connection stays in the backlog: retrying at once
// would spin. Wait, then retry.
constexpr auto accept_backoff = std::chrono::milliseconds{150};
// A tick loop that is late by more than this many periods (a stall, a VM pause) skips the
// missed ticks instead of replaying them back to back, and re-anchors its deadlines.
constexpr std::int64_t max_catch_up_ticks = 5;

void log_exception(const char* what, const std::exception_ptr& e) {
    if (e) {
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& ex) {
            spdlog::critical("{} failed: {}", what, ex.what());
        }
    }
}

bool same_secret(const std::string& a, const std::string& b) {
    // Constant time in the content: do not leak how much of the token matched. Comparing
    // digests also hides the length.
    std::array<unsigned char, SHA256_DIGEST_LENGTH> x{};
    std::array<unsigned char, SHA256_DIGEST_LENGTH> y{};
    SHA256(reinterpret_cast<const unsigned char*>(a.data()), a.size(), x.data());
    SHA256(reinterpret_cast<const unsigned char*>(b.data()), b.size(), y.data());
    return CRYPTO_memcmp(x.data(), y.data(), x.size()) == 0;
}

}  // namespace

namespace {

protocol::component_registry registry_of(const game& g) {
    protocol::component_registry types;
    if (g.register_components) {
        g.register_components(types);
    }
    return types;
}

}  // namespace

released_socket::released_socket(asio::ip::tcp::socket& socket)
    : protocol_{socket.local_endpoint().protocol()}, handle_{socket.release()} {}

released_socket::released_socket(released_socket&& other) noexcept
    : protocol_{other.protocol_}, handle_{std::exchange(other.handle_, -1)} {}

released_socket::~released_socket() {
    if (handle_ >= 0) {
        ::close(handle_);
    }
}

asio::ip::tcp::socket released_socket::attach(const asio::any_io_executor& executor) {
    asio::ip::tcp::socket socket{executor};
    socket.assign(protocol_, handle_);  // throws: the handle stays ours, closed below
    handle_ = -1;
    return socket;
}

server::server(asio::io_context& io, server_config config) : server(io, std::move(config), game{}) {}

server::server(asio::io_context& io, server_config config, const game& g)
    : io_{io},
      config_{std::move(config)},
      metrics_{1.0 / config_.tick_rate, config_.max_clients},
      types_{registry_of(g)},
      world_{ecs::World::make()},
      scheduler_{1.0 / config_.tick_rate},
      commands_{*world_, types_, command_limits{config_.max_entities_per_client, config_.max_entities}},
      replicator_{types_, interest_,
                  replicator_options{config_.tick_rate, config_.checksum_interval,
                                     config_.checksum_slice}},
      inputs_{config_.input_buffer_ticks},
      ws_options_{config_.ws_allowed_origins},
      pool_{config_.io_threads},
      acceptor_{io},
      ws_acceptor_{io},
      tick_timer_{io},
      stats_timer_{io},
      owners_{[this](std::uint32_t id) { return commands_.owned_by(id) > 0; }},
      admitted_tokens_{config_.max_remembered_tokens},
      connection_lines_{config_.connection_log_lines == 0 ? std::numeric_limits<std::size_t>::max()
                                                          : config_.connection_log_lines,
                        std::chrono::seconds{10}},
      health_{health_publisher::settings{config_.tick_rate, config_.max_clients,
                                         config_.inspector_writes,
                                         !config_.inspector_token.empty()}} {
    if (!config_.token_secret.empty() && !config_.token_public_key.empty()) {
        throw std::invalid_argument("give --token-secret or --token-public-key, not both");
    }
    if (!config_.token_secret.empty()) {
        tokens_ = hs256_verifier(config_.token_secret);
    } else if (!config_.token_public_key.empty()) {
        tokens_ = es256_verifier(read_key_file(config_.token_public_key));
    }
    // An owner without connections whose last entity ends (lifetime, despawn) is forgotten.
    // Its interest settings (focus, relevance, budget) go with it.
    commands_.on_last_entity_gone = [this](std::uint32_t owner) {
        // Not while a journal replays: an owner may own nothing between two of its records,
        // and nobody is connected yet. The restore sorts the idle owners out at its end.
        if (!restoring_ && owners_.forget_if_idle(owner)) {
            interest_.forget(owner);
        }
    };
    if (!config_.web_root.empty()) {
        ws_options_.web_root.emplace(config_.web_root);
        ws_options_.pages = page_budget{page_limits{config_.web_chunk_bytes, config_.web_memory_bytes,
                                                    config_.web_max_per_address,
                                                    config_.web_stall_timeout}};
    }
    interest_.set_defaults(interest_manager::defaults{config_.interest_radius, config_.client_budget});
    interest_.on_policy_failure = [this](std::string_view call, std::string_view what) {
        report_game_failure(metrics_.game_failed(game_failure_kind::policy),
                            "tick {}: the interest policy's {} failed: {} (the tick went on "
                            "without it)",
                            tick_, call, printable(what, 200));
    };
    if (config_.journal && config_.state_dir.empty()) {
        throw std::invalid_argument("--journal needs --state-dir");
    }
    if (!config_.state_dir.empty()) {
        persistence_.emplace(config_, g.name.empty() ? std::string{"ecsnet"} : g.name, types_,
                             metrics_, admitted_tokens_);
        restoring_ = true;
        restored_ = persistence_->restore(*world_, owners_);
        restoring_ = false;
        if (restored_) {
            tick_ = restored_->tick;
            ticks_done_.store(tick_, std::memory_order_relaxed);
            // Nobody is connected: every owner is as after a disconnect. Its reconnect grace
            // starts now (unless entities are kept for ever); an owner of nothing goes.
            const auto despawn_at = clock::now() + config_.reconnect_grace;
            for (const std::uint32_t owner : owners_.ids()) {
                if (owners_.forget_if_idle(owner)) {
                    interest_.forget(owner);
                } else if (!config_.keep_entities_on_disconnect) {
                    departed_[owner] = despawn_at;
                    departures_.push_back(departure{despawn_at, owner});
                }
            }
        }
    }
    if (g.setup) {
        g.setup(*this);
    }
    if (persistence_) {
        persistence_->start(*world_, owners_, tick_);
    }
}

server::~server() {
    // Before any member goes: the I/O threads use the config, the counters, the log limiter.
    pool_.stop();
}

server_stats server::stats() const { return metrics_.read(); }

void server::start() {
    if (!config_.tls_cert.empty()) {
        tls_.emplace(make_server_tls_context(config_.tls_cert, config_.tls_key));
    }
    port_ = listen_on(acceptor_, config_.bind, config_.port, "--bind", "");
    if (config_.ws_port >= 0) {
        ws_port_ = listen_on(ws_acceptor_, config_.bind, static_cast<std::uint16_t>(config_.ws_port),
                             "--bind", "WebSocket ");
    }
    if (tokens_ && config_.world_id == "default") {
        spdlog::warn("connect tokens are checked against world id 'default' (no --world-id): "
                     "a token for any other server left at the default admits here too; give "
                     "each world its own --world-id (ECSNET_WORLD_ID)");
    }

    // The first snapshot carries what the game made at setup; the interest policy learns it
    // from the same changes.
    interest_.update(*world_, world_->take_changes());

    running_ = true;
    health_.tick_loop_started(ws_port_);
    publish_health();
    publish_clients(true);
    spdlog::info("ecsnet-server starting: {}", describe(config_));
    spdlog::info("listening on {}:{} ({} I/O threads)", config_.bind, port_, pool_.size());
    asio::co_spawn(io_, accept_loop(acceptor_, false),
                   [](const std::exception_ptr& e) { log_exception("accept loop", e); });
    if (ws_acceptor_.is_open()) {
        spdlog::info("WebSocket listening on {}:{} ({}; Origin: {})", config_.bind, ws_port_,
                     tls_ ? "wss" : "ws",
                     config_.ws_allowed_origins.empty() ? std::string{"same host only"}
                                                        : fmt::format("{}", fmt::join(config_.ws_allowed_origins, ", ")));
        if (ws_options_.web_root) {
            spdlog::info("the WebSocket port serves {} to plain HTTP GET (http{}://{}:{}/)",
                         config_.web_root, tls_ ? "s" : "", config_.bind, ws_port_);
        }
        asio::co_spawn(io_, accept_loop(ws_acceptor_, true),
                       [](const std::exception_ptr& e) { log_exception("WebSocket accept loop", e); });
    }
    asio::co_spawn(io_, tick_loop(), [this](const std::exception_ptr& e) {
        log_exception("tick loop", e);
        tick_loop_ended(e);
    });
    asio::co_spawn(io_, stats_loop(), [](const std::exception_ptr& e) { log_exception("stats loop", e); });
}

void server::stop() {
    if (!running_) {
        return;
    }
    running_ = false;
    draining_ = true;
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    ws_acceptor_.close(ignored);
    tick_timer_.cancel();
    stats_timer_.cancel();
    publish_health();
    spdlog::info("shutting down: {} clients, tick {}", active_, tick_);
    if (failure_.empty()) {
        if (persistence_) {
            // What the last commands change belongs to a tick after the last checkpoint's.
            ++tick_;
        }
        // Commands received since the last tick are applied and answered: replies are owed.
        apply_pending_commands();
        commit_journal();
    }
    if (persistence_ && !persistence_->final_checkpoint(*world_, owners_, tick_) &&
        failure_.empty()) {
        failure_ = "the final checkpoint could not be written (see the error above)";
    }
    std::vector<std::shared_ptr<session>> all;
    for (const auto& [id, s] : sessions_) {
        all.push_back(s);
    }
    for (const auto& s : all) {
        if (failure_.empty()) {
            s->disconnect("shutting down", disconnect_reason::shutdown);
        } else {
            s->disconnect_withholding_results(failure_, disconnect_reason::shutdown);
        }
    }
    if (on_stop) {
        on_stop();
    }
}

void server::fail(std::string reason) {
    if (!failure_.empty()) {
        return;  // the first failure is the one to report (each later batch fails the same)
    }
    failure_ = std::move(reason);
    spdlog::critical("{}: shutting down", failure_);
    stop();
}

void server::drain() {
    if (!running_ || draining_) {
        return;
    }
    draining_ = true;
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    ws_acceptor_.close(ignored);
    publish_health();
    spdlog::info("draining: the listener is closed; {} clients stay connected, tick {}", active_,
                 tick_);
}

void server::publish_health(bool tick_ended, double tick_ms) {
    server_health::interest_settings interest{interest_.enabled(), 0.0F,
                                              interest_.default_settings().radius, 0};
    if (const auto* grid = dynamic_cast<const grid_interest*>(interest_.policy())) {
        interest.cell_size = grid->grid().cell_size();
    }
    // Budgets apply only under interest management (without it every client shares one stream).
    if (interest_.enabled() && interest_.default_settings().budget > 0.0) {
        interest.budget_bytes_per_tick = static_cast<std::uint64_t>(
            std::llround(interest_.default_settings().budget / config_.tick_rate));
    }
    metrics_.set_world(server_metrics::world_state{tick_, world_->alive(), active_,
                                                   pending_ids_.size(), observers_, draining_});
    health_.publish(health_publisher::world_state{running_ && acceptor_.is_open(), draining_, tick_,
                                                  active_, observers_, world_->alive(), stats(),
                                                  interest},
                    tick_ended, tick_ms);
}

void server::tick_loop_ended(const std::exception_ptr& e) {
    std::string why = "stopped (shutting down)";
    if (e) {
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& ex) {
            why = std::string{"failed: "} + ex.what();
        } catch (...) {
            why = "failed";
        }
    }
    health_.tick_loop_ended(std::move(why));
}

awaitable<void> server::accept_loop(asio::ip::tcp::acceptor& listener, bool websocket) {
    asio::steady_timer backoff{io_};
    while (running_) {
        // The socket is opened on the I/O thread its session will live on (round robin).
        auto context = pool_.next();
        auto [ec, socket] = co_await listener.async_accept(
            asio::any_io_executor{context->get_executor()}, use_tuple);
        if (!running_ || !listener.is_open()) {
            break;  // stop() or drain()
        }
        if (ec) {
            metrics_.accept_error();
            std::size_t suppressed = 0;
            if (server_warnings_.allow(suppressed)) {
                spdlog::warn("accept failed: {}; retrying in {} ms", ec.message(),
                             accept_backoff.count());
            }
            backoff.expires_after(accept_backoff);
            co_await backoff.async_wait(use_tuple);
            continue;
        }
        boost::system::error_code ignored;
        socket.set_option(asio::ip::tcp::no_delay(true), ignored);
        metrics_.accepted(websocket);
        const std::uint64_t id = next_session_id_++;
        std::unique_ptr<byte_stream> stream;
        if (websocket) {
            stream = tls_ ? make_websocket_stream(std::move(socket), *tls_, ws_options_)
                          : make_websocket_stream(std::move(socket), ws_options_);
        } else {
            stream = tls_ ? make_tls_stream(std::move(socket), *tls_)
                          : make_tcp_stream(std::move(socket));
        }
        auto s = std::make_shared<session>(std::move(context), std::move(stream),
                                           static_cast<session_host&>(*this), id);
        if (unfinished_sessions_++ == 0) {
            sessions_work_.emplace(io_.get_executor());
        }
        sessions_.emplace(id, s);
        // Before Hello a connection holds no player slot, only one of --max-pending: silent
        // sockets cannot lock players out. One address may hold only so many; past the global
        // bound the oldest waiting connection makes room, so a prompt Hello still gets in.
        const auto per_address = pending_per_address_.find(s->remote_address());
        if (per_address != pending_per_address_.end() &&
            per_address->second >= config_.max_pending_per_address) {
            metrics_.refused(refusal_reason::pending);
            s->refuse("too many connections from " + s->remote_address() + " waiting for Hello");
            publish_health();
            continue;
        }
        if (pending_ids_.size() >= config_.max_pending) {
            const auto oldest = sessions_.find(*pending_ids_.begin());
            metrics_.pending_evicted();
            if (oldest != sessions_.end()) {
                // Its slot is free at once; closed() erases it from sessions_ when it has closed.
                end_pending(*oldest->second);
                oldest->second->close_now(
                    "closed to make room: too many connections waiting for Hello",
                    disconnect_reason::refused);
            }
        }
        start_pending(s);
        spdlog::debug("client {} connected from {} ({})", id, s->remote(), s->transport());
        s->start();
        publish_health();
    }
}

void server::adopt_observer(released_socket socket, upgrade_request request) {
    asio::post(io_, [this, socket = std::move(socket), request = std::move(request)]() mutable {
        start_observer(std::move(socket), std::move(request));
    });
}

void server::start_observer(released_socket released, upgrade_request request) {
    if (!running_ || draining_) {
        return;  // the connection closes with `released`
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
    metrics_.accepted(true);
    const std::uint64_t id = next_session_id_++;
    auto s = std::make_shared<session>(
        context, make_websocket_stream(std::move(socket), std::move(request), ws_options_),
        static_cast<session_host&>(*this), id, true);
    if (unfinished_sessions_++ == 0) {
        sessions_work_.emplace(io_.get_executor());
    }
    sessions_.emplace(id, s);
    // Counted from the upgrade, joined or not: the bound holds for connections that never
    // send Hello too (the Hello deadline closes those).
    if (++observer_sessions_ > config_.max_observers) {
        metrics_.refused(refusal_reason::observers);
        s->refuse("too many observers (" + std::to_string(config_.max_observers) + ")");
    } else {
        spdlog::debug("observer {} connected from {}", id, s->remote());
        s->start();
    }
    publish_health();
}

std::size_t server::player_connections(std::uint32_t owner) const {
    const auto it = observer_connections_.find(owner);
    return owners_.connections(owner) - (it == observer_connections_.end() ? 0 : it->second);
}

void server::start_pending(const std::shared_ptr<session>& s) {
    pending_ids_.insert(s->id());
    ++pending_per_address_[s->remote_address()];
    s->set_pending(true);
}

void server::end_pending(session& s) {
    if (!s.pending()) {
        return;
    }
    s.set_pending(false);
    pending_ids_.erase(s.id());
    const auto it = pending_per_address_.find(s.remote_address());
    if (it != pending_per_address_.end() && --it->second == 0) {
        pending_per_address_.erase(it);
    }
}

std::optional<std::string> server::identify(const protocol::hello& hello,
                                            protocol::welcome& welcome,
                                            std::optional<connect_token_claims>& token) {
    // Ownership follows a credential, never the name (display only): the resume key this
    // server gave the owner at an earlier Welcome, or a verified connect token's player.
    owner_registry::claim claim;
    if (!tokens_) {
        claim = owners_.claim_by_key(hello.resume_key);
    } else if (auto resumed = owners_.find_by_key(hello.resume_key)) {
        claim = *resumed;  // a reconnect: no new token needed, a used one is not looked at
    } else if (hello.connect_token.empty()) {
        return std::string{hello.resume_key.empty()
                               ? "connect token required (this server issues identities "
                                 "through its game backend)"
                               : "resume key unknown (its owner is gone) and no connect token: "
                                 "get a new token from the game's backend"};
    } else {
        auto verified = verify_connect_token(hello.connect_token, *tokens_, config_.world_id);
        if (auto* why = std::get_if<std::string>(&verified)) {
            return std::move(*why);
        }
        auto& claims = std::get<connect_token_claims>(verified);
        switch (admitted_tokens_.check(claims.player, claims.jti,
                                       std::chrono::system_clock::now())) {
        case replay_cache::verdict::replayed:
            return "connect token already used (jti " + printable(claims.jti) +
                   "): reconnect with Welcome's resume key, or get a new token";
        case replay_cache::verdict::full:
            return "connect token refused: " + std::to_string(admitted_tokens_.capacity()) +
                   " admitted tokens are remembered until they expire "
                   "(--max-remembered-tokens); try again later";
        case replay_cache::verdict::fresh:
            break;
        }
        claim = owners_.claim_by_player(claims.player);
        token = std::move(claims);
    }
    if (claim.new_key && persistence_ && persistence_->journal() != nullptr) {
        // Before any command of this owner: its entities can only be replayed after it.
        persistence_->journal()->owner(owners_.save(claim.owner));
    }
    welcome.player_id = owners_.player_of(claim.owner);
    welcome.resume_key.assign(claim.key->begin(), claim.key->end());
    welcome.client_id = claim.owner;
    return std::nullopt;
}

void server::give_up_seat(session& s) {
    replicator_.remove_client(s.id());
    s.set_joined(false);
    if (s.counted()) {
        s.set_counted(false);
        --active_;
    }
    metrics_.seat_taken_over();
    spdlog::info("client {} (owner {}) signed in elsewhere: its seat goes to a newer connection",
                 s.id(), s.owner_id());
    s.disconnect("signed in elsewhere", disconnect_reason::taken_over);
}

void server::hello(const std::shared_ptr<session>& s, const protocol::hello& message) {
    if (s->observer() ? s->joined() || !sessions_.contains(s->id()) : !s->pending()) {
        return;  // evicted or closed meanwhile: it is closing and needs no answer
    }
    bool read_only = false;
    auto refused = s->observer() ? admit_observer(*s, message, read_only) : admit(*s, message);
    std::optional<std::string> text;
    if (refused) {
        metrics_.refused(refused->reason);
        text = std::move(refused->text);
    }
    // After Welcome and the snapshot, in the same queue.
    s->admitted(std::move(text), read_only);
    // /readyz and /status see a join or a refusal at once, not at the end of the next tick: a
    // server that just became full must not be reported ready for another up to one period.
    publish_health();
}

std::optional<server::refusal> server::refuse_version(const protocol::hello& hello) const {
    if (hello.version < protocol::oldest_protocol_version ||
        hello.version > protocol::protocol_version) {
        return refusal{refusal_reason::version, "protocol version " + std::to_string(hello.version) +
               " not supported (server speaks " +
               std::to_string(protocol::oldest_protocol_version) + " to " +
               std::to_string(protocol::protocol_version) + ")"};
    }
    return std::nullopt;
}

std::optional<server::refusal> server::admit_observer(session& s, const protocol::hello& hello,
                                                  bool& read_only) {
    if (auto refused = refuse_version(hello)) {
        return refused;
    }
    // No --auth-token: the admin endpoint admitted it (--inspector-token, Origin), and the
    // inspector page does not know the players' shared secret.
    protocol::welcome welcome{0, hello.version, static_cast<float>(config_.tick_rate),
                              tick_, config_.checksum_interval, {}, {}, types_.types()};
    // With writes, an owner exactly as a player's Hello would get one; without a credential
    // in token mode, none: it stays read-only rather than refused.
    const bool has_credential = !tokens_ || !hello.connect_token.empty() ||
                                owners_.find_by_key(hello.resume_key).has_value();
    std::uint32_t owner = 0;
    if (config_.inspector_writes && has_credential) {
        std::optional<connect_token_claims> token;
        if (auto refused = identify(hello, welcome, token)) {
            return refusal{refusal_reason::identity, std::move(*refused)};
        }
        if (token) {
            remember_token(*token);
        }
        owner = welcome.client_id;
        owners_.connected(owner);
        ++observer_connections_[owner];
        departed_.erase(owner);  // back within its reconnect grace: its entities stay
    }
    read_only = owner == 0;
    s.set_owner_id(owner);
    s.set_joined_as(hello.client_name, tick_);
    ++observers_;
    s.set_counted(true);
    replicator_.add_client(s.id(), owner, true);
    s.set_joined(true);
    s.send(protocol::encode(protocol::server_control{welcome}));
    send_snapshot(s);
    if (connection_lines_.allow()) {
        spdlog::info("observer {} ({}, {}) joined from {} at tick {}", s.id(),
                     printable(hello.client_name),
                     read_only ? std::string{"read-only"} : "owner " + std::to_string(owner),
                     s.remote(), tick_);
    }
    return std::nullopt;
}

std::optional<server::refusal> server::admit(session& s, const protocol::hello& hello) {
    if (auto refused = refuse_version(hello)) {
        return refused;
    }
    if (!config_.auth_token.empty() && !same_secret(hello.auth_token, config_.auth_token)) {
        return refusal{refusal_reason::auth, "bad auth token"};
    }
    protocol::welcome welcome{0, hello.version, static_cast<float>(config_.tick_rate),
                              tick_, config_.checksum_interval, {}, {}, types_.types()};
    std::optional<connect_token_claims> token;
    if (auto refused = identify(hello, welcome, token)) {
        return refusal{refusal_reason::identity, std::move(*refused)};
    }
    const std::uint32_t owner = welcome.client_id;
    // Seats: at most --max-connections-per-player joined connections per player (token
    // identity; by token or by its resume key); past it the oldest (first connected) gives its
    // seat to this one. Development owners are not players: a developer's shell and watch
    // share a key; --max-clients-per-address bounds them instead.
    std::vector<session*> seated;
    std::size_t from_address = 0;
    for (const auto& [id, other] : sessions_) {
        if (!other->joined() || other->observer()) {
            continue;
        }
        if (tokens_ && other->owner_id() == owner) {
            seated.push_back(other.get());  // by connection id: oldest first
        }
        if (other->remote_address() == s.remote_address()) {
            ++from_address;
        }
    }
    const std::size_t seats_freed =
        seated.size() >= config_.max_connections_per_player
            ? seated.size() - config_.max_connections_per_player + 1
            : 0;
    const auto refuse = [&](refusal_reason reason, std::string why) -> std::optional<refusal> {
        (void)owners_.forget_if_idle(owner);  // a new owner this Hello created goes again
        return refusal{reason, std::move(why)};
    };
    if (!tokens_) {
        std::size_t freed_here = 0;
        for (std::size_t i = 0; i < seats_freed; ++i) {
            freed_here += seated[i]->remote_address() == s.remote_address() ? 1 : 0;
        }
        if (from_address - freed_here >= config_.max_clients_per_address) {
            return refuse(refusal_reason::address, "too many clients from your address (" +
                          std::to_string(config_.max_clients_per_address) + " joined at most)");
        }
    }
    if (active_ - seats_freed >= config_.max_clients) {
        return refuse(refusal_reason::full, "server full (" + std::to_string(config_.max_clients) + " clients)");
    }
    for (std::size_t i = 0; i < seats_freed; ++i) {
        give_up_seat(*seated[i]);
    }
    if (token) {
        remember_token(*token);
    }
    s.set_owner_id(owner);
    s.set_joined_as(hello.client_name, tick_);
    owners_.connected(owner);
    if (player_connections(owner) == 1) {
        player_events_.push_back(player_event{owner, true, commands_.owned_by(owner) > 0});
    }
    departed_.erase(owner);  // back within its reconnect grace: its entities stay
    if (interest_.enabled()) {
        const player_interest& p = interest_.player(welcome.client_id);
        welcome.interest_radius = p.radius;
        welcome.client_budget = static_cast<std::uint32_t>(
            std::min(interest_.budget_of(p), double{std::numeric_limits<std::uint32_t>::max()}));
    }
    end_pending(s);
    ++active_;
    s.set_counted(true);
    replicator_.add_client(s.id(), s.owner_id());
    s.set_joined(true);
    s.send(protocol::encode(protocol::server_control{welcome}));
    send_snapshot(s);
    if (connection_lines_.allow()) {
        spdlog::info("client {} ({}, owner {}{}) joined from {} at tick {}", s.id(),
                     printable(hello.client_name), welcome.client_id,
                     welcome.player_id.empty() ? std::string{}
                                               : ", player " + printable(welcome.player_id),
                     s.remote(), tick_);
    }
    return std::nullopt;
}

void server::queue_command(const std::shared_ptr<session>& s, protocol::client_message message) {
    pending_.push_back(pending_command{s, s->owner_id(), std::move(message)});
    if (!running_ && failure_.empty()) {
        apply_pending_commands();  // stopped: no tick will come, and the session waits
        commit_journal();
    }
}

void server::queue_result(const std::shared_ptr<session>& s, protocol::command_result result) {
    pending_.push_back(pending_command{s, s->owner_id(), std::move(result)});
    if (!running_ && failure_.empty()) {
        apply_pending_commands();
        commit_journal();
    }
}

void server::resync(const std::shared_ptr<session>& s) {
    if (!s->joined()) {
        return;  // closed meanwhile
    }
    send_snapshot(*s);
    s->snapshot_sent();
}

void server::send_snapshot(session& s) {
    for (auto& f : replicator_.start_frames(*world_, s.id(), tick_)) {
        s.send_snapshot_chunk(std::move(f));
    }
    metrics_.snapshot_sent(replicator_.snapshot_bytes());
    snapshot_bytes_ = replicator_.snapshot_bytes();
}

void server::queue_input(const std::shared_ptr<session>& s, protocol::input input) {
    const std::uint32_t owner = s->owner_id();
    const auto refuse = [&](wire::ErrorCode code, std::string why) {
        metrics_.input_refused();
        s->refuse_input(protocol::input_rejected{input.first_tick, code, std::move(why), 1});
    };
    if (!s->joined() || owner == 0) {
        return;  // closed meanwhile
    }
    const ecs::Entity e = input.entity;
    const ecs::Entity current = world_->current(e.index());
    if (current.is_null()) {
        refuse(wire::ErrorCode::UnknownEntity, "no entity at index " + std::to_string(e.index()));
        return;
    }
    if (current != e) {
        refuse(wire::ErrorCode::StaleVersion,
               "entity " + std::to_string(e.index()) + " is at version " +
                   std::to_string(current.version()) + ", not " + std::to_string(e.version()));
        return;
    }
    const protocol::Owner* o = world_->try_get<protocol::Owner>(e);
    if (o == nullptr || o->client != owner) {
        refuse(wire::ErrorCode::NotOwner,
               "entity " + std::to_string(e.index()) + ":" + std::to_string(e.version()) +
                   (o == nullptr ? " belongs to the server" : " belongs to another client"));
        return;
    }
    // The game's own check (valid()) on every value, as for commands.
    for (const protocol::component_set& values : input.ticks) {
        for (const protocol::component_value& v : values.values()) {
            const auto id = types_.id_of(v.name);
            std::string why;
            if (!id || !types_.ops(*id).accepts(v, &why)) {
                refuse(wire::ErrorCode::InvalidValue, why.empty() ? v.name + " is refused" : why);
                return;
            }
        }
    }
    const input_buffer::offered got = inputs_.offer(owner, input, tick_);
    if (got.too_early > 0) {
        refuse(wire::ErrorCode::InputTooEarly,
               std::to_string(got.too_early) + " ticks of input stamped more than " +
                   std::to_string(inputs_.ticks_ahead()) + " ticks ahead of tick " +
                   std::to_string(tick_));
    }
}

void server::apply_inputs() {
    inputs_.run(tick_, [this](std::uint32_t owner, ecs::Entity e,
                              const protocol::component_set& values) {
        const protocol::Owner* o = world_->valid(e) ? world_->try_get<protocol::Owner>(e) : nullptr;
        if (o == nullptr || o->client != owner) {
            return false;  // destroyed, or changed hands, since it was sent
        }
        for (const protocol::component_value& v : values.values()) {
            const auto id = types_.id_of(v.name);
            try {
                types_.ops(*id).assign(*world_, e, v);
            } catch (const std::exception& ex) {
                report_game_failure(metrics_.game_failed(game_failure_kind::input),
                                    "tick {}: owner {}'s input {} failed in the game's code: {}",
                                    tick_, owner, v.name, printable(ex.what(), 200));
            } catch (...) {
                report_game_failure(metrics_.game_failed(game_failure_kind::input),
                                    "tick {}: owner {}'s input {} failed in the game's code: {}",
                                    tick_, owner, v.name, "an exception that is not a std::exception");
            }
        }
        return true;
    });
    commands_.settle();  // a throwing listener may have been an on_destroy<Owner> one
}

void server::set_focus(session& s, const protocol::focus& focus) {
    if (interest_.enabled() && interest_.accepts_client_focus() && s.owner_id() != 0) {
        interest_.set_focus(s.owner_id(), point{focus.x, focus.y});
    }
}

std::vector<std::uint64_t> server::joined_sessions() const {
    std::vector<std::uint64_t> out;
    for (const auto& [id, s] : sessions_) {
        if (s->joined()) {
            out.push_back(id);
        }
    }
    return out;
}

void server::closed(session& s, const std::string& /*reason*/) {
    end_pending(s);
    replicator_.remove_client(s.id());
    s.set_joined(false);
    if (s.counted()) {
        s.set_counted(false);
        --(s.observer() ? observers_ : active_);
    }
    if (s.observer()) {
        --observer_sessions_;
        if (const auto it = observer_connections_.find(s.owner_id());
            it != observer_connections_.end() && --it->second == 0) {
            observer_connections_.erase(it);
        }
    }
    const std::size_t remaining = s.owner_id() == 0 ? 1 : owners_.disconnected(s.owner_id());
    // A player's last connection went: the game hears of it even while an observer acting for
    // the same owner stays (and of nothing when that one goes).
    if (s.owner_id() != 0 && !s.observer() && player_connections(s.owner_id()) == 0) {
        player_events_.push_back(player_event{s.owner_id(), false, false});
        inputs_.forget(s.owner_id());  // a reconnect starts a new input stream
    }
    if (remaining == 0) {
        if (owners_.forget_if_idle(s.owner_id())) {
            interest_.forget(s.owner_id());
        } else if (!config_.keep_entities_on_disconnect) {
            // At the first tick after the grace (only ticks write the world), and only if the
            // owner has not come back by then; the owner is forgotten once its last entity is
            // gone.
            const auto despawn_at = clock::now() + config_.reconnect_grace;
            departed_[s.owner_id()] = despawn_at;
            departures_.push_back(departure{despawn_at, s.owner_id()});
        }
    }
    sessions_.erase(s.id());
    publish_health();  // a freed slot makes a full server ready at once
}

void server::finished() {
    // A closing session still flushes (Disconnect, then FIN) after closed(): run() must not
    // return, and the pool stop, before it is done.
    if (--unfinished_sessions_ == 0) {
        sessions_work_.reset();
    }
}

awaitable<void> server::tick_loop() {
    const auto period = std::chrono::duration_cast<clock::duration>(
        std::chrono::duration<double>(1.0 / config_.tick_rate));
    auto next = clock::now();
    while (running_) {
        // Absolute deadlines: a late tick is followed at once by the next and the rate does
        // not drift. After a stall (a VM pause, a blocking system) at most max_catch_up_ticks
        // are replayed back to back; the rest are skipped: the deadline moves on by whole
        // periods, tick numbers stay consecutive (they count ticks run), clients see a pause.
        next += period;
        if (const auto late = clock::now() - next; late > max_catch_up_ticks * period) {
            const std::int64_t skipped = late / period;
            next += skipped * period;
            metrics_.ticks_skipped(static_cast<std::uint64_t>(skipped));
            std::size_t suppressed = 0;
            if (server_warnings_.allow(suppressed)) {
                spdlog::warn(
                    "tick loop {:.0f} ms behind after tick {}: skipped {} ticks ({} so far)",
                    std::chrono::duration<double, std::milli>(late).count(), tick_, skipped,
                    stats().skipped_ticks);
            }
        }
        tick_timer_.expires_at(next);
        co_await tick_timer_.async_wait(use_tuple);
        if (!running_) {
            break;
        }
        run_tick();
    }
}

void server::apply_pending_commands() {
    // Swapped out first: a reply may close its session (a fatal disconnect owed after it),
    // which must not touch the vector being walked.
    std::vector<pending_command> commands;
    commands.swap(pending_);
    journal_writer* journal = persistence_ ? persistence_->journal() : nullptr;
    held_results& held = held_results_;
    for (auto& command : commands) {
        const auto s = command.from.lock();
        if (s == nullptr || !s->awaits_results()) {
            continue;  // the connection is gone: its commands go with it
        }
        if (std::holds_alternative<protocol::command_result>(command.what)) {
            auto& result = std::get<protocol::command_result>(command.what);
            if (journal != nullptr) {
                held.emplace_back(s, std::move(result));  // in order behind the journaled ones
            } else {
                s->send_result(result);
            }
            continue;
        }
        const auto& message = std::get<protocol::client_message>(command.what);
        protocol::command_result result = commands_.apply(command.client, message);
        if (result.code == wire::ErrorCode::GameFailed) {
            const game_failure& f = commands_.failure();
            report_game_failure(metrics_.game_failed(game_failure_kind::command),
                                "tick {}: client {}'s {} failed in the game's code{}: {}; refused{}",
                                tick_, command.client, protocol::message_name(message),
                                f.component.empty() ? std::string{}
                                                    : " (component " + f.component + ")",
                                printable(f.what, 200),
                                f.undone ? ", undone" : ", and undoing it failed too");
        }
        if (journal != nullptr) {
            if (result.ok) {
                record_in_journal(*journal, message, result);
            }
            held.emplace_back(s, std::move(result));
        } else {
            s->send_result(result);
        }
    }
}

void server::remember_token(const connect_token_claims& token) {
    admitted_tokens_.remember(token.player, token.jti, token.expires);
    // Kept with the world: a restart must not admit it again (docs/PERSISTENCE.md).
    if (journal_writer* journal = persistence_ ? persistence_->journal() : nullptr) {
        journal->token(replay_cache::entry{token.player, token.jti, token.expires});
    }
}

void server::journal_structure(journal_writer& journal, const ecs::World::change_set_type& changes) {
    // Destroys first: an index a system freed may be handed out again in the same tick.
    std::unordered_map<std::uint64_t, bool> last_is_row;
    const auto key = [](ecs::Entity e) {
        return (std::uint64_t{e.index()} << 32U) | std::uint64_t{e.version()};
    };
    for (const auto& [e, row] : journal.recorded()) {
        last_is_row[key(e)] = row;
    }
    for (const auto& [k, row] : last_is_row) {
        const ecs::Entity e{static_cast<std::uint32_t>(k >> 32U), static_cast<std::uint32_t>(k)};
        if (row && !world_->valid(e)) {
            journal.destroyed(e);  // a command's entity that a system ended in the same tick
        }
    }
    for (const ecs::Entity e : changes.destroyed) {
        if (!last_is_row.contains(key(e))) {
            journal.destroyed(e);
        }
    }
    for (const ecs::Entity e : changes.created) {
        if (!last_is_row.contains(key(e)) && world_->valid(e)) {
            journal.row(*world_, e);
        }
    }
}

void server::commit_journal() {
    journal_writer* journal = persistence_ ? persistence_->journal() : nullptr;
    if (journal == nullptr || (held_results_.empty() && journal->pending_records() == 0)) {
        return;
    }
    send_when_durable(*journal, std::exchange(held_results_, {}));
}

void server::record_in_journal(journal_writer& journal, const protocol::client_message& message,
                               const protocol::command_result& result) {
    // What the command left: the entity as it is now (Row), or its end.
    if (std::holds_alternative<protocol::spawn>(message)) {
        if (world_->valid(result.entity)) {
            journal.row(*world_, result.entity);
        }
    } else if (const auto* destroy = std::get_if<protocol::destroy>(&message)) {
        journal.destroyed(destroy->entity);
    } else if (const auto* set = std::get_if<protocol::set_components>(&message)) {
        if (world_->valid(set->entity)) {
            journal.row(*world_, set->entity);
        }
    } else if (const auto* remove = std::get_if<protocol::remove_components>(&message)) {
        if (world_->valid(remove->entity)) {
            journal.row(*world_, remove->entity);
        }
    }
}

void server::send_when_durable(
    journal_writer& journal,
    std::vector<std::pair<std::weak_ptr<session>, protocol::command_result>> results) {
    // One batch per tick, one fdatasync on the journal's thread; the replies then come back
    // to this thread, in order.
    journal.commit(tick_, [this, alive = std::weak_ptr<bool>{alive_},
                           results = std::move(results)](const std::string& error) mutable {
        asio::post(io_, [this, alive, results = std::move(results), error]() {
            if (alive.expired()) {
                return;
            }
            if (!error.empty()) {
                // Acknowledging would be a lie: nothing is sent, and the server stops (as a
                // database does when it cannot make its log durable).
                if (failure_.empty()) {
                    spdlog::error("{} replies withheld: their commands are not durable",
                                  results.size());
                }
                fail("the journal cannot be written: " + error);
                return;
            }
            for (const auto& [weak, result] : results) {
                if (const auto s = weak.lock(); s != nullptr && s->awaits_results()) {
                    s->send_result(result);
                }
            }
        });
    });
}

template <typename... Args>
void server::report_game_failure(std::uint64_t so_far, fmt::format_string<Args...> text,
                                 Args&&... args) {
    std::size_t suppressed = 0;
    if (game_errors_.allow(suppressed)) {
        spdlog::error("{} ({} so far of this kind; {} game failures not logged since the last)",
                      fmt::format(text, std::forward<Args>(args)...), so_far, suppressed);
    }
}

void server::tell_player_events() {
    // Swapped out first: a hook that makes a player leave (a kick) queues for the next tick.
    std::vector<player_event> events;
    events.swap(player_events_);
    for (const player_event& e : events) {
        if (e.joined ? !on_player_joined : !on_player_left) {
            continue;
        }
        const char* name = e.joined ? "on_player_joined" : "on_player_left";
        try {
            if (e.joined) {
                on_player_joined(e.owner, e.resumed);
            } else {
                on_player_left(e.owner);
            }
        } catch (const std::exception& ex) {
            report_game_failure(metrics_.system_failed(name), "tick {}: {}({}) failed: {}", tick_,
                                name, e.owner, printable(ex.what(), 200));
        } catch (...) {
            report_game_failure(metrics_.system_failed(name), "tick {}: {}({}) failed: {}", tick_,
                                name, e.owner, "an exception that is not a std::exception");
        }
        commands_.settle();  // what a listener of the hook's changes left to do
    }
}

void server::despawn_departed() {
    const auto now = clock::now();
    while (!departures_.empty() && departures_.front().despawn_at <= now) {
        const departure d = departures_.front();
        departures_.pop_front();
        const auto it = departed_.find(d.owner);
        if (it == departed_.end() || it->second != d.despawn_at) {
            continue;  // came back (or left again later: a later entry stands for it)
        }
        departed_.erase(it);
        if (owners_.connections(d.owner) != 0) {
            continue;
        }
        std::size_t failed = 0;
        std::string what;
        const std::size_t n = commands_.despawn_all_of(d.owner, &failed, &what);
        metrics_.grace_despawn();
        spdlog::debug("despawned {} entities of owner {} (its reconnect grace ended)", n, d.owner);
        if (failed > 0) {
            report_game_failure(metrics_.game_failed(game_failure_kind::despawn, failed),
                                "tick {}: {} entities of departed owner {} stay: an on_destroy "
                                "listener threw: {}",
                                tick_, failed, d.owner, printable(what, 200));
        }
    }
}

void server::export_system_failures() {
    // Each system (systems are only ever added) and hook that can fail is exported at 0 before
    // it runs.
    const auto& systems = scheduler_.systems();
    for (; systems_exported_ < systems.size(); ++systems_exported_) {
        metrics_.system_known(systems[systems_exported_].name);
    }
    if (on_player_joined && !hooks_exported_[0]) {
        hooks_exported_[0] = true;
        metrics_.system_known("on_player_joined");
    }
    if (on_player_left && !hooks_exported_[1]) {
        hooks_exported_[1] = true;
        metrics_.system_known("on_player_left");
    }
}

void server::run_tick() {
    const auto started = clock::now();
    ++tick_;
    ticks_done_.store(tick_, std::memory_order_relaxed);

    export_system_failures();
    apply_pending_commands();
    tell_player_events();
    despawn_departed();
    apply_inputs();
    const input_counters& in = inputs_.counters();
    metrics_.inputs(in.applied - inputs_counted_.applied, in.late - inputs_counted_.late,
                    in.repeated - inputs_counted_.repeated);
    inputs_counted_ = in;

    // A system that throws fails alone (the scheduler catches it): count it, say which one,
    // and keep ticking. Rate-limited, since a broken system fails every tick.
    const auto report = scheduler_.run(*world_);
    commands_.settle();
    for (const auto& failure : report.command_failures) {
        spdlog::debug("tick {}: {}", tick_, failure);
    }
    for (const auto& failure : report.system_failures) {
        report_game_failure(metrics_.system_failed(failure.system),
                            "tick {}: system '{}' failed: {} ({} recorded commands dropped)",
                            tick_, printable(failure.system), printable(failure.what, 200),
                            failure.commands_dropped);
    }

    world_->take_changes(changes_);
    const ecs::World::change_set_type& changes = changes_;
    if (journal_writer* journal = persistence_ ? persistence_->journal() : nullptr) {
        journal_structure(*journal, changes);
        commit_journal();
    }
    // The interest policy follows every change, watched or not: a client joining later sees
    // the world as it is.
    interest_.update(*world_, changes);
    const bool anyone_joined =
        std::any_of(sessions_.begin(), sessions_.end(), [](const auto& s) { return s.second->joined(); });
    if (anyone_joined) {
        broadcast_tick(changes);
    }

    if (persistence_ && persistence_->checkpoint_due(clock::now())) {
        persistence_->checkpoint(*world_, owners_, tick_);  // the copy is the tick's; the write is not
    }

    metrics_.tick_run();
    publish_clients();
    const double elapsed_ms =
        std::chrono::duration<double, std::milli>(clock::now() - started).count();
    publish_health(true, elapsed_ms);
    tick_ms_.push_back(elapsed_ms);
    const double budget_ms = 1000.0 / config_.tick_rate;
    metrics_.tick_timed(elapsed_ms / 1000.0, elapsed_ms > budget_ms);
    if (elapsed_ms > budget_ms) {
        std::size_t suppressed = 0;
        if (server_warnings_.allow(suppressed)) {
            spdlog::warn("tick {} took {:.2f} ms, over its {:.2f} ms budget ({} overruns so far)",
                         tick_, elapsed_ms, budget_ms, stats().overruns);
        }
    }
}

void server::publish_clients(bool now) {
    const auto at = clock::now();
    const double seconds = std::chrono::duration<double>(at - clients_reported_at_).count();
    if (!now && seconds < 1.0) {
        return;
    }
    const auto per_second = [&](std::uint64_t bytes, std::uint64_t& before) {
        const double rate = now ? 0.0 : static_cast<double>(bytes - before) / seconds;
        before = bytes;
        return rate;
    };
    clients_report report;
    report.tick = tick_;
    for (const auto& [id, s] : sessions_) {
        if (!s->joined()) {
            continue;
        }
        const session::traffic& t = s->counters();
        client_report c;
        c.session = id;
        c.owner = s->owner_id();
        c.player = c.owner == 0 ? std::string{} : owners_.player_of(c.owner);
        c.name = s->client_name();
        c.transport = std::string{s->transport()};
        c.address = s->remote();
        c.observer = s->observer();
        c.joined_tick = s->joined_tick();
        c.bytes_out = t.bytes_out.load(std::memory_order_relaxed);
        c.bytes_in = t.bytes_in.load(std::memory_order_relaxed);
        session::report_marks& marks = s->reported();
        c.bytes_out_per_s = per_second(c.bytes_out, marks.bytes_out);
        marks.bytes_in = c.bytes_in;
        c.dropped_frames = t.dropped_frames.load(std::memory_order_relaxed);
        c.resyncs = t.resyncs.load(std::memory_order_relaxed);
        c.view_entities = world_->alive();
        if (const client_view* v = view_of(id)) {
            const player_interest& p = interest_.player(c.owner);
            c.budget_bytes_per_s = interest_.budget_of(p);
            if (p.focus) {
                c.interest = client_report::area{p.focus->x, p.focus->y, p.radius};
            }
            if (!v->whole_world()) {
                c.view_entities = v->held();
            }
        }
        report.clients.push_back(std::move(c));
    }
    const server_stats totals = stats();
    const double out_rate = per_second(totals.bytes_out, bytes_out_reported_);
    const double in_rate = per_second(totals.bytes_in, bytes_in_reported_);
    clients_reported_at_ = at;
    health_.publish_clients(std::move(report), out_rate, in_rate);
}

void server::measure_budgets() {
    budget_ratios_.clear();
    for (const auto& [id, s] : sessions_) {
        const client_view* v = s->joined() ? view_of(id) : nullptr;
        if (v == nullptr) {
            continue;
        }
        const double budget = interest_.budget_of(interest_.player(s->owner_id())) / config_.tick_rate;
        session::report_marks& marks = s->reported();
        const std::uint64_t bytes = v->stats().bytes;
        if (budget > 0.0) {
            budget_ratios_.push_back(static_cast<double>(bytes - marks.view_bytes) / budget);
        }
        marks.view_bytes = bytes;
    }
    metrics_.budget_used(budget_ratios_);
}

void server::broadcast_tick(const ecs::World::change_set_type& changes) {
    const auto started = clock::now();
    const auto before = replicator_.stats();
    replicator_.tick(*world_, changes, tick_,
                     [this](std::uint64_t id, const protocol::frame& delta,
                            const protocol::frame* checksum, const protocol::frame* owner_only) {
                         const auto it = sessions_.find(id);
                         if (it == sessions_.end()) {
                             return;
                         }
                         // A client that sends input hears, with every tick, what became of it.
                         protocol::frame ack;
                         if (const protocol::input_ack* a = inputs_.ack(it->second->owner_id())) {
                             ack = protocol::encode(protocol::server_control{*a});
                         }
                         it->second->send_tick(delta, checksum, owner_only,
                                               ack == nullptr ? nullptr : &ack);
                     });
    const auto& after = replicator_.stats();
    metrics_.view_changes(after.view_entered - before.view_entered,
                          after.view_left - before.view_left,
                          after.view_deferred - before.view_deferred);
    if (interest_.enabled()) {
        measure_budgets();
        interest_ms_.push_back(
            std::chrono::duration<double, std::milli>(clock::now() - started).count());
    }
}

awaitable<void> server::stats_loop() {
    auto last = clock::now();
    while (running_) {
        stats_timer_.expires_after(config_.stats_interval);
        co_await stats_timer_.async_wait(use_tuple);
        if (!running_) {
            break;
        }
        const auto now = clock::now();
        const double seconds = std::chrono::duration<double>(now - last).count();
        last = now;
        const server_stats stats = this->stats();
        const double out_rate =
            static_cast<double>(stats.bytes_out - bytes_at_last_stats_) / std::max(seconds, 1e-9);
        bytes_at_last_stats_ = stats.bytes_out;
        const double p50 = percentile(tick_ms_, 0.50);
        const double p99 = percentile(tick_ms_, 0.99);
        spdlog::info(
            "stats: tick {} p50 {:.3f} ms p99 {:.3f} ms, {} entities, {} clients, {:.0f} B/s out, "
            "{} overruns, {} resyncs, {} rate-limited, {} invalid frames, {} system failures",
            tick_, p50, p99, world_->alive(), active_, out_rate, stats.overruns, stats.resyncs,
            stats.rate_limited, stats.invalid_frames, stats.system_failures);
        tick_ms_.clear();
        if (const std::size_t unlogged = connection_lines_.take_suppressed(); unlogged > 0) {
            spdlog::info("stats: {} join, leave and refusal lines not logged (more than {} per "
                         "10 s, --connection-log-lines); {} joined clients now",
                         unlogged, config_.connection_log_lines, active_);
        }
        if (inputs_.players() > 0 || stats.inputs_applied > 0) {
            spdlog::info("stats: input: {} ticks applied, {} late, {} repeated, {} frames refused, "
                         "{} failed in the game's code (totals); {} players, {} ticks held",
                         stats.inputs_applied, stats.inputs_late, stats.inputs_repeated,
                         stats.inputs_refused, stats.input_failures, inputs_.players(),
                         inputs_.held());
        }
        if (interest_.enabled()) {
            spdlog::info(
                "stats: interest: views p50 {:.3f} ms p99 {:.3f} ms per tick, {} entered, {} left, "
                "{} sends deferred for budgets (totals)",
                percentile(interest_ms_, 0.50), percentile(interest_ms_, 0.99), stats.view_entered,
                stats.view_left, stats.view_deferred);
            interest_ms_.clear();
        }
    }
}

}  // namespace ecsnet::server
