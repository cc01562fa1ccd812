#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

// A session's byte stream: plain TCP, or TLS over TCP. Sessions speak frames over it and know
// nothing of the layers below, so another transport (a WebSocket) is one more implementation.
namespace ecsnet::server {

// Bytes through a connection's TCP socket in each direction, every layer's included (TLS
// records, the WebSocket upgrade, frame headers and close handshake): what the metrics count.
struct socket_bytes {
    std::uint64_t read{0};
    std::uint64_t written{0};
};

class byte_stream {
public:
    using result = std::tuple<boost::system::error_code, std::size_t>;

    byte_stream() = default;
    byte_stream(const byte_stream&) = delete;
    byte_stream& operator=(const byte_stream&) = delete;
    virtual ~byte_stream() = default;

    // What comes before frames: the TLS handshake, the WebSocket upgrade; nothing for plain TCP.
    [[nodiscard]] virtual boost::asio::awaitable<boost::system::error_code> handshake() = 0;
    [[nodiscard]] virtual boost::asio::awaitable<result> read_some(boost::asio::mutable_buffer buffer) = 0;
    // Reads exactly buffer.size() bytes.
    [[nodiscard]] virtual boost::asio::awaitable<result> read(boost::asio::mutable_buffer buffer) = 0;
    [[nodiscard]] virtual boost::asio::awaitable<result> write(
        const std::vector<boost::asio::const_buffer>& buffers) = 0;
    // Writes what the socket takes at once, without waiting, and returns how many bytes: for a
    // stream where bytes go to the socket as they are (plain TCP). The others return 0 and
    // leave everything to write().
    [[nodiscard]] virtual std::size_t try_write(
        const std::vector<boost::asio::const_buffer>& /*buffers*/) noexcept {
        return 0;
    }
    // No more bytes will be sent (FIN): the peer reads what was sent, then end of stream.
    virtual void shutdown_send() noexcept = 0;
    virtual void close() noexcept = 0;

    [[nodiscard]] virtual boost::asio::any_io_executor get_executor() = 0;
    // "TCP", "TLS", "WebSocket", "WebSocket+TLS": for logs and /status.
    [[nodiscard]] virtual std::string_view transport() const noexcept = 0;
    // "203.0.113.7:51234", and the address alone: limits are per address.
    [[nodiscard]] const std::string& remote() const noexcept { return remote_; }
    [[nodiscard]] const std::string& remote_address() const noexcept { return remote_address_; }
    // Counted as the socket's operations complete, on the stream's executor.
    [[nodiscard]] const socket_bytes& bytes() const noexcept { return *bytes_; }

protected:
    void describe_peer(const boost::asio::ip::tcp::socket& socket);

    // Shared with the socket layer: a WebSocket's pending close can outlive the stream.
    std::shared_ptr<socket_bytes> bytes_ = std::make_shared<socket_bytes>();

private:
    std::string remote_{"unknown"};
    std::string remote_address_{"unknown"};
};

[[nodiscard]] std::unique_ptr<byte_stream> make_tcp_stream(boost::asio::ip::tcp::socket socket);
// `context` must outlive the stream (the server owns it).
[[nodiscard]] std::unique_ptr<byte_stream> make_tls_stream(boost::asio::ip::tcp::socket socket,
                                                           boost::asio::ssl::context& context);

// Opens, binds and listens `acceptor` on bind:port (SO_REUSEADDR). Throws
// std::runtime_error: "<bind_flag> x is not an IP address", "cannot listen on <what>0.0.0.0:7777:
// bind: Address already in use". Returns the port (the one picked, for port 0).
std::uint16_t listen_on(boost::asio::ip::tcp::acceptor& acceptor, const std::string& bind,
                        std::uint16_t port, const std::string& bind_flag, const std::string& what);

// A server-side TLS context from PEM files (TLS 1.2 or later). Throws std::runtime_error
// naming the file that could not be used.
[[nodiscard]] boost::asio::ssl::context make_server_tls_context(const std::string& cert_file,
                                                                const std::string& key_file);

}  // namespace ecsnet::server
