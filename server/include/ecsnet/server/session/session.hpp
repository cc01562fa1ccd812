#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ecsnet/protocol/frame.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/server/operations/metrics.hpp"
#include "ecsnet/server/transport/stream.hpp"
#include "ecsnet/server/session/token_bucket.hpp"

namespace ecsnet::server {

class session_host;
class tick_hand_off;

// One client connection: a reader, a writer and a watchdog coroutine on one of the server's
// I/O threads (io_pool), while the world stays on the server's thread (docs/SERVER.md,
// "Threads"). The two halves of the session never share a field: what the server's thread
// reads (owner id, counted, pending, joined) is written by it alone, what the coroutines use
// is theirs, and everything that crosses is a handler posted to the other side, holding the
// session. Hence every public function below that acts on the connection only posts: it is
// called on the server's thread and takes effect on the session's, in call order.
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
//
// Replies keep command order: one decided at once (a command refused at decoding or by the
// rate limit) waits behind the client's commands queued for the tick. A fatal disconnect
// sends every reply owed first (commands already queued are applied at the tick and
// answered), then Disconnect, then FIN; what the client still sends meanwhile is read and
// discarded, so its kernel never answers our close with a reset that would destroy the
// replies in flight.
class session : public std::enable_shared_from_this<session> {
public:
    using clock = std::chrono::steady_clock;

    // `stream` is bound to `io`, the context of the I/O thread this session lives on; the
    // session keeps it alive (io_pool::next()). An observer (the web inspector, admitted
    // through the admin endpoint) takes no player slot and sends no input (docs/SERVER.md,
    // "Observers").
    session(std::shared_ptr<boost::asio::io_context> io, std::unique_ptr<byte_stream> stream,
            session_host& owner, std::uint64_t id, bool observer = false);
    session(const session&) = delete;
    session& operator=(const session&) = delete;
    ~session();

    // ---- from the server's thread: each posts to the session's --------------------------
    void start();
    // Sends Disconnect{reason} at once and closes: for connections refused before Hello.
    void refuse(std::string reason);
    // Queues Disconnect{reason}, flushes what is queued (bounded by the shutdown grace) and
    // closes. `why` is what ecsnet_disconnects_total counts.
    void disconnect(std::string reason, disconnect_reason why);
    // Closes at once; `reason` is logged.
    void close_now(std::string reason, disconnect_reason why);
    // As disconnect(), but the replies still owed will never come (the journal cannot make
    // them durable): the session stops waiting for them and says goodbye at once.
    void disconnect_withholding_results(std::string reason, disconnect_reason why);
    // The server's answer to Hello: refused with a reason, or joined; `read_only`: an
    // observer without an owner, whose commands are answered ReadOnly.
    void admitted(std::optional<std::string> refusal, bool read_only = false);

    // Control frames (Welcome, CommandResult, Pong, snapshot chunks) always queue.
    void send(protocol::frame frame);
    void send_snapshot_chunk(protocol::frame frame);
    // The snapshot asked for by a resync has been queued (send_snapshot_chunk): deltas resume.
    void snapshot_sent();
    // A CommandResult for a command the session queued for the tick (server::queue_command).
    void send_result(const protocol::command_result& result);
    // An Input the world refused (server::queue_input): InputRejected, throttled.
    void refuse_input(protocol::input_rejected rejection);

    // ---- the server's view, read and written on its thread only --------------------------
    [[nodiscard]] std::uint64_t id() const noexcept { return id_; }
    // The owner id this connection acts as (Welcome.client_id, Owner.client); 0 before Hello.
    [[nodiscard]] std::uint32_t owner_id() const noexcept { return owner_id_; }
    void set_owner_id(std::uint32_t owner) noexcept { owner_id_ = owner; }
    // Admitted (Welcome and snapshot queued) and not closed yet: gets every tick's frames.
    [[nodiscard]] bool joined() const noexcept { return joined_; }
    void set_joined(bool joined) noexcept { joined_ = joined; }
    // Commands of this session wait in the server's queue and must be answered (a closed
    // session's are dropped).
    [[nodiscard]] bool awaits_results() const noexcept { return joined_; }
    [[nodiscard]] bool counted() const noexcept { return counted_; }
    void set_counted(bool counted) noexcept { counted_ = counted; }
    // Holds one of the pre-Hello slots (--max-pending).
    [[nodiscard]] bool pending() const noexcept { return pending_; }
    void set_pending(bool pending) noexcept { pending_ = pending; }

