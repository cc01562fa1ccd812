// Issue #8, limits: the real ecsnet-server process against clients that stay silent, trickle,
// flood connections, exhaust its file descriptors, exceed the command rate and the entity
// quotas, or act on entities that are not theirs. Each test prints one FIGURES line.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "ecsnet/client/connection.hpp"
#include "ecsnet/demo/components.hpp"
#include "ecsnet/protocol/components.hpp"
#include "ecsnet/protocol/frame.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "client_polling.hpp"
#include "harness.hpp"
#include "http_get.hpp"
#include "process.hpp"
#include "test_support.hpp"

namespace {

namespace protocol = ecsnet::protocol;
using ecsnet::client::client_error;
using ecsnet::client::connect_options;
using ecsnet::client::connection;
using ecsnet::ecs::Entity;
using ecsnet::test::count_lines;
using ecsnet::test::figures;
using ecsnet::test::percentile;
using ecsnet::test::fd_count;
using ecsnet::test::raw_socket;
using ecsnet::test::sanitizer_report;
using ecsnet::test::server;
using ecsnet::demo::Health;
using ecsnet::demo::Lifetime;
using ecsnet::demo::Name;
using ecsnet::demo::Position;
using ecsnet::demo::Velocity;
using protocol::component_set;
using protocol::Owner;
using testing::HasSubstr;
using wire_error = ecsnet::wire::ErrorCode;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

double ms_between(clock_type::time_point from, clock_type::time_point to) {
    return std::chrono::duration<double, std::milli>(to - from).count();
}

double ms_since(clock_type::time_point from) { return ms_between(from, clock_type::now()); }

// The test process holds thousands of sockets at once: lift its soft descriptor limit to the
// hard one. Returns the soft limit now in force.
rlim_t raise_own_fd_limit() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) {
        throw std::system_error(errno, std::generic_category(), "getrlimit");
    }
    if (limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) {
            throw std::system_error(errno, std::generic_category(), "setrlimit");
        }
    }
    return limit.rlim_cur;
}

// A bare blocking TCP socket connected to 127.0.0.1:port: one descriptor per connection
// (raw_socket carries an io_context each), for holding a thousand of them.
class tcp_client {
public:
    // `source`: the local address (another 127.x.y.z: a second client host on loopback).
    explicit tcp_client(std::uint16_t port, in_addr_t source = htonl(INADDR_ANY))
        : fd_{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)} {
        if (fd_ < 0) {
            throw std::system_error(errno, std::generic_category(), "socket");
        }
        if (source != htonl(INADDR_ANY)) {
            sockaddr_in local{};
            local.sin_family = AF_INET;
            local.sin_addr.s_addr = source;
            if (::bind(fd_, reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0) {
                const int error = errno;
                ::close(fd_);
                throw std::system_error(error, std::generic_category(), "bind");
            }
        }
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        address.sin_port = htons(port);
        // Before connect(): the server may accept (and start its clocks) before it returns.
        started_at_ = clock_type::now();
        if (::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
            const int error = errno;
            ::close(fd_);
            throw std::system_error(error, std::generic_category(), "connect");
        }
    }
    tcp_client(tcp_client&& other) noexcept
        : fd_{std::exchange(other.fd_, -1)}, started_at_{other.started_at_} {}
    tcp_client& operator=(tcp_client&&) = delete;
    tcp_client(const tcp_client&) = delete;
    tcp_client& operator=(const tcp_client&) = delete;
    ~tcp_client() { close(); }

    // False once the peer is gone (no SIGPIPE: MSG_NOSIGNAL).
    bool send(std::span<const std::uint8_t> bytes) {
        while (!bytes.empty()) {
            const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
            if (n <= 0) {
                return false;
            }
            bytes = bytes.subspan(static_cast<std::size_t>(n));
        }
        return true;
    }

    void close() {
        if (fd_ >= 0) {
            ::close(fd_);
            fd_ = -1;
        }
    }

    // Closes with a RST instead of a FIN (SO_LINGER 0).
    void reset() {
        const linger abort{1, 0};
        ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
        close();
    }

    [[nodiscard]] int fd() const noexcept { return fd_; }
    [[nodiscard]] clock_type::time_point started_at() const noexcept { return started_at_; }

private:
    int fd_;
    clock_type::time_point started_at_;
};

// Watches connections that should receive nothing until the server closes them.
struct close_watch {
    std::vector<std::optional<clock_type::time_point>> closed_at;
    std::size_t bytes_received = 0;  // by connections that were sent nothing

    explicit close_watch(std::size_t n) : closed_at(n) {}

    [[nodiscard]] std::size_t closed() const {
        return static_cast<std::size_t>(
            std::count_if(closed_at.begin(), closed_at.end(), [](const auto& t) { return t.has_value(); }));
    }

    // One poll() round over the still-open connections, at most `wait`.
    void poll_once(const std::vector<tcp_client>& clients, std::chrono::milliseconds wait) {
        std::vector<pollfd> fds;
        std::vector<std::size_t> which;
        for (std::size_t i = 0; i < clients.size(); ++i) {
            if (!closed_at[i]) {
                fds.push_back(pollfd{clients[i].fd(), POLLIN | POLLRDHUP, 0});
                which.push_back(i);
            }
        }
        if (fds.empty() || ::poll(fds.data(), fds.size(), static_cast<int>(wait.count())) <= 0) {
            return;
        }
        const auto now = clock_type::now();
        for (std::size_t k = 0; k < fds.size(); ++k) {
            if (fds[k].revents == 0) {
                continue;
            }
            std::array<std::uint8_t, 4096> buffer{};
            const ssize_t n = ::recv(fds[k].fd, buffer.data(), buffer.size(), MSG_DONTWAIT);
            if (n > 0) {
                bytes_received += static_cast<std::size_t>(n);
            } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
                closed_at[which[k]] = now;
            }
        }
    }
};

std::unique_ptr<connection> join(std::uint16_t port, const std::string& name,
                                 std::chrono::milliseconds timeout = 10s) {
    connect_options options = ecsnet::test::join_options(port, name);
    options.timeout = timeout;
    options.websocket = ecsnet::test::current_transport() == ecsnet::test::transport::websocket;
    return std::make_unique<connection>(options);
}

// The abuse tests run over each transport: the server also listens for WebSocket, and the
// clients connect where the test's transport is served.
using Abuse = ecsnet::test::transport_test;
server abuse_server(std::vector<std::string> args) {
    if (ecsnet::test::current_transport() == ecsnet::test::transport::websocket) {
        args.insert(args.end(), {"--ws-port", "0"});
    }
    return server{args};
}
std::uint16_t port_of(const server& s) {
    return s.ws_port() != 0 ? s.ws_port() : s.port();
}

// The end of the server log, for failure messages.
std::string log_tail(const server& s) {
    const std::string log = s.log();
    return log.substr(log.size() > 3000 ? log.size() - 3000 : 0);
}

// The server was alive to the end, stops on SIGTERM through its normal exit path, and
// logged no sanitizer report (leaks are reported at exit, hence after stopping too).
void expect_clean_stop(server& s) {
    EXPECT_TRUE(fd_count(s.pid()).has_value()) << "the server died; its log ends with:\n" << log_tail(s);
    EXPECT_EQ(sanitizer_report(s.log()), "");
    EXPECT_TRUE(s.stop(10s)) << "no exit within 10 s of SIGTERM";
    const std::string log = s.log();
    EXPECT_EQ(sanitizer_report(log), "");
    EXPECT_NE(log.find("stopped after"), std::string::npos) << "did not leave through its exit-0 path";
}

// Polls until the server's descriptor count is `target`, at most `timeout`; the last count.
std::size_t wait_for_fds(pid_t pid, std::size_t target, std::chrono::milliseconds timeout) {
    const auto deadline = clock_type::now() + timeout;
    std::size_t n = fd_count(pid).value_or(0);
    while (n != target && clock_type::now() < deadline) {
        std::this_thread::sleep_for(20ms);
        n = fd_count(pid).value_or(0);
    }
    return n;
}

