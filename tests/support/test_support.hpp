// Helpers shared by the socket-level server tests: the transport a test runs over, a bare
// client for what ecsnet::client::connection will not do (send arbitrary bytes, never read),
// and a canonical text form of a mirror for comparing clients.
#pragma once

#include <boost/asio/connect.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket.hpp>
#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "ecsnet/protocol/components.hpp"
#include "ecsnet/protocol/frame.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/protocol/mirror.hpp"
#include "ecsnet/protocol/schema.hpp"

namespace ecsnet::test {

using namespace std::chrono_literals;

// The transport a session test runs over. Tests written once run over each (TEST_P with a
// fixture from transport_test): the fixture sets current_transport(), which test_config()-style
// helpers, raw_socket and the tests' connection helpers read.
enum class transport { tcp, websocket };
[[nodiscard]] inline const char* to_string(transport t) noexcept {
    return t == transport::tcp ? "tcp" : "websocket";
}
// GoogleTest's name for a parameter ("websocket", not "4-byte object <01-00 00-00>").
inline void PrintTo(transport t, std::ostream* out) { *out << to_string(t); }
[[nodiscard]] inline transport& current_transport() noexcept {
    static transport current = transport::tcp;
    return current;
}
class transport_test : public testing::TestWithParam<transport> {
protected:
    void SetUp() override { current_transport() = GetParam(); }
    void TearDown() override { current_transport() = transport::tcp; }
};
inline const auto every_transport = testing::Values(transport::tcp, transport::websocket);
[[nodiscard]] inline std::string transport_name(const testing::TestParamInfo<transport>& info) {
    return to_string(info.param);
}

// A blocking connection to 127.0.0.1 with bounded reads: plain TCP, or a WebSocket over which
// every write() is one binary message and every frame read is one message.
class raw_socket {
public:
    using clock = std::chrono::steady_clock;
    enum class read_status { frame, closed, timeout };

    // A small `receive_buffer` (SO_RCVBUF, set before connecting so that the window is small
    // from the start) makes a client whose kernel buffer fills quickly.
    explicit raw_socket(std::uint16_t port, std::optional<int> receive_buffer = std::nullopt,
                        transport over = current_transport())
        : socket_{io_} {
        socket_.open(boost::asio::ip::tcp::v4());
        if (receive_buffer) {
            socket_.set_option(boost::asio::socket_base::receive_buffer_size{*receive_buffer});
        }
        socket_.connect({boost::asio::ip::make_address("127.0.0.1"), port});
        if (over == transport::websocket) {
            ws_ = std::make_unique<websocket>(socket_);
            ws_->binary(true);
            ws_->auto_fragment(false);
            ws_->read_message_max(protocol::frame_prefix_bytes + protocol::default_max_server_frame);
            ws_->handshake("127.0.0.1:" + std::to_string(port), "/");
        }
    }

    void write(std::span<const std::uint8_t> bytes) {
        if (ws_) {
            // Asynchronously, so that a read left pending by a timeout goes on meanwhile.
            if (!write_within(bytes, std::chrono::hours{1})) {
                throw std::runtime_error("WebSocket write did not complete");
            }
            return;
        }
        boost::asio::write(socket_, boost::asio::buffer(bytes.data(), bytes.size()));
    }
    // Components are encoded against `types` (the server's, as its Welcome describes them);
    // messages without components need none.
    void send(const protocol::client_message& message, const protocol::schema& types = {}) {
        write(*protocol::encode(message, types));
    }

    // Like write(), but gives up after `timeout` (false). Throws if the connection failed.
    bool write_within(std::span<const std::uint8_t> bytes, std::chrono::milliseconds timeout) {
        bool done = false;
        boost::system::error_code error;
        const auto on_written = [&](const boost::system::error_code& ec, std::size_t) {
            error = ec;
            done = true;
        };
        if (ws_) {
            ws_->async_write(boost::asio::buffer(bytes.data(), bytes.size()), on_written);
        } else {
            boost::asio::async_write(socket_, boost::asio::buffer(bytes.data(), bytes.size()),
                                     on_written);
        }
        const auto deadline = clock::now() + timeout;
        io_.restart();
        while (!done && clock::now() < deadline && io_.run_one_until(deadline) > 0) {
        }
        if (!done) {
            boost::system::error_code ignored;
            socket_.cancel(ignored);
            io_.restart();
            io_.run();  // the handler runs (operation_aborted) while its captures live
            return false;
        }
        if (error) {
            throw boost::system::system_error(error);
        }
        return true;
    }