    // The name its Hello gave (display only), and the tick it joined at.
    [[nodiscard]] const std::string& client_name() const noexcept { return client_name_; }
    [[nodiscard]] std::uint64_t joined_tick() const noexcept { return joined_tick_; }
    void set_joined_as(std::string name, std::uint64_t tick) {
        client_name_ = std::move(name);
        joined_tick_ = tick;
    }
    // The version its Hello named, the one its Welcome answered in: from 6 on it gets its
    // InputAcks compact. (The reading side keeps its own copy, client_version_.)
    [[nodiscard]] std::uint32_t protocol_version() const noexcept { return protocol_version_; }
    void set_protocol_version(std::uint32_t version) noexcept { protocol_version_ = version; }
    // What the server's reports last read of the counters (/clients' bytes per second, the
    // budget metric's bytes per tick).
    struct report_marks {
        std::uint64_t bytes_out{0};
        std::uint64_t bytes_in{0};
        std::uint64_t view_bytes{0};
    };
    [[nodiscard]] report_marks& reported() noexcept { return reported_; }

    // Counted on the session's thread; any thread reads them (for /clients).
    struct traffic {
        std::atomic<std::uint64_t> bytes_out{0};
        std::atomic<std::uint64_t> bytes_in{0};
        std::atomic<std::uint64_t> dropped_frames{0};
        std::atomic<std::uint64_t> resyncs{0};
    };
    [[nodiscard]] const traffic& counters() const noexcept { return traffic_; }
    // The longest this client has waited for tick frames since the last call, in microseconds:
    // between two writes that carried some, or from the last one until now (a write that does
    // not complete is a wait too); 0 before its first. How evenly the clients are served under
    // load. Any thread.
    [[nodiscard]] std::uint64_t take_longest_tick_wait_us() noexcept;

    // Fixed at accept: any thread.
    [[nodiscard]] bool observer() const noexcept { return observer_; }
    [[nodiscard]] const std::string& remote() const noexcept { return stream_->remote(); }
    [[nodiscard]] std::string_view transport() const noexcept { return stream_->transport(); }
    [[nodiscard]] const std::string& remote_address() const noexcept {
        return stream_->remote_address();
    }

private:
    friend class tick_hand_off;

    // finishing: fatal disconnect decided, waiting for the tick to answer queued commands.
    enum class phase { handshake, joined, finishing, closing, closed };

    // Tick frames (deltas, checksums) are droppable; a snapshot is dropped on disconnect;
    // replies never are.
    enum class kind { reply, snapshot, tick };
    struct queued {
        protocol::frame frame;
        kind what;
        [[nodiscard]] bool droppable() const noexcept { return what == kind::tick; }
    };

    // Posts f(*this) to the session's thread, holding the session.
    template <typename F>
    void on_io_thread(F f);

    // ---- on the session's thread ---------------------------------------------------------
    boost::asio::awaitable<void> read_loop(std::shared_ptr<session> self);
    boost::asio::awaitable<void> read_frames();
    boost::asio::awaitable<void> discard_input();
    boost::asio::awaitable<void> write_loop(std::shared_ptr<session> self);
    boost::asio::awaitable<void> watchdog(std::shared_ptr<session> self);
    void spawn_coroutines();
    void handle(protocol::client_message message);
    void handle_resync(const protocol::resync_request& request);
    void handle_input(protocol::input input);
    // A compact frame read into read_buffer_; false when it ended the connection.
    bool handle_compact(std::uint8_t kind);
    void reply_now_or_in_order(protocol::command_result result);
    void refuse_rate_limited(std::uint32_t request_id);
    void reject_command(const protocol::decode_error& error);
    void push(protocol::frame frame, kind what, bool wake = true);
    // The frames the next write takes, the front one from where an earlier write left it.
    void gather(std::vector<boost::asio::const_buffer>& buffers) const;
    void pop_written();
    // Writes what the socket takes now, when no write is in flight (byte_stream::try_write):
    // true when nothing is left for the writer.
    bool write_now();
    // Frames at the front that a write has started (and that must go whole, never dropped).
    [[nodiscard]] std::size_t started_frames() const noexcept {
        return std::max<std::size_t>(in_flight_, front_written_ > 0 ? 1 : 0);
    }
    void queue_reply(protocol::frame frame) { push(std::move(frame), kind::reply); }
    void queue_tick(protocol::frame delta, protocol::frame checksum, protocol::frame owner_only,
                    protocol::frame ack);
    // At most one InputRejected per second, counting the refusals it stands for; a client
    // refused more than 1,000 times in 10 s is disconnected, as for commands.
    void answer_refused_input(protocol::input_rejected rejection);
    void queue_result(const protocol::command_result& result);
    void request_resync(const char* why, resync_cause cause);
    void end(std::string reason, disconnect_reason why);    // disconnect()
    void close(std::string reason, disconnect_reason why);  // close_now()
    // The first reason decided is the one counted when the session ends.
    void decide(disconnect_reason why) noexcept;
    void unqueue_bytes(std::size_t bytes) noexcept;
    void begin_closing(std::string reason);
    void notify_closed(const std::string& reason);
    // Counts what crossed the socket since the last call (stream_->bytes(): every layer's
    // bytes), and `frames_sent` frames written.
    void count_traffic(std::size_t frames_sent = 0) noexcept;
    // A tick frame was written (pop_written): the wait since the previous one is noted.
    void note_tick_written() noexcept;
    void count_dropped(std::size_t frames) noexcept;