// Lines of the server log that contain `needle` once there are `count` of them (the server
// logs a close just after it happens), at most `timeout`.
std::size_t wait_for_log_lines(const server& s, const std::string& needle, std::size_t count,
                               std::chrono::milliseconds timeout = 5s) {
    const auto deadline = clock_type::now() + timeout;
    std::size_t n = count_lines(s.log(), needle);
    while (n < count && clock_type::now() < deadline) {
        std::this_thread::sleep_for(20ms);
        n = count_lines(s.log(), needle);
    }
    return n;
}

testing::AssertionResult log_has(const server& s, const std::string& needle) {
    if (wait_for_log_lines(s, needle, 1) > 0) {
        return testing::AssertionSuccess();
    }
    return testing::AssertionFailure() << "the server log has no \"" << needle << "\"; it ends with:\n"
                                       << log_tail(s);
}

// Sends every command, then reads until each has its CommandResult (at most `timeout`).
std::vector<protocol::command_result> run_commands(connection& c,
                                                   std::vector<protocol::client_message> commands,
                                                   std::chrono::milliseconds timeout = 10s) {
    const std::vector<std::uint32_t> ids = ecsnet::test::send_numbered(c, commands);
    std::vector<std::optional<protocol::command_result>> results(ids.size());
    std::size_t got = 0;
    c.poll_until(
        [&] {
            for (std::size_t i = 0; i < ids.size(); ++i) {
                if (!results[i]) {
                    if ((results[i] = c.take_result(ids[i]))) {
                        ++got;
                    }
                }
            }
            return got == ids.size();
        },
        timeout);
    std::vector<protocol::command_result> out;
    for (std::size_t i = 0; i < results.size(); ++i) {
        if (!results[i]) {
            ADD_FAILURE() << "no CommandResult for command " << i << " within " << timeout.count()
                          << " ms";
            return out;
        }
        out.push_back(std::move(*results[i]));
    }
    return out;
}

Entity spawn_ok(connection& c, const component_set& components) {
    const auto results = run_commands(c, {protocol::spawn{0, components}});
    if (results.size() != 1 || !results[0].ok) {
        ADD_FAILURE() << "spawn failed: " << (results.empty() ? "no result" : results[0].message);
        return {};
    }
    return results[0].entity;
}

// The server tick at least as late as every command `c` sent so far (a Pong follows them).
std::uint64_t server_tick_after_commands(connection& c) {
    const std::uint64_t nonce = 0xC0FFEE + c.next_request_id();
    c.send(protocol::ping{nonce});
    const bool answered = c.poll_until([&] { return c.last_pong() && c.last_pong()->nonce == nonce; }, 5s);
    EXPECT_TRUE(answered) << "no Pong";
    return answered ? c.last_pong()->tick : 0;
}

// Reads until the mirror has applied tick `tick` and then a checksum has matched (so the
// state compared afterwards is the server's).
bool catch_up_and_verify(connection& c, std::uint64_t tick, std::chrono::milliseconds timeout = 10s) {
    const auto matched = c.mirror().statistics().checksums_matched;
    return c.poll_until(
        [&] {
            return c.mirror().tick() >= tick && c.last_checksum() && c.last_checksum()->tick > tick &&
                   c.mirror().statistics().checksums_matched > matched;
        },
        timeout);
}

// One entity and every component of it, as text (ecsnet::test::dump does the whole world).
std::string describe_entity(const protocol::mirror& m, Entity e) {
    if (!m.contains(e)) {
        return "(absent)";
    }
    return ecsnet::test::describe(m, e);
}

// RemoveComponent's list of wire names.
std::vector<std::string> mask_of(std::initializer_list<std::string> wire_names) {
    return {wire_names.begin(), wire_names.end()};
}

template <typename T>
const std::string wire_id{protocol::replicated<T>::name};

// ---- timeouts --------------------------------------------------------------------------------

// Default --hello-timeout-ms (5 s): 1,000 silent connections and one that trickles its Hello
// byte by byte are all closed for want of a Hello, the server's descriptors return to their
// baseline, and a joined client is not touched.
TEST(Timeouts, ThousandSilentConnectionsAndATrickledHelloAreClosedAtTheHelloTimeout) {
    constexpr std::size_t silent_count = 1000;
    constexpr auto hello_timeout = 5000ms;  // the server's default, not passed
    ASSERT_GE(raise_own_fd_limit(), silent_count + 100);
    // Pre-Hello connections have a bound of their own, per address too: all 1,001 come from
    // 127.0.0.1 here, and this test is about the timeout, not that bound.
    server s{{"--max-clients", "2000", "--max-pending", "2000", "--max-pending-per-address",
              "2000"}};
    const auto patient = join(s.port(), "patient");
    const std::size_t baseline = fd_count(s.pid()).value();
    const auto baseline_fds = ecsnet::test::fd_targets(s.pid());

    // The trickler connects first: it is client 2, after "patient".
    std::vector<tcp_client> clients;
    clients.emplace_back(s.port());
    const auto hello = protocol::encode(protocol::hello{protocol::protocol_version, "trickler", ""}, {});
    const auto started = clock_type::now();
    for (std::size_t i = 0; i < silent_count; ++i) {
        clients.emplace_back(s.port());
    }
    const double connect_ms = ms_since(started);

    close_watch watch{clients.size()};
    std::size_t trickled = 0;
    auto next_byte = clients[0].started_at();
    std::size_t fds_peak = 0;
    auto next_sample = clock_type::now();
    const auto deadline = clock_type::now() + hello_timeout + 10s;
    while (watch.closed() < clients.size() && clock_type::now() < deadline) {
        if (!watch.closed_at[0] && trickled < hello->size() && clock_type::now() >= next_byte) {
            if (clients[0].send(std::span{hello->data() + trickled, 1})) {
                ++trickled;
            }
            next_byte += 1s;
        }
        if (clock_type::now() >= next_sample) {
            fds_peak = std::max(fds_peak, fd_count(s.pid()).value_or(0));
            next_sample += 200ms;
        }
        watch.poll_once(clients, 20ms);
    }

    std::vector<double> silent_ms;
    for (std::size_t i = 1; i < clients.size(); ++i) {
        if (watch.closed_at[i]) {
            silent_ms.push_back(ms_between(clients[i].started_at(), *watch.closed_at[i]));
        }
    }
    const double trickler_ms =
        watch.closed_at[0] ? ms_between(clients[0].started_at(), *watch.closed_at[0]) : -1.0;
    EXPECT_EQ(watch.closed(), clients.size()) << "still open " << (hello_timeout + 10s).count()
                                              << " ms after the hello timeout";
    EXPECT_EQ(watch.bytes_received, 0U) << "the server sent something to a silent connection";
    EXPECT_LT(trickled, hello->size()) << "the whole Hello got through";
    ASSERT_FALSE(silent_ms.empty());
    // Nobody is cut off before the timeout (measured from before connect(), so from no later
    // than the server's own start of the deadline).
    EXPECT_GE(*std::min_element(silent_ms.begin(), silent_ms.end()), 5000.0);
    EXPECT_GE(trickler_ms, 5000.0);

    EXPECT_EQ(wait_for_log_lines(s, "closed: no Hello within the handshake timeout", clients.size()),
              clients.size());
    // A Hello on its way but not complete by the deadline gets no extension.
    EXPECT_TRUE(log_has(s, "client 2 () closed: no Hello within the handshake timeout"));

    const std::size_t fds_after = wait_for_fds(s.pid(), baseline, 5s);
    EXPECT_EQ(fds_after, baseline) << "descriptors not open at the baseline:\n"
                                   << ecsnet::test::describe_new_fds(s.pid(), baseline_fds);
    EXPECT_GE(fds_peak, baseline + silent_count) << "the connections were not all held at once";

    const std::uint64_t tick = patient->mirror().tick();
    ASSERT_TRUE(patient->poll_until([&] { return patient->mirror().tick() > tick; }, 5s));
    EXPECT_TRUE(patient->is_open()) << *patient->closed_reason();
    EXPECT_EQ(patient->mirror().statistics().checksums_mismatched, 0U);

    figures{"hello_timeout"}
        .add("hello_timeout_ms", hello_timeout.count())
        .add("silent_connections", silent_count)
        .add("connect_all_ms", connect_ms)
        .add("closed", watch.closed())
        .add("close_min_ms", *std::min_element(silent_ms.begin(), silent_ms.end()))
        .add("close_p50_ms", percentile(silent_ms, 0.5))
        .add("close_max_ms", *std::max_element(silent_ms.begin(), silent_ms.end()))
        .add("trickled_hello_bytes_sent", trickled)
        .add("trickled_hello_frame_bytes", hello->size())
        .add("trickled_hello_closed_ms", trickler_ms)
        .add("server_fds_baseline", baseline)
        .add("server_fds_peak", fds_peak)
        .add("server_fds_after", fds_after)
        .print();
    expect_clean_stop(s);
}

