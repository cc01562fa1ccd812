#include "ecsnet/server/transport/websocket_stream.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <exception>
#include <type_traits>
#include <utility>
#include <variant>

#include <spdlog/spdlog.h>

#include "counting_socket.hpp"
#include "ecsnet/protocol/frame.hpp"
#include "ecsnet/server/operations/logging.hpp"
#include "use_tuple.hpp"

namespace ecsnet::server {

namespace asio = boost::asio;
using detail::use_tuple;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using asio::awaitable;

// Beast closes a WebSocket with these (found by argument-dependent lookup): as for the socket
// underneath.
void teardown(beast::role_type role, counting_socket& socket, boost::system::error_code& ec) {
    websocket::teardown(role, socket.next_layer(), ec);
}

template <typename Handler>
void async_teardown(beast::role_type role, counting_socket& socket, Handler&& handler) {
    websocket::async_teardown(role, socket.next_layer(), std::forward<Handler>(handler));
}

namespace {


enum class ws_error {
    not_one_frame = 1,
    frame_split,
    text_message,
    early_data,
    not_upgrade,
    origin_refused,
    page_served,
};

class ws_error_category final : public boost::system::error_category {
public:
    [[nodiscard]] const char* name() const noexcept override { return "ecsnet.websocket"; }
    [[nodiscard]] std::string message(int value) const override {
        switch (static_cast<ws_error>(value)) {
            case ws_error::not_one_frame:
                return "a WebSocket message held more than one frame (send one message per frame)";
            case ws_error::frame_split:
                return "a WebSocket message ended inside a frame (send one message per frame)";
            case ws_error::text_message:
                return "a WebSocket text message (frames are binary messages)";
            case ws_error::early_data:
                return "bytes sent before the WebSocket upgrade was answered";
            case ws_error::not_upgrade:
                return "not a WebSocket upgrade request (answered 426 Upgrade Required)";
            case ws_error::origin_refused:
                return "WebSocket upgrade refused: the Origin is not allowed (--ws-allowed-origins)";
            case ws_error::page_served:
                return "a plain HTTP request answered from --web-root";
        }
        return "unknown WebSocket error";
    }
};

const ws_error_category& category() noexcept {
    static const ws_error_category instance;
    return instance;
}

[[nodiscard]] boost::system::error_code make_error(ws_error e) {
    return {static_cast<int>(e), category()};
}

[[nodiscard]] std::string lower(std::string_view s) {
    std::string out{s};
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

using clock = std::chrono::steady_clock;

// Closes the socket once `deadline` passes (the transfer moves it on); ends when cancelled.
awaitable<void> cut_when_stalled(asio::ip::tcp::socket& socket, const clock::time_point& deadline,
                                 bool& stalled) {
    asio::steady_timer timer{socket.get_executor()};
    for (;;) {
        timer.expires_at(deadline);
        auto [ec] = co_await timer.async_wait(use_tuple);
        if (ec) {
            co_return;
        }
        if (clock::now() >= deadline) {
            stalled = true;
            boost::system::error_code ignored;
            socket.close(ignored);
            co_return;
        }
    }
}

// The headers, then the file a chunk at a time: one chunk in memory, each written whole
// within the stall timeout. A file that shrank meanwhile ends the connection short of its
// Content-Length (the client sees a truncated answer, never other bytes).
template <typename Stream>
awaitable<void> send_page(Stream& stream, static_reply& reply, page_budget::lease& lease,
                          clock::time_point& deadline, bool& complete) {
    const auto stall = lease.limits().stall_timeout;
    http::response_serializer<http::string_body> serializer{reply.message};
    deadline = clock::now() + stall;
    if (!reply.file) {
        auto [ec, n] = co_await http::async_write(stream, serializer, use_tuple);
        (void)n;
        complete = !ec;
        co_return;
    }
    auto [ec, n] = co_await http::async_write_header(stream, serializer, use_tuple);
    (void)n;
    if (ec) {
        co_return;
    }
    const std::span<char> chunk = lease.buffer();
    std::uint64_t left = *reply.file_size;
    while (left > 0) {
        boost::system::error_code read_ec;
        const std::size_t got = reply.file->read(
            chunk.data(), static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size(), left)),
            read_ec);
        if (read_ec || got == 0) {
            spdlog::debug("a served file ended early (changed while sent): {}",
                          read_ec ? read_ec.message() : "shorter than when opened");
            co_return;
        }
        lease.read_from_file(got);
        deadline = clock::now() + stall;
        auto [write_ec, written] =
            co_await asio::async_write(stream, asio::buffer(chunk.data(), got), use_tuple);
        (void)written;
        if (write_ec) {
            co_return;
        }
        left -= got;
    }
    complete = true;
}

// A page connection, on its own once its request is read: the session that read it has ended.
template <typename Stream>
awaitable<void> serve_page(Stream stream, static_reply reply, page_budget::lease lease,
                           std::string request_line) {
    using namespace asio::experimental::awaitable_operators;
    auto& socket = beast::get_lowest_layer(stream);
    clock::time_point deadline = clock::now() + lease.limits().stall_timeout;
    bool complete = false;
    bool stalled = false;
    co_await (send_page(stream, reply, lease, deadline, complete) ||
              cut_when_stalled(socket, deadline, stalled));
    if (complete) {
        lease.served();
        spdlog::debug("{}: sent", request_line);
    } else if (stalled) {
        lease.stalled();
        spdlog::debug("{}: cut, the client took no whole chunk in {} ms", request_line,
                      lease.limits().stall_timeout.count());
    } else {
        spdlog::debug("{}: the connection ended first", request_line);
    }
    boost::system::error_code ignored;
    socket.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
}

// "https://Example.com:8443/" -> "https://example.com:8443"; the authority is what follows "://".
[[nodiscard]] std::string normalize_origin(std::string_view origin) {
    while (!origin.empty() && origin.back() == '/') {
        origin.remove_suffix(1);
    }
    return lower(origin);
}

template <typename NextLayer>
class websocket_stream final : public byte_stream {
public:
    template <typename... Args>
    websocket_stream(const websocket_options& options, asio::ip::tcp::socket socket, Args&&... args)
        : options_{options},
          ws_{counting_socket{std::move(socket), bytes_}, std::forward<Args>(args)...} {
        describe_peer(beast::get_lowest_layer(ws_));
        ws_.binary(true);
        // One WebSocket frame per message: fragments would only add headers.
        ws_.auto_fragment(false);
    }

