#include "ecsnet/server/admin.hpp"

#include "ecsnet/server/stream.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <nlohmann/json.hpp>

#include <stdexcept>

namespace ecsnet::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

std::string health_line(const server_health& h) {
    return "tick " + std::to_string(h.tick) + ", last tick " +
           std::to_string(h.last_tick_age.count()) + " ms ago, " + std::to_string(h.clients) + "/" +
           std::to_string(h.max_clients) + " clients";
}

nlohmann::json status_json(const server_health& h) {
    const server_stats& s = h.stats;
    return {
        {"healthy", h.ticking},
        {"ready", h.ready()},
        {"problem", h.problem},
        {"accepting", h.accepting},
        {"draining", h.draining},
        {"full", h.full()},
        {"tick", h.tick},
        {"last_tick_age_ms", h.last_tick_age.count()},
        {"tick_limit_ms", h.tick_limit.count()},
        {"clients", h.clients},
        {"max_clients", h.max_clients},
        {"stats",
         {{"ticks", s.ticks},
          {"overruns", s.overruns},
          {"skipped_ticks", s.skipped_ticks},
          {"connections", s.connections},
          {"refused", s.refused},
          {"resyncs", s.resyncs},
          {"dropped_frames", s.dropped_frames},
          {"rate_limited", s.rate_limited},
          {"invalid_frames", s.invalid_frames},
          {"bytes_out", s.bytes_out},
          {"accept_errors", s.accept_errors},
          {"system_failures", s.system_failures},
          {"pending_evicted", s.pending_evicted},
          {"pending_refused", s.pending_refused},
          {"resyncs_requested", s.resyncs_requested},
          {"resyncs_coalesced", s.resyncs_coalesced},
          {"identity_refused", s.identity_refused},
          {"seats_taken_over", s.seats_taken_over},
          {"address_refused", s.address_refused},
          {"view_entered", s.view_entered},
          {"view_left", s.view_left},
          {"view_deferred", s.view_deferred},
          {"command_failures", s.command_failures},
          {"policy_failures", s.policy_failures},
          {"despawn_failures", s.despawn_failures},
          {"grace_despawns", s.grace_despawns},
          {"inputs_applied", s.inputs_applied},
          {"inputs_late", s.inputs_late},
          {"inputs_repeated", s.inputs_repeated},
          {"inputs_refused", s.inputs_refused},
          {"input_failures", s.input_failures}}},
    };
}

}  // namespace

admin_answer answer_admin_request(const server_health& health, std::string_view path) {
    admin_answer a;
    if (path == "/healthz") {
        a.status = health.ticking ? 200 : 503;
        a.body = health.ticking ? "healthy: " + health_line(health) + "\n"
                                : "unhealthy: " + health.problem + "\n";
    } else if (path == "/readyz") {
        a.status = health.ready() ? 200 : 503;
        if (health.ready()) {
            a.body = "ready: " + health_line(health) + "\n";
        } else if (!health.ticking) {
            a.body = "not ready: " + health.problem + "\n";
        } else if (health.draining) {
            a.body = "not ready: draining\n";
        } else if (health.full()) {
            a.body = "not ready: full, " + std::to_string(health.clients) + "/" +
                     std::to_string(health.max_clients) + " clients\n";
        } else {
            a.body = "not ready: not accepting connections\n";
        }
    } else if (path == "/status") {
        a.content_type = "application/json";
        a.body = status_json(health).dump() + "\n";
    } else {
        a.status = 404;
        a.body = "not found; try /healthz, /readyz or /status\n";
    }
    return a;
}

admin_endpoint::admin_endpoint(const server& service, admin_options options)
    : service_{service}, options_{std::move(options)}, acceptor_{io_} {}

admin_endpoint::~admin_endpoint() {
    stop();
}

void admin_endpoint::start() {
    port_ = listen_on(acceptor_, options_.bind, options_.port, "--admin-bind", "admin ");
    spdlog::info("admin endpoint on http://{}:{} (/healthz, /readyz, /status)", options_.bind,
                 port_);
    asio::co_spawn(io_, accept_loop(), [](const std::exception_ptr& e) {
        if (e) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                spdlog::critical("admin accept loop failed: {}", ex.what());
            }
        }
    });
    thread_ = std::thread{[this] { io_.run(); }};
}

