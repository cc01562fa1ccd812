#pragma once

#include <boost/asio/compose.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "ecsnet/server/transport/stream.hpp"

namespace ecsnet::server {

// A TCP socket that counts the bytes through it: TLS and Beast's WebSocket sit on top of it, so
// byte_stream::bytes() is what the kernel carried, not only the frames.
class counting_socket {
public:
    using socket_type = boost::asio::ip::tcp::socket;
    using executor_type = socket_type::executor_type;
    using next_layer_type = socket_type;
    using lowest_layer_type = socket_type::lowest_layer_type;

    counting_socket(socket_type socket, std::shared_ptr<socket_bytes> bytes)
        : socket_{std::move(socket)}, bytes_{std::move(bytes)} {}

    [[nodiscard]] executor_type get_executor() noexcept { return socket_.get_executor(); }
    [[nodiscard]] next_layer_type& next_layer() noexcept { return socket_; }
    [[nodiscard]] lowest_layer_type& lowest_layer() noexcept { return socket_.lowest_layer(); }

    template <typename MutableBuffers, typename Token>
    auto async_read_some(const MutableBuffers& buffers, Token&& token) {
        return boost::asio::async_compose<Token, void(boost::system::error_code, std::size_t)>(
            counted<true, MutableBuffers>{socket_, bytes_->read, buffers}, token, socket_);
    }
    template <typename ConstBuffers, typename Token>
    auto async_write_some(const ConstBuffers& buffers, Token&& token) {
        return boost::asio::async_compose<Token, void(boost::system::error_code, std::size_t)>(
            counted<false, ConstBuffers>{socket_, bytes_->written, buffers}, token, socket_);
    }

private:
    template <bool Read, typename Buffers>
    struct counted {
        socket_type& socket;
        std::uint64_t& total;
        Buffers buffers;
        bool started = false;

        template <typename Self>
        void operator()(Self& self, boost::system::error_code ec = {}, std::size_t n = 0) {
            if (!started) {
                started = true;
                if constexpr (Read) {
                    socket.async_read_some(buffers, std::move(self));
                } else {
                    socket.async_write_some(buffers, std::move(self));
                }
                return;
            }
            total += n;
            self.complete(ec, n);
        }
    };

    socket_type socket_;
    std::shared_ptr<socket_bytes> bytes_;
};

}  // namespace ecsnet::server
