#include "ecsnet/server/session/session.hpp"

#include <algorithm>
#include <array>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include "ecsnet/server/session/session_host.hpp"
#include "ecsnet/server/transport/websocket_stream.hpp"
#include "../transport/use_tuple.hpp"

namespace ecsnet::server {

namespace asio = boost::asio;
using detail::use_tuple;
using asio::awaitable;
using clock = session::clock;

namespace {


// A read that ended the connection: the client closed it (a FIN, or a WebSocket close
// frame), or the network failed (a reset, a TLS error).
disconnect_reason ended_by(const boost::system::error_code& ec) noexcept {
    return ec == asio::error::eof ? disconnect_reason::client_closed
                                  : disconnect_reason::network_error;
}
constexpr std::size_t max_frames_per_write = 64;
constexpr std::size_t max_bytes_per_write = 256 * 1024;
constexpr auto watchdog_period = std::chrono::milliseconds{200};
// Sustained abuse: more than this many rate-limited commands within the window disconnects.
constexpr std::uint64_t abuse_limit = 1000;
constexpr auto abuse_window = std::chrono::seconds{10};
// ResyncRequests past this many within the abuse window disconnect (they cost nothing once
// coalesced, but a client sending them endlessly is broken or hostile).
constexpr std::uint64_t resync_abuse_limit = 100;
// Replies waiting for the tick per session before reading pauses: bounds what a flood of
// commands can park in the server's queue between two ticks.
constexpr std::size_t max_awaiting_results = 4096;

std::string suppressed_note(std::size_t suppressed) {
    return suppressed == 0 ? std::string{}
                           : " (" + std::to_string(suppressed) + " similar warnings suppressed)";
}

template <typename Message>
std::uint32_t request_id_of(const Message& message) {
    return std::visit(
        [](const auto& m) -> std::uint32_t {
            if constexpr (requires { m.request_id; }) {
                return m.request_id;
            } else {
                return 0;
            }
        },
        message);
}

}  // namespace

session::session(std::shared_ptr<asio::io_context> io, std::unique_ptr<byte_stream> stream,
                 session_host& owner, std::uint64_t id, bool observer)
    : io_{std::move(io)},
      stream_{std::move(stream)},
      owner_{owner},
      id_{id},
      observer_{observer},
      wake_writer_{stream_->get_executor()},
      resume_reading_{stream_->get_executor()},
      commands_{owner.config().command_rate, owner.config().command_burst},
      inputs_{owner.config().input_rate, owner.config().input_rate},
      input_answer_timer_{stream_->get_executor()} {
    hello_deadline_ = clock::now() + owner_.config().hello_timeout;
    read_deadline_ = hello_deadline_;
}

session::~session() {
    // What was never sent leaves the gauge with the session.
    owner_.counters().queued(-static_cast<std::int64_t>(queued_bytes_));
}

template <typename F>
void session::on_io_thread(F f) {
    asio::post(io_->get_executor(), [self = shared_from_this(), f = std::move(f)]() mutable {
        f(*self);
    });
}

void session::spawn_coroutines() {
    // Exceptions would otherwise vanish with co_spawn(detached): log them.
    const auto log_failure = [id = id_](const char* what) {
        return [id, what](const std::exception_ptr& e) {
            if (e) {
                try {
                    std::rethrow_exception(e);
                } catch (const std::exception& ex) {
                    spdlog::error("client {}: {} failed: {}", id, what, ex.what());
                }
            }
        };
    };
    const auto executor = stream_->get_executor();
    asio::co_spawn(executor, read_loop(shared_from_this()), log_failure("reader"));
    asio::co_spawn(executor, write_loop(shared_from_this()), log_failure("writer"));
    asio::co_spawn(executor, watchdog(shared_from_this()), log_failure("watchdog"));
}

// ---- posted by the server's thread -----------------------------------------------------------

void session::start() {
    on_io_thread([](session& s) { s.spawn_coroutines(); });
}

void session::refuse(std::string reason) {
    on_io_thread([reason = std::move(reason)](session& s) mutable {
        s.decide(disconnect_reason::refused);
        if (s.owner_.connection_lines().allow()) {
            spdlog::info("client {} from {} refused: {}", s.id_, s.remote(), reason);
        }
        s.begin_closing(std::move(reason));
        s.read_deadline_ = clock::time_point::max();
        s.spawn_coroutines();  // the reader only discards input until the close
    });
}

void session::disconnect(std::string reason, disconnect_reason why) {
    on_io_thread([reason = std::move(reason), why](session& s) mutable {
        s.end(std::move(reason), why);
    });
}

void session::disconnect_withholding_results(std::string reason, disconnect_reason why) {
    on_io_thread([reason = std::move(reason), why](session& s) mutable {
        s.awaiting_results_ = 0;
        if (s.phase_ == phase::finishing) {
            s.phase_ = phase::joined;  // end() acts on a live session only
        }
        s.end(std::move(reason), why);
    });
}

void session::close_now(std::string reason, disconnect_reason why) {
    on_io_thread([reason = std::move(reason), why](session& s) mutable {
        s.close(std::move(reason), why);
    });
}

void session::send(protocol::frame frame) {
    on_io_thread([frame = std::move(frame)](session& s) mutable {
        s.queue_reply(std::move(frame));
    });
}

void session::send_snapshot_chunk(protocol::frame frame) {
    on_io_thread([frame = std::move(frame)](session& s) mutable {
        s.push(std::move(frame), kind::snapshot);
    });
}

void session::snapshot_sent() {
    on_io_thread([](session& s) {
        if (s.snapshot_requested_) {
            // Deltas posted before the snapshot were dropped; the next tick's follow it.
            s.snapshot_requested_ = false;
            s.resync_pending_ = false;
            s.wake_writer_.cancel();
        }
    });
}

void session::send_result(const protocol::command_result& result) {
    on_io_thread([result](session& s) { s.queue_result(result); });
}

void tick_hand_off::add(session& s, const protocol::frame& delta,
                        const protocol::frame* checksum, const protocol::frame* owner_only,
                        const protocol::frame* ack) {
    const auto copy = [](const protocol::frame* f) {
        return f == nullptr ? protocol::frame{} : *f;
    };
    auto it = std::find_if(batches_.begin(), batches_.end(),
                           [&](const batch& b) { return b.io == s.io_; });
    if (it == batches_.end()) {
        it = batches_.insert(batches_.end(), batch{s.io_, {}});
    }
    it->items.push_back(
        item{s.shared_from_this(), delta, copy(checksum), copy(owner_only), copy(ack)});
}

void tick_hand_off::post() {
    for (batch& b : batches_) {
        asio::post(b.io->get_executor(), [items = std::move(b.items)]() mutable {
            for (item& i : items) {
                i.to->queue_tick(std::move(i.delta), std::move(i.checksum),
                                 std::move(i.owner_only), std::move(i.ack));
            }
        });
    }
    batches_.clear();
}

void session::refuse_input(protocol::input_rejected rejection) {
    on_io_thread([rejection = std::move(rejection)](session& s) mutable {
        s.answer_refused_input(std::move(rejection));
    });
}

void session::admitted(std::optional<std::string> refusal, bool read_only) {
    on_io_thread([refusal = std::move(refusal), read_only](session& s) mutable {
        s.admitting_ = false;
        s.read_only_ = read_only;
        s.resume_reading_.cancel();
        if (s.phase_ != phase::handshake) {
            return;  // closed meanwhile (a timeout): the server hears of it through closed()
        }
        if (refusal) {
            s.end(std::move(*refusal), disconnect_reason::refused);
            return;
        }
        s.phase_ = phase::joined;
    });
}

// ---- on the session's thread ------------------------------------------------------------------

void session::begin_closing(std::string reason) {
    // Queued tick frames and snapshot chunks are moot; replies are owed and stay, in order.
    std::deque<queued> kept;
    for (std::size_t i = 0; i < queue_.size(); ++i) {
        if (i < started_frames() || queue_[i].what == kind::reply) {
            kept.push_back(std::move(queue_[i]));
        } else {
            unqueue_bytes(queue_[i].frame->size());
            if (queue_[i].droppable()) {
                droppable_bytes_ -= queue_[i].frame->size();
            }
        }
    }
    queue_ = std::move(kept);
    resync_pending_ = false;
    resync_deferred_ = false;
    phase_ = phase::joined;  // let push() queue the Disconnect
    push(protocol::encode(protocol::server_control{protocol::disconnect{std::move(reason)}}),
         kind::reply);
    phase_ = phase::closing;
    close_deadline_ = clock::now() + owner_.config().shutdown_grace;
    resume_reading_.cancel();  // a reader paused by backpressure goes on to discard input
}

void session::end(std::string reason, disconnect_reason why) {
    if (phase_ == phase::finishing || phase_ == phase::closing || phase_ == phase::closed) {
        return;
    }
    decide(why);
    if (awaiting_results_ > 0) {
        // Commands already accepted are applied at the next tick and answered first.
        if (owner_.connection_lines().allow()) {
            spdlog::info("client {} ({}) disconnecting after {} queued commands: {}", id_,
                         printable(name_), awaiting_results_, reason);
        }
        finishing_reason_ = std::move(reason);
        phase_ = phase::finishing;
        read_deadline_ = clock::time_point::max();
        resume_reading_.cancel();
        return;
    }
    if (owner_.connection_lines().allow()) {
        spdlog::info("client {} ({}) disconnecting: {}", id_, printable(name_), reason);
    }
    begin_closing(reason);
    notify_closed(reason);
}

void session::close(std::string reason, disconnect_reason why) {
    if (phase_ == phase::closed) {
        return;
    }
    decide(why);
    const bool announced = phase_ == phase::closing;
    phase_ = phase::closed;
    count_traffic();  // what no frame was read or written with: a refused upgrade, a close frame
    stream_->close();
    wake_writer_.cancel();
    resume_reading_.cancel();
    input_answer_timer_.cancel();
    if (!announced && owner_.connection_lines().allow()) {
        spdlog::info("client {} ({}) closed: {}", id_, printable(name_), reason);
    }
    notify_closed(reason);
    // Flushed or given up: the world may stop waiting for this one (after closed(), which
    // was posted first).
    asio::post(owner_.world_context(), [self = shared_from_this()] { self->owner_.finished(); });
}

void session::notify_closed(const std::string& reason) {
    if (!notified_closed_) {
        notified_closed_ = true;
        owner_.counters().disconnected(cause_.value_or(disconnect_reason::network_error));
        asio::post(owner_.world_context(), [self = shared_from_this(), reason] {
            self->owner_.closed(*self, reason);
        });
    }
}

void session::unqueue_bytes(std::size_t bytes) noexcept {
    queued_bytes_ -= bytes;
    owner_.counters().queued(-static_cast<std::int64_t>(bytes));
}

void session::decide(disconnect_reason why) noexcept {
    if (!cause_) {
        cause_ = why;
    }
}

void session::count_traffic(std::size_t frames_sent) noexcept {
    // Only this thread writes the traffic counters: they are what was counted so far.
    const socket_bytes& total = stream_->bytes();
    const std::uint64_t in = total.read - traffic_.bytes_in.load(std::memory_order_relaxed);
    const std::uint64_t out = total.written - traffic_.bytes_out.load(std::memory_order_relaxed);
    if (in > 0) {
        owner_.counters().received(in);
        traffic_.bytes_in.store(total.read, std::memory_order_relaxed);
    }
    if (out > 0 || frames_sent > 0) {
        owner_.counters().sent(out, frames_sent);
        traffic_.bytes_out.store(total.written, std::memory_order_relaxed);
    }
}

void session::count_dropped(std::size_t frames) noexcept {
    owner_.counters().dropped(frames);
    traffic_.dropped_frames.fetch_add(frames, std::memory_order_relaxed);
}

void session::push(protocol::frame frame, kind what, bool wake) {
    if (phase_ == phase::closing || phase_ == phase::closed) {
        return;
    }
    queued_bytes_ += frame->size();
    owner_.counters().queued(static_cast<std::int64_t>(frame->size()));
    if (what == kind::tick) {
        droppable_bytes_ += frame->size();
    }
    queue_.push_back(queued{std::move(frame), what});
    if (wake) {
        wake_writer_.cancel();
    }
}

void session::gather(std::vector<asio::const_buffer>& buffers) const {
    buffers.clear();
    std::size_t bytes = 0;
    for (const auto& q : queue_) {
        if (buffers.size() == max_frames_per_write ||
            (!buffers.empty() && bytes + q.frame->size() > max_bytes_per_write)) {
            break;
        }
        const std::size_t from = buffers.empty() ? front_written_ : 0;
        buffers.emplace_back(q.frame->data() + from, q.frame->size() - from);
        bytes += q.frame->size() - from;
    }
}

void session::pop_written() {
    unqueue_bytes(queue_.front().frame->size());
    if (queue_.front().droppable()) {
        droppable_bytes_ -= queue_.front().frame->size();
        note_tick_written();
    }
    queue_.pop_front();
    front_written_ = 0;
}

bool session::write_now() {
    if (in_flight_ != 0 || !stream_ready_ || queue_.empty()) {
        return queue_.empty();
    }
    gather(direct_buffers_);
    std::size_t n = stream_->try_write(direct_buffers_);
    std::size_t frames = 0;
    while (n > 0 && !queue_.empty()) {
        const std::size_t left = queue_.front().frame->size() - front_written_;
        if (n < left) {
            front_written_ += n;
            break;
        }
        n -= left;
        pop_written();
        ++frames;
    }
    count_traffic(frames);
    if (frames > 0 && control_backlog() <= owner_.config().queue_bytes) {
        resume_reading_.cancel();
    }
    return queue_.empty();
}

void session::queue_result(const protocol::command_result& result) {
    owner_.counters().command(static_cast<std::uint16_t>(result.code));
    queue_reply(protocol::encode(protocol::server_control{result}));
    if (awaiting_results_ > 0) {
        --awaiting_results_;
    }
    if (awaiting_results_ == 0 && phase_ == phase::finishing) {
        phase_ = phase::joined;  // end() acts on a live session only
        end(std::move(finishing_reason_), cause_.value_or(disconnect_reason::protocol_error));
    } else if (awaiting_results_ < max_awaiting_results) {
        resume_reading_.cancel();
    }
}

void session::queue_tick(protocol::frame delta, protocol::frame checksum,
                         protocol::frame owner_only, protocol::frame ack) {
    const std::size_t frames = 1 + (checksum == nullptr ? 0 : 1) +
                               (owner_only == nullptr ? 0 : 1) + (ack == nullptr ? 0 : 1);
    if (phase_ != phase::joined || resync_pending_) {
        if (resync_pending_) {
            count_dropped(frames);
        }
        return;
    }
    // The bound applies to deltas waiting behind the one being written: a tick's frames are
    // one unit, and a tick larger than the bound still reaches a client that keeps up. A resync
    // costs a snapshot, so in a world whose snapshot is larger than --queue-bytes a client may
    // lag by up to a snapshot's worth of deltas before it pays off: with smaller bounds, a
    // client joining a 1M-entity world (20 MB snapshot, 8 MB deltas) was resynced forever.
    const std::size_t tick_bytes = delta->size() + (checksum == nullptr ? 0 : checksum->size()) +
                                   (owner_only == nullptr ? 0 : owner_only->size()) +
                                   (ack == nullptr ? 0 : ack->size());
    const std::size_t waiting = droppable_bytes_ - in_flight_droppable_bytes_;
    const std::size_t bound = std::max(owner_.config().queue_bytes, owner_.snapshot_bytes());
    if (waiting > 0 && waiting + tick_bytes > bound) {
        request_resync("outbound queue full", resync_cause::queue_overflow);
        count_dropped(frames);
        return;
    }
    // Written here when the socket takes it all, as it nearly always does: the writer
    // coroutine wakes only for what is left (one resume fewer per client per tick).
    constexpr bool wake = false;
    push(std::move(delta), kind::tick, wake);
    if (owner_only != nullptr) {
        push(std::move(owner_only), kind::tick, wake);
    }
    if (checksum != nullptr) {
        push(std::move(checksum), kind::tick, wake);
    }
    if (ack != nullptr) {
        push(std::move(ack), kind::tick, wake);
    }
    if (!write_now()) {
        wake_writer_.cancel();
    }
}

void session::answer_refused_input(protocol::input_rejected rejection) {
    if (phase_ != phase::joined && phase_ != phase::handshake) {
        return;
    }
    const auto now = clock::now();
    if (now - input_abuse_start_ > abuse_window) {
        input_abuse_start_ = now;
        inputs_refused_in_window_ = 0;
    }
    if (++inputs_refused_in_window_ > abuse_limit) {
        end("more than " + std::to_string(abuse_limit) + " inputs refused in " +
                std::to_string(abuse_window.count()) + " s",
            disconnect_reason::abuse);
        return;
    }
    ++inputs_refused_unanswered_;
    if (now < next_input_answer_) {
        // Told when the second ends, with the count.
        const bool armed = input_refusal_due_.has_value();
        input_refusal_due_ = std::move(rejection);
        if (!armed) {
            input_answer_timer_.expires_at(next_input_answer_);
            input_answer_timer_.async_wait([self = shared_from_this()](boost::system::error_code) {
                if (self->input_refusal_due_) {
                    protocol::input_rejected due = std::move(*self->input_refusal_due_);
                    self->input_refusal_due_.reset();
                    self->next_input_answer_ = clock::time_point{};
                    --self->inputs_refused_unanswered_;  // counted again by the call below
                    --self->inputs_refused_in_window_;
                    self->answer_refused_input(std::move(due));
                }
            });
        }
        return;
    }
    next_input_answer_ = now + std::chrono::seconds{1};
    rejection.refused = std::exchange(inputs_refused_unanswered_, 0);
    queue_reply(protocol::encode(protocol::server_control{std::move(rejection)}));
}

void session::request_resync(const char* why, resync_cause cause) {
    // Drop every droppable frame not being written; keep the order of the rest.
    std::deque<queued> kept;
    for (std::size_t i = 0; i < queue_.size(); ++i) {
        if (i >= started_frames() && queue_[i].droppable()) {
            unqueue_bytes(queue_[i].frame->size());
            droppable_bytes_ -= queue_[i].frame->size();
            count_dropped(1);
        } else {
            kept.push_back(std::move(queue_[i]));
        }
    }
    queue_ = std::move(kept);
    if (!resync_pending_) {
        owner_.counters().resync(cause);
        traffic_.resyncs.fetch_add(1, std::memory_order_relaxed);
        std::size_t suppressed = 0;
        if (owner_.client_warnings().allow(suppressed)) {
            spdlog::warn("client {} ({}) resync: {}{}", id_, printable(name_), why,
                         suppressed_note(suppressed));
        }
    }
    resync_pending_ = true;
    wake_writer_.cancel();
}

// `self` keeps the session alive for as long as the coroutine runs.
awaitable<void> session::read_loop([[maybe_unused]] std::shared_ptr<session> self) {
    // TLS: bounded by the Hello deadline (or a refusal's close deadline) like everything
    // before Hello; the writer waits for it.
    if (const auto ec = co_await stream_->handshake(); ec) {
        if (is_page_served(ec)) {
            phase_ = phase::closing;  // a page served (--web-root) is no failure: close() logs nothing
        }
        close(std::string{stream_->transport()} + " handshake failed: " + ec.message(),
              disconnect_reason::network_error);
        co_return;
    }
    stream_ready_ = true;
    wake_writer_.cancel();
    if (phase_ == phase::handshake) {
        co_await read_frames();
    }
    co_await discard_input();
}

awaitable<void> session::read_frames() {
    const auto& config = owner_.config();
    std::array<std::uint8_t, protocol::frame_prefix_bytes> prefix{};
    while (phase_ == phase::handshake || phase_ == phase::joined) {
        // Backpressure: replies (Pongs, CommandResults, errors) to a client that sends but does
        // not read would otherwise pile up, and so would replies waiting for the tick. Stop
        // reading until they drain; its own sends then stall in TCP, and the stall timeout cuts
        // it off if it never reads.
        // And while Hello is with the server: what follows it depends on the answer.
        while ((control_backlog() > config.queue_bytes ||
                awaiting_results_ >= max_awaiting_results || admitting_) &&
               (phase_ == phase::handshake || phase_ == phase::joined)) {
            // Not reading is our choice here, not the client's: no read deadline runs (a
            // snapshot of a large world can take longer to send than the frame timeout), except
            // that Hello stays due by its deadline.
            read_deadline_ = phase_ == phase::handshake ? hello_deadline_ : clock::time_point::max();
            read_deadline_reason_ = "no Hello within the handshake timeout";
            resume_reading_.expires_at(clock::time_point::max());
            co_await resume_reading_.async_wait(use_tuple);
        }
        if (phase_ != phase::handshake && phase_ != phase::joined) {
            break;
        }
        if (phase_ == phase::joined) {
            read_deadline_ = clock::now() + config.idle_timeout;
            read_deadline_reason_ = "idle timeout";
        } else {
            read_deadline_ = hello_deadline_;
            read_deadline_reason_ = "no Hello within the handshake timeout";
        }
        // The first byte of a frame starts its deadline: a prefix trickled a byte at a time
        // is a started frame too.
        std::size_t have = 0;
        while (have < prefix.size()) {
            auto [ec, n] = co_await stream_->read_some(asio::buffer(prefix.data() + have,
                                                                    prefix.size() - have));
            if (ec) {
                if (is_framing_violation(ec)) {
                    owner_.counters().invalid_frame();
                    end(ec.message(), disconnect_reason::protocol_error);
                    co_return;
                }
                input_ended_ = true;
                close(ec == asio::error::eof ? "client closed the connection" : ec.message(),
                      ended_by(ec));
                co_return;
            }
            count_traffic();
            if (have == 0) {
                read_deadline_ = clock::now() + config.frame_timeout;
                read_deadline_reason_ = "frame not completed in time";
                // Starting a frame does not extend the handshake: Hello is due by its deadline.
                if (phase_ == phase::handshake && hello_deadline_ < read_deadline_) {
                    read_deadline_ = hello_deadline_;
                    read_deadline_reason_ = "no Hello within the handshake timeout";
                }
            }
            have += n;
        }
        const std::uint32_t word = protocol::read_prefix(prefix);
        // A compact frame only from a client that speaks them; from any other its prefix is a
        // length over the limit, as it always was.
        const bool compact =
            protocol::is_compact(word) && client_version_ >= protocol::compact_input_protocol_version;
        const std::uint32_t length = compact ? protocol::compact_of(word).length : word;
        if (length > config.max_frame_bytes) {
            owner_.counters().invalid_frame();
            end("frame of " + std::to_string(length) + " bytes exceeds the limit of " +
                    std::to_string(config.max_frame_bytes),
                disconnect_reason::protocol_error);
            co_return;
        }
        read_buffer_.resize(protocol::frame_prefix_bytes + length);
        std::copy(prefix.begin(), prefix.end(), read_buffer_.begin());
        auto [body_ec, body_n] = co_await stream_->read(
            asio::buffer(read_buffer_.data() + protocol::frame_prefix_bytes, length));
        count_traffic();
        if (body_ec) {
            if (is_framing_violation(body_ec)) {
                owner_.counters().invalid_frame();
                end(body_ec.message(), disconnect_reason::protocol_error);
                co_return;
            }
            input_ended_ = true;
            close(body_ec == asio::error::eof ? "client closed the connection"
                                              : body_ec.message(),
                  ended_by(body_ec));
            co_return;
        }
        if (phase_ != phase::handshake && phase_ != phase::joined) {
            break;  // disconnected by the server while this frame arrived: not answered
        }
        owner_.counters().frame_received();
        if (compact) {
            if (!handle_compact(protocol::compact_of(word).kind)) {
                co_return;
            }
            continue;
        }
        protocol::decoded_client decoded = protocol::decode_client_frame(read_buffer_, owner_.types().types());
        if (!decoded.message) {
            if (decoded.error.fatal) {
                owner_.counters().invalid_frame();
                std::size_t suppressed = 0;
                if (owner_.client_warnings().allow(suppressed)) {
                    spdlog::warn("client {} from {}: {}{}", id_, remote(), decoded.error.message,
                                 suppressed_note(suppressed));
                }
                end(decoded.error.message, disconnect_reason::protocol_error);
                co_return;
            }
            if (decoded.error.input_tick) {
                input_reference_.reset();  // a refused full Input leaves no reference
                owner_.counters().input_refused();
                answer_refused_input(protocol::input_rejected{
                    *decoded.error.input_tick,
                    phase_ == phase::joined ? decoded.error.code : wire::ErrorCode::NotJoined,
                    phase_ == phase::joined ? decoded.error.message
                                            : std::string{"send Hello before Input"},
                    1});
                continue;
            }
            reject_command(decoded.error);
            continue;
        }
        if (const auto* in = std::get_if<protocol::input>(&*decoded.message)) {
            input_reference_ = protocol::reference_of(*in, owner_.types().types());
        }
        handle(std::move(*decoded.message));
    }
}

bool session::handle_compact(std::uint8_t kind) {
    if (kind != static_cast<std::uint8_t>(protocol::compact_kind::input)) {
        owner_.counters().invalid_frame();
        end("unknown compact frame kind " + std::to_string(kind), disconnect_reason::protocol_error);
        return false;
    }
    protocol::input in;
    const std::span<const std::uint8_t> body{read_buffer_.data() + protocol::frame_prefix_bytes,
                                             read_buffer_.size() - protocol::frame_prefix_bytes};
    if (auto error = protocol::decode_compact_input(
            body, owner_.types().types(), input_reference_ ? &*input_reference_ : nullptr, in)) {
        owner_.counters().input_refused();
        answer_refused_input(protocol::input_rejected{*error->input_tick, error->code,
                                                      std::move(error->message), 1});
        return true;
    }
    handle_input(std::move(in));
    return true;
}

awaitable<void> session::discard_input() {
    // Closing: read and drop what the client still sends until it closes its side or the
    // writer closes the socket. Closing with unread input would make our kernel answer with a
    // reset, and the client's kernel would then discard the replies and Disconnect in flight.
    std::array<std::uint8_t, 4096> sink{};
    while (phase_ != phase::closed && !input_ended_) {
        auto [ec, n] = co_await stream_->read_some(asio::buffer(sink));
        count_traffic();
        if (is_framing_violation(ec)) {
            continue;  // frames no longer matter: only the end of the input does
        }
        if (ec) {
            input_ended_ = true;
            if (fin_sent_ || ec != asio::error::eof) {
                close(ec == asio::error::eof ? "disconnected" : ec.message(), ended_by(ec));
            }
        }
    }
    wake_writer_.cancel();
}

void session::reply_now_or_in_order(protocol::command_result result) {
    if (awaiting_results_ > 0) {
        ++awaiting_results_;
        asio::post(owner_.world_context(), [self = shared_from_this(), result = std::move(result)]() mutable {
            self->owner_.queue_result(self, std::move(result));
        });
    } else {
        owner_.counters().command(static_cast<std::uint16_t>(result.code));
        queue_reply(protocol::encode(protocol::server_control{result}));
    }
}

void session::reject_command(const protocol::decode_error& error) {
    // Before Hello every command is NotJoined, however it was malformed.
    const bool joined = phase_ == phase::joined;
    reply_now_or_in_order(protocol::command_result{
        error.request_id.value_or(0), false, joined ? error.code : wire::ErrorCode::NotJoined,
        joined ? error.message : std::string{"send Hello before commands"}, {}});
}

void session::refuse_rate_limited(std::uint32_t request_id) {
    reply_now_or_in_order(protocol::command_result{
        request_id, false, wire::ErrorCode::RateLimited,
        "more than " + std::to_string(static_cast<int>(owner_.config().command_rate)) +
            " commands per second",
        {}});
}

void session::handle(protocol::client_message message) {
    if (auto* h = std::get_if<protocol::hello>(&message)) {
        if (phase_ != phase::handshake) {
            end("Hello sent twice", disconnect_reason::protocol_error);
            return;
        }
        name_ = h->client_name;
        client_version_ = h->version;
        // The server admits (its thread owns the owners and the count) and answers through
        // admitted(), after queuing Welcome and the snapshot; reading waits until then.
        admitting_ = true;
        asio::post(owner_.world_context(), [self = shared_from_this(), hello = std::move(*h)] {
            self->owner_.hello(self, hello);
        });
        return;
    }
    if (auto* p = std::get_if<protocol::ping>(&message)) {
        // Answered before Hello too: a liveness probe need not join.
        queue_reply(protocol::encode(
            protocol::server_control{protocol::pong{p->nonce, owner_.ticks_done()}}));
        return;
    }
    if (auto* in = std::get_if<protocol::input>(&message)) {
        handle_input(std::move(*in));
        return;
    }
    if (phase_ != phase::joined) {
        if (std::holds_alternative<protocol::resync_request>(message)) {
            end("ResyncRequest before Hello", disconnect_reason::protocol_error);
            return;
        }
        reject_command(protocol::decode_error{wire::ErrorCode::NotJoined, "", request_id_of(message),
                                              false, std::nullopt});
        return;
    }
    // Commands and ResyncRequests share the per-client budget.
    const auto now = clock::now();
    if (!commands_.try_take(now)) {
        ++rate_limited_;
        owner_.counters().rate_limited(limited_message::command);
        if (now - abuse_window_start_ > abuse_window) {
            abuse_window_start_ = now;
            abuse_in_window_ = 0;
        }
        refuse_rate_limited(request_id_of(message));
        if (++abuse_in_window_ > abuse_limit) {
            end("command rate limit exceeded persistently", disconnect_reason::abuse);
        }
        return;
    }
    if (auto* r = std::get_if<protocol::resync_request>(&message)) {
        handle_resync(*r);
        return;
    }
    if (auto* f = std::get_if<protocol::focus>(&message)) {
        // The world's business, on its thread; no reply: the next frames show the new view.
        asio::post(owner_.world_context(), [self = shared_from_this(), focus = *f] {
            self->owner_.set_focus(*self, focus);
        });
        return;
    }
    if (read_only_) {
        reply_now_or_in_order(protocol::command_result{
            request_id_of(message), false, wire::ErrorCode::ReadOnly,
            "the inspector is read-only (start the server with --inspector-writes)", {}});
        return;
    }
    // A command: applied at the next tick in arrival order.
    ++awaiting_results_;
    asio::post(owner_.world_context(), [self = shared_from_this(), message = std::move(message)]() mutable {
        self->owner_.queue_command(self, std::move(message));
    });
}

void session::handle_input(protocol::input input) {
    const auto refuse = [&](wire::ErrorCode code, std::string why) {
        owner_.counters().input_refused();
        answer_refused_input(protocol::input_rejected{input.first_tick, code, std::move(why), 1});
    };
    if (phase_ != phase::joined) {
        refuse(wire::ErrorCode::NotJoined, "send Hello before Input");
        return;
    }
    if (observer_) {
        refuse(wire::ErrorCode::NotOwner, "an observer (the inspector) sends no input");
        return;
    }
    if (!inputs_.try_take(clock::now())) {
        owner_.counters().rate_limited(limited_message::input);
        refuse(wire::ErrorCode::RateLimited,
               "more than " + std::to_string(static_cast<int>(owner_.config().input_rate)) +
                   " Input frames per second");
        return;
    }
    // No reply, and no place among the commands: the world keeps it for its tick.
    asio::post(owner_.world_context(), [self = shared_from_this(), input = std::move(input)]() mutable {
        self->owner_.queue_input(self, std::move(input));
    });
}

void session::handle_resync(const protocol::resync_request& request) {
    // Each one would cost a whole snapshot: at most one per interval, the rest coalesced.
    const auto now = clock::now();
    if (now - resync_window_start_ > abuse_window) {
        resync_window_start_ = now;
        resyncs_in_window_ = 0;
    }
    if (++resyncs_in_window_ > resync_abuse_limit) {
        owner_.counters().resync_requested(false);
        end("ResyncRequests exceeded " + std::to_string(resync_abuse_limit) + " per " +
                std::to_string(abuse_window.count()) + " s",
            disconnect_reason::abuse);
        return;
    }
    if (resync_pending_ || resync_deferred_ || now < next_resync_allowed_) {
        owner_.counters().resync_requested(true);
        resync_deferred_ = !resync_pending_;
        return;
    }
    spdlog::debug("client {} ({}) asked for a resync: {}", id_, printable(name_),
                  printable(request.reason));
    next_resync_allowed_ = now + owner_.config().resync_interval;
    owner_.counters().resync_requested(false);
    request_resync("requested by the client", resync_cause::client_request);
}

awaitable<void> session::write_loop([[maybe_unused]] std::shared_ptr<session> self) {
    std::vector<asio::const_buffer> buffers;
    for (;;) {
        if (phase_ == phase::closed) {
            co_return;
        }
        if (queue_.empty() || !stream_ready_) {
            if (!stream_ready_) {
                // Nothing may be written before the TLS handshake completes.
            } else if (phase_ == phase::closing) {
                if (!fin_sent_) {
                    // Everything owed is sent: FIN, then close once the client closed too
                    // (the reader drains its input) or the close deadline passed.
                    fin_sent_ = true;
                    stream_->shutdown_send();
                }
                if (input_ended_) {
                    close("disconnected", disconnect_reason::client_closed);
                    co_return;
                }
            } else if (resync_pending_ && phase_ == phase::joined && !snapshot_requested_) {
                // The snapshot comes from the server's thread (between two ticks), then
                // snapshot_sent(); until then deltas are dropped as before.
                snapshot_requested_ = true;
                asio::post(owner_.world_context(), [self = shared_from_this()] { self->owner_.resync(self); });
            }
            wake_writer_.expires_at(clock::time_point::max());
            co_await wake_writer_.async_wait(use_tuple);
            continue;
        }
        gather(buffers);
        in_flight_ = buffers.size();
        in_flight_droppable_bytes_ = 0;
        for (std::size_t i = 0; i < in_flight_; ++i) {
            if (queue_[i].droppable()) {
                in_flight_droppable_bytes_ += queue_[i].frame->size();
            }
        }
        write_deadline_ = clock::now() + owner_.config().stall_timeout;
        auto [ec, written] = co_await stream_->write(buffers);
        (void)written;  // counted at the socket, headers included (count_traffic)
        write_deadline_ = clock::time_point::max();
        if (ec) {
            close(ec.message(), disconnect_reason::network_error);
            co_return;
        }
        count_traffic(in_flight_);
        for (std::size_t i = 0; i < in_flight_; ++i) {
            pop_written();
        }
        in_flight_ = 0;
        in_flight_droppable_bytes_ = 0;
        if (control_backlog() <= owner_.config().queue_bytes) {
            resume_reading_.cancel();
        }
    }
}

namespace {

std::int64_t steady_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

}  // namespace

void session::note_tick_written() noexcept {
    const std::int64_t now = steady_ns();
    const std::int64_t last = last_tick_written_ns_.exchange(now, std::memory_order_relaxed);
    if (last != 0) {
        const auto us = static_cast<std::uint64_t>(std::max<std::int64_t>(now - last, 0) / 1000);
        // One writer (this session's thread): a take() between the load and the store leaves
        // this wait for the next call, which is where it ended.
        if (us > longest_tick_wait_us_.load(std::memory_order_relaxed)) {
            longest_tick_wait_us_.store(us, std::memory_order_relaxed);
        }
    }
}

std::uint64_t session::take_longest_tick_wait_us() noexcept {
    const std::int64_t last = last_tick_written_ns_.load(std::memory_order_relaxed);
    if (last == 0) {
        return 0;
    }
    const std::int64_t now = steady_ns();
    const auto waiting = static_cast<std::uint64_t>(std::max<std::int64_t>(now - last, 0) / 1000);
    return std::max(longest_tick_wait_us_.exchange(0, std::memory_order_relaxed), waiting);
}

awaitable<void> session::watchdog([[maybe_unused]] std::shared_ptr<session> self) {
    asio::steady_timer timer{stream_->get_executor()};
    while (phase_ != phase::closed) {
        // On a grid shared by every session: one wake-up of the server thread checks them all,
        // instead of one per session per period (measurable CPU with many idle clients).
        const auto since_epoch = clock::now().time_since_epoch();
        timer.expires_at(clock::time_point{since_epoch - since_epoch % watchdog_period +
                                           watchdog_period});
        co_await timer.async_wait(use_tuple);
        const auto now = clock::now();
        if (phase_ == phase::closed) {
            break;
        }
        if (now > close_deadline_) {
            close("flush deadline passed", disconnect_reason::timeout);
        } else if (now > write_deadline_) {
            close("not reading: no write progress for " +
                      std::to_string(owner_.config().stall_timeout.count()) + " ms",
                  disconnect_reason::stalled);
        } else if (now > read_deadline_ && phase_ != phase::closing && phase_ != phase::finishing) {
            close(read_deadline_reason_, disconnect_reason::timeout);
        } else if (resync_deferred_ && now >= next_resync_allowed_ && phase_ == phase::joined) {
            resync_deferred_ = false;
            next_resync_allowed_ = now + owner_.config().resync_interval;
            request_resync("requested by the client (coalesced)", resync_cause::client_request);
        }
    }
}

}  // namespace ecsnet::server
