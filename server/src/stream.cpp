#include "ecsnet/server/stream.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <stdexcept>

namespace ecsnet::server {

namespace asio = boost::asio;
using asio::awaitable;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

class tcp_stream final : public byte_stream {
public:
    explicit tcp_stream(asio::ip::tcp::socket socket) : socket_{std::move(socket)} {
        describe_peer(socket_);
    }
    awaitable<boost::system::error_code> handshake() override { co_return boost::system::error_code{}; }
    awaitable<result> read_some(asio::mutable_buffer buffer) override {
        co_return co_await socket_.async_read_some(buffer, use_tuple);
    }
    awaitable<result> read(asio::mutable_buffer buffer) override {
        co_return co_await asio::async_read(socket_, buffer, use_tuple);
    }
    awaitable<result> write(const std::vector<asio::const_buffer>& buffers) override {
        co_return co_await asio::async_write(socket_, buffers, use_tuple);
    }
    void shutdown_send() noexcept override {
        boost::system::error_code ignored;
        socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
    }
    void close() noexcept override {
        boost::system::error_code ignored;
        socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
        socket_.close(ignored);
    }
    asio::any_io_executor get_executor() override { return socket_.get_executor(); }

private:
    asio::ip::tcp::socket socket_;
};

class tls_stream final : public byte_stream {
public:
    tls_stream(asio::ip::tcp::socket socket, asio::ssl::context& context)
        : stream_{std::move(socket), context} {
        describe_peer(stream_.next_layer());
    }
    awaitable<boost::system::error_code> handshake() override {
        auto [ec] = co_await stream_.async_handshake(asio::ssl::stream_base::server, use_tuple);
        co_return ec;
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
    // A TCP FIN without close_notify: waiting for the peer's close_notify would let it hold
    // the connection open; every frame it needs was sent before.
    void shutdown_send() noexcept override {
        boost::system::error_code ignored;
        stream_.next_layer().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
    }
    void close() noexcept override {
        boost::system::error_code ignored;
        stream_.next_layer().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
        stream_.next_layer().close(ignored);
    }
    asio::any_io_executor get_executor() override { return stream_.get_executor(); }

private:
    asio::ssl::stream<asio::ip::tcp::socket> stream_;
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
    return std::make_unique<tcp_stream>(std::move(socket));
}

std::unique_ptr<byte_stream> make_tls_stream(asio::ip::tcp::socket socket, asio::ssl::context& context) {
    return std::make_unique<tls_stream>(std::move(socket), context);
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