// A joined client that trickles a frame one byte per second is cut off at the frame deadline
// (--frame-timeout-ms 3500 here; 10 s by default) though it is not idle. The deadline sits
// half a second off the pace: the prefix's 4th byte goes at about 3 s and the 5th at 4, so the
// cut never races a byte (at 3000 ms, a loaded CI machine once cut before the 4th).
TEST(Timeouts, FrameTrickledOneBytePerSecondIsCutOff) {
    constexpr auto frame_timeout = 3500ms;
    server s{{"--frame-timeout-ms", std::to_string(frame_timeout.count())}};
    const auto bystander = join(s.port(), "bystander");

    raw_socket trickler{s.port()};
    trickler.send(protocol::hello{protocol::protocol_version, "trickler", ""});
    const auto ping = protocol::encode(protocol::ping{42}, {});

    std::vector<std::uint8_t> frame;
    std::size_t sent = 0;
    std::size_t frames_read = 0;
    bool closed = false;
    const auto first_byte = clock_type::now();
    std::optional<clock_type::time_point> prefix_done;
    std::optional<clock_type::time_point> closed_at;
    while (!closed && sent < ping->size() && clock_type::now() - first_byte < 60s) {
        try {
            trickler.write(std::span{ping->data() + sent, 1});
            ++sent;
        } catch (const boost::system::system_error&) {
            closed = true;
            closed_at = clock_type::now();
            break;
        }
        if (sent == protocol::frame_prefix_bytes) {
            prefix_done = clock_type::now();
        }
        // Reads what the server sends (Welcome, snapshot, deltas) for a second: the pace.
        const auto next = clock_type::now() + 1s;
        while (clock_type::now() < next) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(next - clock_type::now());
            const auto status = trickler.read_frame(frame, std::max(left, 1ms));
            if (status == raw_socket::read_status::closed) {
                closed = true;
                closed_at = clock_type::now();
                break;
            }
            frames_read += status == raw_socket::read_status::frame ? 1 : 0;
        }
    }
    EXPECT_TRUE(closed) << "a frame trickled at 1 byte/s was not cut off";
    EXPECT_LT(sent, ping->size());
    EXPECT_GT(frames_read, 0U) << "it had joined and was receiving";
    ASSERT_TRUE(prefix_done.has_value());
    ASSERT_TRUE(closed_at.has_value());
    EXPECT_TRUE(log_has(s, "(trickler) closed: frame not completed in time"));

    const std::uint64_t tick = bystander->mirror().tick();
    ASSERT_TRUE(bystander->poll_until([&] { return bystander->mirror().tick() > tick; }, 5s));
    EXPECT_TRUE(bystander->is_open());

    figures{"frame_trickle"}
        .add("frame_timeout_ms", frame_timeout.count())
        .add("frame_bytes", ping->size())
        .add("bytes_sent", sent)
        .add("cut_after_prefix_ms", ms_between(*prefix_done, *closed_at))
        .add("cut_after_first_byte_ms", ms_between(first_byte, *closed_at))
        .print();
    expect_clean_stop(s);
}

// ---- caps ------------------------------------------------------------------------------------

// --max-clients 8: every Hello past it gets Disconnect "server full (8 clients)" at once,
// whether from the client library or bare bytes (a connection that sends nothing holds no
// player slot: it waits among the pre-Hello connections); the 8 keep receiving deltas whose
// checksums match; a freed place can be taken.
TEST(Caps, ConnectionsPastMaxClientsGetServerFullAndTheOthersAreUnaffected) {
    constexpr std::size_t max_clients = 8;
    constexpr std::size_t intruders = 24;
    const std::string full = "server full (8 clients)";
    server s{{"--max-clients", std::to_string(max_clients), "--checksum-interval", "10"}};
    std::vector<std::unique_ptr<connection>> members;
    for (std::size_t i = 0; i < max_clients; ++i) {
        members.push_back(join(s.port(), "member-" + std::to_string(i)));
    }
    std::vector<std::uint64_t> matched_before;
    for (const auto& m : members) {
        matched_before.push_back(m->mirror().statistics().checksums_matched);
    }

    std::vector<double> refused_ms;
    for (std::size_t i = 0; i < intruders; ++i) {
        const auto started = clock_type::now();
        if (i % 2 == 0) {
            // A real client: connect, Hello, wait for the Welcome.
            try {
                (void)join(s.port(), "intruder-" + std::to_string(i), 5s);
                ADD_FAILURE() << "intruder " << i << " was admitted";
            } catch (const client_error& e) {
                EXPECT_THAT(e.what(), HasSubstr(full)) << "intruder " << i;
            }
        } else {
            // A bare Hello, not waiting for anything, still hears why and is not left hanging.
            raw_socket bare{s.port()};
            bare.send(protocol::hello{protocol::protocol_version, "bare", ""});
            const auto result = bare.read_until_closed(5s);
            EXPECT_TRUE(result.closed) << "intruder " << i;
            EXPECT_EQ(result.reason, full) << "intruder " << i;
        }
        refused_ms.push_back(ms_since(started));
    }
    EXPECT_EQ(wait_for_log_lines(s, "disconnecting: " + full, intruders), intruders);

    // The members got every tick meanwhile (their kernels buffered it): each catches up and
    // sees a new checksum match.
    std::uint64_t tick_now = 0;
    for (const auto& m : members) {
        tick_now = std::max(tick_now, server_tick_after_commands(*m));
    }
    std::uint64_t deltas = 0;
    std::uint64_t mismatches = 0;
    for (std::size_t i = 0; i < members.size(); ++i) {
        auto& m = *members[i];
        EXPECT_TRUE(catch_up_and_verify(m, tick_now)) << "member " << i;
        EXPECT_TRUE(m.is_open()) << "member " << i << ": " << *m.closed_reason();
        EXPECT_GT(m.mirror().statistics().checksums_matched, matched_before[i]);
        EXPECT_EQ(m.mirror().statistics().checksums_mismatched, 0U) << "member " << i;
        EXPECT_EQ(m.mirror().statistics().inconsistencies, 0U) << "member " << i;
        deltas += m.mirror().statistics().deltas;
        mismatches += m.mirror().statistics().checksums_mismatched;
    }

    // A place frees up when a member leaves.
    members.front().reset();
    const auto freed = clock_type::now();
    std::unique_ptr<connection> newcomer;
    for (int attempt = 0; attempt < 50 && !newcomer && clock_type::now() - freed < 10s; ++attempt) {
        try {
            newcomer = join(s.port(), "newcomer", 5s);
        } catch (const client_error& e) {
            EXPECT_THAT(e.what(), HasSubstr(full));
            std::this_thread::sleep_for(50ms);
        }
    }
    ASSERT_TRUE(newcomer != nullptr) << "the freed place was not given to a new client";
    EXPECT_TRUE(newcomer->mirror().ready());

    figures{"max_clients"}
        .add("max_clients", max_clients)
        .add("refused", intruders)
        .add("refused_p50_ms", percentile(refused_ms, 0.5))
        .add("refused_max_ms", *std::max_element(refused_ms.begin(), refused_ms.end()))
        .add("member_deltas", deltas)
        .add("member_checksum_mismatches", mismatches)
        .add("rejoin_after_free_ms", ms_since(freed))
        .print();
    expect_clean_stop(s);
}

