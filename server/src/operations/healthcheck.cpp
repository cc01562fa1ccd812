#include "ecsnet/server/operations/healthcheck.hpp"
#include "../transport/use_tuple.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <optional>

namespace ecsnet::server {

namespace asio = boost::asio;
using detail::use_tuple;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {


std::string trimmed(std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
        text.pop_back();
    }
    return text;
}

asio::awaitable<int> check(const std::string& host, std::uint16_t port, std::string& why) {
    auto executor = co_await asio::this_coro::executor;
    const std::string where = host + ":" + std::to_string(port);
    asio::ip::tcp::resolver resolver{executor};
    auto [rec, endpoints] = co_await resolver.async_resolve(host, std::to_string(port), use_tuple);
    if (rec) {
        why = "cannot resolve " + host + ": " + rec.message();
        co_return 1;
    }
    beast::tcp_stream stream{executor};
    if (auto [ec, ep] = co_await stream.async_connect(endpoints, use_tuple); ec) {
        why = "cannot connect to the admin endpoint " + where + ": " + ec.message();
        co_return 1;
    }
    http::request<http::empty_body> request{http::verb::get, "/healthz", 11};
    request.set(http::field::host, where);
    request.set(http::field::user_agent, "ecsnet-server --healthcheck");
    request.keep_alive(false);
    if (auto [ec, n] = co_await http::async_write(stream, request, use_tuple); ec) {
        why = "send failed: " + ec.message();
        co_return 1;
    }
    beast::flat_buffer buffer{16 * 1024};
    http::response_parser<http::string_body> parser;
    parser.body_limit(4096);
    if (auto [ec, n] = co_await http::async_read(stream, buffer, parser, use_tuple); ec) {
        why = "read failed: " + ec.message();
        co_return 1;
    }
    const auto& response = parser.get();
    why = trimmed(response.body());
    if (response.result() != http::status::ok) {
        why = "HTTP " + std::to_string(response.result_int()) + " from " + where + ": " + why;
        co_return 1;
    }
    co_return 0;
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
        why = "no answer within " + std::to_string(budget.count()) +
              " ms from the admin endpoint " + host + ":" + std::to_string(port) +
              " (not running?)";
        return 1;
    }
    return *result;
}

}  // namespace ecsnet::server
