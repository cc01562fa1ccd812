#include "latency_proxy.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

// The proxy between two sockets of the test itself: the test plays the client on one and the
// server on the other (the socket its listener accepted), so it sees both ends of every byte.
// All sockets are non-blocking and every wait is bounded by a deadline.
namespace ecsnet::test {
namespace latency_proxy_test {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
using bytes = std::vector<std::byte>;

// Generous: a deadline only ends a test that would otherwise hang.
constexpr auto patience = 30s;

class socket_fd {
public:
    socket_fd() noexcept = default;
    explicit socket_fd(int fd) noexcept : fd_{fd} {}
    socket_fd(socket_fd&& other) noexcept : fd_{std::exchange(other.fd_, -1)} {}
    socket_fd& operator=(socket_fd&& other) noexcept {
        std::swap(fd_, other.fd_);
        return *this;
    }
    socket_fd(const socket_fd&) = delete;
    socket_fd& operator=(const socket_fd&) = delete;
    ~socket_fd() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }

    [[nodiscard]] int get() const noexcept { return fd_; }
    [[nodiscard]] bool valid() const noexcept { return fd_ >= 0; }

private:
    int fd_{-1};
};

sockaddr_in loopback(std::uint16_t port) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(port);
    return address;
}

void make_non_blocking(int fd) {
    if (::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) {
        throw std::runtime_error{"fcntl failed"};
    }
    const int on = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

// The server's side: a listener on 127.0.0.1, port 0.
class listener {
public:
    listener() : fd_{::socket(AF_INET, SOCK_STREAM, 0)} {
        auto address = loopback(0);
        socklen_t size = sizeof address;
        if (!fd_.valid() || ::bind(fd_.get(), reinterpret_cast<sockaddr*>(&address), size) != 0 ||
            ::listen(fd_.get(), 16) != 0 ||
            ::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&address), &size) != 0) {
            throw std::runtime_error{"cannot listen on 127.0.0.1"};
        }
        port_ = ntohs(address.sin_port);
    }

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }

    // The next connection the proxy made, or an invalid socket after `patience`.
    [[nodiscard]] socket_fd accept() const {
        pollfd ready{.fd = fd_.get(), .events = POLLIN, .revents = 0};
        if (::poll(&ready, 1, static_cast<int>(std::chrono::milliseconds{patience}.count())) != 1) {
            return {};
        }
        socket_fd accepted{::accept(fd_.get(), nullptr, nullptr)};
        if (accepted.valid()) {
            make_non_blocking(accepted.get());
        }
        return accepted;
    }

private:
    socket_fd fd_;
    std::uint16_t port_{0};
};

socket_fd connect_to(std::uint16_t port) {
    socket_fd socket{::socket(AF_INET, SOCK_STREAM, 0)};
    const auto address = loopback(port);
    if (!socket.valid() ||
        ::connect(socket.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
        throw std::runtime_error{"cannot connect to 127.0.0.1"};
    }
    make_non_blocking(socket.get());
    return socket;
}

bytes pattern(std::size_t size, std::uint64_t seed) {
    std::mt19937_64 random{seed};
    bytes out(size);
    std::generate(out.begin(), out.end(), [&] { return static_cast<std::byte>(random() & 0xFFU); });
    return out;
}

// A byte of an endless stream that no shift of itself matches.
std::byte stream_byte(std::uint64_t index) noexcept {
    index = (index ^ (index >> 30U)) * 0xBF58476D1CE4E5B9ULL;
    index = (index ^ (index >> 27U)) * 0x94D049BB133111EBULL;
    return static_cast<std::byte>((index ^ (index >> 31U)) & 0xFFU);
}

bool wait_for(int fd, short events, steady::time_point deadline) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now());
    pollfd ready{.fd = fd, .events = events, .revents = 0};
    return left.count() > 0 && ::poll(&ready, 1, static_cast<int>(left.count())) == 1;
}

