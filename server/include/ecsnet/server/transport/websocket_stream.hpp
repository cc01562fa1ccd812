#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ecsnet/server/transport/page_budget.hpp"
#include "ecsnet/server/transport/static_files.hpp"
#include "ecsnet/server/transport/stream.hpp"

// The WebSocket transport: a byte_stream over WebSocket messages, so that sessions run the same
// code over it as over TCP. Each binary message carries exactly one frame, length prefix
// included: the bytes a TCP client would send. Reads stream through (the session's own frame
// limit applies before a body is read); a message that holds less or more than one frame, or
// text, ends the connection. The HTTP upgrade is the handshake(): bounded in size here and in
// time by the session's Hello deadline, and refused (403) from an Origin that is not allowed.
namespace ecsnet::server {

struct websocket_options {
    // "https://game.example.com" or "*"; empty: same host only (see origin_allowed).
    std::vector<std::string> allowed_origins;
    std::size_t max_request_bytes = 8 * 1024;  // the upgrade request, headers and all
    // --web-root: a plain HTTP GET/HEAD (not an upgrade) is answered with its files, then the
    // connection ends (handshake() returns an error is_page_served() knows). Without: 426.
    // The request is read within the Hello deadline; the answer is then handed to a page
    // connection of its own, bounded by `pages` instead (429 or 503 when it has no room): the
    // file streams a chunk at a time, each taken within the stall timeout.
    std::optional<static_files> web_root{};
    page_budget pages{};
};

[[nodiscard]] std::unique_ptr<byte_stream> make_websocket_stream(
    boost::asio::ip::tcp::socket socket, const websocket_options& options);
// wss: TLS first, then the upgrade. `context` and `options` must outlive the stream.
[[nodiscard]] std::unique_ptr<byte_stream> make_websocket_stream(
    boost::asio::ip::tcp::socket socket, boost::asio::ssl::context& context,
    const websocket_options& options);

// An upgrade request read and checked elsewhere (the admin endpoint's /observe): the stream's
// handshake answers it (101) without reading or checking anything. Plain ws only.
using upgrade_request = boost::beast::http::request<boost::beast::http::string_body>;
[[nodiscard]] std::unique_ptr<byte_stream> make_websocket_stream(
    boost::asio::ip::tcp::socket socket, upgrade_request request, const websocket_options& options);

// A read error that is the client's breach of "one binary message per frame": the session ends
// it like a malformed frame (Disconnect with the reason, counted), not like a lost connection.
[[nodiscard]] bool is_framing_violation(const boost::system::error_code& ec) noexcept;

// A handshake "error" that is a plain HTTP request answered from the web root: the connection
// ends as planned, nobody failed.
[[nodiscard]] bool is_page_served(const boost::system::error_code& ec) noexcept;

// Whether an upgrade request may proceed. No Origin header (not a browser: browsers always send
// one) passes: Origin protects browser users from other sites' pages, not servers from
// programs. An Origin passes when `allowed` holds "*" or the same origin (scheme, host and port,
// without case); with `allowed` empty, when its host[:port] is the request's Host header.
[[nodiscard]] bool origin_allowed(std::optional<std::string_view> origin, std::string_view host,
                                  const std::vector<std::string>& allowed);

// Why an --ws-allowed-origins entry is malformed ("give the scheme: https://example.com"); empty
// when it is an origin (scheme://host[:port], no path) or "*".
[[nodiscard]] std::string check_allowed_origin(std::string_view origin);

}  // namespace ecsnet::server
