#include "transport.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <type_traits>
#include <utility>

#include "ecsnet/client/connect_options.hpp"
#include "ecsnet/protocol/frame.hpp"

namespace ecsnet::client::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using tls_stream = asio::ssl::stream<tcp::socket>;
using error_code = boost::system::error_code;

std::string sentence_part(std::string text) {
    if (!text.empty()) {
        text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
    }
    return text;
}

namespace {

constexpr std::size_t read_chunk_bytes = 64 * 1024;

[[nodiscard]] std::string endpoint_of(const transport_options& o) {
    return o.host + ":" + std::to_string(o.port);
}

[[nodiscard]] bool closed_by_peer(const error_code& ec) {
    return ec == asio::error::eof || ec == asio::ssl::error::stream_truncated ||
           ec == websocket::error::closed || ec == http::error::end_of_stream;
}

[[nodiscard]] std::string failure_text(const error_code& ec) {
    return closed_by_peer(ec) ? "server closed the connection" : sentence_part(ec.message());
}

// The certificate must name the host we asked for (a DNS name or an IP address), and the
// server learns that name (SNI) to pick its certificate.
void tls_handshake(tls_stream& stream, const transport_options& options,
                   transport::handshake_handler done) {
    const std::string endpoint = endpoint_of(options);
    stream.set_verify_callback(asio::ssl::host_name_verification(options.host));
    if (SSL_set_tlsext_host_name(stream.native_handle(), options.host.c_str()) != 1) {
        asio::post(stream.get_executor(), [done = std::move(done), host = options.host] {
            done("cannot set the TLS server name " + host);
        });
        return;
    }
    stream.async_handshake(
        asio::ssl::stream_base::client,
        [done = std::move(done), endpoint, hint = options.ca_option](const error_code& ec) {
            if (!ec) {
                done({});
                return;
            }
            done("TLS handshake with " + endpoint + " failed: " + failure_text(ec) +
                 (ec.category() == asio::error::get_ssl_category()
                      ? " (is it a TLS server, and does " + hint + " hold its CA?)"
                      : ""));
        });
}

// TCP, or TLS over it: the frames are the stream.
template <typename Stream>
class stream_transport final : public transport {
public:
    static constexpr bool is_tls = std::is_same_v<Stream, tls_stream>;

    stream_transport(asio::io_context& io, transport_options options)
        : options_{std::move(options)}, stream_{make_stream(io, options_)}, buffer_(read_chunk_bytes) {}

    tcp::socket& socket() noexcept override { return beast::get_lowest_layer(stream_); }

    void async_handshake(handshake_handler done) override {
        if constexpr (is_tls) {
            tls_handshake(stream_, options_, std::move(done));
        } else {
            asio::post(stream_.get_executor(), [done = std::move(done)] { done({}); });
        }
    }

    [[nodiscard]] std::string handshake_stage() const override {
        return "TLS handshake with " + endpoint_of(options_);
    }

    void async_read(read_handler done) override {
        stream_.async_read_some(asio::buffer(buffer_),
                                [this, done = std::move(done)](const error_code& ec, std::size_t n) {
                                    if (ec) {
                                        done(failure_text(ec), {}, 0);
                                        return;
                                    }
                                    done({}, std::span<const std::uint8_t>{buffer_.data(), n}, n);
                                });
    }

    void async_write(std::vector<asio::const_buffer> frames, write_handler done) override {
        writing_ = std::move(frames);
        asio::async_write(stream_, writing_,
                          [done = std::move(done)](const error_code& ec, std::size_t n) {
                              done(ec ? failure_text(ec) : std::string{}, n);
                          });
    }

    void close() noexcept override {
        error_code ignored;
        auto& s = socket();
        s.shutdown(tcp::socket::shutdown_both, ignored);
        s.close(ignored);
    }

private:
    static Stream make_stream(asio::io_context& io, const transport_options& options) {
        if constexpr (is_tls) {
            return Stream{io, *options.tls};
        } else {
            return Stream{io};
        }
    }