// 3,000 connections in a row, a third closed at once, a third after half a Hello, a third
// reset (RST): the server's descriptors return to their baseline and it still serves.
TEST(Caps, ConnectCloseFloodLeavesDescriptorsAtBaseline) {
    constexpr std::size_t connects = 3000;
    server s;
    // The baseline is taken with a client joined: the server has then opened what it opens once
    // (taken straight after the start, it once read 10, and 15 after the flood).
    const auto before = join(s.port(), "before-the-flood");
    const std::size_t baseline = fd_count(s.pid()).value();
    const auto baseline_fds = ecsnet::test::fd_targets(s.pid());
    const auto rss_before = ecsnet::test::rss_kib(s.pid()).value_or(0);
    const auto hello = protocol::encode(protocol::hello{protocol::protocol_version, "half", ""}, {});
    const std::span half_hello{hello->data(), hello->size() / 2};

    const auto started = clock_type::now();
    std::size_t done = 0;
    std::size_t connect_failures = 0;
    for (; done < connects && clock_type::now() - started < 60s; ++done) {
        try {
            tcp_client c{s.port()};
            switch (done % 3) {
                case 0:
                    c.close();
                    break;
                case 1:
                    (void)c.send(half_hello);
                    c.close();
                    break;
                default:
                    c.reset();
                    break;
            }
        } catch (const std::system_error& e) {
            ++connect_failures;
            ADD_FAILURE() << "connect " << done << ": " << e.what();
        }
    }
    const double flood_ms = ms_since(started);
    EXPECT_EQ(done, connects) << "the flood ran out of time";
    EXPECT_EQ(connect_failures, 0U);

    const auto settle = clock_type::now();
    const std::size_t fds_after = wait_for_fds(s.pid(), baseline, 10s);
    const double settle_ms = ms_since(settle);
    EXPECT_EQ(fds_after, baseline) << "descriptors not open at the baseline:\n"
                                   << ecsnet::test::describe_new_fds(s.pid(), baseline_fds);
    const auto after = join(s.port(), "after-the-flood");
    EXPECT_TRUE(after->mirror().ready());
    EXPECT_TRUE(before->is_open()) << *before->closed_reason();

    figures{"connect_close_flood"}
        .add("connects", done)
        .add("flood_ms", flood_ms)
        .add("connects_per_s", static_cast<double>(done) * 1000.0 / flood_ms)
        .add("server_fds_baseline", baseline)
        .add("server_fds_after", fds_after)
        .add("fds_settled_ms", settle_ms)
        .add("server_rss_kib_before", rss_before)
        .add("server_rss_kib_after", ecsnet::test::rss_kib(s.pid()).value_or(0))
        .add("refused_server_full", count_lines(s.log(), "refused: server full"))
        .print();
    expect_clean_stop(s);
}

// Out of file descriptors (its RLIMIT_NOFILE lowered with prlimit while it runs), the server
// logs the accept error, backs off instead of spinning, keeps ticking, and accepts again once
// descriptors are free. (Sanitized builds leave out UBSan's vptr check for this: see
// CMakeLists.txt.)
TEST(Caps, AcceptBacksOffWhenOutOfDescriptorsAndRecovers) {
    constexpr std::size_t headroom = 8;
    // Silent connections must stay until the test closes them.
    server s{{"--hello-timeout-ms", "60000"}};
    const pid_t pid = s.pid();
    const auto probe = join(s.port(), "probe");

    const std::size_t baseline = fd_count(pid).value();
    rlimit original{};
    ASSERT_EQ(::prlimit(pid, RLIMIT_NOFILE, nullptr, &original), 0) << std::strerror(errno);
    const rlimit low{baseline + headroom, original.rlim_max};
    ASSERT_EQ(::prlimit(pid, RLIMIT_NOFILE, &low, nullptr), 0) << std::strerror(errno);

    // Connect until the server cannot accept; the kernel still completes the connections
    // (they wait in the backlog).
    std::vector<tcp_client> clients;
    const auto opening = clock_type::now();
    bool failing = false;
    while (!failing && clients.size() < 64 && clock_type::now() - opening < 15s) {
        try {
            clients.emplace_back(s.port());
        } catch (const std::system_error& e) {
            FAIL() << "connection " << clients.size() << ": " << e.what() << "; " << log_tail(s);
        }
        if (clients.size() < headroom) {
            continue;  // these fit under the limit
        }
        const auto wait = clock_type::now() + 300ms;
        while (!failing && clock_type::now() < wait) {
            failing = s.log().find("accept failed:") != std::string::npos;
            std::this_thread::sleep_for(10ms);
        }
    }
    ASSERT_TRUE(failing) << clients.size() << " connections: " << log_has(s, "accept failed:").message();
    const std::size_t fds_at_limit = fd_count(pid).value_or(0);

    // Stuck at the limit for a while: still ticking for the client it has, not spinning.
    constexpr auto stuck_for = 2000ms;
    const std::uint64_t tick_before = probe->mirror().tick();
    const auto matched_before = probe->mirror().statistics().checksums_matched;
    const double cpu_before = ecsnet::test::cpu_seconds(pid).value_or(0);
    const auto stuck_from = clock_type::now();
    probe->poll_for(stuck_for);
    const double stuck_s = ms_since(stuck_from) / 1000.0;
    const double cpu_share = (ecsnet::test::cpu_seconds(pid).value_or(0) - cpu_before) / stuck_s;
    ASSERT_TRUE(fd_count(pid).has_value()) << "the server died: " << log_tail(s);
    const std::uint64_t tick_after = probe->mirror().tick();
    EXPECT_GT(tick_after, tick_before) << "the server stopped ticking";
    EXPECT_GT(probe->mirror().statistics().checksums_matched, matched_before);
    EXPECT_EQ(probe->mirror().statistics().checksums_mismatched, 0U);
    EXPECT_TRUE(probe->is_open());
    // A loop retrying accept() at once would keep a core busy.
    EXPECT_LT(cpu_share, 0.5) << "the accept loop spins";
    const std::size_t errors_logged = count_lines(s.log(), "accept failed:");
    EXPECT_TRUE(log_has(s, "accept failed: Too many open files; retrying in 150 ms"));

    // Free the descriptors: a new client joins, within a bounded time.
    const std::size_t opened = clients.size();
    clients.clear();
    const auto freed = clock_type::now();
    std::unique_ptr<connection> late;
    std::string last_error;
    for (int attempt = 0; attempt < 20 && !late && clock_type::now() - freed < 20s; ++attempt) {
        try {
            late = join(s.port(), "late", 5s);
        } catch (const client_error& e) {
            last_error = e.what();
        }
    }
    ASSERT_TRUE(late != nullptr) << "no recovery: " << last_error << "; " << log_tail(s);
    const double recovery_ms = ms_since(freed);
    EXPECT_TRUE(late->mirror().ready());
    const std::uint64_t tick = late->mirror().tick();
    EXPECT_TRUE(late->poll_until([&] { return late->mirror().tick() > tick; }, 5s));

    figures{"accept_out_of_fds"}
        .add("server_fds_baseline", baseline)
        .add("nofile_soft_limit", static_cast<std::uint64_t>(low.rlim_cur))
        .add("connections_opened", opened)
        .add("server_fds_at_limit", fds_at_limit)
        .add("stuck_ms", stuck_s * 1000.0)
        .add("ticks_while_stuck", tick_after - tick_before)
        .add("server_cpu_share_while_stuck", cpu_share)
        .add("accept_errors_logged", errors_logged)
        .add("recovery_ms", recovery_ms)
        .print();
    expect_clean_stop(s);
}

// ---- pre-Hello floods against admission (issue 12.5) ------------------------------------------

// Sockets that connect and say nothing, from one address, kept at `hold` open: each one the
// server closes (refused, evicted, timed out) is replaced at once, at most one new connection
// per millisecond, until `stop`. The tally is read once the flood ended; `connects_so_far` while
// it runs.
struct silent_flood_tally {
    std::uint64_t connects = 0;
    std::uint64_t connect_failures = 0;
    std::uint64_t closed_by_server = 0;
    std::size_t held_max = 0;
    std::map<std::string, std::uint64_t> reasons;  // of the Disconnects the server sent
};