    // The upgrade request was read (and its Origin checked) before this stream existed.
    void answer(upgrade_request request) { preread_ = std::move(request); }

    awaitable<boost::system::error_code> handshake() override {
        if (preread_) {
            auto [ec] = co_await ws_.async_accept(*preread_, use_tuple);
            preread_.reset();
            upgraded_ = !ec;
            co_return ec;
        }
        if constexpr (!std::is_same_v<NextLayer, counting_socket>) {
            auto [ec] = co_await ws_.next_layer().async_handshake(asio::ssl::stream_base::server,
                                                                   use_tuple);
            if (ec) {
                co_return ec;
            }
        }
        // The request alone, bounded: the Hello deadline (the session's watchdog) bounds its
        // time.
        beast::flat_buffer buffer{options_.max_request_bytes};
        http::request_parser<http::empty_body> parser;
        parser.header_limit(static_cast<std::uint32_t>(options_.max_request_bytes));
        auto [read_ec, read_n] = co_await http::async_read(ws_.next_layer(), buffer, parser, use_tuple);
        (void)read_n;
        if (read_ec) {
            co_return read_ec;
        }
        const auto& request = parser.get();
        if (!websocket::is_upgrade(request)) {
            if (options_.web_root) {
                co_await answer_page(request);
                co_return make_error(ws_error::page_served);
            }
            co_await refuse(request.version(), http::status::upgrade_required,
                            "ecsnet: this port speaks WebSocket (binary messages, one frame each)\n");
            co_return make_error(ws_error::not_upgrade);
        }
        const auto origin_field = request.find(http::field::origin);
        std::optional<std::string_view> origin;
        if (origin_field != request.end()) {
            origin = std::string_view{origin_field->value().data(), origin_field->value().size()};
        }
        const auto host = request[http::field::host];
        if (!origin_allowed(origin, std::string_view{host.data(), host.size()},
                            options_.allowed_origins)) {
            spdlog::debug("WebSocket upgrade from {} refused: Origin {} is not allowed", remote(),
                          *origin);
            co_await refuse(request.version(), http::status::forbidden,
                            "ecsnet: this Origin is not allowed (--ws-allowed-origins)\n");
            co_return make_error(ws_error::origin_refused);
        }
        if (buffer.size() != 0) {
            co_return make_error(ws_error::early_data);
        }
        auto [accept_ec] = co_await ws_.async_accept(request, use_tuple);
        if (!accept_ec) {
            upgraded_ = true;
        }
        co_return accept_ec;
    }

