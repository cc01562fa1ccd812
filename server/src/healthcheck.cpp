#include "ecsnet/server/healthcheck.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <optional>

#include "ecsnet/protocol/messages.hpp"

namespace ecsnet::server {

namespace asio = boost::asio;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

// Sends Ping and returns the tick of the Pong.
asio::awaitable<std::optional<std::uint64_t>> ping(asio::ip::tcp::socket& socket,
                                                   std::uint64_t nonce, std::string& why) {
    const auto frame = protocol::encode(protocol::client_message{protocol::ping{nonce}});
    if (auto [ec, n] = co_await asio::async_write(socket, asio::buffer(*frame), use_tuple); ec) {
        why = "send failed: " + ec.message();
        co_return std::nullopt;
    }
    for (;;) {  // skip anything that is not our Pong
        std::array<std::uint8_t, protocol::frame_prefix_bytes> prefix{};
        if (auto [ec, n] = co_await asio::async_read(socket, asio::buffer(prefix), use_tuple); ec) {
            why = "read failed: " + ec.message();
            co_return std::nullopt;
        }
        const std::uint32_t length = protocol::read_prefix(prefix);
        if (length > 64 * 1024) {
            why = "unexpected frame of " + std::to_string(length) + " bytes";
            co_return std::nullopt;
        }
        std::vector<std::uint8_t> bytes(protocol::frame_prefix_bytes + length);
        std::copy(prefix.begin(), prefix.end(), bytes.begin());
        if (auto [ec, n] = co_await asio::async_read(
                socket, asio::buffer(bytes.data() + protocol::frame_prefix_bytes, length), use_tuple);
            ec) {
            why = "read failed: " + ec.message();
            co_return std::nullopt;
        }
        const auto* message = protocol::verify_server_frame(bytes, &why);
        if (message == nullptr) {
            co_return std::nullopt;
        }
        const auto control = protocol::decode_server_control(*message, &why);
        if (!control) {
            co_return std::nullopt;
        }
        if (const auto* d = std::get_if<protocol::disconnect>(&*control)) {
            why = "server said: " + d->reason;
            co_return std::nullopt;
        }
        if (const auto* p = std::get_if<protocol::pong>(&*control); p != nullptr && p->nonce == nonce) {
            co_return p->tick;
        }
    }
}

asio::awaitable<int> check(const std::string& host, std::uint16_t port, std::string& why) {
    auto executor = co_await asio::this_coro::executor;
    asio::ip::tcp::resolver resolver{executor};
    auto [rec, endpoints] = co_await resolver.async_resolve(host, std::to_string(port), use_tuple);
    if (rec) {
        why = "cannot resolve " + host + ": " + rec.message();
        co_return 1;
    }
    asio::ip::tcp::socket socket{executor};
    if (auto [ec, ep] = co_await asio::async_connect(socket, endpoints, use_tuple); ec) {
        why = "cannot connect to " + host + ":" + std::to_string(port) + ": " + ec.message();
        co_return 1;
    }
    const auto first = co_await ping(socket, 1, why);
    if (!first) {
        co_return 1;
    }
    asio::steady_timer pause{executor};
    for (std::uint64_t nonce = 2;; ++nonce) {
        pause.expires_after(std::chrono::milliseconds{50});
        co_await pause.async_wait(use_tuple);
        const auto now = co_await ping(socket, nonce, why);
        if (!now) {
            co_return 1;
        }
        if (*now > *first) {
            co_return 0;
        }
    }
}

}  // namespace

int run_healthcheck(const std::string& host, std::uint16_t port, std::chrono::milliseconds budget,
                    std::string& why) {
    asio::io_context io;
    std::optional<int> result;
    asio::co_spawn(io, check(host, port, why), [&](const std::exception_ptr& e, int code) {
        result = e ? 1 : code;
    });
    io.run_for(budget);
    if (!result) {
        why = "no answer within " + std::to_string(budget.count()) + " ms (not ticking?)";
        return 1;
    }
    return *result;
}

}  // namespace ecsnet::server
