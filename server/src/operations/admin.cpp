#include "ecsnet/server/operations/admin.hpp"

#include "../thread_name.hpp"

#include "ecsnet/server/transport/stream.hpp"
#include "../transport/use_tuple.hpp"

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
#include <boost/beast/websocket/rfc6455.hpp>
#include <nlohmann/json.hpp>
#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <stdexcept>

namespace ecsnet::server {

namespace asio = boost::asio;
using detail::use_tuple;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {


// Constant time in the content (digests also hide the length): a wrong token says nothing of
// how much of it matched.
bool same_secret(std::string_view a, std::string_view b) {
    std::array<unsigned char, SHA256_DIGEST_LENGTH> x{};
    std::array<unsigned char, SHA256_DIGEST_LENGTH> y{};
    SHA256(reinterpret_cast<const unsigned char*>(a.data()), a.size(), x.data());
    SHA256(reinterpret_cast<const unsigned char*>(b.data()), b.size(), y.data());
    return CRYPTO_memcmp(x.data(), y.data(), x.size()) == 0;
}

// The value of `name` in the target's query, percent-decoded ("?token=a%2Bb" -> "a+b").
std::optional<std::string> query_value(std::string_view target, std::string_view name) {
    const auto start = target.find('?');
    if (start == std::string_view::npos) {
        return std::nullopt;
    }
    std::string_view query = target.substr(start + 1);
    while (!query.empty()) {
        const auto end = query.find('&');
        const std::string_view pair = query.substr(0, end);
        query = end == std::string_view::npos ? std::string_view{} : query.substr(end + 1);
        const auto eq = pair.find('=');
        if (pair.substr(0, eq) != name) {
            continue;
        }
        const std::string_view raw = eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
        std::string value;
        for (std::size_t i = 0; i < raw.size(); ++i) {
            const auto hex = [](char c) {
                return c >= '0' && c <= '9' ? c - '0'
                       : c >= 'a' && c <= 'f' ? c - 'a' + 10
                       : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                              : -1;
            };
            if (raw[i] == '%' && i + 2 < raw.size() && hex(raw[i + 1]) >= 0 && hex(raw[i + 2]) >= 0) {
                value += static_cast<char>(hex(raw[i + 1]) * 16 + hex(raw[i + 2]));
                i += 2;
            } else {
                value += raw[i] == '+' ? ' ' : raw[i];
            }
        }
        return value;
    }
    return std::nullopt;
}

// Whether the request carries the inspector's token (none configured: every request does).
bool has_inspector_token(const http::request<http::string_body>& req, const std::string& token,
                         bool header_too) {
    if (token.empty()) {
        return true;
    }
    if (header_too) {
        const auto auth = req[http::field::authorization];
        constexpr std::string_view bearer = "Bearer ";
        if (std::string_view{auth.data(), auth.size()}.starts_with(bearer)) {
            return same_secret(std::string_view{auth.data(), auth.size()}.substr(bearer.size()), token);
        }
    }
    const auto given = query_value(req.target(), "token");
    return given && same_secret(*given, token);
}

constexpr std::string_view inspector_missing =
    "the inspector is not built: build with -DECSNET_WEB=ON (node and npm) or pass "
    "--inspector-dir";

// A short text answer; to HEAD without its body (Content-Length still says its size).
http::response<http::string_body> text_response(http::status status,
                                                const http::request<http::string_body>& req,
                                                std::string body) {
    http::response<http::string_body> r{status, req.version()};
    r.set(http::field::content_type, "text/plain; charset=utf-8");
    r.set(http::field::cache_control, "no-store");
    r.content_length(body.size());
    if (req.method() != http::verb::head) {
        r.body() = std::move(body);
    }
    return r;
}

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
          {"bytes_in", s.bytes_in},
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
        {"entities", h.entities},
        {"observers", h.observers},
        {"tick_rate", h.tick_rate},
        {"tick_ms",
         {{"p50", h.tick_ms.p50},
          {"p99", h.tick_ms.p99},
          {"max", h.tick_ms.max},
          {"window_ticks", h.tick_ms.window_ticks}}},
        {"bytes_out_per_s", h.bytes_out_per_s},
        {"bytes_in_per_s", h.bytes_in_per_s},
        {"inspector", {{"writes", h.inspector_writes}, {"token", h.inspector_token}}},
        {"interest",
         {{"enabled", h.interest.enabled},
          {"cell_size", h.interest.cell_size},
          {"radius", h.interest.radius},
          {"budget_bytes_per_tick", h.interest.budget_bytes_per_tick}}},
        {"ws_port", h.ws_port},
    };
}

