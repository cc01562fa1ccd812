// A minimal HTTP/1.1 GET for the admin endpoint tests (Boost.Beast), bounded in time.
#pragma once

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/asio/write.hpp>
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace ecsnet::test {

struct http_reply {
    unsigned status = 0;  // 0: no answer (refused, closed, timed out)
    std::string body;
    std::string content_type;
    std::string error;
};

namespace detail {
inline boost::asio::awaitable<void> http_get(std::uint16_t port, std::string path,
                                             std::string authorization, http_reply& reply) {
    namespace http = boost::beast::http;
    boost::beast::tcp_stream stream{co_await boost::asio::this_coro::executor};
    co_await stream.async_connect({boost::asio::ip::make_address("127.0.0.1"), port},
                                  boost::asio::use_awaitable);
    http::request<http::empty_body> request{http::verb::get, path, 11};
    request.set(http::field::host, "127.0.0.1");
    if (!authorization.empty()) {
        request.set(http::field::authorization, authorization);
    }
    co_await http::async_write(stream, request, boost::asio::use_awaitable);
    boost::beast::flat_buffer buffer;
    http::response<http::string_body> response;
    co_await http::async_read(stream, buffer, response, boost::asio::use_awaitable);
    reply.status = response.result_int();
    reply.body = response.body();
    reply.content_type = std::string{response[http::field::content_type]};
}
}  // namespace detail

// GET http://127.0.0.1:port/path; status 0 with the error when there is no answer in `timeout`.
// `authorization`: the header's value, if any ("Bearer ...").
inline http_reply http_get(std::uint16_t port, const std::string& path,
                           std::chrono::milliseconds timeout = std::chrono::seconds{3},
                           const std::string& authorization = {}) {
    http_reply reply;
    boost::asio::io_context io;
    bool done = false;
    boost::asio::co_spawn(io, detail::http_get(port, path, authorization, reply),
                          [&](const std::exception_ptr& e) {
                              done = true;
                              if (e) {
                                  try {
                                      std::rethrow_exception(e);
                                  } catch (const std::exception& ex) {
                                      reply.status = 0;
                                      reply.error = ex.what();
                                  }
                              }
                          });
    io.run_for(timeout);
    if (!done) {
        reply.error = "no answer within " + std::to_string(timeout.count()) + " ms";
    }
    return reply;
}

// An HTTP request written as is on a plain socket, and the server's answer (status line and all)
// until it closes, or until the headers of a 101 (an upgraded connection stays open); at most 5 s.
inline std::string http_exchange(std::uint16_t port, const std::string& request) {
    namespace asio = boost::asio;
    asio::io_context io;
    asio::ip::tcp::socket socket{io};
    socket.connect({asio::ip::make_address("127.0.0.1"), port});
    asio::write(socket, asio::buffer(request));
    std::string answer;
    std::array<char, 4096> chunk{};
    bool done = false;
    std::function<void()> read_more = [&] {
        socket.async_read_some(asio::buffer(chunk), [&](const boost::system::error_code& ec,
                                                        std::size_t n) {
            answer.append(chunk.data(), n);
            const bool upgraded = answer.starts_with("HTTP/1.1 101") &&
                                  answer.find("\r\n\r\n") != std::string::npos;
            if (ec || upgraded) {
                done = true;
            } else {
                read_more();
            }
        });
    };
    read_more();
    io.run_for(std::chrono::seconds{5});
    EXPECT_TRUE(done) << "the server neither upgraded nor closed the connection within 5 s";
    return answer;
}

// A WebSocket upgrade request for `target`; `extra_headers` each end in \r\n (e.g. an Origin).
inline std::string websocket_upgrade_request(std::uint16_t port, const std::string& target,
                                             const std::string& extra_headers = "") {
    return "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
           "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n" +
           extra_headers + "\r\n";
}

}  // namespace ecsnet::test