[[nodiscard]] bool send_all(const socket_fd& socket, const bytes& data) {
    const auto deadline = steady::now() + patience;
    std::size_t sent = 0;
    while (sent < data.size()) {
        const auto n = ::send(socket.get(), data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
        if (n > 0) {
            sent += static_cast<std::size_t>(n);
        } else if (errno != EAGAIN || !wait_for(socket.get(), POLLOUT, deadline)) {
            return false;
        }
    }
    return true;
}

// Up to `size` bytes: fewer when the stream ends or the deadline passes first.
bytes receive(const socket_fd& socket, std::size_t size, steady::time_point deadline) {
    bytes out;
    std::array<std::byte, 64 * 1024> buffer{};
    while (out.size() < size) {
        const auto n =
            ::recv(socket.get(), buffer.data(), std::min(buffer.size(), size - out.size()), 0);
        if (n > 0) {
            out.insert(out.end(), buffer.begin(), buffer.begin() + n);
        } else if (n == 0 || errno != EAGAIN || !wait_for(socket.get(), POLLIN, deadline)) {
            break;
        }
    }
    return out;
}

bytes receive(const socket_fd& socket, std::size_t size) {
    return receive(socket, size, steady::now() + patience);
}

enum class ending { still_open, end_of_stream, reset };

// Reads until the stream ends, counting the bytes read on the way in `read_before`.
ending wait_for_end(const socket_fd& socket, std::size_t* read_before = nullptr) {
    const auto deadline = steady::now() + patience;
    std::array<std::byte, 4096> buffer{};
    for (;;) {
        const auto n = ::recv(socket.get(), buffer.data(), buffer.size(), 0);
        if (n > 0 && read_before != nullptr) {
            *read_before += static_cast<std::size_t>(n);
        }
        if (n == 0) {
            return ending::end_of_stream;
        }
        if (n < 0 && errno == ECONNRESET) {
            return ending::reset;
        }
        if (n < 0 && (errno != EAGAIN || !wait_for(socket.get(), POLLIN, deadline))) {
            return ending::still_open;
        }
    }
}

// One side of exchange(): what it sends and what it received.
struct peer {
    const socket_fd& socket;
    const bytes& out;
    std::size_t sent{0};
    bytes in{};
    bool ended{false};

    void step(short events) {
        if ((events & POLLOUT) != 0 && sent < out.size()) {
            const auto n =
                ::send(socket.get(), out.data() + sent,
                       std::min<std::size_t>(out.size() - sent, 64 * 1024), MSG_NOSIGNAL);
            sent += n > 0 ? static_cast<std::size_t>(n) : 0;
        }
        if ((events & (POLLIN | POLLHUP | POLLERR)) != 0) {
            std::array<std::byte, 64 * 1024> buffer{};
            const auto n = ::recv(socket.get(), buffer.data(), buffer.size(), 0);
            if (n > 0) {
                in.insert(in.end(), buffer.begin(), buffer.begin() + n);
            } else if (n == 0 || errno != EAGAIN) {
                ended = true;
            }
        }
    }
};

// Sends a_to_b from a and b_to_a from b at the same time; returns what b and a received.
std::pair<bytes, bytes> exchange(const socket_fd& a, const socket_fd& b, const bytes& a_to_b,
                                 const bytes& b_to_a) {
    peer first{.socket = a, .out = a_to_b};
    peer second{.socket = b, .out = b_to_a};
    const auto deadline = steady::now() + patience;
    while ((second.in.size() < a_to_b.size() || first.in.size() < b_to_a.size()) && !first.ended &&
           !second.ended && steady::now() < deadline) {
        std::array<pollfd, 2> ready{
            pollfd{
                .fd = a.get(),
                .events = static_cast<short>(POLLIN | (first.sent < a_to_b.size() ? POLLOUT : 0)),
                .revents = 0},
            pollfd{
                .fd = b.get(),
                .events = static_cast<short>(POLLIN | (second.sent < b_to_a.size() ? POLLOUT : 0)),
                .revents = 0}};
        if (::poll(ready.data(), ready.size(), 100) > 0) {
            first.step(ready[0].revents);
            second.step(ready[1].revents);
        }
    }
    return {std::move(second.in), std::move(first.in)};
}

// The time from the client's byte leaving to the server's answer arriving; nothing if a byte
// went missing or changed.
std::optional<steady::duration> round_trip(const socket_fd& client, const socket_fd& server) {
    const bytes ping{std::byte{'p'}};
    const bytes pong{std::byte{'P'}};
    const auto start = steady::now();
    if (!send_all(client, ping) || receive(server, 1) != ping || !send_all(server, pong) ||
        receive(client, 1) != pong) {
        return std::nullopt;
    }
    return steady::now() - start;
}

TEST(DeliverySchedule, TheSameSeedDrawsTheSameDelays) {
    delivery_schedule a{100ms, 50ms, 7};
    delivery_schedule b{100ms, 50ms, 7};
    delivery_schedule other{100ms, 50ms, 8};
    bool differs = false;
    for (int i = 0; i < 1000; ++i) {
        const auto delay = a.draw();
        EXPECT_EQ(delay, b.draw());
        differs = differs || delay != other.draw();
    }
    EXPECT_TRUE(differs);
}

TEST(DeliverySchedule, DelaysSpanLatencyPlusOrMinusJitter) {
    delivery_schedule schedule{100ms, 50ms, 1};
    std::chrono::microseconds lowest = 1h;
    std::chrono::microseconds highest = 0us;
    for (int i = 0; i < 10'000; ++i) {
        const auto delay = schedule.draw();
        lowest = std::min(lowest, delay);
        highest = std::max(highest, delay);
    }
    EXPECT_GE(lowest, 50ms);
    EXPECT_LT(lowest, 51ms);
    EXPECT_LE(highest, 150ms);
    EXPECT_GT(highest, 149ms);
}

TEST(DeliverySchedule, WithoutJitterEveryDelayIsTheLatency) {
    delivery_schedule schedule{80ms, 0ms, 3};
    for (int i = 0; i < 100; ++i) {
        EXPECT_EQ(schedule.draw(), 80ms);
    }
}

TEST(DeliverySchedule, DelaysNeverGoBelowZero) {
    delivery_schedule schedule{10ms, 50ms, 5};
    std::set<std::chrono::microseconds::rep> zero_or_more;
    for (int i = 0; i < 1000; ++i) {
        const auto delay = schedule.draw();
        EXPECT_GE(delay, 0us);
        zero_or_more.insert(delay.count());
    }
    EXPECT_TRUE(zero_or_more.contains(0));  // most of [-40 ms, 0] lands on zero
}

TEST(DeliverySchedule, AChunkIsNeverDeliveredBeforeTheOneReadBeforeIt) {
    delivery_schedule schedule{100ms, 100ms, 11};
    delivery_schedule same_draws{100ms, 100ms, 11};
    const auto start = steady::now();
    auto previous = start;
    bool held_back = false;
    for (int i = 0; i < 1000; ++i) {
        const auto read_at = start + i * 100us;
        const auto drawn = read_at + same_draws.draw();
        const auto due = schedule.next(read_at);
        EXPECT_EQ(due, std::max(drawn, previous));
        held_back = held_back || due > drawn;
        previous = due;
    }
    EXPECT_TRUE(held_back);
}

TEST(LatencyProxy, RelaysBytesCompleteAndInOrderBothWays) {
    listener server;
    // A jitter as large as the latency and a small buffer: chunks read close together draw
    // delays in any order, and the reader keeps hitting the limit.
    latency_proxy proxy{{.target_port = server.port(),
                         .latency = 20ms,
                         .jitter = 20ms,
                         .seed = 1,
                         .buffer_limit = 64 * 1024}};
    const auto client = connect_to(proxy.port());
    const auto accepted = server.accept();
    ASSERT_TRUE(accepted.valid());

    const auto up = pattern(1U << 20U, 1);
    const auto down = pattern(1U << 20U, 2);
    const auto [at_server, at_client] = exchange(client, accepted, up, down);
    EXPECT_EQ(at_server.size(), up.size());
    EXPECT_TRUE(at_server == up);
    EXPECT_EQ(at_client.size(), down.size());
    EXPECT_TRUE(at_client == down);

    const auto counters = proxy.counters();
    EXPECT_EQ(counters.connections_accepted, 1U);
    EXPECT_EQ(counters.bytes_to_server, up.size());
    EXPECT_EQ(counters.bytes_to_client, down.size());
    EXPECT_GE(counters.chunks_to_server, up.size() / (64 * 1024));
    EXPECT_GE(counters.chunks_to_client, down.size() / (64 * 1024));
}

TEST(LatencyProxy, ARoundTripTakesAtLeastTwiceTheShortestLatency) {
    listener server;
    latency_proxy proxy{{.target_port = server.port(), .latency = 60ms, .jitter = 20ms, .seed = 2}};
    const auto client = connect_to(proxy.port());
    const auto accepted = server.accept();
    ASSERT_TRUE(accepted.valid());
    for (int i = 0; i < 5; ++i) {
        const auto took = round_trip(client, accepted);
        ASSERT_TRUE(took.has_value());
        EXPECT_GE(*took, 2 * 40ms);
    }
    EXPECT_EQ(proxy.counters().chunks_to_server, 5U);
    EXPECT_EQ(proxy.counters().chunks_to_client, 5U);
}

TEST(LatencyProxy, AStallHoldsAllTrafficUntilItEndsThenReleasesIt) {
    listener server;
    latency_proxy proxy{{.target_port = server.port(), .latency = 10ms, .seed = 3}};
    const auto client = connect_to(proxy.port());
    const auto accepted = server.accept();
    ASSERT_TRUE(accepted.valid());
    ASSERT_TRUE(round_trip(client, accepted).has_value());

    const auto up = pattern(100'000, 3);
    const auto down = pattern(50'000, 4);
    const auto stalled_at = steady::now();
    proxy.stall(2s);
    ASSERT_TRUE(send_all(client, up));
    ASSERT_TRUE(send_all(accepted, down));
    const auto first_up = receive(accepted, 1);
    const auto first_up_at = steady::now();
    const auto first_down = receive(client, 1);
    const auto first_down_at = steady::now();
    ASSERT_EQ(first_up.size(), 1U);
    ASSERT_EQ(first_down.size(), 1U);
    EXPECT_GE(first_up_at - stalled_at, 2s);
    EXPECT_GE(first_down_at - stalled_at, 2s);

    auto rest_up = receive(accepted, up.size() - 1);
    auto rest_down = receive(client, down.size() - 1);
    rest_up.insert(rest_up.begin(), first_up.front());
    rest_down.insert(rest_down.begin(), first_down.front());
    EXPECT_TRUE(rest_up == up);
    EXPECT_TRUE(rest_down == down);
    EXPECT_TRUE(round_trip(client, accepted).has_value());
}

TEST(LatencyProxy, DropResetsEveryConnectionOnBothSidesAndKeepsAccepting) {
    listener server;
    latency_proxy proxy{{.target_port = server.port(), .latency = 5ms, .seed = 4}};
    const auto first = connect_to(proxy.port());
    const auto first_accepted = server.accept();
    const auto second = connect_to(proxy.port());
    const auto second_accepted = server.accept();
    ASSERT_TRUE(first_accepted.valid());
    ASSERT_TRUE(second_accepted.valid());
    ASSERT_TRUE(round_trip(first, first_accepted).has_value());
    ASSERT_TRUE(round_trip(second, second_accepted).has_value());

    proxy.drop();
    EXPECT_EQ(wait_for_end(first), ending::reset);
    EXPECT_EQ(wait_for_end(second), ending::reset);
    EXPECT_EQ(wait_for_end(first_accepted), ending::reset);
    EXPECT_EQ(wait_for_end(second_accepted), ending::reset);

    const auto third = connect_to(proxy.port());
    const auto third_accepted = server.accept();
    ASSERT_TRUE(third_accepted.valid());
    EXPECT_TRUE(round_trip(third, third_accepted).has_value());
    EXPECT_EQ(proxy.counters().connections_accepted, 3U);
}

TEST(LatencyProxy, ForwardsEachEndOfStreamAfterTheLastByte) {
    listener server;
    latency_proxy proxy{{.target_port = server.port(), .latency = 30ms, .jitter = 10ms, .seed = 5}};
    const auto client = connect_to(proxy.port());
    const auto accepted = server.accept();
    ASSERT_TRUE(accepted.valid());

    const auto up = pattern(10'000, 5);
    ASSERT_TRUE(send_all(client, up));
    ::shutdown(client.get(), SHUT_WR);
    EXPECT_TRUE(receive(accepted, up.size() + 1) == up);  // all of it, then the end
    EXPECT_EQ(wait_for_end(accepted), ending::end_of_stream);

    // Half closed: the other direction still flows.
    const auto down = pattern(10'000, 6);
    ASSERT_TRUE(send_all(accepted, down));
    ::shutdown(accepted.get(), SHUT_WR);
    EXPECT_TRUE(receive(client, down.size() + 1) == down);
    EXPECT_EQ(wait_for_end(client), ending::end_of_stream);
}

TEST(LatencyProxy, AClientIsResetWhenTheServerRefuses) {
    std::uint16_t closed_port = 0;
    {
        const listener gone;
        closed_port = gone.port();
    }
    latency_proxy proxy{{.target_port = closed_port, .latency = 5ms, .seed = 6}};
    const auto client = connect_to(proxy.port());
    EXPECT_EQ(wait_for_end(client), ending::reset);
    EXPECT_EQ(proxy.counters().connections_accepted, 1U);
}

TEST(LatencyProxy, BackpressureStopsReadingFromASenderWhoseReceiverDoesNotRead) {
    listener server;
    latency_proxy proxy{
        {.target_port = server.port(), .latency = 1ms, .seed = 7, .buffer_limit = 64 * 1024}};
    const auto client = connect_to(proxy.port());
    const auto accepted = server.accept();
    ASSERT_TRUE(accepted.valid());

    // The server reads nothing: past the kernel buffers on both sides of the proxy and its own
    // limit, the client's writes stop. Without backpressure the proxy would swallow it all.
    constexpr std::size_t ceiling = 128U << 20U;
    std::uint64_t sent = 0;
    std::array<std::byte, 64 * 1024> buffer{};
    while (sent < ceiling) {
        for (std::size_t i = 0; i < buffer.size(); ++i) {
            buffer[i] = stream_byte(sent + i);
        }
        const auto n = ::send(client.get(), buffer.data(), buffer.size(), MSG_NOSIGNAL);
        if (n > 0) {
            sent += static_cast<std::uint64_t>(n);
        } else if (errno != EAGAIN || !wait_for(client.get(), POLLOUT, steady::now() + 1s)) {
            break;
        }
    }
    EXPECT_LT(sent, ceiling);
    EXPECT_LE(proxy.counters().bytes_to_server, sent);

    // Nothing was lost: once the server reads, every byte arrives, in order.
    const auto deadline = steady::now() + 4 * patience;
    std::uint64_t checked = 0;
    bool in_order = true;
    while (checked < sent && in_order) {
        const auto part =
            receive(accepted, std::min<std::uint64_t>(sent - checked, 1U << 20U), deadline);
        if (part.empty()) {
            break;
        }
        for (const auto b : part) {
            in_order = in_order && b == stream_byte(checked++);
        }
    }
    EXPECT_TRUE(in_order);
    EXPECT_EQ(checked, sent);
}

TEST(LatencyProxy, DestructionResetsConnectionsWithoutWaitingForAStall) {
    listener server;
    auto proxy = std::make_unique<latency_proxy>(
        latency_proxy_config{.target_port = server.port(), .latency = 5ms});
    const auto client = connect_to(proxy->port());
    const auto accepted = server.accept();
    ASSERT_TRUE(accepted.valid());
    ASSERT_TRUE(round_trip(client, accepted).has_value());

    // Waiting for this stall would outlast the test's ctest timeout.
    proxy->stall(10min);
    ASSERT_TRUE(send_all(client, pattern(1000, 8)));
    proxy.reset();
    std::size_t held_bytes_delivered = 0;
    EXPECT_EQ(wait_for_end(client), ending::reset);
    EXPECT_EQ(wait_for_end(accepted, &held_bytes_delivered), ending::reset);
    EXPECT_EQ(held_bytes_delivered, 0U);
}

TEST(LatencyProxy, RejectsABufferLimitOfZero) {
    EXPECT_THROW(latency_proxy({.buffer_limit = 0}), std::invalid_argument);
}

}  // namespace latency_proxy_test

}  // namespace ecsnet::test