nlohmann::json clients_json(const clients_report& report) {
    nlohmann::json clients = nlohmann::json::array();
    for (const client_report& c : report.clients) {
        clients.push_back({
            {"session", c.session},
            {"owner", c.owner},
            {"player", c.player},
            {"name", c.name},
            {"transport", c.transport},
            {"address", c.address},
            {"observer", c.observer},
            {"joined_tick", c.joined_tick},
            {"bytes_out", c.bytes_out},
            {"bytes_in", c.bytes_in},
            {"bytes_out_per_s", c.bytes_out_per_s},
            {"budget_bytes_per_s", c.budget_bytes_per_s},
            {"dropped_frames", c.dropped_frames},
            {"resyncs", c.resyncs},
            {"interest", c.interest ? nlohmann::json{{"x", c.interest->x},
                                                     {"y", c.interest->y},
                                                     {"radius", c.interest->radius}}
                                    : nlohmann::json(nullptr)},
            {"view_entities", c.view_entities},
        });
    }
    return {{"tick", report.tick}, {"clients", std::move(clients)}};
}

std::string lower(std::string_view s) {
    std::string out{s};
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

// The host of a Host header without its port: "[::1]:7778" -> "::1", "a.example:80" ->
// "a.example"; nothing when it is malformed (an unbracketed IPv6 address, a bad port).
std::optional<std::string> host_name(std::string_view host) {
    std::string_view name = host;
    std::string_view port;
    if (host.starts_with('[')) {
        const auto close = host.find(']');
        if (close == std::string_view::npos) {
            return std::nullopt;
        }
        name = host.substr(1, close - 1);
        const std::string_view rest = host.substr(close + 1);
        if (!rest.empty() && !rest.starts_with(':')) {
            return std::nullopt;
        }
        port = rest.empty() ? rest : rest.substr(1);
    } else if (const auto colon = host.find(':'); colon != std::string_view::npos) {
        name = host.substr(0, colon);
        port = host.substr(colon + 1);
    }
    if (name.empty() || port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return std::nullopt;
    }
    return lower(name);
}

}  // namespace

bool admin_host_allowed(std::optional<std::string_view> host,
                        const std::vector<std::string>& allowed) {
    if (!host) {
        return true;  // browsers always send Host: a request without one is not a page's
    }
    const auto name = host_name(*host);
    if (!name) {
        return false;
    }
    boost::system::error_code ec;
    // inet_pton's strict forms only: a name such as "0x7f.1" is not taken for an address (a
    // browser would have sent it canonical, "127.0.0.1").
    (void)asio::ip::make_address(*name, ec);
    if (!ec || *name == "localhost") {
        return true;
    }
    return std::any_of(allowed.begin(), allowed.end(),
                       [&](const std::string& a) { return lower(a) == *name; });
}

std::string check_admin_allowed_host(std::string_view name) {
    if (name.empty()) {
        return "an empty host name";
    }
    if (name.find("://") != std::string_view::npos) {
        return "give the host name, not a URL: " + std::string{name};
    }
    if (name.find(':') != std::string_view::npos) {
        return "give the name without a port (any port is allowed): " + std::string{name};
    }
    const bool valid = std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.' || c == '_';
    });
    return valid ? std::string{} : "not a host name: " + std::string{name};
}

bool is_loopback_bind(std::string_view bind) {
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(std::string{bind}, ec);
    return !ec && address.is_loopback();
}

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
        a.body = "not found; try /healthz, /readyz, /status or /metrics\n";
    }
    return a;
}

