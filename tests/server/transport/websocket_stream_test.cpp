// The WebSocket transport (server/src/transport/websocket_stream.cpp): the Origin rules alone, then the
// upgrade and the "one binary message per frame" rule against a server in this process. The
// session behaviour over WebSocket (joins, limits, slow clients, identity...) is the session
// tests' own, run over each transport (server_test.cpp).
#include "ecsnet/server/transport/websocket_stream.hpp"

#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "ecsnet/client/connection.hpp"
#include "http_get.hpp"
#include "test_server.hpp"
#include "test_support.hpp"

namespace websocket_stream_test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace protocol = ecsnet::protocol;
using ecsnet::server::check_allowed_origin;
using ecsnet::server::origin_allowed;
using ecsnet::server::page_stats;
using ecsnet::server::server_config;
using ecsnet::test::http_exchange;
using ecsnet::test::raw_socket;
using ecsnet::test::websocket_upgrade_request;
using ecsnet::test::test_server;
using ecsnet::test::transport;
using testing::HasSubstr;
using testing::Not;
using namespace std::chrono_literals;

const std::vector<std::string> same_host{};

TEST(WebSocketOrigin, NoOriginIsNotABrowserAndPasses) {
    EXPECT_TRUE(origin_allowed(std::nullopt, "game.example.com", same_host));
    EXPECT_TRUE(origin_allowed(std::nullopt, "", {"https://other.example.com"}));
}

TEST(WebSocketOrigin, ByDefaultOnlyTheServersOwnHost) {
    EXPECT_TRUE(origin_allowed("https://game.example.com", "game.example.com", same_host));
    EXPECT_TRUE(origin_allowed("http://127.0.0.1:8080", "127.0.0.1:8080", same_host));
    EXPECT_TRUE(origin_allowed("HTTPS://Game.Example.com/", "game.example.COM", same_host));
    EXPECT_FALSE(origin_allowed("https://evil.example.com", "game.example.com", same_host));
    EXPECT_FALSE(origin_allowed("http://127.0.0.1:8081", "127.0.0.1:8080", same_host))
        << "another port is another origin";
    EXPECT_FALSE(origin_allowed("https://game.example.com.evil.net", "game.example.com", same_host));
    EXPECT_FALSE(origin_allowed("null", "game.example.com", same_host));
    EXPECT_FALSE(origin_allowed("https://game.example.com", "", same_host));
}

TEST(WebSocketOrigin, AListAllowsExactlyItsOrigins) {
    const std::vector<std::string> allowed{"https://game.example.com", "http://localhost:5173"};
    EXPECT_TRUE(origin_allowed("https://game.example.com", "ws.example.com", allowed));
    EXPECT_TRUE(origin_allowed("http://LOCALHOST:5173", "ws.example.com", allowed));
    EXPECT_FALSE(origin_allowed("http://game.example.com", "ws.example.com", allowed))
        << "the scheme is part of the origin";
    EXPECT_FALSE(origin_allowed("https://game.example.com:8443", "ws.example.com", allowed));
    EXPECT_FALSE(origin_allowed("https://ws.example.com", "ws.example.com", allowed))
        << "a list replaces the same-host default";
    EXPECT_TRUE(origin_allowed("https://anything.example", "ws.example.com", {"*"}));
    EXPECT_TRUE(origin_allowed("null", "ws.example.com", {"null"}));
}

TEST(WebSocketOrigin, MalformedAllowedOriginsAreExplained) {
    EXPECT_EQ(check_allowed_origin("https://game.example.com"), "");
    EXPECT_EQ(check_allowed_origin("http://127.0.0.1:8080/"), "");
    EXPECT_EQ(check_allowed_origin("*"), "");
    EXPECT_THAT(check_allowed_origin("game.example.com"), HasSubstr("give the scheme"));
    EXPECT_THAT(check_allowed_origin("https://game.example.com/play"), HasSubstr("no path"));
    EXPECT_THAT(check_allowed_origin("https://"), HasSubstr("no host"));
}

server_config ws_config() {
    server_config c = ecsnet::test::local_server_config(50.0);
    c.ws_port = 0;
    return c;
}