    awaitable<result> read_some(asio::mutable_buffer buffer) override {
        if (violation_) {
            // Told once; what follows is only drained while the session closes.
            tracking_ = false;
            co_return result{std::exchange(violation_, {}), 0};
        }
        if (buffer.size() == 0) {
            co_return result{};
        }
        // Never past the frame being read: what follows it must come in a message of its own.
        const std::size_t limit = !tracking_ ? buffer.size()
                                  : prefix_have_ < prefix_.size() ? prefix_.size() - prefix_have_
                                                                  : body_left_;
        auto [ec, n] = co_await ws_.async_read_some(
            asio::buffer(buffer.data(), std::min(buffer.size(), limit)), use_tuple);
        if (ec) {
            co_return result{ec == websocket::error::closed ? asio::error::eof : ec, n};
        }
        if (!tracking_) {
            co_return result{boost::system::error_code{}, n};
        }
        if (!ws_.got_binary()) {
            tracking_ = false;
            co_return result{make_error(ws_error::text_message), 0};
        }
        advance(static_cast<const std::uint8_t*>(buffer.data()), n);
        const bool frame_done = prefix_have_ == prefix_.size() && body_left_ == 0;
        if (frame_done) {
            prefix_have_ = 0;
        }
        // The bytes read are handed on and the violation comes with the next read: the session
        // judges the frame's prefix first (its size limit), as over TCP.
        if (frame_done != ws_.is_message_done()) {
            violation_ = make_error(frame_done ? ws_error::not_one_frame : ws_error::frame_split);
        }
        co_return result{boost::system::error_code{}, n};
    }

    awaitable<result> read(asio::mutable_buffer buffer) override {
        std::size_t total = 0;
        while (total < buffer.size()) {
            auto [ec, n] = co_await read_some(buffer + total);
            total += n;
            if (ec) {
                co_return result{ec, total};
            }
        }
        co_return result{boost::system::error_code{}, total};
    }

    // One message per buffer: the session queues one frame per buffer.
    awaitable<result> write(const std::vector<asio::const_buffer>& buffers) override {
        std::size_t total = 0;
        for (const auto& frame : buffers) {
            auto [ec, n] = co_await ws_.async_write(frame, use_tuple);
            total += n;
            if (ec) {
                co_return result{ec, total};
            }
        }
        co_return result{boost::system::error_code{}, total};
    }

    // The close handshake stands for TCP's FIN: the reader then gets the peer's close frame
    // (end of stream). Beast keeps what the operation needs alive, so the handler owns nothing.
    void shutdown_send() noexcept override {
        if (!upgraded_) {
            boost::system::error_code ignored;
            beast::get_lowest_layer(ws_).shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
            return;
        }
        ws_.async_close(websocket::close_code::normal, [](const boost::system::error_code&) {});
    }
    void close() noexcept override {
        boost::system::error_code ignored;
        auto& socket = beast::get_lowest_layer(ws_);
        socket.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
        socket.close(ignored);
    }
    asio::any_io_executor get_executor() override { return ws_.get_executor(); }
    [[nodiscard]] std::string_view transport() const noexcept override {
        return std::is_same_v<NextLayer, counting_socket> ? "WebSocket" : "WebSocket+TLS";
    }

private:
    // A plain GET/HEAD answered from the web root (a game's page beside its WebSocket); one
    // request per connection. Admitted, the answer goes on in a page connection of its own
    // with the socket: the Hello deadline bounded the request, the page bounds the answer.
    awaitable<void> answer_page(const http::request<http::empty_body>& request) {
        static_reply reply =
            options_.web_root->open(request.method(), request.target(), request.version());
        reply.message.keep_alive(false);
        std::string request_line =
            fmt::format("{} {} {} from {}: {}", transport(), std::string_view{request.method_string()},
                        printable(request.target(), 200), remote(), reply.message.result_int());
        const std::size_t buffer_bytes =
            reply.file ? static_cast<std::size_t>(std::min<std::uint64_t>(
                             *reply.file_size, options_.pages.limits().chunk_bytes))
                       : 0;
        auto admitted = options_.pages.admit(remote_address(),
                                             reply.message.body().size() + buffer_bytes, buffer_bytes);
        if (const auto* refused = std::get_if<page_budget::refusal>(&admitted)) {
            const bool per_address = *refused == page_budget::refusal::per_address;
            spdlog::debug("{}: refused, {}", request_line,
                          per_address ? "too many page connections from this address"
                                      : "page memory exhausted");
            http::response<http::string_body> response{
                per_address ? http::status::too_many_requests : http::status::service_unavailable,
                request.version()};
            response.set(http::field::content_type, "text/plain; charset=utf-8");
            response.set(http::field::retry_after, "1");
            response.keep_alive(false);
            response.body() = per_address ? "too many page requests from your address at once "
                                            "(--web-max-per-address)\n"
                                          : "busy: page memory exhausted (--web-memory-bytes)\n";
            response.prepare_payload();
            if (request.method() == http::verb::head) {
                response.body().clear();
            }
            (void)co_await http::async_write(ws_.next_layer(), response, use_tuple);
            co_return;
        }
        asio::co_spawn(ws_.get_executor(),
                       serve_page(NextLayer{std::move(ws_.next_layer())}, std::move(reply),
                                  std::get<page_budget::lease>(std::move(admitted)),
                                  std::move(request_line)),
                       [](const std::exception_ptr& e) {
                           if (e) {
                               try {
                                   std::rethrow_exception(e);
                               } catch (const std::exception& ex) {
                                   spdlog::error("a page connection failed: {}", ex.what());
                               }
                           }
                       });
    }