admin_endpoint::response admin_endpoint::answer(const request& req) const {
    const std::string_view target = req.target();
    const std::string_view path = target.substr(0, target.find('?'));
    if (path == "/inspector" || path.starts_with("/inspector/")) {
        return answer_inspector(req);
    }
    const bool get_or_head = req.method() == http::verb::get || req.method() == http::verb::head;
    if (path == "/" && get_or_head) {
        response r = text_response(http::status::found, req, "the inspector: /inspector/\n");
        r.set(http::field::location, "/inspector/");
        return r;
    }
    if (req.method() != http::verb::get) {
        response r = text_response(http::status::method_not_allowed, req, "only GET\n");
        r.set(http::field::allow, path == "/" ? "GET, HEAD" : "GET");
        return r;
    }
    if (path == "/clients") {
        return answer_clients(req);
    }
    if (path == "/metrics") {
        // Prometheus' text exposition format 0.0.4 (what promtool and every scraper read).
        response r{http::status::ok, req.version()};
        r.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
        r.set(http::field::cache_control, "no-store");
        r.body() = service_.metrics_text();
        r.prepare_payload();
        return r;
    }
    const admin_answer a = answer_admin_request(service_.health(), path);
    response r{static_cast<http::status>(a.status), req.version()};
    r.set(http::field::content_type, a.content_type);
    r.set(http::field::cache_control, "no-store");
    r.body() = a.body;
    r.prepare_payload();
    return r;
}

admin_endpoint::response admin_endpoint::answer_clients(const request& req) const {
    if (auto refusal = refuse_without_token(req)) {
        return std::move(*refusal);
    }
    if (!has_inspector_token(req, service_.config().inspector_token, true)) {
        response r = text_response(http::status::unauthorized, req,
                                   "the inspector's token is required (--inspector-token): "
                                   "Authorization: Bearer TOKEN, or ?token=TOKEN\n");
        r.set(http::field::www_authenticate, "Bearer");
        return r;
    }
    response r{http::status::ok, req.version()};
    r.set(http::field::content_type, "application/json");
    r.set(http::field::cache_control, "no-store");
    // Names come from clients: never let one make the answer fail.
    r.body() = clients_json(service_.client_list())
                   .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
               "\n";
    r.prepare_payload();
    return r;
}

std::optional<admin_endpoint::response> admin_endpoint::refuse_host(const request& req,
                                                                   std::string_view path) const {
    // The kubelet probes the pod's IP, but a probe may name any Host; these two reveal nothing
    // worth a rebinding.
    if (path == "/healthz" || path == "/readyz") {
        return std::nullopt;
    }
    const auto field = req.find(http::field::host);
    std::optional<std::string_view> host;
    if (field != req.end()) {
        host = std::string_view{field->value().data(), field->value().size()};
    }
    if (admin_host_allowed(host, options_.allowed_hosts)) {
        return std::nullopt;
    }
    return text_response(http::status::forbidden, req,
                         "Host " + std::string{host.value_or("")}.substr(0, 255) +
                             " is not allowed on the admin endpoint (DNS rebinding): use an IP "
                             "address or localhost, or allow the name with "
                             "--admin-allowed-hosts (ECSNET_ADMIN_ALLOWED_HOSTS)\n");
}

std::optional<admin_endpoint::response> admin_endpoint::refuse_without_token(
    const request& req) const {
    if (!service_.config().inspector_token.empty() || is_loopback_bind(options_.bind)) {
        return std::nullopt;
    }
    return text_response(http::status::forbidden, req,
                         "observers and /clients are off: the admin endpoint listens on " +
                             options_.bind +
                             " (not loopback) without --inspector-token (ECSNET_INSPECTOR_TOKEN); "
                             "set one, or bind --admin-bind 127.0.0.1\n");
}