TEST(WebSocketUpgrade, AnOriginFromElsewhereIsRefusedWith403AndTheServerGoesOn) {
    test_server server{ws_config()};
    const auto port = server.ws_port();
    const std::string refused =
        http_exchange(port, websocket_upgrade_request(port, "/", "Origin: https://evil.example.com\r\n"));
    EXPECT_THAT(refused, testing::StartsWith("HTTP/1.1 403"));
    EXPECT_THAT(refused, HasSubstr("--ws-allowed-origins"));
    const std::string same =
        http_exchange(port, websocket_upgrade_request(port, "/", "Origin: http://127.0.0.1:" + std::to_string(port) + "\r\n"));
    EXPECT_THAT(same, testing::StartsWith("HTTP/1.1 101")) << "the same host is allowed by default";
    raw_socket player{port, std::nullopt, transport::websocket};
    player.send(protocol::hello{protocol::protocol_version, "player", ""});
    std::vector<std::uint8_t> frame;
    EXPECT_EQ(player.read_frame(frame, 5s), raw_socket::read_status::frame) << "Welcome";
}

TEST(WebSocketUpgrade, ListedOriginsAreAllowed) {
    server_config config = ws_config();
    config.ws_allowed_origins = {"https://game.example.com"};
    test_server server{config};
    const auto port = server.ws_port();
    EXPECT_THAT(http_exchange(port, websocket_upgrade_request(port, "/", "Origin: https://game.example.com\r\n")),
                testing::StartsWith("HTTP/1.1 101"));
    EXPECT_THAT(http_exchange(port, websocket_upgrade_request(port, "/", "Origin: http://127.0.0.1:" +
                                                              std::to_string(port) + "\r\n")),
                testing::StartsWith("HTTP/1.1 403"));
}