    transport_options options_;
    Stream stream_;
    std::vector<std::uint8_t> buffer_;
    std::vector<asio::const_buffer> writing_;
};

// WebSocket over TCP or TLS: each frame one binary message, and each message one frame. Reads
// stop at the end of the frame being read, so that a message holding less or more than one
// frame is seen as such.
template <typename Next>
class websocket_transport final : public transport {
public:
    static constexpr bool is_tls = std::is_same_v<Next, tls_stream>;

    websocket_transport(asio::io_context& io, transport_options options)
        : options_{std::move(options)}, ws_{make_stream(io, options_)}, buffer_(read_chunk_bytes) {
        ws_.binary(true);
        ws_.auto_fragment(false);  // one WebSocket frame per message, as the server sends
        // The frame reader refuses a frame past connect_options::max_frame_bytes by its prefix,
        // as over TCP; the reads here never ask for more than the frame's bytes.
        ws_.read_message_max(0);
        ws_.set_option(websocket::stream_base::decorator([](websocket::request_type& request) {
            request.set(http::field::user_agent, "ecsnet-client");
        }));
    }

    tcp::socket& socket() noexcept override { return beast::get_lowest_layer(ws_); }

    void async_handshake(handshake_handler done) override {
        if constexpr (is_tls) {
            stage_ = "TLS handshake with " + endpoint_of(options_);
            tls_handshake(ws_.next_layer(), options_,
                          [this, done = std::move(done)](const std::string& failure) {
                              if (!failure.empty()) {
                                  done(failure);
                                  return;
                              }
                              upgrade(done);
                          });
        } else {
            upgrade(std::move(done));
        }
    }

    [[nodiscard]] std::string handshake_stage() const override { return stage_; }

    void async_read(read_handler done) override {
        const std::size_t limit =
            prefix_have_ < prefix_.size() ? prefix_.size() - prefix_have_ : body_left_;
        ws_.async_read_some(
            asio::buffer(buffer_.data(), std::min(buffer_.size(), limit)),
            [this, done = std::move(done)](const error_code& ec, std::size_t n) {
                if (ec) {
                    done(failure_text(ec), {}, 0);
                    return;
                }
                if (!ws_.got_binary()) {
                    done("server sent a WebSocket text message (frames are binary messages)", {}, 0);
                    return;
                }
                advance(n);
                const bool frame_done = prefix_have_ == prefix_.size() && body_left_ == 0;
                if (frame_done != ws_.is_message_done()) {
                    done(frame_done ? "server sent a WebSocket message holding more than one frame"
                                    : "server sent a WebSocket message that ends inside a frame",
                         {}, 0);
                    return;
                }
                std::size_t wire = n;
                if (frame_done) {
                    wire += websocket_header_bytes(prefix_.size() + frame_body_);
                    prefix_have_ = 0;
                }
                done({}, std::span<const std::uint8_t>{buffer_.data(), n}, wire);
            });
    }

    void async_write(std::vector<asio::const_buffer> frames, write_handler done) override {
        writing_ = std::move(frames);
        written_ = 0;
        write_from(0, std::move(done));
    }

    void close() noexcept override {
        error_code ignored;
        auto& s = socket();
        s.shutdown(tcp::socket::shutdown_both, ignored);
        s.close(ignored);
    }

private:
    static websocket::stream<Next> make_stream(asio::io_context& io,
                                               const transport_options& options) {
        if constexpr (is_tls) {
            return websocket::stream<Next>{io, *options.tls};
        } else {
            return websocket::stream<Next>{io};
        }
    }

    void upgrade(handshake_handler done) {
        const std::string endpoint = endpoint_of(options_);
        stage_ = "WebSocket upgrade at " + endpoint;
        // Host names the port too (RFC 7230 5.4); an IPv6 address goes in brackets.
        const std::string host =
            (options_.host.find(':') != std::string::npos ? "[" + options_.host + "]"
                                                          : options_.host) +
            ":" + std::to_string(options_.port);
        ws_.async_handshake(response_, host, options_.ws_path,
                            [this, done = std::move(done), endpoint](const error_code& ec) {
                                if (!ec) {
                                    done({});
                                    return;
                                }
                                done(upgrade_failure(ec, endpoint));
                            });
    }

