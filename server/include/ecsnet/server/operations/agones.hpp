#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/verb.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "ecsnet/server/operations/logging.hpp"
#include "ecsnet/server/server.hpp"

namespace ecsnet::server {

// Agones' default SDK sidecar port (the sidecar's REST API; AGONES_SDK_HTTP_PORT overrides it).
inline constexpr std::uint16_t default_agones_port = 9358;

struct agones_options {
    std::uint16_t port = default_agones_port;  // the sidecar's REST API on 127.0.0.1
    // Below Agones' default health period (5 s), so that one lost ping does not count.
    std::chrono::milliseconds health_interval{2000};
    std::chrono::milliseconds request_timeout{2000};  // every call: connect, write, answer
    // How often server::health() is read (ready, the player count, whether ticks run on time).
    std::chrono::milliseconds poll_interval{100};
    // Failed calls are retried after retry_min, doubling up to retry_max.
    std::chrono::milliseconds retry_min{250};
    std::chrono::milliseconds retry_max{5000};
};

// What ecsnet reads of a GameServer (the REST API's JSON: GET /gameserver, /watch/gameserver).
struct gameserver_info {
    std::string name;
    std::string state;  // status.state: Scheduled, RequestReady, Ready, Allocated, Shutdown...
    std::string address;
    std::map<std::string, std::string> labels;
    std::map<std::string, std::string> annotations;
};

// A GameServer object, or a line of /watch/gameserver ({"result": {...}}); nothing for anything
// else (an {"error": ...} line, or text that is not one).
[[nodiscard]] std::optional<gameserver_info> parse_gameserver(std::string_view json);

// The Agones lifecycle (docs/SERVER.md, "Agones") through the SDK sidecar's REST API: POST /ready
// once the game port is bound and the world ticks; POST /health every health_interval while
// ticks run on time (a stalled tick stops them: Agones then marks the GameServer Unhealthy);
// PUT /metadata/label "players" when the joined count changes; GET /gameserver and the
// /watch/gameserver stream for the state, labels and annotations; POST /shutdown at the end.
// Like admin_endpoint it runs its own io_context on its own thread and reads the server only
// through server::health(), so a slow, absent or broken sidecar never holds the world up:
// every call has a timeout, failures are retried with backoff and logged at a bounded rate.
class agones_sdk {
public:
    agones_sdk(const server& service, agones_options options);
    agones_sdk(const agones_sdk&) = delete;
    agones_sdk& operator=(const agones_sdk&) = delete;
    ~agones_sdk();

    // Starts the thread; the sidecar need not be up yet.
    void start();
    // POST /shutdown, retried until it is answered or `bound` has passed, then stop(). Once:
    // later calls do nothing. True when the sidecar answered 200.
    bool shutdown(std::chrono::milliseconds bound);
    // Stops the thread; calls in flight are cut off. Idempotent.
    void stop() noexcept;

    // The GameServer as last read from the sidecar (GET /gameserver or the watch stream).
    // Any thread.
    [[nodiscard]] std::optional<gameserver_info> last_gameserver() const;

private:
    struct reply {
        unsigned status{0};  // 0: no HTTP answer (connection refused, timeout...)
        std::string body;
        std::string error;  // why it failed; empty on a 2xx answer
        [[nodiscard]] bool ok() const noexcept { return error.empty(); }
    };

    // One request on a connection of its own, bounded by `timeout` from connect to answer.
    boost::asio::awaitable<reply> call(boost::beast::http::verb method, std::string_view path,
                                       std::string body, std::chrono::milliseconds timeout);
    boost::asio::awaitable<void> health_loop();
    // POST /ready, then the players label.
    boost::asio::awaitable<void> lifecycle_loop();
    boost::asio::awaitable<void> watch_loop();
    // One /watch/gameserver stream, until it ends; whether it delivered a GameServer.
    boost::asio::awaitable<bool> watch_once();
    boost::asio::awaitable<bool> send_shutdown(std::chrono::steady_clock::time_point deadline);
    boost::asio::awaitable<void> sleep_for(std::chrono::milliseconds delay);

    void remember(gameserver_info info, std::string_view source);
    void report_failure(std::string_view what, const reply& r);

    const server& service_;
    agones_options options_;
    boost::asio::ip::tcp::endpoint sidecar_;
    log_limiter failures_{5, std::chrono::seconds{30}};
    mutable std::mutex gameserver_mutex_;
    std::optional<gameserver_info> gameserver_;
    std::atomic<bool> shutdown_called_{false};
    bool stopping_{false};  // on the SDK thread: once shutdown began, no ready, label or ping
    int calls_in_flight_{0};  // on the SDK thread: requests sent and not yet answered
    struct in_flight {
        explicit in_flight(int& count) noexcept : count_{count} { ++count_; }
        in_flight(const in_flight&) = delete;
        in_flight& operator=(const in_flight&) = delete;
        ~in_flight() { --count_; }
        int& count_;
    };
    boost::asio::io_context io_{1};
    std::thread thread_;
};

}  // namespace ecsnet::server