    // Declared first, destroyed last: the stream and the timers belong to it.
    std::shared_ptr<boost::asio::io_context> io_;
    std::unique_ptr<byte_stream> stream_;
    session_host& owner_;
    const std::uint64_t id_;
    const bool observer_;
    traffic traffic_;

    // The server's thread only.
    std::string client_name_;
    std::uint64_t joined_tick_{0};
    std::uint32_t protocol_version_{0};
    report_marks reported_;
    std::uint32_t owner_id_{0};
    bool joined_{false};
    bool counted_{false};
    bool pending_{false};

    // The session's thread only, from here on.
    std::string name_;
    phase phase_{phase::handshake};
    bool admitting_{false};             // Hello is with the server: reading waits for its answer
    bool notified_closed_{false};
    std::optional<disconnect_reason> cause_;
    std::size_t awaiting_results_{0};   // commands in the server's queue for the tick
    std::string finishing_reason_;      // the Disconnect owed once they are answered
    bool input_ended_{false};           // the client closed its side (or reading failed)
    bool fin_sent_{false};
    bool stream_ready_{false};          // the TLS handshake (if any) is done
    bool read_only_{false};             // an observer without an owner: commands get ReadOnly

    std::deque<queued> queue_;
    // take_longest_tick_wait_us(): steady clock nanoseconds, 0 before the first tick written.
    std::atomic<std::int64_t> last_tick_written_ns_{0};
    std::atomic<std::uint64_t> longest_tick_wait_us_{0};
    std::size_t in_flight_{0};  // frames at the front of queue_ being written
    std::size_t front_written_{0};  // bytes of the front frame write_now() wrote
    std::vector<boost::asio::const_buffer> direct_buffers_;  // write_now()'s
    std::size_t queued_bytes_{0};
    std::size_t droppable_bytes_{0};
    std::size_t in_flight_droppable_bytes_{0};
    bool resync_pending_{false};
    bool snapshot_requested_{false};  // the server was asked for the resync's snapshot
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
    // ResyncRequests: one snapshot per --resync-interval-ms at most; more are coalesced
    // into one due later, and a flood of them disconnects.
    clock::time_point next_resync_allowed_{};
    bool resync_deferred_{false};
    clock::time_point resync_window_start_{};
    std::uint64_t resyncs_in_window_{0};
    // The version the client's Hello named (0 before it): from 6 on it may send compact Inputs,
    // which take their entity and types from the last full Input it sent (the reference).
    std::uint32_t client_version_{0};
    std::optional<protocol::input_reference> input_reference_;
    // Input frames: their own bucket (--input-rate), refusals answered at most once a second.
    token_bucket inputs_;
    clock::time_point next_input_answer_{};
    std::uint32_t inputs_refused_unanswered_{0};
    // Refusals within the second after an answer are told when it ends, the latest one with
    // the count: nothing refused goes unsaid.
    std::optional<protocol::input_rejected> input_refusal_due_;
    boost::asio::steady_timer input_answer_timer_;
    clock::time_point input_abuse_start_{};
    std::uint64_t inputs_refused_in_window_{0};
    std::vector<std::uint8_t> read_buffer_;
};

// A tick's frames for every session, handed to the I/O threads in one post per thread when
// the tick has served all its clients. One post per session per tick woke the I/O thread a
// thousand times a tick at K = 1,000, each wake-up a context switch on a shared core.
// World thread only.
class tick_hand_off {
public:
    // A tick's delta, this client's owner-only delta when it has one and, every N ticks, its
    // checksum: one unit, dropped together under the session's queue rule. The frames are
    // shared, immutable buffers: the session's thread keeps a reference, never a copy.
    // `ack` (an InputAck, for a client that sends input) comes last.
    void add(session& s, const protocol::frame& delta, const protocol::frame* checksum,
             const protocol::frame* owner_only, const protocol::frame* ack);
    // Posts what was added since the last call, each session's in the order added.
    void post();

private:
    struct item {
        std::shared_ptr<session> to;
        protocol::frame delta;
        protocol::frame checksum;
        protocol::frame owner_only;
        protocol::frame ack;
    };
    struct batch {
        std::shared_ptr<boost::asio::io_context> io;
        std::vector<item> items;
    };
    std::vector<batch> batches_;  // one per I/O context met this tick
};

}  // namespace ecsnet::server