    // One whole server frame (prefix included). After a timeout the stream may be cut in the
    // middle of a frame: treat it as the end.
    read_status read_frame(std::vector<std::uint8_t>& out, std::chrono::milliseconds timeout) {
        const auto deadline = clock::now() + timeout;
        if (ws_) {
            return read_message(out, deadline);
        }
        std::array<std::uint8_t, protocol::frame_prefix_bytes> prefix{};
        if (const auto s = read_exactly(prefix.data(), prefix.size(), deadline);
            s != read_status::frame) {
            return s;
        }
        const std::uint32_t length = protocol::read_prefix(prefix);
        if (length > protocol::default_max_server_frame) {
            throw std::runtime_error("server announced a frame of " + std::to_string(length) +
                                     " bytes");
        }
        out.resize(protocol::frame_prefix_bytes + length);
        std::copy(prefix.begin(), prefix.end(), out.begin());
        // A started frame is read whole: giving up in its middle would leave the stream at a
        // byte that is not a frame's start. The server writes frames whole, so it comes.
        return read_exactly(out.data() + protocol::frame_prefix_bytes, length,
                            std::max(deadline, clock::now() + std::chrono::seconds{5}));
    }

    struct close_result {
        bool closed = false;                // the server closed the connection
        std::optional<std::string> reason;  // from its Disconnect, if one came
        std::size_t frames = 0;
    };

    // Reads (and discards) server frames until the server closes the connection, at most
    // `timeout`.
    close_result read_until_closed(std::chrono::milliseconds timeout) {
        const auto deadline = clock::now() + timeout;
        close_result result;
        std::vector<std::uint8_t> bytes;
        while (clock::now() < deadline) {
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
            const read_status s = read_frame(bytes, std::max(left, 1ms));
            if (s == read_status::closed) {
                result.closed = true;
                return result;
            }
            if (s == read_status::timeout) {
                return result;
            }
            ++result.frames;
            const auto* message = protocol::verify_server_frame(bytes);
            if (message == nullptr) {
                throw std::runtime_error("the server sent an unverifiable frame");
            }
            if (message->body_type() == wire::ServerBody::Disconnect) {
                if (const auto control = protocol::decode_server_control(*message)) {
                    if (const auto* d = std::get_if<protocol::disconnect>(&*control)) {
                        result.reason = d->reason;
                    }
                }
            }
        }
        return result;
    }

    [[nodiscard]] boost::asio::ip::tcp::socket& socket() noexcept { return socket_; }

private:
    using websocket = boost::beast::websocket::stream<boost::asio::ip::tcp::socket&>;

    // One message; a read that times out stays pending (cancelling would fail the WebSocket)
    // and the next call waits on it.
    read_status read_message(std::vector<std::uint8_t>& out, clock::time_point deadline) {
        if (!message_pending_) {
            message_pending_ = true;
            message_done_ = false;
            message_.clear();
            ws_->async_read(message_, [this](const boost::system::error_code& ec, std::size_t) {
                message_error_ = ec;
                message_done_ = true;
            });
        }
        io_.restart();
        while (!message_done_ && clock::now() < deadline && io_.run_one_until(deadline) > 0) {
        }
        if (!message_done_) {
            return read_status::timeout;
        }
        message_pending_ = false;
        if (message_error_) {
            return read_status::closed;
        }
        const auto data = message_.cdata();
        const auto* bytes = static_cast<const std::uint8_t*>(data.data());
        out.assign(bytes, bytes + data.size());
        if (out.size() < protocol::frame_prefix_bytes ||
            protocol::read_prefix(std::span<const std::uint8_t, protocol::frame_prefix_bytes>{
                out.data(), protocol::frame_prefix_bytes}) !=
                out.size() - protocol::frame_prefix_bytes) {
            throw std::runtime_error("the server sent a WebSocket message of " +
                                     std::to_string(out.size()) + " bytes that is not one frame");
        }
        return read_status::frame;
    }

