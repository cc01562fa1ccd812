#include "ecsnet/server/server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "ecsnet/protocol/checksum.hpp"
#include "ecsnet/server/game.hpp"
#include "ecsnet/server/session.hpp"

namespace ecsnet::server {

namespace asio = boost::asio;
using asio::awaitable;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
// After an accept error such as EMFILE the connection stays in the backlog: retrying at once
// would spin. Wait, then retry.
constexpr auto accept_backoff = std::chrono::milliseconds{150};

void log_exception(const char* what, const std::exception_ptr& e) {
    if (e) {
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& ex) {
            spdlog::critical("{} failed: {}", what, ex.what());
        }
    }
}

double percentile(std::vector<double>& values, double p) {
    if (values.empty()) {
        return 0.0;
    }
    const auto k = static_cast<std::size_t>(std::ceil(p * static_cast<double>(values.size()))) - 1;
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
    return values[k];
}

bool same_secret(const std::string& a, const std::string& b) {
    // Constant time in the content: do not leak how much of the token matched.
    unsigned char diff = a.size() == b.size() ? 0 : 1;
    for (std::size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
        const auto x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
        const auto y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
        diff |= static_cast<unsigned char>(x ^ y);
    }
    return diff == 0;
}

}  // namespace

server::server(asio::io_context& io, server_config config)
    : io_{io},
      config_{std::move(config)},
      world_{ecs::World::make()},
      scheduler_{1.0 / config_.tick_rate},
      commands_{*world_, command_limits{config_.max_entities_per_client, config_.max_entities}},
      acceptor_{io},
      tick_timer_{io},
      stats_timer_{io} {
    add_game_systems(scheduler_, config_.world_half_extent);
}

server::~server() = default;

void server::start() {
    const std::string where = config_.bind + ":" + std::to_string(config_.port);
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(config_.bind, ec);
    if (ec) {
        throw std::runtime_error("--bind " + config_.bind + " is not an IP address");
    }
    const asio::ip::tcp::endpoint endpoint{address, config_.port};
    const auto check = [&](const char* step) {
        if (ec) {
            throw std::runtime_error("cannot listen on " + where + ": " + step + ": " +
                                     ec.message());
        }
    };
    acceptor_.open(endpoint.protocol(), ec);
    check("open");
    acceptor_.set_option(asio::ip::tcp::acceptor::reuse_address(true), ec);
    check("SO_REUSEADDR");
    acceptor_.bind(endpoint, ec);
    check("bind");
    acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    check("listen");
    port_ = acceptor_.local_endpoint().port();

    if (config_.demo_entities > 0) {
        spawn_demo_entities(*world_, config_.demo_entities, config_.world_half_extent);
    }
    world_->discard_changes();  // the first snapshot carries them

    running_ = true;
    spdlog::info("ecsnet-server starting: {}", describe(config_));
    spdlog::info("listening on {}:{}", config_.bind, port_);
    asio::co_spawn(io_, accept_loop(), [](const std::exception_ptr& e) { log_exception("accept loop", e); });
    asio::co_spawn(io_, tick_loop(), [](const std::exception_ptr& e) { log_exception("tick loop", e); });
    asio::co_spawn(io_, stats_loop(), [](const std::exception_ptr& e) { log_exception("stats loop", e); });
}

void server::stop() {
    if (!running_) {
        return;
    }
    running_ = false;
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    tick_timer_.cancel();
    stats_timer_.cancel();
    spdlog::info("shutting down: {} clients, tick {}", active_, tick_);
    std::vector<std::shared_ptr<session>> all;
    for (const auto& [id, s] : sessions_) {
        all.push_back(s);
    }
    for (const auto& s : all) {
        s->disconnect("shutting down");
    }
}

