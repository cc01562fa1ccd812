#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "ecsnet/server/server.hpp"
#include "ecsnet/server/transport/static_files.hpp"

namespace ecsnet::server {

struct admin_options {
    std::string bind = "127.0.0.1";
    std::uint16_t port = 0;                    // 0: any free port
    // Host names a request may name besides literal IP addresses and localhost
    // (--admin-allowed-hosts; see admin_host_allowed).
    std::vector<std::string> allowed_hosts;
    // Origins a browser may open /observe from (--admin-allowed-origins: "https://x.example",
    // "*"); empty: the request's own Host only. Never the game port's --ws-allowed-origins.
    std::vector<std::string> allowed_origins;
    // At the cap a newcomer closes the oldest connection still waiting for its request; only
    // when every one has its request (they are answering) is the newcomer closed at once.
    std::size_t max_connections = 32;
    std::size_t max_request_bytes = 8 * 1024;  // header and body together
    std::chrono::milliseconds timeout{2000};   // to read the whole request, and to write the answer
    // The web inspector's files, served under /inspector/ (run() gives --inspector-dir or its
    // default). Empty or missing: /inspector/ answers 404 with how to build it.
    std::filesystem::path inspector_dir{};
    // Where an admitted GET /observe upgrade goes (token and Origin checked, nothing answered
    // yet): run() gives server::adopt_observer. Unset: /observe answers 404.
    std::function<void(released_socket, upgrade_request)> observe;
};

// One answer of the admin endpoint, computed from server::health() alone.
struct admin_answer {
    unsigned status = 200;
    std::string content_type = "text/plain; charset=utf-8";
    std::string body;
};

// GET /healthz (liveness): 200 while the tick loop runs on time (server_health::ticking), else
// 503 with the reason; a full or draining server is healthy. GET /readyz (readiness): 200 while
// it also accepts connections, is not draining and has a free player slot, else 503.
// GET /status: 200 and a JSON object (tick, clients, flags, stats). Anything else: 404.
// (The endpoint itself also serves the inspector: GET/HEAD /inspector/..., and / redirects there;
// GET /clients, the joined connections; GET /observe, a WebSocket upgrade: an observer.)
[[nodiscard]] admin_answer answer_admin_request(const server_health& health, std::string_view path);

// Whether a request's Host header may reach the admin endpoint's data (everything but /healthz
// and /readyz). DNS rebinding (a page on evil.example whose name now resolves to 127.0.0.1)
// needs a *name* in Host: a literal IP address ("10.0.0.7:7778", "[::1]") cannot be rebound
// and always passes, as do localhost, an absent Host (not a browser) and `allowed` (names
// without a port, compared without case). A Host's port is not compared.
[[nodiscard]] bool admin_host_allowed(std::optional<std::string_view> host,
                                      const std::vector<std::string>& allowed);
// Why an --admin-allowed-hosts entry is not a host name ("give the name without a port: ...");
// empty when it is one.
[[nodiscard]] std::string check_admin_allowed_host(std::string_view name);
// Whether --admin-bind is a loopback address (127.0.0.0/8, ::1): off it, observers and
// /clients need --inspector-token.
[[nodiscard]] bool is_loopback_bind(std::string_view bind);

// The admin HTTP/1.1 endpoint (Boost.Beast), for orchestrators: probes must answer even while
// the game thread is stuck in a tick, so it runs its own io_context on its own thread and reads
// the server only through server::health() (thread-safe). Bounded: at most max_connections
// sockets at once, each with a request of at most max_request_bytes read within the timeout
// (trickled bytes do not extend it), one request per connection (`Connection: close`). Idle or
// slow connections cannot lock probes out: a newcomer at the cap evicts the oldest connection
// that has not sent a complete request.
class admin_endpoint {
public:
    admin_endpoint(const server& service, admin_options options);
    admin_endpoint(const admin_endpoint&) = delete;
    admin_endpoint& operator=(const admin_endpoint&) = delete;
    ~admin_endpoint();

    // Binds, listens and starts the thread. Throws std::runtime_error ("cannot listen on admin
    // 127.0.0.1:7778: bind: Address already in use") when it cannot.
    void start();
    // Stops the thread; requests in flight are cut off. Idempotent.
    void stop() noexcept;

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }

private:
    using request = boost::beast::http::request<boost::beast::http::string_body>;
    using response = boost::beast::http::response<boost::beast::http::string_body>;

    boost::asio::awaitable<void> accept_loop();
    // Every route but the WebSocket ones: the inspector's files, / to them, the probes.
    [[nodiscard]] response answer(const request& req) const;
    [[nodiscard]] response answer_inspector(const request& req) const;
    // GET /clients (the inspector's token, if any, as a Bearer header or ?token=).
    [[nodiscard]] response answer_clients(const request& req) const;
    // 403 when the request's Host is not allowed (admin_host_allowed) on this path.
    [[nodiscard]] std::optional<response> refuse_host(const request& req,
                                                      std::string_view path) const;
    // 403 naming --inspector-token when the endpoint is off loopback and has no token.
    [[nodiscard]] std::optional<response> refuse_without_token(const request& req) const;
    // Why a GET /observe may not become an observer (426, 401, 403, 503...), or nothing: the
    // connection then goes to options_.observe. `early_bytes`: read past the request.
    [[nodiscard]] std::optional<response> refuse_observer(const request& req,
                                                          std::size_t early_bytes) const;
    boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket socket, std::uint64_t id);
    // At the cap: closes the oldest connection still reading its request. False when every
    // connection has its request (the newcomer is then closed).
    bool evict_oldest_reading() noexcept;

    // A connection being served; `reading` until its request is complete.
    struct open_connection {
        boost::asio::ip::tcp::socket* socket{nullptr};  // null until its coroutine started
        bool reading{true};
    };

    const server& service_;
    admin_options options_;
    static_files inspector_;
    // On the admin thread only. By accept order (ids grow): begin() is the oldest. Declared
    // before io_: coroutine frames that io_ destroys give their slot back into it.
    std::map<std::uint64_t, open_connection> open_;
    std::uint64_t next_id_{0};
    boost::asio::io_context io_{1};
    boost::asio::ip::tcp::acceptor acceptor_;
    std::thread thread_;
    std::uint16_t port_{0};
};

}  // namespace ecsnet::server