    // An HTTP answer instead of the upgrade; the session then closes the connection.
    awaitable<void> refuse(unsigned version, http::status status, std::string body) {
        http::response<http::string_body> response{status, version};
        response.set(http::field::content_type, "text/plain");
        if (status == http::status::upgrade_required) {
            response.set(http::field::upgrade, "websocket");
        }
        response.keep_alive(false);
        response.body() = std::move(body);
        response.prepare_payload();
        (void)co_await http::async_write(ws_.next_layer(), response, use_tuple);
    }

    void advance(const std::uint8_t* bytes, std::size_t n) {
        while (n > 0) {
            if (prefix_have_ < prefix_.size()) {
                const std::size_t take = std::min(n, prefix_.size() - prefix_have_);
                std::copy_n(bytes, take, prefix_.begin() + static_cast<std::ptrdiff_t>(prefix_have_));
                prefix_have_ += take;
                bytes += take;
                n -= take;
                if (prefix_have_ == prefix_.size()) {
                    // A compact frame's (protocol 6) length is its prefix's low 24 bits; whether
                    // this client may send one is the session's to judge.
                    const std::uint32_t word = protocol::read_prefix(prefix_);
                    body_left_ = protocol::is_compact(word) ? protocol::compact_of(word).length : word;
                }
            } else {
                const std::size_t take = std::min<std::size_t>(n, body_left_);
                body_left_ -= take;
                bytes += take;
                n -= take;
            }
        }
    }

    const websocket_options& options_;
    std::optional<upgrade_request> preread_;
    websocket::stream<NextLayer> ws_;
    bool upgraded_ = false;
    boost::system::error_code violation_;  // due with the next read
    bool tracking_ = true;                 // frames against messages, until a violation
    // Where the current message's frame stands: its prefix so far, then the body still due.
    std::array<std::uint8_t, protocol::frame_prefix_bytes> prefix_{};
    std::size_t prefix_have_ = 0;
    std::size_t body_left_ = 0;
};

}  // namespace

std::unique_ptr<byte_stream> make_websocket_stream(asio::ip::tcp::socket socket,
                                                   const websocket_options& options) {
    return std::make_unique<websocket_stream<counting_socket>>(options, std::move(socket));
}

std::unique_ptr<byte_stream> make_websocket_stream(asio::ip::tcp::socket socket,
                                                   upgrade_request request,
                                                   const websocket_options& options) {
    auto stream =
        std::make_unique<websocket_stream<counting_socket>>(options, std::move(socket));
    stream->answer(std::move(request));
    return stream;
}

std::unique_ptr<byte_stream> make_websocket_stream(asio::ip::tcp::socket socket,
                                                   asio::ssl::context& context,
                                                   const websocket_options& options) {
    return std::make_unique<websocket_stream<asio::ssl::stream<counting_socket>>>(
        options, std::move(socket), context);
}

bool is_framing_violation(const boost::system::error_code& ec) noexcept {
    return ec.category() == category() &&
           (ec.value() == static_cast<int>(ws_error::not_one_frame) ||
            ec.value() == static_cast<int>(ws_error::frame_split) ||
            ec.value() == static_cast<int>(ws_error::text_message));
}

bool is_page_served(const boost::system::error_code& ec) noexcept {
    return ec.category() == category() && ec.value() == static_cast<int>(ws_error::page_served);
}

bool origin_allowed(std::optional<std::string_view> origin, std::string_view host,
                    const std::vector<std::string>& allowed) {
    if (!origin) {
        return true;
    }
    const std::string wanted = normalize_origin(*origin);
    if (allowed.empty()) {
        const auto scheme_end = wanted.find("://");
        return scheme_end != std::string::npos && !host.empty() &&
               wanted.substr(scheme_end + 3) == lower(host);
    }
    return std::any_of(allowed.begin(), allowed.end(), [&](const std::string& a) {
        return a == "*" || normalize_origin(a) == wanted;
    });
}

std::string check_allowed_origin(std::string_view origin) {
    if (origin == "*" || origin == "null") {
        return {};
    }
    const auto scheme_end = origin.find("://");
    if (scheme_end == std::string_view::npos || scheme_end == 0) {
        return "give the scheme: https://" + std::string{origin};
    }
    std::string_view authority = origin.substr(scheme_end + 3);
    while (!authority.empty() && authority.back() == '/') {
        authority.remove_suffix(1);
    }
    if (authority.empty()) {
        return "no host in " + std::string{origin};
    }
    if (authority.find_first_of("/?#") != std::string_view::npos) {
        return "an origin has no path: " + std::string{origin};
    }
    return {};
}

}  // namespace ecsnet::server