std::optional<admin_endpoint::response> admin_endpoint::refuse_observer(
    const request& req, std::size_t early_bytes) const {
    if (!options_.observe) {
        return text_response(http::status::not_found, req, "no observers on this endpoint\n");
    }
    if (!beast::websocket::is_upgrade(req)) {
        response r = text_response(http::status::upgrade_required, req,
                                   "GET /observe is a WebSocket upgrade (the inspector's "
                                   "observer)\n");
        r.set(http::field::upgrade, "websocket");
        return r;
    }
    if (auto refusal = refuse_without_token(req)) {
        return refusal;
    }
    const server_config& config = service_.config();
    // Browsers cannot set headers on a WebSocket: the token comes in the query.
    if (!has_inspector_token(req, config.inspector_token, false)) {
        return text_response(http::status::unauthorized, req,
                             "the inspector's token is required (--inspector-token): "
                             "/observe?token=TOKEN\n");
    }
    // Another site's page must not watch through the browser of someone who can reach this
    // endpoint. The admin endpoint's own list: the game port's (often "*") says nothing here.
    const auto origin_field = req.find(http::field::origin);
    std::optional<std::string_view> origin;
    if (origin_field != req.end()) {
        origin = std::string_view{origin_field->value().data(), origin_field->value().size()};
    }
    const auto host = req[http::field::host];
    if (!origin_allowed(origin, std::string_view{host.data(), host.size()},
                        options_.allowed_origins)) {
        return text_response(http::status::forbidden, req,
                             "this Origin is not allowed (--admin-allowed-origins)\n");
    }
    if (early_bytes != 0) {
        return text_response(http::status::bad_request, req,
                             "bytes sent before the WebSocket upgrade was answered\n");
    }
    if (service_.health().draining) {
        return text_response(http::status::service_unavailable, req,
                             "the server is draining: no new observers\n");
    }
    return std::nullopt;
}

admin_endpoint::response admin_endpoint::answer_inspector(const request& req) const {
    if (!inspector_.available()) {
        return text_response(http::status::not_found, req, std::string{inspector_missing} + "\n");
    }
    return inspector_.answer(req.method(), req.target(), req.version());
}

admin_endpoint::admin_endpoint(const server& service, admin_options options)
    : service_{service},
      options_{std::move(options)},
      inspector_{options_.inspector_dir, "/inspector"},
      acceptor_{io_} {}

admin_endpoint::~admin_endpoint() {
    stop();
}

void admin_endpoint::start() {
    port_ = listen_on(acceptor_, options_.bind, options_.port, "--admin-bind", "admin ");
    spdlog::info("admin endpoint on http://{}:{} (/healthz, /readyz, /status, /metrics, /clients, /observe)", options_.bind,
                 port_);
    if (inspector_.available()) {
        spdlog::info("web inspector on http://{}:{}/inspector/ (files from {})", options_.bind,
                     port_, inspector_.root().string());
    } else {
        spdlog::info("no web inspector: {} is not a directory ({})",
                     inspector_.root().empty() ? std::string{"its directory"}
                                               : inspector_.root().string(),
                     inspector_missing);
    }
    if (service_.config().inspector_token.empty() && !is_loopback_bind(options_.bind)) {
        spdlog::warn("observers and /clients are off: the admin endpoint listens on {} (not "
                     "loopback) without --inspector-token; set one to use the inspector there",
                     options_.bind);
    }
    asio::co_spawn(io_, accept_loop(), [](const std::exception_ptr& e) {
        if (e) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                spdlog::critical("admin accept loop failed: {}", ex.what());
            }
        }
    });
    thread_ = std::thread{[this] {
        detail::name_this_thread("admin");
        io_.run();
    }};
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
    // An admitted /observe hands its connection to the server, which answers the upgrade; every
    // other request (a refused upgrade too) is answered here.
    const request& req = parser.get();
    const std::string_view target = req.target();
    const std::string_view path = target.substr(0, target.find('?'));
    response reply;
    if (auto foreign = refuse_host(req, path)) {
        reply = std::move(*foreign);
    } else if (path == "/observe") {
        if (auto refusal = refuse_observer(req, buffer.size())) {
            reply = std::move(*refusal);
        } else {
            stream.expires_never();
            try {
                options_.observe(released_socket{stream.socket()}, parser.release());
            } catch (const std::exception& e) {
                spdlog::warn("observer connection lost before the server took it: {}", e.what());
            }
            co_return;
        }
    } else {
        reply = answer(req);
    }
    reply.keep_alive(false);
    stream.expires_after(options_.timeout);
    (void)co_await http::async_write(stream, reply, use_tuple);
    boost::system::error_code ignored;
    stream.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
}

}  // namespace ecsnet::server