TEST(WebSocketUpgrade, APlainHttpRequestGets426AndAnOversizeOneIsCut) {
    test_server server{ws_config()};
    const auto port = server.ws_port();
    EXPECT_THAT(http_exchange(port, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
                testing::StartsWith("HTTP/1.1 426"));
    const std::string huge = "GET / HTTP/1.1\r\nHost: x\r\nX-Padding: " + std::string(20'000, 'a') +
                             "\r\n\r\n";
    EXPECT_THAT(http_exchange(port, huge), testing::Not(HasSubstr("HTTP/1.1 101")));
    EXPECT_EQ(server.clients(), 0U);
}

// --web-root: a browser gets the game's page from the port its WebSocket will use.
class WebSocketWebRoot : public testing::Test {
protected:
    void SetUp() override {
        std::string pattern = (std::filesystem::temp_directory_path() / "ecsnet-web-XXXXXX").string();
        ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
        dir_ = pattern;
        std::ofstream{dir_ / "index.html"} << "<title>arena</title>";
        std::ofstream{dir_ / "game.js"} << "play();";
        std::ofstream{dir_ / ".env"} << "SECRET";
    }
    void TearDown() override {
        std::error_code ignored;
        std::filesystem::remove_all(dir_, ignored);
    }
    static std::string get(std::uint16_t port, const std::string& method, const std::string& target) {
        return http_exchange(port, method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" +
                                       std::to_string(port) + "\r\n\r\n");
    }
    std::filesystem::path dir_;
};

TEST_F(WebSocketWebRoot, APlainGetIsAnsweredWithTheFileAndUpgradesAreUnchanged) {
    server_config config = ws_config();
    config.web_root = dir_.string();
    config.max_pending_per_address = 4;
    test_server server{config};
    const auto port = server.ws_port();

    const std::string index = get(port, "GET", "/");
    EXPECT_THAT(index, testing::StartsWith("HTTP/1.1 200"));
    EXPECT_THAT(index, HasSubstr("Content-Type: text/html; charset=utf-8\r\n"));
    EXPECT_THAT(index, HasSubstr("Connection: close\r\n"));
    EXPECT_THAT(index, HasSubstr("X-Content-Type-Options: nosniff\r\n"));
    EXPECT_THAT(index, testing::EndsWith("\r\n\r\n<title>arena</title>"));
    const std::string script = get(port, "GET", "/game.js?build=7");
    EXPECT_THAT(script, testing::StartsWith("HTTP/1.1 200"));
    EXPECT_THAT(script, testing::EndsWith("\r\n\r\nplay();"));
    const std::string head = get(port, "HEAD", "/game.js");
    EXPECT_THAT(head, testing::StartsWith("HTTP/1.1 200"));
    EXPECT_THAT(head, HasSubstr("Content-Length: 7\r\n"));
    EXPECT_THAT(head, testing::EndsWith("\r\n\r\n")) << "no body to HEAD";
    EXPECT_THAT(get(port, "GET", "/%2e%2e/etc/passwd"), testing::StartsWith("HTTP/1.1 400"));
    EXPECT_THAT(get(port, "GET", "/.env"), testing::StartsWith("HTTP/1.1 404"));
    EXPECT_THAT(get(port, "GET", "/.env"), Not(HasSubstr("SECRET")));
    EXPECT_THAT(get(port, "GET", "/missing.js"), HasSubstr("not found: /missing.js"));
    EXPECT_THAT(get(port, "POST", "/"), testing::StartsWith("HTTP/1.1 405"));
    // Each page request ends its connection and gives its pre-Hello slot back: more requests
    // in a row than one address may hold waiting (4) are all answered.
    for (int i = 0; i < 12; ++i) {
        EXPECT_THAT(get(port, "GET", "/game.js"), testing::StartsWith("HTTP/1.1 200")) << i;
    }

    // The same port still upgrades and plays.
    EXPECT_THAT(http_exchange(port, websocket_upgrade_request(port, "/", "")), testing::StartsWith("HTTP/1.1 101"));
    raw_socket player{port, std::nullopt, transport::websocket};
    player.send(protocol::hello{protocol::protocol_version, "player", ""});
    std::vector<std::uint8_t> frame;
    EXPECT_EQ(player.read_frame(frame, 5s), raw_socket::read_status::frame) << "Welcome";
    // Pages are connections, not failures: nothing refused, nothing invalid.
    const auto stats = server.stats();
    EXPECT_EQ(stats.refused, 0U);
    EXPECT_EQ(stats.pending_refused, 0U);
    EXPECT_EQ(stats.invalid_frames, 0U);
}

TEST_F(WebSocketWebRoot, WithoutAWebRootAPlainGetStillGets426) {
    test_server server{ws_config()};
    const std::string answer = get(server.ws_port(), "GET", "/game.js");
    EXPECT_THAT(answer, testing::StartsWith("HTTP/1.1 426"));
    EXPECT_THAT(answer, Not(HasSubstr("play();")));
}

// A page client on a plain socket with a small receive buffer: the server's writes stall once
// its own send buffer is full (~4 MiB on loopback), so a file well past that is held up by how
// this client reads.
class page_client {
public:
    page_client(std::uint16_t port, const std::string& method, const std::string& target) {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        EXPECT_GE(fd_, 0);
        const int receive_buffer = 64 * 1024;
        ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(port);
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        EXPECT_EQ(::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
        const std::string request = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" +
                                    std::to_string(port) + "\r\n\r\n";
        EXPECT_EQ(::send(fd_, request.data(), request.size(), MSG_NOSIGNAL),
                  static_cast<ssize_t>(request.size()));
    }
    page_client(const page_client&) = delete;
    page_client& operator=(const page_client&) = delete;
    ~page_client() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }

    // Reads until the connection ends or `limit` passes, `step` bytes at a time with `pause`
    // after each: a steady reader of step/pause bytes per second. True when it ended.
    bool read_to_end(std::chrono::milliseconds limit, std::size_t step = 1U << 20U,
                     std::chrono::milliseconds pause = 0ms) {
        const auto until = std::chrono::steady_clock::now() + limit;
        std::vector<char> buffer(step);
        while (std::chrono::steady_clock::now() < until) {
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, 50) <= 0) {
                continue;
            }
            const ssize_t n = ::recv(fd_, buffer.data(), buffer.size(), 0);
            if (n <= 0) {
                return true;  // the end, or a reset
            }
            received.append(buffer.data(), static_cast<std::size_t>(n));
            std::this_thread::sleep_for(pause);
        }
        return false;
    }
    // The answer's head ("HTTP/1.1 200 OK\r\n...\r\n\r\n"), read alone.
    std::string read_head(std::chrono::milliseconds limit) {
        const auto until = std::chrono::steady_clock::now() + limit;
        while (received.find("\r\n\r\n") == std::string::npos &&
               std::chrono::steady_clock::now() < until) {
            pollfd p{fd_, POLLIN, 0};
            char c = 0;
            if (::poll(&p, 1, 50) > 0 && ::recv(fd_, &c, 1, 0) == 1) {
                received.push_back(c);
            }
        }
        return received;
    }
    [[nodiscard]] std::string body() const {
        const auto end = received.find("\r\n\r\n");
        return end == std::string::npos ? std::string{} : received.substr(end + 4);
    }

    std::string received;

private:
    int fd_ = -1;
};

