#pragma once

#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

// How a client's bytes travel once TCP is connected: plain, TLS, WebSocket (one binary message
// per frame, as the server's websocket_stream.hpp expects) or WebSocket over TLS. Shared by the
// blocking connection and the game's session; private to the client library, so that Beast
// stays out of its public headers. One thread drives it (the io_context's); at most one read
// and one write at a time.
namespace ecsnet::client::detail {

struct transport_options {
    std::string host;
    std::uint16_t port = 0;
    // TLS (verifying the certificate against `host`) when set; it must outlive the transport.
    boost::asio::ssl::context* tls = nullptr;
    bool websocket = false;
    std::string ws_path = "/";
    // Named in the hint of a failed TLS handshake ("does --ca hold its CA?").
    std::string ca_option = "the CA file";
};

class transport {
public:
    // `failure` is empty on success, else the cause continuing a sentence ("server closed the
    // connection"). `bytes` hold a piece of the frame stream (over WebSocket never past the
    // end of a frame), valid until the next read. `wire_bytes`: what carried them, `bytes` and,
    // where a WebSocket message ends, its header (2 to 10 bytes; TLS records not counted).
    using read_handler = std::function<void(const std::string& failure,
                                            std::span<const std::uint8_t> bytes,
                                            std::size_t wire_bytes)>;
    using write_handler = std::function<void(const std::string& failure, std::size_t bytes)>;
    // `failure` empty on success, else a whole sentence ("TLS handshake with ... failed: ...").
    using handshake_handler = std::function<void(const std::string& failure)>;

    transport() = default;
    transport(const transport&) = delete;
    transport& operator=(const transport&) = delete;
    virtual ~transport() = default;

    // The TCP socket under it all, to connect before the handshake.
    [[nodiscard]] virtual boost::asio::ip::tcp::socket& socket() noexcept = 0;
    // TLS, then the WebSocket upgrade, as configured; at once for plain TCP.
    virtual void async_handshake(handshake_handler done) = 0;
    // What the handshake is doing, for a timeout's message ("TLS handshake with host:port").
    [[nodiscard]] virtual std::string handshake_stage() const = 0;
    virtual void async_read(read_handler done) = 0;
    // Writes the frames in order, each a WebSocket message of its own over WebSocket. The
    // bytes they point to must live until `done` runs.
    virtual void async_write(std::vector<boost::asio::const_buffer> frames, write_handler done) = 0;
    // Closes the socket at once: pending operations complete with an error.
    virtual void close() noexcept = 0;
};

// A client's TLS context: TLS 1.2 or later, verifying the server with `ca_file` (PEM), or the
// system's trusted certificates when empty. Throws client_error when they do not load.
[[nodiscard]] boost::asio::ssl::context make_tls_context(const std::string& ca_file);

[[nodiscard]] std::unique_ptr<transport> make_transport(boost::asio::io_context& io,
                                                        const transport_options& options);

// The header a server puts before a WebSocket message of `payload` bytes sent as one frame
// (unmasked: 2 bytes, and 2 or 8 more for the length past 125 or 65535).
[[nodiscard]] constexpr std::size_t websocket_header_bytes(std::size_t payload) noexcept {
    return payload <= 125 ? 2 : payload <= 65535 ? 4 : 10;
}

// Asio's messages start with a capital ("Connection refused"); ours continue a sentence.
[[nodiscard]] std::string sentence_part(std::string text);

}  // namespace ecsnet::client::detail
