#include "ecsnet/server/operations/agones.hpp"

#include "../thread_name.hpp"
#include "../transport/use_tuple.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <future>
#include <memory>
#include <utility>

namespace ecsnet::server {

namespace asio = boost::asio;
using detail::use_tuple;
namespace beast = boost::beast;
namespace http = beast::http;
using clock_type = std::chrono::steady_clock;

namespace {


// A GameServer with a few hundred labels is a few tens of KiB; a watch line longer than this is
// not one.
constexpr std::size_t max_answer_bytes = 1024 * 1024;

class retry_backoff {
public:
    retry_backoff(std::chrono::milliseconds min, std::chrono::milliseconds max) noexcept
        : min_{min}, max_{std::max(min, max)}, next_{min} {}
    std::chrono::milliseconds next() noexcept {
        const auto delay = next_;
        next_ = std::min(next_ * 2, max_);
        return delay;
    }
    void reset() noexcept { next_ = min_; }

private:
    std::chrono::milliseconds min_;
    std::chrono::milliseconds max_;
    std::chrono::milliseconds next_;
};

std::map<std::string, std::string> string_map(const nlohmann::json& object) {
    std::map<std::string, std::string> out;
    if (object.is_object()) {
        for (const auto& [key, value] : object.items()) {
            if (value.is_string()) {
                out.emplace(key, value.get<std::string>());
            }
        }
    }
    return out;
}

std::string describe_map(const std::map<std::string, std::string>& values) {
    std::string out = "{";
    for (const auto& [key, value] : values) {
        if (out.size() > 1) {
            out += ", ";
        }
        out += printable(key, 128) + "=" + printable(value, 256);
    }
    return out + "}";
}

std::string string_field(const nlohmann::json& object, const char* name) {
    const auto it = object.find(name);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

}  // namespace

std::optional<gameserver_info> parse_gameserver(std::string_view json) {
    const auto doc = nlohmann::json::parse(json, nullptr, false);
    if (!doc.is_object()) {
        return std::nullopt;
    }
    const auto result = doc.find("result");
    const nlohmann::json& gs = result != doc.end() ? *result : doc;
    if (!gs.is_object()) {
        return std::nullopt;
    }
    const auto meta = gs.find("object_meta");
    const auto status = gs.find("status");
    if ((meta == gs.end() || !meta->is_object()) && (status == gs.end() || !status->is_object())) {
        return std::nullopt;
    }
    gameserver_info info;
    if (meta != gs.end() && meta->is_object()) {
        info.name = string_field(*meta, "name");
        if (const auto it = meta->find("labels"); it != meta->end()) {
            info.labels = string_map(*it);
        }
        if (const auto it = meta->find("annotations"); it != meta->end()) {
            info.annotations = string_map(*it);
        }
    }
    if (status != gs.end() && status->is_object()) {
        info.state = string_field(*status, "state");
        info.address = string_field(*status, "address");
    }
    return info;
}

agones_sdk::agones_sdk(const server& service, agones_options options)
    : service_{service},
      options_{options},
      sidecar_{asio::ip::make_address_v4("127.0.0.1"), options.port} {}

agones_sdk::~agones_sdk() {
    stop();
}

void agones_sdk::start() {
    spdlog::info("agones: SDK sidecar at http://127.0.0.1:{} (health every {} ms)", options_.port,
                 options_.health_interval.count());
    const auto log_end = [](const char* loop) {
        return [loop](const std::exception_ptr& e) {
            if (e) {
                try {
                    std::rethrow_exception(e);
                } catch (const std::exception& ex) {
                    spdlog::error("agones: the {} loop failed: {}", loop, ex.what());
                }
            }
        };
    };
    asio::co_spawn(io_, health_loop(), log_end("health"));
    asio::co_spawn(io_, lifecycle_loop(), log_end("ready"));
    asio::co_spawn(io_, watch_loop(), log_end("watch"));
    thread_ = std::thread{[this] {
        detail::name_this_thread("agones");
        io_.run();
    }};
}

bool agones_sdk::shutdown(std::chrono::milliseconds bound) {
    if (shutdown_called_.exchange(true) || !thread_.joinable()) {
        stop();
        return false;
    }
    const auto deadline = clock_type::now() + bound;
    auto done = std::make_shared<std::promise<bool>>();
    auto answered = done->get_future();
    asio::co_spawn(io_, send_shutdown(deadline), [done](const std::exception_ptr& e, bool ok) {
        done->set_value(!e && ok);
    });
    bool ok = false;
    // The coroutine gives up at the deadline; the margin lets it say so before the thread stops.
    if (answered.wait_until(deadline + std::chrono::milliseconds{200}) == std::future_status::ready) {
        try {
            ok = answered.get();
        } catch (const std::future_error&) {
            ok = false;
        }
    }
    stop();
    return ok;
}

void agones_sdk::stop() noexcept {
    io_.stop();
    if (thread_.joinable()) {
        thread_.join();
    }
}

std::optional<gameserver_info> agones_sdk::last_gameserver() const {
    const std::lock_guard lock{gameserver_mutex_};
    return gameserver_;
}

asio::awaitable<agones_sdk::reply> agones_sdk::call(http::verb method, std::string_view path,
                                                    std::string body,
                                                    std::chrono::milliseconds timeout) {
    reply r;
    const in_flight counted{calls_in_flight_};
    beast::tcp_stream stream{io_};
    stream.expires_after(timeout);
    if (auto [ec] = co_await stream.async_connect(sidecar_, use_tuple); ec) {
        r.error = "connect: " + ec.message();
        co_return r;
    }
    http::request<http::string_body> req{method, path, 11};
    req.set(http::field::host, "127.0.0.1:" + std::to_string(options_.port));
    req.set(http::field::content_type, "application/json");
    req.keep_alive(false);
    req.body() = std::move(body);
    req.prepare_payload();
    if (auto [ec, n] = co_await http::async_write(stream, req, use_tuple); ec) {
        r.error = "write: " + ec.message();
        co_return r;
    }
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(max_answer_bytes);
    if (auto [ec, n] = co_await http::async_read(stream, buffer, parser, use_tuple); ec) {
        r.error = "read: " + ec.message();
        co_return r;
    }
    boost::system::error_code ignored;
    stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    r.status = parser.get().result_int();
    r.body = std::move(parser.get().body());
    if (r.status / 100 != 2) {
        r.error = "HTTP " + std::to_string(r.status) + " " + printable(r.body, 120);
    }
    co_return r;
}

asio::awaitable<void> agones_sdk::sleep_for(std::chrono::milliseconds delay) {
    asio::steady_timer timer{io_, delay};
    (void)co_await timer.async_wait(use_tuple);
}

asio::awaitable<void> agones_sdk::health_loop() {
    bool pinging = false;  // the last look found ticks on time (for the log: stopped / resumed)
    for (;;) {
        const auto started = clock_type::now();
        if (stopping_) {
            co_return;
        }
        const server_health h = service_.health();
        if (!h.ticking) {
            if (pinging) {
                spdlog::warn("agones: health pings stopped: {}", h.problem);
            }
            pinging = false;
            // Looked at again soon, so that pings resume as soon as ticks do.
            co_await sleep_for(options_.poll_interval);
            continue;
        }
        if (!pinging) {
            spdlog::info("agones: health pings every {} ms (ticks run on time, tick {})",
                         options_.health_interval.count(), h.tick);
        }
        pinging = true;
        const reply r = co_await call(http::verb::post, "/health", "{}", options_.request_timeout);
        if (!r.ok()) {
            report_failure("POST /health", r);
        }
        co_await sleep_for(std::chrono::duration_cast<std::chrono::milliseconds>(
            started + options_.health_interval - clock_type::now()));
    }
}

asio::awaitable<void> agones_sdk::lifecycle_loop() {
    retry_backoff ready_backoff{options_.retry_min, options_.retry_max};
    retry_backoff label_backoff{options_.retry_min, options_.retry_max};
    clock_type::time_point ready_due{};
    clock_type::time_point label_due{};
    bool ready = false;
    std::optional<std::size_t> label_players;  // the count the sidecar last accepted
    while (!stopping_) {
        const server_health h = service_.health();
        // A completed tick too (h.tick > 0): ticking alone is true from start().
        if (!ready && h.accepting && h.ticking && !h.draining && h.tick > 0 &&
            clock_type::now() >= ready_due) {
            const reply r = co_await call(http::verb::post, "/ready", "{}", options_.request_timeout);
            if (r.ok()) {
                ready = true;
                spdlog::info("agones: ready (POST /ready accepted at tick {}, {} players)", h.tick,
                             h.clients);
            } else {
                report_failure("POST /ready", r);
                ready_due = clock_type::now() + ready_backoff.next();
            }
        }
        if (ready && !stopping_ && label_players != h.clients && clock_type::now() >= label_due) {
            const nlohmann::json label{{"key", "players"}, {"value", std::to_string(h.clients)}};
            const reply r = co_await call(http::verb::put, "/metadata/label", label.dump(),
                                          options_.request_timeout);
            if (r.ok()) {
                label_players = h.clients;
                label_backoff.reset();
            } else {
                report_failure("PUT /metadata/label", r);
                label_due = clock_type::now() + label_backoff.next();
            }
        }
        co_await sleep_for(options_.poll_interval);
    }
}

asio::awaitable<void> agones_sdk::watch_loop() {
    retry_backoff backoff{options_.retry_min, options_.retry_max};
    bool have_gameserver = false;
    while (!stopping_) {
        if (!have_gameserver) {
            const reply r =
                co_await call(http::verb::get, "/gameserver", {}, options_.request_timeout);
            if (!r.ok()) {
                report_failure("GET /gameserver", r);
            } else if (auto info = parse_gameserver(r.body)) {
                remember(std::move(*info), "GET /gameserver");
                have_gameserver = true;
            } else {
                report_failure("GET /gameserver", reply{r.status, {}, "not a GameServer: " +
                                                                          printable(r.body, 120)});
            }
        }
        if (stopping_) {
            co_return;
        }
        if (co_await watch_once()) {
            have_gameserver = true;
            backoff.reset();
        }
        co_await sleep_for(backoff.next());
    }
}

asio::awaitable<bool> agones_sdk::watch_once() {
    constexpr std::string_view what = "GET /watch/gameserver";
    bool delivered = false;
    std::optional<in_flight> counted{std::in_place, calls_in_flight_};  // until the stream is open
    beast::tcp_stream stream{io_};
    stream.expires_after(options_.request_timeout);
    if (auto [ec] = co_await stream.async_connect(sidecar_, use_tuple); ec) {
        report_failure(what, reply{0, {}, "connect: " + ec.message()});
        co_return delivered;
    }
    http::request<http::string_body> req{http::verb::get, "/watch/gameserver", 11};
    req.set(http::field::host, "127.0.0.1:" + std::to_string(options_.port));
    req.set(http::field::content_type, "application/json");
    req.keep_alive(false);
    if (auto [ec, n] = co_await http::async_write(stream, req, use_tuple); ec) {
        report_failure(what, reply{0, {}, "write: " + ec.message()});
        co_return delivered;
    }
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(boost::none);  // a stream: its lines are taken out of the body as they come
    if (auto [ec, n] = co_await http::async_read_header(stream, buffer, parser, use_tuple); ec) {
        report_failure(what, reply{0, {}, "read: " + ec.message()});
        co_return delivered;
    }
    if (parser.get().result_int() != 200) {
        // Its body is read for the log line, within the timeout.
        parser.body_limit(max_answer_bytes);
        (void)co_await http::async_read(stream, buffer, parser, use_tuple);
        report_failure(what, reply{parser.get().result_int(), {},
                                   "HTTP " + std::to_string(parser.get().result_int()) + " " +
                                       printable(parser.get().body(), 120)});
        co_return delivered;
    }
    // The sidecar writes a line when the GameServer changes: it may be silent for hours.
    stream.expires_never();
    counted.reset();
    const auto take_line = [&](std::string_view line) {
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) {
            line.remove_suffix(1);
        }
        if (line.empty()) {
            return;
        }
        if (auto info = parse_gameserver(line)) {
            remember(std::move(*info), what);
            delivered = true;
        } else {
            report_failure(what, reply{200, {}, "not a GameServer: " + printable(line, 120)});
        }
    };
    for (;;) {
        const auto [ec, n] = co_await http::async_read_some(stream, buffer, parser, use_tuple);
        std::string& body = parser.get().body();
        std::size_t start = 0;
        for (auto end = body.find('\n'); end != std::string::npos; end = body.find('\n', start)) {
            take_line(std::string_view{body}.substr(start, end - start));
            start = end + 1;
        }
        body.erase(0, start);
        if (ec || parser.is_done()) {
            if (!ec) {
                take_line(body);  // a last line without its newline
            } else if (ec != http::error::end_of_stream && ec != asio::error::eof) {
                report_failure(what, reply{200, {}, "stream: " + ec.message()});
            }
            co_return delivered;
        }
        if (body.size() > max_answer_bytes) {
            report_failure(what, reply{200, {}, "a line longer than 1 MiB"});
            co_return delivered;
        }
    }
}

asio::awaitable<bool> agones_sdk::send_shutdown(clock_type::time_point deadline) {
    stopping_ = true;
    // The last call: none of the others may reach the sidecar after it.
    while (calls_in_flight_ > 0 && clock_type::now() < deadline) {
        co_await sleep_for(std::chrono::milliseconds{5});
    }
    retry_backoff backoff{options_.retry_min, options_.retry_max};
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
        if (left.count() <= 0) {
            spdlog::warn("agones: POST /shutdown was not accepted in time; Agones will see the "
                         "process exit");
            co_return false;
        }
        const reply r = co_await call(http::verb::post, "/shutdown", "{}",
                                      std::min(options_.request_timeout, left));
        if (r.ok()) {
            spdlog::info("agones: shutdown (POST /shutdown accepted)");
            co_return true;
        }
        report_failure("POST /shutdown", r);
        const auto still_left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
        co_await sleep_for(std::max(std::min(backoff.next(), still_left), std::chrono::milliseconds{0}));
    }
}

void agones_sdk::remember(gameserver_info info, std::string_view source) {
    std::optional<gameserver_info> before;
    {
        const std::lock_guard lock{gameserver_mutex_};
        before = std::exchange(gameserver_, info);
    }
    if (before && before->state == info.state) {
        return;
    }
    if (info.state == "Allocated") {
        spdlog::info("agones: GameServer {} is Allocated ({}): labels {}, annotations {}",
                     printable(info.name), source, describe_map(info.labels),
                     describe_map(info.annotations));
    } else {
        spdlog::info("agones: GameServer {} is {} ({})", printable(info.name),
                     printable(info.state), source);
    }
}

void agones_sdk::report_failure(std::string_view what, const reply& r) {
    std::size_t suppressed = 0;
    if (!failures_.allow(suppressed)) {
        return;
    }
    if (suppressed == 0) {
        spdlog::warn("agones: {} failed: {}", what, r.error);
    } else {
        spdlog::warn("agones: {} failed: {} ({} more sidecar failures not logged)", what, r.error,
                     suppressed);
    }
}

}  // namespace ecsnet::server