void silent_flood(std::uint16_t port, in_addr_t source, std::size_t hold,
                  const std::atomic<bool>& stop, silent_flood_tally& tally,
                  std::atomic<std::uint64_t>& connects_so_far) {
    struct held_socket {
        tcp_client socket;
        std::vector<std::uint8_t> inbox;
    };
    std::vector<held_socket> held;
    auto next_connect = clock_type::now();
    while (!stop.load()) {
        while (held.size() < hold && clock_type::now() >= next_connect && !stop.load()) {
            next_connect += 1ms;
            try {
                held.push_back(held_socket{tcp_client{port, source}, {}});
                ++tally.connects;
                ++connects_so_far;
            } catch (const std::system_error&) {
                ++tally.connect_failures;
                next_connect = clock_type::now() + 10ms;
            }
        }
        tally.held_max = std::max(tally.held_max, held.size());
        std::vector<pollfd> fds;
        for (const auto& h : held) {
            fds.push_back(pollfd{h.socket.fd(), POLLIN | POLLRDHUP, 0});
        }
        if (::poll(fds.data(), fds.size(), 1) <= 0) {
            continue;
        }
        std::vector<bool> closed(held.size(), false);
        for (std::size_t k = 0; k < fds.size(); ++k) {
            if (fds[k].revents == 0) {
                continue;
            }
            std::array<std::uint8_t, 4096> buffer{};
            const ssize_t n = ::recv(fds[k].fd, buffer.data(), buffer.size(), MSG_DONTWAIT);
            if (n > 0) {
                held[k].inbox.insert(held[k].inbox.end(), buffer.begin(), buffer.begin() + n);
            } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
                closed[k] = true;
            }
        }
        std::vector<held_socket> open;
        for (std::size_t k = 0; k < held.size(); ++k) {
            if (!closed[k]) {
                open.push_back(std::move(held[k]));
                continue;
            }
            ++tally.closed_by_server;
            protocol::frame_reader reader{protocol::default_max_server_frame};
            reader.feed(held[k].inbox);
            std::span<const std::uint8_t> frame;
            std::string reason = "(closed without Disconnect)";
            if (reader.next(frame) == protocol::frame_reader::status::frame) {
                const auto* message = protocol::verify_server_frame(frame);
                const auto control =
                    message != nullptr ? protocol::decode_server_control(*message) : std::nullopt;
                const auto* d = control ? std::get_if<protocol::disconnect>(&*control) : nullptr;
                reason = d != nullptr ? d->reason : "(not a Disconnect)";
            }
            ++tally.reasons[reason];
        }
        held = std::move(open);
    }
}

struct silent_flood_run {
    std::vector<double> join_ms;
    std::uint64_t join_retries = 0;
    std::uint64_t pending_refused = 0;
    std::uint64_t pending_evicted = 0;
    std::uint64_t connections = 0;
    std::uint64_t clients = 0;
    std::uint64_t player_deltas = 0;
    std::uint64_t player_checksums_matched = 0;
    silent_flood_tally flood;
    double flood_s = 0;
};

// --max-clients 8 and the given pre-Hello bounds: 600 silent sockets from 127.0.0.2 (one
// attacking host), replaced as the server closes them; meanwhile 8 players join from
// 127.0.0.1 with the client library and are served (deltas, matching checksums).
silent_flood_run run_silent_flood(const std::vector<std::string>& pending_bounds) {
    constexpr std::size_t silent = 600;
    constexpr std::size_t players = 8;
    silent_flood_run run;
    std::vector<std::string> args{
        "--max-clients", std::to_string(players), "--checksum-interval", "10", "--admin-port", "0"};
    args.insert(args.end(), pending_bounds.begin(), pending_bounds.end());
    server s{args};
    const auto admin = ecsnet::test::admin_port(s, 10s);
    if (!admin) {
        ADD_FAILURE() << "no admin endpoint\n" << log_tail(s);
        return run;
    }
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> connects{0};
    const auto flood_start = clock_type::now();
    std::thread flooder{silent_flood,    s.port(),           ::inet_addr("127.0.0.2"), silent,
                        std::cref(stop), std::ref(run.flood), std::ref(connects)};
    // The flood is on (600 connects made) before the first player comes, and goes on.
    while (connects.load() < silent && clock_type::now() - flood_start < 20s) {
        std::this_thread::sleep_for(20ms);
    }
    EXPECT_GE(connects.load(), silent) << "the flood did not get going";

    // A player whose Hello is slower than the flood's turnover of the pending table (with
    // --max-pending, about 64 ms here: a sanitized client can be that slow) is closed like the
    // silent sockets and joins again, as the client library's reconnect does; the retries are
    // counted (join_retries). Three refusals in a row fail the run.
    std::vector<std::unique_ptr<connection>> members;
    for (std::size_t i = 0; i < players; ++i) {
        const auto started = clock_type::now();
        std::string refusals;
        for (int attempt = 0; attempt < 3 && members.size() == i; ++attempt) {
            try {
                members.push_back(join(s.port(), "player-" + std::to_string(i), 10s));
            } catch (const client_error& e) {
                ++run.join_retries;
                refusals += "\n  attempt " + std::to_string(attempt) + ": " + e.what();
            }
        }
        if (members.size() == i) {
            ADD_FAILURE() << "player " << i << " did not join:" << refusals;
            break;
        }
        run.join_ms.push_back(ms_since(started));
    }
    // Served while the flood goes on: each catches up to the server's tick and a checksum matches.
    for (std::size_t i = 0; i < members.size(); ++i) {
        auto& m = *members[i];
        const std::uint64_t tick = server_tick_after_commands(m);
        EXPECT_TRUE(catch_up_and_verify(m, tick)) << "player " << i;
        EXPECT_TRUE(m.is_open()) << "player " << i << ": " << m.closed_reason().value_or("");
        EXPECT_EQ(m.mirror().statistics().checksums_mismatched, 0U) << "player " << i;
        EXPECT_EQ(m.mirror().statistics().inconsistencies, 0U) << "player " << i;
        run.player_deltas += m.mirror().statistics().deltas;
        run.player_checksums_matched += m.mirror().statistics().checksums_matched;
    }
    const auto status = ecsnet::test::admin_status(*admin);
    stop = true;
    flooder.join();
    run.flood_s = ms_since(flood_start) / 1000.0;
    EXPECT_EQ(members.size(), players) << "players locked out by silent sockets";
    EXPECT_TRUE(status.has_value()) << "/status did not answer";
    if (status) {
        const auto& stats = status->at("stats");
        run.pending_refused = stats.at("pending_refused").get<std::uint64_t>();
        run.pending_evicted = stats.at("pending_evicted").get<std::uint64_t>();
        run.connections = stats.at("connections").get<std::uint64_t>();
        run.clients = status->at("clients").get<std::uint64_t>();
        EXPECT_EQ(run.clients, players);
    }
    expect_clean_stop(s);
    return run;
}

// Issue 12.5: a connection used to take a player slot from its accept on, so 8 silent sockets
// filled an 8-player server. Now they wait among the pre-Hello connections: one address holds
// at most --max-pending-per-address (32) of them, the rest refused with the reason; and with
// that bound out of the way, --max-pending closes the oldest to make room. Either way players
// join and are served while 600 silent sockets are kept open against the server.
TEST(Caps, SilentSocketFloodLeavesPlayersJoining) {
    constexpr std::size_t silent = 600;
    constexpr std::size_t per_address = 32;  // the server's default, not passed
    constexpr std::size_t max_pending = 64;
    ASSERT_GE(raise_own_fd_limit(), 2 * silent + 100);

    const silent_flood_run refused = run_silent_flood({});
    const std::string reason = "too many connections from 127.0.0.2 waiting for Hello";
    EXPECT_GE(refused.pending_refused, silent - per_address);
    EXPECT_EQ(refused.pending_evicted, 0U);
    EXPECT_GE(refused.flood.reasons.count(reason) != 0 ? refused.flood.reasons.at(reason) : 0,
              silent - per_address);

    const silent_flood_run evicted = run_silent_flood(
        {"--max-pending-per-address", "1000", "--max-pending", std::to_string(max_pending)});
    EXPECT_GE(evicted.pending_evicted, silent - max_pending);
    EXPECT_EQ(evicted.pending_refused, 0U);

    const auto reasons = [](const silent_flood_tally& t) {
        std::string out;
        for (const auto& [r, n] : t.reasons) {
            out += (out.empty() ? "" : "; ") + r + ": " + std::to_string(n);
        }
        return out;
    };
    for (const auto& [name, run] : {std::pair{"per_address", &refused}, {"evicted", &evicted}}) {
        figures{std::string{"silent_flood_"} + name}
            .add("max_clients", 8)
            .add("silent_held", silent)
            .add("silent_connects", run->flood.connects)
            .add("silent_closed_by_server", run->flood.closed_by_server)
            .add("silent_connect_failures", run->flood.connect_failures)
            .add("flood_s", run->flood_s)
            .add("server_connections", run->connections)
            .add("pending_refused", run->pending_refused)
            .add("pending_evicted", run->pending_evicted)
            .add("reasons", reasons(run->flood))
            .add("players_joined", run->join_ms.size())
            .add("join_retries", run->join_retries)
            .add("join_p50_ms", percentile(run->join_ms, 0.5))
            .add("join_max_ms", percentile(run->join_ms, 1.0))
            .add("player_deltas", run->player_deltas)
            .add("player_checksums_matched", run->player_checksums_matched)
            .add("clients", run->clients)
            .print();
    }
}