awaitable<void> server::accept_loop() {
    asio::steady_timer backoff{io_};
    while (running_) {
        auto [ec, socket] = co_await acceptor_.async_accept(use_tuple);
        if (!running_) {
            break;
        }
        if (ec) {
            ++stats_.accept_errors;
            std::size_t suppressed = 0;
            if (warnings_.allow(suppressed)) {
                spdlog::warn("accept failed: {}; retrying in {} ms", ec.message(),
                             accept_backoff.count());
            }
            backoff.expires_after(accept_backoff);
            co_await backoff.async_wait(use_tuple);
            continue;
        }
        boost::system::error_code ignored;
        socket.set_option(asio::ip::tcp::no_delay(true), ignored);
        ++stats_.connections;
        const std::uint32_t id = next_client_id_++;
        auto s = std::make_shared<session>(std::move(socket), *this, id);
        sessions_.emplace(id, s);
        if (active_ >= config_.max_clients) {
            ++stats_.refused;
            s->refuse("server full (" + std::to_string(config_.max_clients) + " clients)");
            continue;
        }
        ++active_;
        s->set_counted(true);
        spdlog::debug("client {} connected from {}", id, s->remote());
        s->start();
    }
}

std::optional<std::string> server::admit(session& s, const protocol::hello& hello) {
    if (hello.version != protocol::protocol_version) {
        return "protocol version " + std::to_string(hello.version) +
               " not supported (server speaks " + std::to_string(protocol::protocol_version) + ")";
    }
    if (!config_.auth_token.empty() && !same_secret(hello.auth_token, config_.auth_token)) {
        return std::string{"bad auth token"};
    }
    // Identity: connections with the same name act as one owner, so a command-line client can
    // spawn in one run and destroy in the next; an unnamed connection is an owner of its own.
    std::uint32_t owner = 0;
    if (hello.client_name.empty()) {
        owner = next_owner_id_++;
    } else {
        const auto [it, inserted] = owner_ids_.try_emplace(hello.client_name, next_owner_id_);
        next_owner_id_ += inserted ? 1 : 0;
        owner = it->second;
    }
    s.set_owner_id(owner);
    ++connections_of_owner_[owner];
    s.send(protocol::encode(protocol::server_control{protocol::welcome{
        owner, protocol::protocol_version, static_cast<float>(config_.tick_rate), tick_,
        config_.checksum_interval}}));
    send_snapshot(s);
    spdlog::info("client {} ({}, owner {}) joined from {} at tick {}", s.id(),
                 printable(hello.client_name), owner, s.remote(), tick_);
    return std::nullopt;
}

void server::queue_command(const std::shared_ptr<session>& s, protocol::client_message message) {
    pending_.push_back(pending_command{s, s->owner_id(), std::move(message)});
}

const std::vector<protocol::frame>& server::snapshot_frames() {
    // Between ticks nothing writes to the world, so one snapshot serves every joiner of a tick.
    if (snapshot_tick_ != tick_) {
        snapshot_cache_ = encoder_.encode_snapshot(*world_, tick_);
        snapshot_tick_ = tick_;
        snapshot_bytes_ = 0;
        for (const auto& f : snapshot_cache_) {
            snapshot_bytes_ += f->size();
        }
    }
    return snapshot_cache_;
}

void server::send_snapshot(session& s) {
    for (const auto& f : snapshot_frames()) {
        s.send(f);
    }
}

void server::closed(session& s, const std::string& /*reason*/) {
    if (s.counted()) {
        s.set_counted(false);
        --active_;
    }
    if (s.owner_id() != 0) {
        const auto it = connections_of_owner_.find(s.owner_id());
        if (it != connections_of_owner_.end() && --it->second == 0) {
            connections_of_owner_.erase(it);
            if (!config_.keep_entities_on_disconnect) {
                // At the next tick (only ticks write the world), and only if the owner has not
                // come back by then.
                pending_despawns_.push_back(s.owner_id());
            }
        }
    }
    sessions_.erase(s.id());
}

awaitable<void> server::tick_loop() {
    const auto period = std::chrono::duration_cast<clock::duration>(
        std::chrono::duration<double>(1.0 / config_.tick_rate));
    auto next = clock::now();
    while (running_) {
        // Absolute deadlines: a late tick is followed at once by the next, never skipped, and
        // the rate does not drift.
        next += period;
        tick_timer_.expires_at(next);
        co_await tick_timer_.async_wait(use_tuple);
        if (!running_) {
            break;
        }
        run_tick();
    }
}

