#include "ecsnet/server/transport/released_socket.hpp"

#include <unistd.h>

#include <utility>

namespace ecsnet::server {

namespace asio = boost::asio;

released_socket::released_socket(asio::ip::tcp::socket& socket)
    : protocol_{socket.local_endpoint().protocol()}, handle_{socket.release()} {}

released_socket::released_socket(released_socket&& other) noexcept
    : protocol_{other.protocol_}, handle_{std::exchange(other.handle_, -1)} {}

released_socket::~released_socket() {
    if (handle_ >= 0) {
        ::close(handle_);
    }
}

asio::ip::tcp::socket released_socket::attach(const asio::any_io_executor& executor) {
    asio::ip::tcp::socket socket{executor};
    socket.assign(protocol_, handle_);  // throws: the handle stays ours, closed below
    handle_ = -1;
    return socket;
}

}  // namespace ecsnet::server