// Issue 12.5, 24.7: a full server is healthy but not ready (no place for a new player). 8 of 8
// players; 20 rounds of GET /healthz (200), GET /readyz (503 "full") and `ecsnet-server
// --healthcheck` (exit 0), and none of them touched the game port: the server counted no
// connection besides the players'.
TEST(Caps, FullServerStaysHealthyButIsNotReady) {
    constexpr std::size_t players = 8;
    constexpr int rounds = 20;
    server s{{"--max-clients", std::to_string(players), "--admin-port", "0"}};
    const auto admin = ecsnet::test::admin_port(s, 10s);
    ASSERT_TRUE(admin.has_value()) << log_tail(s);
    std::vector<std::unique_ptr<connection>> members;
    for (std::size_t i = 0; i < players; ++i) {
        members.push_back(join(s.port(), "player-" + std::to_string(i)));
    }
    // /status follows each join as it happens (published on the join); bounded poll anyway.
    auto before = ecsnet::test::admin_status(*admin);
    const auto deadline = clock_type::now() + 5s;
    while (before && before->at("clients") != players && clock_type::now() < deadline) {
        std::this_thread::sleep_for(20ms);
        before = ecsnet::test::admin_status(*admin);
    }
    ASSERT_TRUE(before.has_value());
    ASSERT_EQ(before->at("clients"), players);
    EXPECT_EQ(before->at("max_clients"), players);

    std::vector<double> healthz_ms;
    std::vector<double> readyz_ms;
    std::vector<double> healthcheck_ms;
    int healthz_ok = 0;
    int readyz_ok = 0;
    int healthcheck_ok = 0;
    for (int i = 0; i < rounds; ++i) {
        auto started = clock_type::now();
        const auto health = ecsnet::test::http_get(*admin, "/healthz");
        healthz_ms.push_back(ms_since(started));
        healthz_ok += health.status == 200 ? 1 : 0;
        EXPECT_EQ(health.status, 200U) << health.error << health.body;

        started = clock_type::now();
        const auto ready = ecsnet::test::http_get(*admin, "/readyz");
        readyz_ms.push_back(ms_since(started));
        readyz_ok += ready.status == 503 ? 1 : 0;
        EXPECT_EQ(ready.status, 503U) << ready.error << ready.body;
        EXPECT_THAT(ready.body, HasSubstr("not ready: full, 8/8 clients"));

        started = clock_type::now();
        const auto check = ecsnet::test::run(
            {ECSNET_SERVER_BIN, "--healthcheck", "--admin-port", std::to_string(*admin)}, {}, {},
            20s);
        healthcheck_ms.push_back(ms_since(started));
        healthcheck_ok += check.exit_code == 0 ? 1 : 0;
        EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
        // The players keep reading meanwhile.
        for (auto& m : members) {
            m->poll_for(1ms);
        }
    }
    const auto after = ecsnet::test::admin_status(*admin);
    ASSERT_TRUE(after.has_value());
    EXPECT_EQ(after->at("clients"), players) << "a probe took or freed a player slot";
    EXPECT_EQ(after->at("stats").at("connections"), before->at("stats").at("connections"))
        << "a probe touched the game port";
    EXPECT_EQ(after->at("stats").at("refused"), 0);
    std::uint64_t mismatches = 0;
    for (std::size_t i = 0; i < members.size(); ++i) {
        auto& m = *members[i];
        const std::uint64_t tick = server_tick_after_commands(m);
        EXPECT_TRUE(catch_up_and_verify(m, tick)) << "player " << i;
        EXPECT_TRUE(m.is_open()) << "player " << i;
        mismatches += m.mirror().statistics().checksums_mismatched;
    }
    EXPECT_EQ(mismatches, 0U);

    figures{"full_server_health"}
        .add("max_clients", players)
        .add("clients", after->at("clients").get<std::uint64_t>())
        .add("rounds", rounds)
        .add("healthz_200", healthz_ok)
        .add("readyz_503_full", readyz_ok)
        .add("healthcheck_exit_0", healthcheck_ok)
        .add("healthz_p50_ms", percentile(healthz_ms, 0.5))
        .add("healthz_max_ms", percentile(healthz_ms, 1.0))
        .add("readyz_p50_ms", percentile(readyz_ms, 0.5))
        .add("readyz_max_ms", percentile(readyz_ms, 1.0))
        .add("healthcheck_process_p50_ms", percentile(healthcheck_ms, 0.5))
        .add("healthcheck_process_max_ms", percentile(healthcheck_ms, 1.0))
        .add("game_port_connections", after->at("stats").at("connections").get<std::uint64_t>())
        .add("player_checksum_mismatches", mismatches)
        .print();
    expect_clean_stop(s);
}

// ---- abuse -----------------------------------------------------------------------------------

// --command-rate 50 --command-burst 100: a client sending as fast as it can gets at most
// burst + rate * elapsed commands through, the rest RateLimited; more than 1000 rejections
// within 10 s disconnect it (docs/SERVER.md). Its neighbour's bucket is its own.
TEST_P(Abuse, CommandRateLimitHoldsAndPersistentAbuseDisconnects) {
    constexpr double rate = 50;
    constexpr double burst = 100;
    constexpr std::size_t first_batch = 400;  // < 1000 rejections: no disconnect yet
    server s{abuse_server({"--command-rate", "50", "--command-burst", "100", "--stats-interval-s", "1"})};
    const auto neighbour = join(port_of(s), "neighbour");
    const auto joining = clock_type::now();  // the flooder's bucket starts full after this
    const auto flooder = join(port_of(s), "flooder");

    std::vector<protocol::client_message> batch;
    for (std::size_t i = 0; i < first_batch; ++i) {
        batch.emplace_back(protocol::spawn{0, component_set{}.set(Health{static_cast<std::int32_t>(i)})});
    }
    const auto results = run_commands(*flooder, batch);
    const double elapsed_s = ms_since(joining) / 1000.0;
    ASSERT_EQ(results.size(), first_batch);
    std::size_t accepted = 0;
    std::size_t limited = 0;
    for (const auto& r : results) {
        if (r.ok) {
            ++accepted;
        } else {
            ASSERT_EQ(r.code, wire_error::RateLimited) << r.message;
            EXPECT_EQ(r.message, "more than 50 commands per second");
            ++limited;
        }
    }
    EXPECT_GT(limited, 0U);
    EXPECT_GE(accepted, static_cast<std::size_t>(burst)) << "the burst was not granted";
    EXPECT_LE(static_cast<double>(accepted), burst + rate * elapsed_s + 2);
    EXPECT_TRUE(flooder->is_open()) << "disconnected before 1000 rejections";

    // Keep going: persistent abuse.
    const auto abuse_start = clock_type::now();
    std::size_t sent = 0;
    try {
        while (flooder->is_open() && sent < 5000 && clock_type::now() - abuse_start < 20s) {
            flooder->send(protocol::spawn{flooder->next_request_id(), component_set{}.set(Health{1})});
            if (++sent % 50 == 0) {
                flooder->poll_for(1ms);
            }
        }
    } catch (const client_error&) {
        // the server closed while we were sending
    }
    flooder->poll_until([&] { return !flooder->is_open(); }, 5s);
    ASSERT_FALSE(flooder->is_open()) << sent << " more commands and still connected";
    EXPECT_TRUE(log_has(s, "(flooder) disconnecting: command rate limit exceeded persistently"));
    // The client hears the reason unless its own sends fail first (the server closes with
    // commands unread: a reset).
    const std::string client_saw = *flooder->closed_reason();
    const double abuse_ms = ms_since(abuse_start);

    // The neighbour was not rate-limited by the flooder's excess.
    const auto spawned = run_commands(*neighbour, {protocol::spawn{0, component_set{}.set(Health{7})}});
    ASSERT_EQ(spawned.size(), 1U);
    EXPECT_TRUE(spawned[0].ok) << spawned[0].message;
    EXPECT_TRUE(neighbour->is_open());

    // The server's own count (stats line): the disconnect came with rejection 1001 (all
    // within one 10 s window here).
    std::uint64_t server_limited = 0;
    const auto deadline = clock_type::now() + 5s;
    while (server_limited < 1001 && clock_type::now() < deadline) {
        const auto stats = ecsnet::test::parse_stats(s.log());
        server_limited = stats.empty() ? 0 : stats.back().rate_limited;
        neighbour->poll_for(100ms);
    }
    EXPECT_GE(server_limited, 1001U);

    figures{"command_rate"}
        .add("rate_per_s", rate)
        .add("burst", burst)
        .add("first_batch", first_batch)
        .add("first_batch_accepted", accepted)
        .add("first_batch_rate_limited", limited)
        .add("first_batch_elapsed_ms", elapsed_s * 1000.0)
        .add("accepted_bound", burst + rate * elapsed_s)
        .add("abuse_commands_sent", sent)
        .add("abuse_to_disconnect_ms", abuse_ms)
        .add("server_rate_limited_total", server_limited)
        .add("client_saw", client_saw)
        .print();
    expect_clean_stop(s);
}

