#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>

#include "ecsnet/server/server.hpp"

namespace ecsnet::server {

struct admin_options {
    std::string bind = "127.0.0.1";
    std::uint16_t port = 0;                    // 0: any free port
    std::size_t max_connections = 8;           // more are closed at once
    std::size_t max_request_bytes = 8 * 1024;  // header and body together
    std::chrono::milliseconds timeout{2000};   // to read the request, and to write the answer
};

// One answer of the admin endpoint, computed from server::health() alone.
struct admin_answer {
    unsigned status = 200;
    std::string content_type = "text/plain; charset=utf-8";
    std::string body;
};

// GET /healthz: 200 while the tick loop runs on time (server_health::ticking), else 503 with
// the reason. GET /readyz: 200 while it also accepts players and is not draining, else 503.
// GET /status: 200 and a JSON object (tick, clients, flags, stats). Anything else: 404.
[[nodiscard]] admin_answer answer_admin_request(const server_health& health, std::string_view path);

// The admin HTTP/1.1 endpoint (Boost.Beast), for orchestrators: probes must answer even while
// the game thread is stuck in a tick, so it runs its own io_context on its own thread and reads
// the server only through server::health() (thread-safe). Bounded: at most max_connections at
// once, a request of at most max_request_bytes read within the timeout, one request per
// connection (`Connection: close`).
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
    boost::asio::awaitable<void> accept_loop();
    boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket socket);

    const server& service_;
    admin_options options_;
    boost::asio::io_context io_{1};
    boost::asio::ip::tcp::acceptor acceptor_;
    std::thread thread_;
    std::uint16_t port_{0};
    std::size_t connections_{0};  // on the admin thread only
};

}  // namespace ecsnet::server
