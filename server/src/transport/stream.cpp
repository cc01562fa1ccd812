#include "ecsnet/server/transport/stream.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <stdexcept>
#include <type_traits>

#include "counting_socket.hpp"
#include "use_tuple.hpp"

namespace ecsnet::server {

namespace asio = boost::asio;
using detail::use_tuple;
using asio::awaitable;

namespace {


// The byte_stream over an Asio stream: a TCP socket, or TLS over one.
template <typename Stream>
class asio_stream final : public byte_stream {
public:
    template <typename... Args>
    explicit asio_stream(asio::ip::tcp::socket socket, Args&&... args)
        : stream_{counting_socket{std::move(socket), bytes_}, std::forward<Args>(args)...} {
        describe_peer(this->socket());
        if constexpr (std::is_same_v<Stream, counting_socket>) {
            // try_write() must not block; the asynchronous operations work either way.
            boost::system::error_code ignored;
            this->socket().non_blocking(true, ignored);
        }
    }
    awaitable<boost::system::error_code> handshake() override {
        if constexpr (std::is_same_v<Stream, counting_socket>) {
            co_return boost::system::error_code{};
        } else {
            auto [ec] = co_await stream_.async_handshake(asio::ssl::stream_base::server, use_tuple);
            co_return ec;
        }
    }
    awaitable<result> read_some(asio::mutable_buffer buffer) override {
        co_return co_await stream_.async_read_some(buffer, use_tuple);
    }
    awaitable<result> read(asio::mutable_buffer buffer) override {
        co_return co_await asio::async_read(stream_, buffer, use_tuple);
    }
    awaitable<result> write(const std::vector<asio::const_buffer>& buffers) override {
        co_return co_await asio::async_write(stream_, buffers, use_tuple);
    }
    std::size_t try_write(const std::vector<asio::const_buffer>& buffers) noexcept override {
        if constexpr (std::is_same_v<Stream, counting_socket>) {
            boost::system::error_code ec;
            const std::size_t n = socket().write_some(buffers, ec);
            if (ec) {
                return 0;  // would block, or an error the writer's own write will report
            }
            bytes_->written += n;
            return n;
        } else {
            return 0;
        }
    }
    // For TLS a TCP FIN without close_notify: waiting for the peer's close_notify would let it
    // hold the connection open, and every frame it needs was sent before.
    void shutdown_send() noexcept override {
        boost::system::error_code ignored;
        socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
    }
    void close() noexcept override {
        boost::system::error_code ignored;
        socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
        socket().close(ignored);
    }
    asio::any_io_executor get_executor() override { return stream_.get_executor(); }
    std::string_view transport() const noexcept override {
        return std::is_same_v<Stream, counting_socket> ? "TCP" : "TLS";
    }

private:
    asio::ip::tcp::socket& socket() {
        if constexpr (std::is_same_v<Stream, counting_socket>) {
            return stream_.next_layer();
        } else {
            return stream_.next_layer().next_layer();
        }
    }

    Stream stream_;
};

}  // namespace

void byte_stream::describe_peer(const asio::ip::tcp::socket& socket) {
    boost::system::error_code ec;
    const auto ep = socket.remote_endpoint(ec);
    if (!ec) {
        remote_address_ = ep.address().to_string();
        remote_ = remote_address_ + ":" + std::to_string(ep.port());
    }
}

std::unique_ptr<byte_stream> make_tcp_stream(asio::ip::tcp::socket socket) {
    return std::make_unique<asio_stream<counting_socket>>(std::move(socket));
}

std::unique_ptr<byte_stream> make_tls_stream(asio::ip::tcp::socket socket, asio::ssl::context& context) {
    return std::make_unique<asio_stream<asio::ssl::stream<counting_socket>>>(std::move(socket),
                                                                            context);
}

std::uint16_t listen_on(asio::ip::tcp::acceptor& acceptor, const std::string& bind,
                        std::uint16_t port, const std::string& bind_flag, const std::string& what) {
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(bind, ec);
    if (ec) {
        throw std::runtime_error(bind_flag + " " + bind + " is not an IP address");
    }
    const asio::ip::tcp::endpoint endpoint{address, port};
    const auto check = [&](const char* step) {
        if (ec) {
            throw std::runtime_error("cannot listen on " + what + bind + ":" +
                                     std::to_string(port) + ": " + step + ": " + ec.message());
        }
    };
    acceptor.open(endpoint.protocol(), ec);
    check("open");
    acceptor.set_option(asio::ip::tcp::acceptor::reuse_address(true), ec);
    check("SO_REUSEADDR");
    acceptor.bind(endpoint, ec);
    check("bind");
    acceptor.listen(asio::socket_base::max_listen_connections, ec);
    check("listen");
    return acceptor.local_endpoint().port();
}

asio::ssl::context make_server_tls_context(const std::string& cert_file, const std::string& key_file) {
    asio::ssl::context context{asio::ssl::context::tls_server};
    context.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                        asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                        asio::ssl::context::no_tlsv1_1 | asio::ssl::context::single_dh_use);
    boost::system::error_code ec;
    context.use_certificate_chain_file(cert_file, ec);
    if (ec) {
        throw std::runtime_error("cannot use TLS certificate " + cert_file + ": " + ec.message());
    }
    context.use_private_key_file(key_file, asio::ssl::context::pem, ec);
    if (ec) {
        throw std::runtime_error("cannot use TLS key " + key_file + ": " + ec.message());
    }
    return context;
}

}  // namespace ecsnet::server