// --max-entities-per-client 5 --max-entities 12: spawns past a client's quota get
// EntityQuota (a second connection of the same owner, by its resume key, shares it), past the world cap
// WorldFull; the world holds exactly the quotas.
TEST_P(Abuse, EntityQuotaAndWorldCapHold) {
    constexpr std::size_t quota = 5;
    constexpr std::size_t world_cap = 12;
    server s{abuse_server({"--demo-entities", "0", "--max-entities-per-client", "5", "--max-entities", "12"})};
    const auto observer = join(port_of(s), "observer");
    const auto a = join(port_of(s), "quota-a");
    connect_options same_owner;
    same_owner.port = port_of(s);
    same_owner.name = "quota-a";
    same_owner.resume_key = a->welcome().resume_key;
    same_owner.websocket = ecsnet::test::current_transport() == ecsnet::test::transport::websocket;
    const auto a_again = std::make_unique<connection>(same_owner);
    const auto b = join(port_of(s), "quota-b");
    const auto c = join(port_of(s), "quota-c");

    const auto spawns = [](std::size_t n) {
        std::vector<protocol::client_message> out;
        for (std::size_t i = 0; i < n; ++i) {
            out.emplace_back(protocol::spawn{
                0, component_set{}.set(Position{static_cast<float>(i), 0}).set(Health{static_cast<std::int32_t>(i)})});
        }
        return out;
    };
    const auto tally = [](const std::vector<protocol::command_result>& results) {
        std::map<wire_error, std::size_t> by_code;
        for (const auto& r : results) {
            ++by_code[r.code];
        }
        return by_code;
    };

    auto a_results = tally(run_commands(*a, spawns(8)));
    EXPECT_EQ(a_results[wire_error::None], quota);
    EXPECT_EQ(a_results[wire_error::EntityQuota], 3U);
    const auto a_again_results = run_commands(*a_again, spawns(1));
    ASSERT_EQ(a_again_results.size(), 1U);
    EXPECT_EQ(a_again_results[0].code, wire_error::EntityQuota) << "one quota per owner";
    EXPECT_EQ(a_again_results[0].message, "client " + std::to_string(a->welcome().client_id) +
                                              " already owns 5 entities, its limit");

    auto b_results = tally(run_commands(*b, spawns(8)));
    EXPECT_EQ(b_results[wire_error::None], quota);
    EXPECT_EQ(b_results[wire_error::EntityQuota], 3U);

    const auto c_results = run_commands(*c, spawns(5));
    auto c_tally = tally(c_results);
    EXPECT_EQ(c_tally[wire_error::None], world_cap - 2 * quota);
    EXPECT_EQ(c_tally[wire_error::WorldFull], 3U);
    for (const auto& r : c_results) {
        if (r.code == wire_error::WorldFull) {
            EXPECT_EQ(r.message, "the world holds 12 entities, its limit");
        }
    }

    const std::uint64_t tick = server_tick_after_commands(*c);
    ASSERT_TRUE(catch_up_and_verify(*observer, tick));
    std::map<std::uint32_t, std::size_t> owned;
    observer->mirror().each([&](Entity e) {
        const auto o = observer->mirror().get<Owner>(e);
        ++owned[o.has_value() ? o->client : 0];
    });
    EXPECT_EQ(observer->mirror().size(), world_cap);
    EXPECT_EQ(owned[a->welcome().client_id], quota);
    EXPECT_EQ(owned[b->welcome().client_id], quota);
    EXPECT_EQ(owned[c->welcome().client_id], world_cap - 2 * quota);
    EXPECT_EQ(observer->mirror().statistics().checksums_mismatched, 0U);
    for (const auto* conn : {a.get(), a_again.get(), b.get(), c.get()}) {
        EXPECT_TRUE(conn->is_open()) << "a refused spawn is not a reason to disconnect";
    }

    figures{"entity_quota"}
        .add("quota_per_client", quota)
        .add("world_cap", world_cap)
        .add("spawns_attempted", std::size_t{8 + 1 + 8 + 5})
        .add("entity_quota_rejections", a_results[wire_error::EntityQuota] + 1 +
                                            b_results[wire_error::EntityQuota])
        .add("world_full_rejections", c_tally[wire_error::WorldFull])
        .add("live_entities", observer->mirror().size())
        .print();
    expect_clean_stop(s);
}

