#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace ecsnet::server {

// A connected TCP socket taken out of its io_context (basic_socket::release()), for another
// thread to attach to one of its own; closed when destroyed untaken.
class released_socket {
public:
    explicit released_socket(boost::asio::ip::tcp::socket& socket);  // throws system_error
    released_socket(released_socket&& other) noexcept;
    released_socket(const released_socket&) = delete;
    released_socket& operator=(const released_socket&) = delete;
    released_socket& operator=(released_socket&&) = delete;
    ~released_socket();
    // The connection as a socket of `executor`'s context. Throws system_error.
    [[nodiscard]] boost::asio::ip::tcp::socket attach(const boost::asio::any_io_executor& executor);

private:
    boost::asio::ip::tcp protocol_;
    boost::asio::ip::tcp::socket::native_handle_type handle_;
};

}  // namespace ecsnet::server
