#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "ecsnet/protocol/frame.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/server/token_bucket.hpp"

namespace ecsnet::server {

class server;

// One client connection: a reader, a writer and a watchdog coroutine on the server's single
// io_context thread.
//
// Outbound queue rule (docs/SERVER.md): deltas and checksums are droppable. When a tick's
// frames would take the droppable bytes waiting behind the current write past the bound,
// max(--queue-bytes, size of the last snapshot), every waiting droppable frame is dropped and
// no more deltas are queued; once the queue has drained, the client gets a fresh snapshot and
// deltas resume from the next tick. Replies are bounded by backpressure: past --queue-bytes
// of unsent replies, the session stops reading from the client (no read deadline runs while it
// does). A client whose socket accepts nothing for --stall-timeout-ms while data waits is
// disconnected. Server memory per client is thus bounded by two snapshots, one tick's frames,
// twice --queue-bytes and the frame being read; delta frames are shared by all clients.
class session : public std::enable_shared_from_this<session> {
public:
    using clock = std::chrono::steady_clock;
    enum class phase { handshake, joined, closing, closed };

    session(boost::asio::ip::tcp::socket socket, server& owner, std::uint32_t id);
    session(const session&) = delete;
    session& operator=(const session&) = delete;
    ~session();

    void start();
    // Sends Disconnect{reason} at once and closes: for connections refused before Hello.
    void refuse(std::string reason);
    // Queues Disconnect{reason}, flushes what is queued (bounded by the shutdown grace) and
    // closes.
    void disconnect(std::string reason);
    // Closes at once; `reason` is logged.
    void close_now(std::string reason);

    // Control frames (Welcome, CommandResult, Pong, snapshot chunks) always queue.
    void send(protocol::frame frame);
    // A tick's delta and, every N ticks, its checksum: dropped under the queue rule above.
    void send_tick(const protocol::frame& delta, const protocol::frame* checksum);
    // Drops queued deltas and sends a snapshot once the queue is empty.
    void request_resync(const char* why);

    [[nodiscard]] std::uint32_t id() const noexcept { return id_; }
    // The owner id this connection acts as (Welcome.client_id, Owner.client); 0 before Hello.
    [[nodiscard]] std::uint32_t owner_id() const noexcept { return owner_id_; }
    void set_owner_id(std::uint32_t owner) noexcept { owner_id_ = owner; }
    [[nodiscard]] phase state() const noexcept { return phase_; }
    [[nodiscard]] bool joined() const noexcept { return phase_ == phase::joined; }
    [[nodiscard]] bool counted() const noexcept { return counted_; }
    void set_counted(bool counted) noexcept { counted_ = counted; }
    [[nodiscard]] const std::string& name() const noexcept { return name_; }
    [[nodiscard]] const std::string& remote() const noexcept { return remote_; }
    [[nodiscard]] std::size_t queued_bytes() const noexcept { return queued_bytes_; }

private:
    struct queued {
        protocol::frame frame;
        bool droppable;
    };

    boost::asio::awaitable<void> read_loop(std::shared_ptr<session> self);
    boost::asio::awaitable<void> write_loop(std::shared_ptr<session> self);
    boost::asio::awaitable<void> watchdog(std::shared_ptr<session> self);
    void spawn_coroutines();
    void handle(protocol::client_message message);
    void reject_command(const protocol::decode_error& error);
    void push(protocol::frame frame, bool droppable);
    void notify_closed(const std::string& reason);

    boost::asio::ip::tcp::socket socket_;
    server& owner_;
    std::uint32_t id_;
    std::uint32_t owner_id_{0};
    std::string remote_;
    std::string name_;
    phase phase_{phase::handshake};
    bool counted_{false};
    bool notified_closed_{false};

    std::deque<queued> queue_;
    std::size_t in_flight_{0};  // frames at the front of queue_ being written
    std::size_t queued_bytes_{0};
    std::size_t droppable_bytes_{0};
    std::size_t in_flight_droppable_bytes_{0};
    bool resync_pending_{false};
    boost::asio::steady_timer wake_writer_;
    boost::asio::steady_timer resume_reading_;
    // Bytes queued that are not deltas or checksums (replies, snapshot chunks).
    [[nodiscard]] std::size_t control_backlog() const noexcept {
        return queued_bytes_ - droppable_bytes_;
    }

    clock::time_point hello_deadline_;
    clock::time_point read_deadline_;
    clock::time_point write_deadline_{clock::time_point::max()};
    clock::time_point close_deadline_{clock::time_point::max()};
    const char* read_deadline_reason_{"no Hello within the handshake timeout"};

    token_bucket commands_;
    std::uint64_t rate_limited_{0};
    clock::time_point abuse_window_start_{};
    std::uint64_t abuse_in_window_{0};
    std::vector<std::uint8_t> read_buffer_;
};

}  // namespace ecsnet::server