void admin_endpoint::stop() noexcept {
    // Probes in flight are cut off: nothing they wait for outlives the process anyway.
    io_.stop();
    if (thread_.joinable()) {
        thread_.join();
    }
}

asio::awaitable<void> admin_endpoint::accept_loop() {
    asio::steady_timer backoff{io_};
    for (;;) {
        auto [ec, socket] = co_await acceptor_.async_accept(use_tuple);
        if (ec) {
            // EMFILE and the like leave the connection in the backlog: do not spin.
            backoff.expires_after(std::chrono::milliseconds{150});
            co_await backoff.async_wait(use_tuple);
            continue;
        }
        if (open_.size() >= options_.max_connections && !evict_oldest_reading()) {
            continue;  // every slot is answering a request (briefly): this one is closed at once
        }
        // The slot is taken now, not when the coroutine first runs (co_spawn posts it): a burst
        // of accepts cannot overshoot the cap.
        const std::uint64_t id = next_id_++;
        open_.emplace(id, open_connection{});
        asio::co_spawn(io_, serve(std::move(socket), id), [](const std::exception_ptr& e) {
            if (e) {
                try {
                    std::rethrow_exception(e);
                } catch (const std::exception& ex) {
                    spdlog::warn("admin request failed: {}", ex.what());
                }
            }
        });
    }
}

bool admin_endpoint::evict_oldest_reading() noexcept {
    // Probes send their request at once; a connection that has not, by the time open_ is full,
    // is idle or trickling (slowloris) and gives way. Its coroutine sees the closed socket and
    // ends; its slot and file descriptor are free now.
    for (auto it = open_.begin(); it != open_.end(); ++it) {
        if (it->second.reading) {
            if (it->second.socket != nullptr) {  // else not started yet: it sees it is gone
                boost::system::error_code ignored;
                it->second.socket->close(ignored);
            }
            open_.erase(it);
            return true;
        }
    }
    return false;
}

asio::awaitable<void> admin_endpoint::serve(asio::ip::tcp::socket socket, std::uint64_t id) {
    beast::tcp_stream stream{std::move(socket)};
    const auto slot = open_.find(id);
    if (slot == open_.end()) {
        co_return;  // evicted before it started: the socket closes here
    }
    slot->second.socket = &stream.socket();
    // However the coroutine ends (eviction, error, answer), its slot is given back once.
    struct slot_release {
        std::map<std::uint64_t, open_connection>& open;
        std::uint64_t id;
        ~slot_release() { open.erase(id); }
    } release{open_, id};
    beast::flat_buffer buffer{options_.max_request_bytes};
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(options_.max_request_bytes));
    parser.body_limit(options_.max_request_bytes);
    stream.expires_after(options_.timeout);
    if (auto [ec, n] = co_await http::async_read(stream, buffer, parser, use_tuple); ec) {
        co_return;  // timeout, eviction, oversize or malformed request: close unanswered
    }
    if (const auto it = open_.find(id); it != open_.end()) {
        it->second.reading = false;  // answering now: not evicted by newcomers
    }
    const auto& request = parser.get();
    http::response<http::string_body> response;
    response.version(request.version());
    response.keep_alive(false);
    if (request.method() != http::verb::get) {
        response.result(http::status::method_not_allowed);
        response.set(http::field::allow, "GET");
        response.set(http::field::content_type, "text/plain; charset=utf-8");
        response.body() = "only GET\n";
    } else {
        const std::string_view target = request.target();
        const admin_answer a =
            answer_admin_request(service_.health(), target.substr(0, target.find('?')));
        response.result(a.status);
        response.set(http::field::content_type, a.content_type);
        response.body() = a.body;
    }
    response.set(http::field::cache_control, "no-store");
    response.prepare_payload();
    stream.expires_after(options_.timeout);
    (void)co_await http::async_write(stream, response, use_tuple);
    boost::system::error_code ignored;
    stream.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
}

}  // namespace ecsnet::server