void server::run_tick() {
    const auto started = clock::now();
    ++tick_;

    for (auto& command : pending_) {
        const auto s = command.from.lock();
        if (s == nullptr || !s->joined()) {
            continue;  // the client left: its commands go with it
        }
        s->send(protocol::encode(
            protocol::server_control{commands_.apply(command.client, command.message)}));
    }
    pending_.clear();
    for (const std::uint32_t client : pending_despawns_) {
        if (!connections_of_owner_.contains(client) && commands_.owned_by(client) > 0) {
            const std::size_t n = commands_.despawn_all_of(client);
            spdlog::debug("despawned {} entities of client {}", n, client);
        }
    }
    pending_despawns_.clear();

    // A system that throws fails alone (the scheduler catches it): count it, say which one,
    // and keep ticking. Rate-limited, since a broken system fails every tick.
    const auto report = scheduler_.run(*world_);
    for (const auto& failure : report.command_failures) {
        spdlog::debug("tick {}: {}", tick_, failure);
    }
    for (const auto& failure : report.system_failures) {
        ++stats_.system_failures;
        std::size_t suppressed = 0;
        if (warnings_.allow(suppressed)) {
            spdlog::error(
                "tick {}: system '{}' failed: {} ({} recorded commands dropped; {} system "
                "failures so far; {} warnings suppressed)",
                tick_, printable(failure.system), printable(failure.what, 200),
                failure.commands_dropped, stats_.system_failures, suppressed);
        }
    }

    const auto changes = world_->take_changes();
    const bool anyone_joined =
        std::any_of(sessions_.begin(), sessions_.end(), [](const auto& s) { return s.second->joined(); });
    if (anyone_joined) {
        broadcast_tick(changes);
    }

    ++stats_.ticks;
    const double elapsed_ms =
        std::chrono::duration<double, std::milli>(clock::now() - started).count();
    tick_ms_.push_back(elapsed_ms);
    const double budget_ms = 1000.0 / config_.tick_rate;
    if (elapsed_ms > budget_ms) {
        ++stats_.overruns;
        std::size_t suppressed = 0;
        if (warnings_.allow(suppressed)) {
            spdlog::warn("tick {} took {:.2f} ms, over its {:.2f} ms budget ({} overruns so far)",
                         tick_, elapsed_ms, budget_ms, stats_.overruns);
        }
    }
}

protocol::checksum::index_range server::next_checksum_range() {
    // Up to --checksum-slice indices the whole world is hashed each time; past that,
    // successive checksums cover successive slices, the last one open-ended, so a tick never
    // hashes more than one slice of a large world.
    const std::size_t slots = world_->entities().slots();
    if (slots <= config_.checksum_slice) {
        checksum_next_index_ = 0;
        return {};
    }
    protocol::checksum::index_range range{checksum_next_index_,
                                          checksum_next_index_ + config_.checksum_slice};
    if (range.end >= slots) {
        range.end = protocol::checksum::index_range{}.end;
        checksum_next_index_ = 0;
    } else {
        checksum_next_index_ = range.end;
    }
    return range;
}

void server::broadcast_tick(const ecs::World::change_set_type& changes) {
    // Encoded once; every session queues the same frame.
    const protocol::frame delta = encoder_.encode_delta(*world_, changes, tick_);
    const bool checksum_tick = tick_ % config_.checksum_interval == 0;
    protocol::frame checksum;
    if (checksum_tick) {
        const protocol::checksum::index_range range = next_checksum_range();
        const protocol::checksum::slice_sum sum = protocol::checksum::of_world(*world_, range);
        checksum = protocol::encode(protocol::server_control{
            protocol::checksum_report{tick_, sum.hash, sum.entities, range.first, range.end}});
    }
    for (const auto& [id, s] : sessions_) {
        if (s->joined()) {
            s->send_tick(delta, checksum_tick ? &checksum : nullptr);
        }
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
        const double out_rate =
            static_cast<double>(stats_.bytes_out - bytes_at_last_stats_) / std::max(seconds, 1e-9);
        bytes_at_last_stats_ = stats_.bytes_out;
        const double p50 = percentile(tick_ms_, 0.50);
        const double p99 = percentile(tick_ms_, 0.99);
        spdlog::info(
            "stats: tick {} p50 {:.3f} ms p99 {:.3f} ms, {} entities, {} clients, {:.0f} B/s out, "
            "{} overruns, {} resyncs, {} rate-limited, {} invalid frames, {} system failures",
            tick_, p50, p99, world_->alive(), active_, out_rate, stats_.overruns, stats_.resyncs,
            stats_.rate_limited, stats_.invalid_frames, stats_.system_failures);
        tick_ms_.clear();
    }
}

}  // namespace ecsnet::server