    read_status read_exactly(std::uint8_t* data, std::size_t size, clock::time_point deadline) {
        bool done = false;
        boost::system::error_code error;
        boost::asio::async_read(socket_, boost::asio::buffer(data, size),
                                [&](const boost::system::error_code& ec, std::size_t) {
                                    error = ec;
                                    done = true;
                                });
        io_.restart();
        io_.run_until(deadline);
        if (!done) {
            boost::system::error_code ignored;
            socket_.cancel(ignored);
            io_.restart();
            io_.run();  // the handler runs (operation_aborted) while its captures live
            if (!error) {
                // The read completed before the cancel took effect: the bytes were consumed,
                // and returning a timeout would lose a whole frame (seen under load).
                return read_status::frame;
            }
            return error == boost::asio::error::operation_aborted ? read_status::timeout
                                                                  : read_status::closed;
        }
        return error ? read_status::closed : read_status::frame;
    }

    boost::asio::io_context io_;
    boost::asio::ip::tcp::socket socket_;
    std::unique_ptr<websocket> ws_;
    boost::beast::flat_buffer message_;
    bool message_pending_ = false;
    bool message_done_ = false;
    boost::system::error_code message_error_;
};

// Bytes the kernel holds, not yet acknowledged, in the send queue of the TCP socket from
// 127.0.0.1:local_port to 127.0.0.1:remote_port (/proc/net/tcp), if there is one. Lets a test
// see that a server's socket to a client that does not read is full without reaching into
// the server.
inline std::optional<std::size_t> kernel_send_queue(std::uint16_t local_port,
                                                    std::uint16_t remote_port) {
    std::ifstream table{"/proc/net/tcp"};
    std::string line;
    std::getline(table, line);  // header
    while (std::getline(table, line)) {
        unsigned local_address = 0;
        unsigned local = 0;
        unsigned remote_address = 0;
        unsigned remote = 0;
        unsigned state = 0;
        unsigned long tx_queue = 0;
        if (std::sscanf(line.c_str(), " %*d: %8X:%4X %8X:%4X %2X %8lX", &local_address, &local,
                        &remote_address, &remote, &state, &tx_queue) == 6 &&
            local == local_port && remote == remote_port) {
            return static_cast<std::size_t>(tx_queue);
        }
    }
    return std::nullopt;
}

// What a raw client does with each server frame: the schema from Welcome (before the first
// snapshot, which needs it), everything else to the mirror.
inline void apply_to_mirror(protocol::mirror& m, const wire::ServerMessage& message) {
    if (message.body_type() == wire::ServerBody::Welcome) {
        std::string why;
        const auto control = protocol::decode_server_control(message, &why);
        if (!control || !std::holds_alternative<protocol::welcome>(*control)) {
            throw std::runtime_error("the server sent an undecodable Welcome: " + why);
        }
        m.set_schema(std::get<protocol::welcome>(*control).components);
        return;
    }
    (void)m.apply(message);
}

// One mirrored entity with every component of the mirror's schema, by wire name, floats in
// hex: "3:1 position(x=0x1p+0,y=0x0p+0) name(box)".
inline std::string describe(const protocol::mirror& m, ecs::Entity e) {
    std::ostringstream out;
    out << std::hexfloat << ecs::to_string(e);
    for (const protocol::component_info& type : m.types().types()) {
        if (!m.has(e, type.id)) {
            continue;
        }
        out << ' ' << type.name << '(';
        if (type.is_string) {
            const std::string* text = m.text(e, type.id);
            out << (text == nullptr ? std::string{"<no text>"} : *text);
        } else {
            const auto value = m.value(e, type.id);
            for (std::size_t i = 0; i < type.fields.size(); ++i) {
                out << (i == 0 ? "" : ",") << type.fields[i].name << '=';
                std::visit([&](auto v) { out << v; }, protocol::read_field(type, value, i));
            }
        }
        out << ')';
    }
    return out.str();
}

// Every mirrored entity, one per line (describe()): two mirrors hold the same world exactly
// when their dumps are equal.
inline std::string dump(const protocol::mirror& m) {
    std::string out;
    m.each([&](ecs::Entity e) { out += describe(m, e) + '\n'; });
    return out;
}

}  // namespace ecsnet::test
