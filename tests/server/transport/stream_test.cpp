// The sessions' byte streams (server/src/transport/stream.cpp): try_write, the non-blocking
// write a session uses to send a tick's frames without waking its writer coroutine.
#include "ecsnet/server/transport/stream.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/context.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace stream_test {

namespace asio = boost::asio;
using asio::ip::tcp;

// A connected pair over 127.0.0.1 with small kernel buffers: the server's end, ready to be
// made a stream, and the peer, which reads only when the test says so.
struct socket_pair {
    asio::io_context io;
    tcp::socket server{io};
    tcp::socket peer{io};

    socket_pair() {
        tcp::acceptor acceptor{io, tcp::endpoint{asio::ip::make_address("127.0.0.1"), 0}};
        peer.open(tcp::v4());
        peer.set_option(asio::socket_base::receive_buffer_size{4096});
        peer.connect(acceptor.local_endpoint());
        acceptor.accept(server);
        server.set_option(asio::socket_base::send_buffer_size{4096});
    }
};

std::vector<std::uint8_t> pattern(std::size_t size) {
    std::vector<std::uint8_t> bytes(size);
    for (std::size_t i = 0; i < size; ++i) {
        bytes[i] = static_cast<std::uint8_t>(i * 7 + i / 251);
    }
    return bytes;
}

TEST(TcpStream, TryWriteTakesWhatTheSocketTakesWithoutWaitingAndCountsIt) {
    socket_pair pair;
    const auto stream = ecsnet::server::make_tcp_stream(std::move(pair.server));
    const std::vector<std::uint8_t> data = pattern(4 * 1024 * 1024);  // more than any buffer

    // The peer reads nothing: the kernel's buffers fill, and a write that would wait takes
    // nothing instead of blocking this thread.
    std::size_t written = 0;
    std::size_t calls = 0;
    for (; calls < 10'000 && written < data.size(); ++calls) {
        const std::vector<asio::const_buffer> rest{
            asio::buffer(data.data() + written, data.size() - written)};
        const std::size_t n = stream->try_write(rest);
        if (n == 0) {
            break;
        }
        written += n;
    }
    ASSERT_GT(written, 0U);
    ASSERT_LT(written, data.size()) << "the kernel took 4 MB with 4 KB buffers and no reader";
    EXPECT_EQ(stream->bytes().written, written);

    // What it took arrives whole and in order; then it takes more, from where it stopped.
    std::vector<std::uint8_t> received(written);
    asio::read(pair.peer, asio::buffer(received));
    EXPECT_TRUE(std::equal(received.begin(), received.end(), data.begin()));
    const std::vector<asio::const_buffer> rest{
        asio::buffer(data.data() + written, data.size() - written)};
    const std::size_t more = stream->try_write(rest);
    EXPECT_GT(more, 0U);
    EXPECT_EQ(stream->bytes().written, written + more);
    std::vector<std::uint8_t> next(more);
    asio::read(pair.peer, asio::buffer(next));
    EXPECT_TRUE(
        std::equal(next.begin(), next.end(), data.begin() + static_cast<std::ptrdiff_t>(written)));
}

TEST(TcpStream, TryWriteGathersSeveralBuffersInOrder) {
    socket_pair pair;
    const auto stream = ecsnet::server::make_tcp_stream(std::move(pair.server));
    const std::vector<std::uint8_t> a{1, 2, 3};
    const std::vector<std::uint8_t> b{4, 5};
    const std::vector<asio::const_buffer> both{asio::buffer(a), asio::buffer(b)};
    ASSERT_EQ(stream->try_write(both), 5U);
    std::vector<std::uint8_t> received(5);
    asio::read(pair.peer, asio::buffer(received));
    EXPECT_EQ(received, (std::vector<std::uint8_t>{1, 2, 3, 4, 5}));
}

TEST(TlsStream, TryWriteLeavesEverythingToTheAsynchronousWrite) {
    // Its bytes must go through the encryption, which only write() runs.
    socket_pair pair;
    asio::ssl::context context = ecsnet::server::make_server_tls_context(
        ECSNET_TLS_TEST_DIR "/server.pem", ECSNET_TLS_TEST_DIR "/server.key");
    const auto stream = ecsnet::server::make_tls_stream(std::move(pair.server), context);
    const std::vector<std::uint8_t> data{1, 2, 3};
    EXPECT_EQ(stream->try_write({asio::buffer(data)}), 0U);
    EXPECT_EQ(stream->bytes().written, 0U);
}

}  // namespace stream_test