// Every mutating command kind (Destroy, SetComponent, RemoveComponent, each component) against
// another client's entity: NotOwner, and a third client sees the entity unchanged; taking
// it over by writing Owner is refused too. Server-owned entities are nobody's to touch.
TEST_P(Abuse, ForeignEntitiesCannotBeDestroyedOrModified) {
    server s{abuse_server({"--demo-entities", "5", "--checksum-interval", "10"})};
    const auto victim = join(port_of(s), "victim");
    const auto attacker = join(port_of(s), "attacker");
    const auto observer = join(port_of(s), "observer");

    const Entity target = spawn_ok(*victim, component_set{}
                                                .set(Position{10, 20})
                                                .set(Velocity{0, 0})
                                                .set(Health{100})
                                                .set(Name{"victim's"}));
    // Only Position: removals of components it lacks must still say NotOwner first.
    const Entity sparse = spawn_ok(*victim, component_set{}.set(Position{-5, -5}));
    ASSERT_FALSE(target.is_null());
    ASSERT_FALSE(sparse.is_null());
    ASSERT_TRUE(catch_up_and_verify(*observer, server_tick_after_commands(*victim)));
    const std::string target_before = describe_entity(observer->mirror(), target);
    const std::string sparse_before = describe_entity(observer->mirror(), sparse);
    ASSERT_THAT(target_before, HasSubstr("health(value=100)"));

    Entity server_owned;
    observer->mirror().each([&](Entity e) {
        if (!observer->mirror().get<Owner>(e).has_value()) {
            server_owned = e;
        }
    });
    ASSERT_FALSE(server_owned.is_null());

    const std::vector<std::string> all_client_components =
        mask_of({wire_id<Position>, wire_id<Velocity>, wire_id<Health>, wire_id<Lifetime>, wire_id<Name>});
    std::vector<protocol::client_message> attacks;
    for (const Entity e : {target, sparse}) {
        attacks.emplace_back(protocol::destroy{0, e});
        attacks.emplace_back(protocol::set_components{0, e, component_set{}.set(Position{0, 0})});
        attacks.emplace_back(protocol::set_components{0, e, component_set{}.set(Velocity{500, 500})});
        attacks.emplace_back(protocol::set_components{0, e, component_set{}.set(Health{0})});
        attacks.emplace_back(protocol::set_components{0, e, component_set{}.set(Lifetime{1})});
        attacks.emplace_back(protocol::set_components{0, e, component_set{}.set(Name{"pwned"})});
        attacks.emplace_back(protocol::set_components{
            0, e,
            component_set{}.set(Position{1, 1}).set(Velocity{1, 1}).set(Health{1}).set(Lifetime{1}).set(Name{"x"})});
        for (const std::string& id :
             {wire_id<Position>, wire_id<Velocity>, wire_id<Health>, wire_id<Lifetime>, wire_id<Name>}) {
            attacks.emplace_back(protocol::remove_components{0, e, mask_of({id})});
        }
        attacks.emplace_back(protocol::remove_components{0, e, all_client_components});
    }
    const std::size_t not_owner_expected = attacks.size();
    // The server's own entity: no client owns it.
    attacks.emplace_back(protocol::destroy{0, server_owned});
    attacks.emplace_back(protocol::set_components{0, server_owned, component_set{}.set(Health{0})});
    attacks.emplace_back(protocol::remove_components{0, server_owned, mask_of({wire_id<Position>})});
    // Taking ownership over: Owner is the server's to write, whoever asks.
    const std::size_t takeovers_from = attacks.size();
    attacks.emplace_back(protocol::set_components{0, target, component_set{}.set(Owner{attacker->welcome().client_id})});
    attacks.emplace_back(protocol::remove_components{0, target, mask_of({wire_id<Owner>})});

    const auto results = run_commands(*attacker, attacks);
    ASSERT_EQ(results.size(), attacks.size());
    const std::string victim_id = std::to_string(victim->welcome().client_id);
    std::size_t not_owner = 0;
    for (std::size_t i = 0; i < results.size(); ++i) {
        const auto& r = results[i];
        EXPECT_FALSE(r.ok) << "attack " << i << " succeeded";
        if (i < not_owner_expected) {
            EXPECT_EQ(r.code, wire_error::NotOwner) << "attack " << i << ": " << r.message;
            EXPECT_THAT(r.message, HasSubstr("belongs to client " + victim_id)) << "attack " << i;
        } else if (i < takeovers_from) {
            EXPECT_EQ(r.code, wire_error::NotOwner) << "attack " << i << ": " << r.message;
            EXPECT_THAT(r.message, HasSubstr("belongs to the server")) << "attack " << i;
        } else {
            EXPECT_EQ(r.code, wire_error::InvalidValue) << "attack " << i << ": " << r.message;
            EXPECT_THAT(r.message, HasSubstr("owner is set by the server only")) << "attack " << i;
        }
        not_owner += r.code == wire_error::NotOwner ? 1 : 0;
    }
    EXPECT_TRUE(attacker->is_open());

    ASSERT_TRUE(catch_up_and_verify(*observer, server_tick_after_commands(*attacker)));
    EXPECT_EQ(describe_entity(observer->mirror(), target), target_before);
    EXPECT_EQ(describe_entity(observer->mirror(), sparse), sparse_before);
    EXPECT_TRUE(observer->mirror().contains(server_owned));
    EXPECT_EQ(describe_entity(attacker->mirror(), target), target_before);

    // The observer would have seen a change: its owner can make one.
    const auto own = run_commands(*victim, {protocol::set_components{0, target, component_set{}.set(Health{101})}});
    ASSERT_EQ(own.size(), 1U);
    EXPECT_TRUE(own[0].ok) << own[0].message;
    ASSERT_TRUE(catch_up_and_verify(*observer, server_tick_after_commands(*victim)));
    EXPECT_THAT(describe_entity(observer->mirror(), target), HasSubstr("health(value=101)"));

    figures{"ownership"}
        .add("attacks", attacks.size())
        .add("not_owner", not_owner)
        .add("owner_writes_refused", attacks.size() - takeovers_from)
        .add("succeeded", static_cast<std::size_t>(std::count_if(
                              results.begin(), results.end(), [](const auto& r) { return r.ok; })))
        .print();
    expect_clean_stop(s);
}

// An owner's stale handle (the index destroyed and recycled) can neither destroy nor modify
// the entity that now lives there: StaleVersion, and the new entity is untouched.
TEST_P(Abuse, StaleHandleCannotTouchTheRecycledEntity) {
    // The ECS reuses a freed index at once, the oldest freed first, at version + 1.
    constexpr std::size_t churn = 8;
    server s{abuse_server({"--demo-entities", "0", "--command-rate", "1000000", "--command-burst", "1000000"})};
    const auto owner = join(port_of(s), "recycler");
    const auto observer = join(port_of(s), "observer");

    std::vector<protocol::client_message> spawns;
    for (std::size_t i = 0; i < churn; ++i) {
        spawns.emplace_back(protocol::spawn{0, component_set{}.set(Health{1})});
    }
    const auto spawned = run_commands(*owner, spawns, 30s);
    ASSERT_EQ(spawned.size(), churn);
    std::map<std::uint32_t, Entity> old_by_index;
    std::vector<protocol::client_message> destroys;
    for (const auto& r : spawned) {
        ASSERT_TRUE(r.ok) << r.message;
        old_by_index[r.entity.index()] = r.entity;
        destroys.emplace_back(protocol::destroy{0, r.entity});
    }
    const auto destroyed = run_commands(*owner, destroys, 30s);
    ASSERT_EQ(destroyed.size(), churn);
    for (const auto& r : destroyed) {
        ASSERT_TRUE(r.ok) << r.message;
    }

    const Entity reborn = spawn_ok(*owner, component_set{}.set(Position{3, 4}).set(Health{2}).set(Name{"reborn"}));
    ASSERT_TRUE(old_by_index.contains(reborn.index())) << "the index was not recycled";
    const Entity stale = old_by_index.at(reborn.index());
    ASSERT_GT(reborn.version(), stale.version());
    ASSERT_TRUE(catch_up_and_verify(*observer, server_tick_after_commands(*owner)));
    const std::string before = describe_entity(observer->mirror(), reborn);
    ASSERT_THAT(before, HasSubstr("health(value=2)"));

    const auto results = run_commands(
        *owner, {protocol::destroy{0, stale},
                 protocol::set_components{0, stale, component_set{}.set(Health{666})},
                 protocol::set_components{0, stale, component_set{}.set(Position{0, 0}).set(Name{"stale"})},
                 protocol::remove_components{0, stale, mask_of({wire_id<Health>})},
                 protocol::remove_components{0, stale, mask_of({wire_id<Position>, wire_id<Name>})}});
    ASSERT_EQ(results.size(), 5U);
    const std::string stale_message = "entity " + std::to_string(stale.index()) + " is at version " +
                                      std::to_string(reborn.version()) + ", not " +
                                      std::to_string(stale.version()) + " (stale handle)";
    for (const auto& r : results) {
        EXPECT_FALSE(r.ok);
        EXPECT_EQ(r.code, wire_error::StaleVersion) << r.message;
        EXPECT_EQ(r.message, stale_message);
    }
    ASSERT_TRUE(catch_up_and_verify(*observer, server_tick_after_commands(*owner)));
    EXPECT_EQ(describe_entity(observer->mirror(), reborn), before) << "the new entity was touched";
    EXPECT_EQ(observer->mirror().size(), 1U);

    // The current handle does work, and the observer sees it.
    const auto fresh = run_commands(*owner, {protocol::set_components{0, reborn, component_set{}.set(Health{3})}});
    ASSERT_EQ(fresh.size(), 1U);
    EXPECT_TRUE(fresh[0].ok) << fresh[0].message;
    ASSERT_TRUE(catch_up_and_verify(*observer, server_tick_after_commands(*owner)));
    EXPECT_THAT(describe_entity(observer->mirror(), reborn), HasSubstr("health(value=3)"));

    figures{"stale_handle"}
        .add("churned_entities", churn)
        .add("recycled_index", reborn.index())
        .add("stale_version", stale.version())
        .add("current_version", reborn.version())
        .add("stale_commands", results.size())
        .add("stale_version_results",
             static_cast<std::size_t>(std::count_if(results.begin(), results.end(), [](const auto& r) {
                 return r.code == wire_error::StaleVersion;
             })))
        .print();
    expect_clean_stop(s);
}

INSTANTIATE_TEST_SUITE_P(Transports, Abuse, ecsnet::test::every_transport,
                         ecsnet::test::transport_name);

}  // namespace