// Bytes that differ from their neighbours, so a misplaced chunk shows.
std::string file_content(std::size_t size) {
    std::string content(size, '\0');
    for (std::size_t i = 0; i < size; ++i) {
        content[i] = static_cast<char>((i * 131U + i / 65'521U) & 0xFFU);
    }
    return content;
}

page_stats pages_of(test_server& server) {
    return server.call([](ecsnet::server::server& s) { return s.web_pages(); });
}

page_stats wait_for_pages(test_server& server, const std::function<bool(const page_stats&)>& done) {
    page_stats now{};
    for (int i = 0; i < 250; ++i) {
        now = pages_of(server);
        if (done(now)) {
            break;
        }
        std::this_thread::sleep_for(20ms);
    }
    return now;
}

// Well past what loopback's kernel buffers hold, and under the 16 MiB the old code served.
constexpr std::size_t big_file_bytes = 15U << 20U;

TEST_F(WebSocketWebRoot, ANonReadingClientHoldsOneChunkNotTheFile) {
    std::ofstream{dir_ / "big.bin", std::ios::binary} << file_content(big_file_bytes);
    server_config config = ws_config();
    config.web_root = dir_.string();
    test_server server{config};
    page_client idle{server.ws_port(), "GET", "/big.bin"};
    // Until the socket buffers are full and the transfer waits for the client.
    page_stats pages{};
    std::uint64_t before = 0;
    for (int i = 0; i < 100; ++i) {
        std::this_thread::sleep_for(50ms);
        pages = pages_of(server);
        if (pages.file_bytes_read > 0 && pages.file_bytes_read == before) {
            break;
        }
        before = pages.file_bytes_read;
    }
    EXPECT_EQ(pages.connections, 1U);
    EXPECT_GT(pages.file_bytes_read, 0U);
    EXPECT_LT(pages.file_bytes_read, big_file_bytes / 2) << "read ahead of the client";
    EXPECT_LE(pages.peak_buffered_bytes, config.web_chunk_bytes) << "one chunk in memory";
}

TEST_F(WebSocketWebRoot, HeadOfAFileOverTheOldBoundSaysItsLengthAndReadsNothing) {
    const std::size_t huge = 24U << 20U;  // no size bound on a streamed file
    std::ofstream{dir_ / "big.bin", std::ios::binary} << file_content(huge);
    server_config config = ws_config();
    config.web_root = dir_.string();
    test_server server{config};
    const std::string head = get(server.ws_port(), "HEAD", "/big.bin");
    EXPECT_THAT(head, testing::StartsWith("HTTP/1.1 200"));
    EXPECT_THAT(head, HasSubstr("Content-Length: " + std::to_string(huge) + "\r\n"));
    EXPECT_THAT(head, testing::EndsWith("\r\n\r\n")) << "no body to HEAD";
    const page_stats pages = wait_for_pages(server, [](const page_stats& p) { return p.served == 1; });
    EXPECT_EQ(pages.served, 1U);
    EXPECT_EQ(pages.file_bytes_read, 0U);
    EXPECT_EQ(pages.peak_buffered_bytes, 0U);
}

TEST_F(WebSocketWebRoot, AReaderSlowerThanTheHelloDeadlineGetsTheWholeFile) {
    const std::string content = file_content(12U << 20U);
    std::ofstream{dir_ / "game.wasm", std::ios::binary} << content;
    server_config config = ws_config();
    config.web_root = dir_.string();
    config.hello_timeout = 300ms;
    test_server server{config};
    page_client reader{server.ws_port(), "GET", "/game.wasm"};
    // About 4 MB/s: some 3 s for the file, ten times the Hello timeout.
    EXPECT_TRUE(reader.read_to_end(30s, 64 * 1024, 15ms));
    EXPECT_THAT(reader.received, testing::StartsWith("HTTP/1.1 200"));
    EXPECT_THAT(reader.received, HasSubstr("Content-Length: " + std::to_string(content.size())));
    EXPECT_EQ(reader.body().size(), content.size());
    EXPECT_TRUE(reader.body() == content) << "the bytes of the file, in order";
    const page_stats pages = wait_for_pages(server, [](const page_stats& p) { return p.served == 1; });
    EXPECT_EQ(pages.served, 1U);
    EXPECT_EQ(pages.stalled, 0U);
}

TEST_F(WebSocketWebRoot, AStalledReaderIsCutByTheProgressRule) {
    std::ofstream{dir_ / "big.bin", std::ios::binary} << file_content(big_file_bytes);
    server_config config = ws_config();
    config.web_root = dir_.string();
    config.hello_timeout = 20s;  // not what ends it
    config.web_stall_timeout = 300ms;
    test_server server{config};
    page_client stalled{server.ws_port(), "GET", "/big.bin"};
    const page_stats pages = wait_for_pages(server, [](const page_stats& p) { return p.stalled == 1; });
    EXPECT_EQ(pages.stalled, 1U);
    EXPECT_EQ(pages.connections, 0U);
    EXPECT_EQ(pages.buffered_bytes, 0U) << "its chunk given back";
    // What the kernel had taken is still there to read, then the end: the file cut short.
    EXPECT_TRUE(stalled.read_to_end(10s));
    EXPECT_THAT(stalled.received, testing::StartsWith("HTTP/1.1 200"));
    EXPECT_LT(stalled.body().size(), big_file_bytes);
}

TEST_F(WebSocketWebRoot, PastThePerAddressCapThePageRequestGets429) {
    std::ofstream{dir_ / "big.bin", std::ios::binary} << file_content(big_file_bytes);
    server_config config = ws_config();
    config.web_root = dir_.string();
    config.web_max_per_address = 2;
    test_server server{config};
    const auto port = server.ws_port();
    auto first = std::make_unique<page_client>(port, "GET", "/big.bin");
    page_client second{port, "GET", "/big.bin"};
    EXPECT_EQ(wait_for_pages(server, [](const page_stats& p) { return p.connections == 2; }).connections,
              2U);
    const std::string third = get(port, "GET", "/index.html");
    EXPECT_THAT(third, testing::StartsWith("HTTP/1.1 429"));
    EXPECT_THAT(third, HasSubstr("Retry-After: 1\r\n"));
    EXPECT_THAT(third, HasSubstr("--web-max-per-address"));
    EXPECT_EQ(wait_for_pages(server, [](const page_stats& p) { return p.refused_address == 1; })
                  .refused_address,
              1U);
    // A place given back is taken again.
    first.reset();
    EXPECT_EQ(wait_for_pages(server, [](const page_stats& p) { return p.connections == 1; }).connections,
              1U);
    EXPECT_THAT(get(port, "GET", "/index.html"), testing::EndsWith("\r\n\r\n<title>arena</title>"));
}

TEST_F(WebSocketWebRoot, PastThePageMemoryTheNextRequestGets503) {
    std::ofstream{dir_ / "big.bin", std::ios::binary} << file_content(big_file_bytes);
    server_config config = ws_config();
    config.web_root = dir_.string();
    config.web_chunk_bytes = 64 * 1024;
    config.web_memory_bytes = 2 * 64 * 1024;  // two transfers' chunks
    test_server server{config};
    const auto port = server.ws_port();
    page_client first{port, "GET", "/big.bin"};
    page_client second{port, "GET", "/big.bin"};
    const page_stats holding =
        wait_for_pages(server, [](const page_stats& p) { return p.connections == 2; });
    EXPECT_EQ(holding.connections, 2U);
    EXPECT_EQ(holding.buffered_bytes, 2U * 64 * 1024);
    const std::string third = get(port, "GET", "/big.bin");
    EXPECT_THAT(third, testing::StartsWith("HTTP/1.1 503"));
    EXPECT_THAT(third, HasSubstr("Retry-After: 1\r\n"));
    EXPECT_THAT(third, HasSubstr("--web-memory-bytes"));
    const page_stats after =
        wait_for_pages(server, [](const page_stats& p) { return p.refused_memory == 1; });
    EXPECT_EQ(after.refused_memory, 1U);
    EXPECT_LE(after.peak_buffered_bytes, config.web_memory_bytes);
}

TEST(WebSocketUpgrade, AnUpgradeNeverFinishedIsClosedAtTheHelloTimeout) {
    server_config config = ws_config();
    config.hello_timeout = 300ms;
    test_server server{config};
    const auto started = std::chrono::steady_clock::now();
    const std::string answer = http_exchange(server.ws_port(), "GET / HTTP/1.1\r\nHost: x\r\n");
    EXPECT_EQ(answer, "");
    EXPECT_LT(std::chrono::steady_clock::now() - started, 3s);
}

// A joined WebSocket client that breaks the message rule is told why, like a malformed frame.
class WebSocketMessages : public testing::Test {
protected:
    test_server server_{ws_config()};
    std::unique_ptr<raw_socket> joined(const char* name) {
        auto s = std::make_unique<raw_socket>(server_.ws_port(), std::nullopt, transport::websocket);
        s->send(protocol::hello{protocol::protocol_version, name, ""});
        return s;
    }
};

std::vector<std::uint8_t> ping_frame(std::uint32_t id) {
    return *protocol::encode(protocol::client_message{protocol::ping{id}}, {});
}

TEST_F(WebSocketMessages, TwoFramesInOneMessageEndTheConnectionWithAReason) {
    auto s = joined("two");
    std::vector<std::uint8_t> two = ping_frame(1);
    const auto second = ping_frame(2);
    two.insert(two.end(), second.begin(), second.end());
    s->write(two);
    const auto closed = s->read_until_closed(5s);
    EXPECT_TRUE(closed.closed);
    ASSERT_TRUE(closed.reason.has_value());
    EXPECT_THAT(*closed.reason, HasSubstr("more than one frame"));
    EXPECT_EQ(server_.stats().invalid_frames, 1U);
}

TEST_F(WebSocketMessages, AFrameSplitOverTwoMessagesEndsTheConnection) {
    auto s = joined("split");
    const auto frame = ping_frame(1);
    s->write(std::span{frame}.first(6));
    s->write(std::span{frame}.subspan(6));
    const auto closed = s->read_until_closed(5s);
    EXPECT_TRUE(closed.closed);
    ASSERT_TRUE(closed.reason.has_value());
    EXPECT_THAT(*closed.reason, HasSubstr("ended inside a frame"));
}

// A Beast client of our own, upgraded, for what raw_socket does not do (fragments, text, close).
void open_websocket(websocket::stream<asio::ip::tcp::socket>& ws, std::uint16_t port) {
    ws.next_layer().connect({asio::ip::make_address("127.0.0.1"), port});
    ws.handshake("127.0.0.1", "/");
    ws.binary(true);
}

TEST(WebSocketMessagesRaw, TextIsRefusedAndFragmentsOfOneMessageAreOneFrame) {
    test_server server{ws_config()};
    asio::io_context io;
    websocket::stream<asio::ip::tcp::socket> ws{io};
    open_websocket(ws, server.ws_port());
    const auto hello = *protocol::encode(
        protocol::client_message{protocol::hello{protocol::protocol_version, "fragments", ""}}, {});
    // Hello in three WebSocket fragments: one message, one frame, joined.
    ws.write_some(false, asio::buffer(hello.data(), 3));
    ws.write_some(false, asio::buffer(hello.data() + 3, 5));
    ws.write_some(true, asio::buffer(hello.data() + 8, hello.size() - 8));
    beast::flat_buffer welcome;
    ws.read(welcome);
    const auto* message = protocol::verify_server_frame(
        std::span{static_cast<const std::uint8_t*>(welcome.cdata().data()), welcome.size()});
    ASSERT_NE(message, nullptr);
    EXPECT_EQ(message->body_type(), ecsnet::wire::ServerBody::Welcome);

    ws.text(true);
    ws.write(asio::buffer(std::string{"{\"hello\":1}"}));
    bool disconnected = false;
    for (int i = 0; i < 1000 && !disconnected; ++i) {
        beast::flat_buffer next;
        boost::system::error_code ec;
        ws.read(next, ec);
        if (ec) {
            break;
        }
        const auto* m = protocol::verify_server_frame(
            std::span{static_cast<const std::uint8_t*>(next.cdata().data()), next.size()});
        ASSERT_NE(m, nullptr);
        if (m->body_type() == ecsnet::wire::ServerBody::Disconnect) {
            const auto control = protocol::decode_server_control(*m);
            ASSERT_TRUE(control.has_value());
            EXPECT_THAT(std::get<protocol::disconnect>(*control).reason, HasSubstr("text message"));
            disconnected = true;
        }
    }
    EXPECT_TRUE(disconnected);
}

// ecsnet_bytes_*_total count the socket's bytes (docs/SERVER.md, "Metrics"): the upgrade, the
// WebSocket headers and the close handshake too. Here the client is a plain socket speaking the
// WebSocket by hand, so it knows every byte it wrote and read.
TEST(WebSocketMetrics, TheByteCountersCountEveryByteOnTheSocket) {
    test_server server{ws_config()};
    const auto port = server.ws_port();
    asio::io_context io;
    asio::ip::tcp::socket socket{io};
    socket.connect({asio::ip::make_address("127.0.0.1"), port});
    std::size_t written = 0;
    std::size_t read = 0;
    const auto send = [&](const std::vector<std::uint8_t>& bytes) {
        written += asio::write(socket, asio::buffer(bytes));
    };
    // A client's frame: FIN, the opcode, the mask bit and the length (< 126), the mask, the
    // masked payload.
    const auto client_frame = [](std::uint8_t opcode, std::span<const std::uint8_t> payload) {
        const std::array<std::uint8_t, 4> mask{0x12, 0x34, 0x56, 0x78};
        std::vector<std::uint8_t> frame{static_cast<std::uint8_t>(0x80 | opcode),
                                        static_cast<std::uint8_t>(0x80 | payload.size())};
        frame.insert(frame.end(), mask.begin(), mask.end());
        for (std::size_t i = 0; i < payload.size(); ++i) {
            frame.push_back(static_cast<std::uint8_t>(payload[i] ^ mask[i % 4]));
        }
        return frame;
    };

    const std::string upgrade = websocket_upgrade_request(port, "/");
    written += asio::write(socket, asio::buffer(upgrade));
    std::string answer;
    while (answer.find("\r\n\r\n") == std::string::npos) {
        std::array<char, 1024> chunk{};
        const std::size_t n = socket.read_some(asio::buffer(chunk));
        answer.append(chunk.data(), n);
    }
    ASSERT_THAT(answer, testing::StartsWith("HTTP/1.1 101"));
    read += answer.size();

    // A Ping before Hello is answered: 6 header bytes around the 48 of the frame, and a Pong.
    const auto ping = *protocol::encode(protocol::client_message{protocol::ping{7}}, {});
    ASSERT_LT(ping.size(), 126U);
    send(client_frame(0x2, ping));
    std::array<std::uint8_t, 2> header{};
    read += asio::read(socket, asio::buffer(header));
    ASSERT_EQ(header[0], 0x82) << "one unfragmented binary message";
    std::vector<std::uint8_t> pong(header[1] & 0x7F);
    read += asio::read(socket, asio::buffer(pong));

    // The close handshake: ours (code 1000), the server's answer, then the end of the stream.
    const std::array<std::uint8_t, 2> normal{0x03, 0xE8};
    send(client_frame(0x8, normal));
    boost::system::error_code ec;
    std::array<std::uint8_t, 256> rest{};
    while (!ec) {
        read += socket.read_some(asio::buffer(rest), ec);
    }
    EXPECT_EQ(ec, asio::error::eof);
    socket.shutdown(asio::ip::tcp::socket::shutdown_send, ec);  // the server waits for it

    ecsnet::server::server_stats stats;
    for (int i = 0; i < 300; ++i) {
        stats = server.stats();
        if (stats.bytes_in == written && stats.bytes_out == read) {
            break;
        }
        std::this_thread::sleep_for(10ms);
    }
    EXPECT_EQ(stats.bytes_in, written) << "the upgrade request, a Ping and a close frame";
    EXPECT_EQ(stats.bytes_out, read) << "the 101 answer, a Pong and a close frame";
}

TEST(WebSocketClose, AClientsCloseFrameEndsItsSessionCleanly) {
    test_server server{ws_config()};
    {
        asio::io_context io;
        websocket::stream<asio::ip::tcp::socket> ws{io};
        open_websocket(ws, server.ws_port());
        ws.write(asio::buffer(*protocol::encode(
            protocol::client_message{protocol::hello{protocol::protocol_version, "leaver", ""}}, {})));
        beast::flat_buffer welcome;
        ws.read(welcome);
        for (int i = 0; i < 200 && server.clients() != 1; ++i) {
            std::this_thread::sleep_for(10ms);
        }
        EXPECT_EQ(server.clients(), 1U);
        ws.close(websocket::close_code::normal);
    }
    for (int i = 0; i < 300 && server.clients() != 0; ++i) {
        std::this_thread::sleep_for(10ms);
    }
    EXPECT_EQ(server.clients(), 0U);
    EXPECT_EQ(server.stats().invalid_frames, 0U);
}

}  // namespace websocket_stream_test