    [[nodiscard]] std::string upgrade_failure(const error_code& ec, const std::string& endpoint) const {
        if (ec == websocket::error::upgrade_declined && response_.result_int() != 0) {
            // The server's answer says why (403: the Origin; 426: not a WebSocket request).
            std::string why{response_.body().substr(0, 200)};
            why.erase(std::find(why.begin(), why.end(), '\n'), why.end());
            return "WebSocket upgrade at " + endpoint + " refused: HTTP " +
                   std::to_string(response_.result_int()) + " " +
                   std::string{response_.reason().data(), response_.reason().size()} + (why.empty() ? "" : ": " + why);
        }
        return "WebSocket upgrade at " + endpoint + " failed: " + failure_text(ec) +
               (is_tls ? " (is it the server's WebSocket port?)"
                       : " (is it the server's WebSocket port? if it serves wss, connect with "
                         "TLS)");
    }

    void advance(std::size_t n) {
        const std::uint8_t* bytes = buffer_.data();
        while (n > 0) {
            if (prefix_have_ < prefix_.size()) {
                const std::size_t take = std::min(n, prefix_.size() - prefix_have_);
                std::copy_n(bytes, take,
                            prefix_.begin() + static_cast<std::ptrdiff_t>(prefix_have_));
                prefix_have_ += take;
                bytes += take;
                n -= take;
                if (prefix_have_ == prefix_.size()) {
                    // A compact frame's (protocol 6: an InputAck) length is the low 24 bits;
                    // the frame reader judges whether this client takes them.
                    const std::uint32_t word = protocol::read_prefix(prefix_);
                    frame_body_ = protocol::is_compact(word) ? protocol::compact_of(word).length : word;
                    body_left_ = frame_body_;
                }
            } else {
                const std::size_t take = std::min(n, body_left_);
                body_left_ -= take;
                bytes += take;
                n -= take;
            }
        }
    }

    void write_from(std::size_t index, write_handler done) {
        if (index == writing_.size()) {
            asio::post(ws_.get_executor(),
                       [done = std::move(done), n = written_] { done({}, n); });
            return;
        }
        ws_.async_write(writing_[index], [this, index, done = std::move(done)](
                                             const error_code& ec, std::size_t n) mutable {
            written_ += n;
            if (ec) {
                done(failure_text(ec), written_);
                return;
            }
            if (index + 1 == writing_.size()) {
                done({}, written_);
                return;
            }
            write_from(index + 1, std::move(done));
        });
    }

    transport_options options_;
    websocket::stream<Next> ws_;
    websocket::response_type response_;
    std::string stage_;
    std::vector<std::uint8_t> buffer_;
    // Where the frame being read stands: its prefix so far, then the body still due.
    std::array<std::uint8_t, protocol::frame_prefix_bytes> prefix_{};
    std::size_t prefix_have_ = 0;
    std::size_t frame_body_ = 0;
    std::size_t body_left_ = 0;
    std::vector<asio::const_buffer> writing_;
    std::size_t written_ = 0;
};

}  // namespace

asio::ssl::context make_tls_context(const std::string& ca_file) {
    asio::ssl::context context{asio::ssl::context::tls_client};
    context.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                        asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                        asio::ssl::context::no_tlsv1_1);
    error_code ec;
    if (ca_file.empty()) {
        context.set_default_verify_paths(ec);
    } else {
        context.load_verify_file(ca_file, ec);
    }
    if (ec) {
        throw client_error("cannot load CA certificates" +
                           (ca_file.empty() ? std::string{} : " from " + ca_file) + ": " +
                           sentence_part(ec.message()));
    }
    context.set_verify_mode(asio::ssl::verify_peer);
    return context;
}

std::unique_ptr<transport> make_transport(asio::io_context& io, const transport_options& options) {
    if (options.websocket) {
        if (options.tls != nullptr) {
            return std::make_unique<websocket_transport<tls_stream>>(io, options);
        }
        return std::make_unique<websocket_transport<tcp::socket>>(io, options);
    }
    if (options.tls != nullptr) {
        return std::make_unique<stream_transport<tls_stream>>(io, options);
    }
    return std::make_unique<stream_transport<tcp::socket>>(io, options);
}

}  // namespace ecsnet::client::detail
