#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "ecsnet/client/connect_options.hpp"
#include "ecsnet/protocol/frame.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/protocol/mirror.hpp"

// A client of ecsnet-server: one connection, its own io_context, a mirror of the world.
// Blocking calls with timeouts, for command-line tools, tests and load generators; not
// thread-safe (one thread drives it).
//
// Callbacks (the mirror's events() and on_message) may call any public method of the
// connection, reading ones included (send, request, poll_until, poll_for, take_result,
// close). Frames are handled one at a time, in the order they arrived: one that a callback
// reads is held, and handled (mirror applied, on_message called) after the frame the
// callback serves, so the mirror never changes under a callback and the message an
// on_message callback holds stays valid. What request() and poll predicates wait for is
// recorded at once, also for held frames: a CommandResult (take_result), Pong, Welcome and
// Disconnect (closed_reason); a held frame's Checksum (last_checksum) counts when it is
// handled. A callback may also replace on_message or the mirror's callbacks; the new ones
// serve from the next frame on.
namespace ecsnet::client {

using namespace std::chrono_literals;

namespace detail {
class transport;  // TCP, TLS, WebSocket or wss (src/transport.hpp)
}

class connection {
public:
    using clock = std::chrono::steady_clock;

    // Connects (TCP, TLS, WebSocket or wss, as options say) and, with options.join, completes
    // the handshake: Hello, Welcome, the whole snapshot. Throws client_error ("cannot connect
    // to 127.0.0.1:7777: connection refused", "server refused: bad auth token", "WebSocket
    // upgrade at ... refused: HTTP 403 Forbidden ...", "timed out ...").
    explicit connection(const connect_options& options);
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;
    ~connection();

    [[nodiscard]] const protocol::welcome& welcome() const;
    [[nodiscard]] protocol::mirror& mirror() noexcept { return mirror_; }
    [[nodiscard]] const protocol::mirror& mirror() const noexcept { return mirror_; }

    // Throws client_error, or protocol::schema_mismatch for a typed value whose compiled type
    // differs from the server's (nothing is sent).
    void send(const protocol::client_message& message);

    // Reads and applies frames until pred() holds or the timeout passes; returns pred().
    bool poll_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout);
    // Reads and applies whatever arrives during `duration`.
    void poll_for(std::chrono::milliseconds duration);

    [[nodiscard]] std::uint32_t next_request_id() noexcept { return ++last_request_id_; }
    // Sends a command carrying `request_id` and waits for its CommandResult.
    [[nodiscard]] protocol::command_result request(const protocol::client_message& command,
                                                   std::uint32_t request_id,
                                                   std::chrono::milliseconds timeout = 5000ms);
    // The result of a request, once it arrived (it is then forgotten).
    [[nodiscard]] std::optional<protocol::command_result> take_result(std::uint32_t request_id);

    // Set once the server sent Disconnect or the connection ended.
    [[nodiscard]] const std::optional<std::string>& closed_reason() const noexcept { return closed_; }
    [[nodiscard]] bool is_open() const noexcept { return !closed_.has_value(); }
    // The frames' bytes and, over WebSocket, each message's header (2 to 10 bytes, as the
    // server sends a message: one WebSocket frame); TLS records are not counted.
    [[nodiscard]] std::uint64_t bytes_received() const noexcept { return bytes_received_; }
    [[nodiscard]] std::uint64_t frames_received() const noexcept { return frames_received_; }
    // The frames' bytes sent (no WebSocket or TLS overhead). From protocol 6 an Input goes
    // compact when it has the entity and types of the last full one (docs/PROTOCOL.md).
    [[nodiscard]] std::uint64_t bytes_sent() const noexcept { return bytes_sent_; }
    [[nodiscard]] std::optional<protocol::checksum_report> last_checksum() const noexcept { return last_checksum_; }
    [[nodiscard]] std::optional<protocol::pong> last_pong() const noexcept { return last_pong_; }
    // Player input (send(protocol::input{...})): the server's latest word on it.
    [[nodiscard]] std::optional<protocol::input_ack> last_input_ack() const noexcept {
        return last_input_ack_;
    }
    [[nodiscard]] const std::optional<protocol::input_rejected>& last_input_rejected() const noexcept {
        return last_input_rejected_;
    }
    // Called for every verified server message, after the mirror applied it (see above for
    // what it may do). A compact InputAck (protocol 6) has no FlatBuffers message: it is only
    // recorded (last_input_ack()).
    std::function<void(const wire::ServerMessage&)> on_message;

    void close();

private:
    void connect(const connect_options& options, clock::time_point deadline);
    void handshake(clock::time_point deadline);
    // Runs handlers until done() or the deadline, then those already ready.
    void run_until(const std::function<bool()>& done, clock::time_point deadline);
    void start_read();
    // Handles the complete frames read so far, in order (held ones first); from inside a
    // callback it only holds them. Returns how many it handled.
    std::size_t process_frames();
    // Keeps the bytes of the frame being handled alive before the reader is used again.
    void detach_current_frame();
    void hold_frame(std::span<const std::uint8_t> bytes);
    void handle_frame(std::span<const std::uint8_t> bytes, bool recorded);
    // Welcome, CommandResult, Pong, Disconnect: what poll predicates wait for. False when the
    // message did not decode (the connection then failed).
    bool record_control(const wire::ServerMessage& message);
    // A decoded control message (null: refused, the connection fails with refusal + why).
    bool record(std::optional<protocol::server_control> control, const char* refusal,
                const std::string& why);
    // A compact frame (protocol 6: an InputAck), recorded; false when it failed the connection.
    bool handle_compact(std::span<const std::uint8_t> bytes);
    void fail(std::string reason);

    boost::asio::io_context io_;
    // Without it the context stops whenever no operation is pending, and every later
    // run_one() would return at once.
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
    std::optional<boost::asio::ssl::context> tls_context_;  // outlives the transport
    std::unique_ptr<detail::transport> transport_;
    std::string endpoint_;
    protocol::frame_reader reader_;
    bool reading_{false};
    int handling_{0};              // frames being handled: > 0 while a callback runs
    bool frame_in_reader_{false};  // the frame being handled lives in reader_'s buffer
    std::vector<std::vector<std::uint8_t>> current_storage_;  // ... or here, once detached
    std::deque<std::vector<std::uint8_t>> held_;  // read by callbacks, controls recorded

    std::vector<protocol::component_info> expected_types_;
    protocol::mirror mirror_;
    std::optional<protocol::welcome> welcome_;
    std::map<std::uint32_t, protocol::command_result> results_;
    std::optional<std::string> closed_;
    bool refused_server_{false};  // closed_ is this client's verdict on what the server sent
    std::optional<protocol::checksum_report> last_checksum_;
    std::optional<protocol::pong> last_pong_;
    std::optional<protocol::input_ack> last_input_ack_;
    std::optional<protocol::input_rejected> last_input_rejected_;
    std::uint32_t last_request_id_{0};
    std::uint64_t last_ping_nonce_{0};
    clock::time_point last_send_{clock::now()};
    std::uint64_t bytes_received_{0};
    std::uint64_t bytes_sent_{0};
    std::optional<protocol::input_reference> input_reference_;  // protocol 6: the server's
    std::uint64_t frames_received_{0};
};

}  // namespace ecsnet::client
