#include "ecsnet/server/session.hpp"

#include <algorithm>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <spdlog/spdlog.h>

#include "ecsnet/server/server.hpp"

namespace ecsnet::server {

namespace asio = boost::asio;
using asio::awaitable;
using clock = session::clock;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t max_frames_per_write = 64;
constexpr std::size_t max_bytes_per_write = 256 * 1024;
constexpr auto watchdog_period = std::chrono::milliseconds{200};
// Sustained abuse: more than this many rate-limited commands within the window disconnects.
constexpr std::uint64_t abuse_limit = 1000;
constexpr auto abuse_window = std::chrono::seconds{10};

std::string endpoint_text(const asio::ip::tcp::socket& socket) {
    boost::system::error_code ec;
    const auto ep = socket.remote_endpoint(ec);
    return ec ? std::string{"unknown"} : ep.address().to_string() + ":" + std::to_string(ep.port());
}

}  // namespace

session::session(asio::ip::tcp::socket socket, server& owner, std::uint32_t id)
    : socket_{std::move(socket)},
      owner_{owner},
      id_{id},
      remote_{endpoint_text(socket_)},
      wake_writer_{socket_.get_executor()},
      resume_reading_{socket_.get_executor()},
      commands_{owner.config().command_rate, owner.config().command_burst} {
    hello_deadline_ = clock::now() + owner_.config().hello_timeout;
    read_deadline_ = hello_deadline_;
}

session::~session() = default;

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
    asio::co_spawn(socket_.get_executor(), read_loop(shared_from_this()), log_failure("reader"));
    asio::co_spawn(socket_.get_executor(), write_loop(shared_from_this()), log_failure("writer"));
    asio::co_spawn(socket_.get_executor(), watchdog(shared_from_this()), log_failure("watchdog"));
}

void session::start() { spawn_coroutines(); }

void session::refuse(std::string reason) {
    phase_ = phase::joined;  // let push() queue the Disconnect
    push(protocol::encode(protocol::server_control{protocol::disconnect{reason}}), false);
    phase_ = phase::closing;
    close_deadline_ = clock::now() + owner_.config().shutdown_grace;
    read_deadline_ = clock::time_point::max();
    // Only the writer (flush then close) and the watchdog (deadline) run: nothing is read.
    asio::co_spawn(socket_.get_executor(), write_loop(shared_from_this()), asio::detached);
    asio::co_spawn(socket_.get_executor(), watchdog(shared_from_this()), asio::detached);
    spdlog::info("client {} from {} refused: {}", id_, remote_, reason);
}

void session::disconnect(std::string reason) {
    if (phase_ == phase::closing || phase_ == phase::closed) {
        return;
    }
    // Whatever was not sent yet is moot except what is being written now.
    while (queue_.size() > in_flight_) {
        queued_bytes_ -= queue_.back().frame->size();
        if (queue_.back().droppable) {
            droppable_bytes_ -= queue_.back().frame->size();
        }
        queue_.pop_back();
    }
    push(protocol::encode(protocol::server_control{protocol::disconnect{reason}}), false);
    phase_ = phase::closing;
    close_deadline_ = clock::now() + owner_.config().shutdown_grace;
    spdlog::info("client {} ({}) disconnecting: {}", id_, printable(name_), reason);
    notify_closed(reason);
}

void session::close_now(std::string reason) {
    if (phase_ == phase::closed) {
        return;
    }
    const bool announced = phase_ == phase::closing;
    phase_ = phase::closed;
    boost::system::error_code ignored;
    socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    wake_writer_.cancel();
    resume_reading_.cancel();
    if (!announced) {
        spdlog::info("client {} ({}) closed: {}", id_, printable(name_), reason);
    }
    notify_closed(reason);
}

void session::notify_closed(const std::string& reason) {
    if (!notified_closed_) {
        notified_closed_ = true;
        owner_.closed(*this, reason);
    }
}

void session::push(protocol::frame frame, bool droppable) {
    if (phase_ == phase::closing || phase_ == phase::closed) {
        return;
    }
    queued_bytes_ += frame->size();
    if (droppable) {
        droppable_bytes_ += frame->size();
    }
    queue_.push_back(queued{std::move(frame), droppable});
    wake_writer_.cancel();
}

void session::send(protocol::frame frame) { push(std::move(frame), false); }

void session::send_tick(const protocol::frame& delta, const protocol::frame* checksum) {
    if (phase_ != phase::joined || resync_pending_) {
        if (resync_pending_) {
            owner_.stats_.dropped_frames += checksum == nullptr ? 1 : 2;
        }
        return;
    }
    // The bound applies to deltas waiting behind the one being written: a tick's frames are
    // one unit, and a tick larger than the bound still reaches a client that keeps up. A resync
    // costs a snapshot, so in a world whose snapshot is larger than --queue-bytes a client may
    // lag by up to a snapshot's worth of deltas before it pays off: with smaller bounds, a
    // client joining a 1M-entity world (20 MB snapshot, 8 MB deltas) was resynced forever.
    const std::size_t tick_bytes = delta->size() + (checksum == nullptr ? 0 : (*checksum)->size());
    const std::size_t waiting = droppable_bytes_ - in_flight_droppable_bytes_;
    const std::size_t bound = std::max(owner_.config().queue_bytes, owner_.snapshot_bytes());
    if (waiting > 0 && waiting + tick_bytes > bound) {
        request_resync("outbound queue full");
        owner_.stats_.dropped_frames += checksum == nullptr ? 1 : 2;
        return;
    }
    push(delta, true);
    if (checksum != nullptr) {
        push(*checksum, true);
    }
}

void session::request_resync(const char* why) {
    // Drop every droppable frame not being written; keep the order of the rest.
    std::deque<queued> kept;
    for (std::size_t i = 0; i < queue_.size(); ++i) {
        if (i >= in_flight_ && queue_[i].droppable) {
            queued_bytes_ -= queue_[i].frame->size();
            droppable_bytes_ -= queue_[i].frame->size();
            ++owner_.stats_.dropped_frames;
        } else {
            kept.push_back(std::move(queue_[i]));
        }
    }
    queue_ = std::move(kept);
    if (!resync_pending_) {
        ++owner_.stats_.resyncs;
        std::size_t suppressed = 0;
        if (owner_.warnings().allow(suppressed)) {
            spdlog::warn("client {} ({}) resync: {}{}", id_, printable(name_), why,
                         suppressed == 0 ? std::string{}
                                         : " (" + std::to_string(suppressed) +
                                               " similar warnings suppressed)");
        }
    }
    resync_pending_ = true;
    wake_writer_.cancel();
}

// `self` keeps the session alive for as long as the coroutine runs.
awaitable<void> session::read_loop([[maybe_unused]] std::shared_ptr<session> self) {
    const auto& config = owner_.config();
    std::array<std::uint8_t, protocol::frame_prefix_bytes> prefix{};
    while (phase_ == phase::handshake || phase_ == phase::joined) {
        // Backpressure: replies (Pongs, CommandResults, errors) to a client that sends but does
        // not read would otherwise pile up. Stop reading until they drain; its own sends then
        // stall in TCP, and the stall timeout cuts it off if it never reads.
        while (control_backlog() > config.queue_bytes && phase_ != phase::closed) {
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
        auto [ec, n] = co_await asio::async_read(socket_, asio::buffer(prefix), use_tuple);
        if (ec) {
            close_now(ec == asio::error::eof ? "client closed the connection" : ec.message());
            co_return;
        }
        const std::uint32_t length = protocol::read_prefix(prefix);
        if (length > config.max_frame_bytes) {
            ++owner_.stats_.invalid_frames;
            disconnect("frame of " + std::to_string(length) + " bytes exceeds the limit of " +
                       std::to_string(config.max_frame_bytes));
            co_return;
        }
        // A frame once started must arrive whole in time: a trickle is cut off.
        read_deadline_ = clock::now() + config.frame_timeout;
        read_deadline_reason_ = "frame not completed in time";
        // Starting a frame does not extend the handshake: Hello is due by its deadline.
        if (phase_ == phase::handshake && hello_deadline_ < read_deadline_) {
            read_deadline_ = hello_deadline_;
            read_deadline_reason_ = "no Hello within the handshake timeout";
        }
        read_buffer_.resize(protocol::frame_prefix_bytes + length);
        std::copy(prefix.begin(), prefix.end(), read_buffer_.begin());
        auto [body_ec, body_n] = co_await asio::async_read(
            socket_, asio::buffer(read_buffer_.data() + protocol::frame_prefix_bytes, length),
            use_tuple);
        if (body_ec) {
            close_now(body_ec == asio::error::eof ? "client closed the connection"
                                                  : body_ec.message());
            co_return;
        }
        protocol::decoded_client decoded = protocol::decode_client_frame(read_buffer_);
        if (!decoded.message) {
            if (decoded.error.fatal) {
                ++owner_.stats_.invalid_frames;
                std::size_t suppressed = 0;
                if (owner_.warnings().allow(suppressed)) {
                    spdlog::warn("client {} from {}: {}{}", id_, remote_, decoded.error.message,
                                 suppressed == 0 ? std::string{}
                                                 : " (" + std::to_string(suppressed) +
                                                       " similar warnings suppressed)");
                }
                disconnect(decoded.error.message);
                co_return;
            }
            reject_command(decoded.error);
            continue;
        }
        handle(std::move(*decoded.message));
    }
}

void session::reject_command(const protocol::decode_error& error) {
    send(protocol::encode(protocol::server_control{
        protocol::command_result{error.request_id.value_or(0), false, error.code, error.message, {}}}));
}

void session::handle(protocol::client_message message) {
    if (auto* h = std::get_if<protocol::hello>(&message)) {
        if (phase_ != phase::handshake) {
            disconnect("Hello sent twice");
            return;
        }
        name_ = h->client_name;
        if (auto refusal = owner_.admit(*this, *h)) {
            ++owner_.stats_.refused;
            disconnect(*refusal);
            return;
        }
        phase_ = phase::joined;
        return;
    }
    if (auto* p = std::get_if<protocol::ping>(&message)) {
        // Answered before Hello too: the healthcheck pings without joining.
        send(protocol::encode(protocol::server_control{protocol::pong{p->nonce, owner_.tick()}}));
        return;
    }
    if (phase_ != phase::joined) {
        if (std::holds_alternative<protocol::resync_request>(message)) {
            disconnect("ResyncRequest before Hello");
            return;
        }
        reject_command(protocol::decode_error{wire::ErrorCode::NotJoined,
                                              "send Hello before commands",
                                              std::visit(
                                                  [](const auto& m) -> std::optional<std::uint32_t> {
                                                      if constexpr (requires { m.request_id; }) {
                                                          return m.request_id;
                                                      } else {
                                                          return std::nullopt;
                                                      }
                                                  },
                                                  message),
                                              false});
        return;
    }
    if (auto* r = std::get_if<protocol::resync_request>(&message)) {
        spdlog::info("client {} ({}) asked for a resync: {}", id_, printable(name_),
                     printable(r->reason));
        request_resync("requested by the client");
        return;
    }
    // A command: rate-limited here, applied at the next tick in arrival order.
    const auto now = clock::now();
    if (!commands_.try_take(now)) {
        ++rate_limited_;
        ++owner_.stats_.rate_limited;
        if (now - abuse_window_start_ > abuse_window) {
            abuse_window_start_ = now;
            abuse_in_window_ = 0;
        }
        if (++abuse_in_window_ > abuse_limit) {
            disconnect("command rate limit exceeded persistently");
            return;
        }
        const std::uint32_t request_id = std::visit(
            [](const auto& m) -> std::uint32_t {
                if constexpr (requires { m.request_id; }) {
                    return m.request_id;
                } else {
                    return 0;
                }
            },
            message);
        send(protocol::encode(protocol::server_control{protocol::command_result{
            request_id, false, wire::ErrorCode::RateLimited,
            "more than " + std::to_string(static_cast<int>(owner_.config().command_rate)) +
                " commands per second",
            {}}}));
        return;
    }
    owner_.queue_command(shared_from_this(), std::move(message));
}

awaitable<void> session::write_loop([[maybe_unused]] std::shared_ptr<session> self) {
    std::vector<asio::const_buffer> buffers;
    for (;;) {
        if (phase_ == phase::closed) {
            co_return;
        }
        if (queue_.empty()) {
            if (phase_ == phase::closing) {
                close_now("disconnected");
                co_return;
            }
            if (resync_pending_ && phase_ == phase::joined) {
                resync_pending_ = false;
                owner_.send_snapshot(*this);
                continue;
            }
            wake_writer_.expires_at(clock::time_point::max());
            co_await wake_writer_.async_wait(use_tuple);
            continue;
        }
        buffers.clear();
        std::size_t bytes = 0;
        for (const auto& q : queue_) {
            if (buffers.size() == max_frames_per_write ||
                (!buffers.empty() && bytes + q.frame->size() > max_bytes_per_write)) {
                break;
            }
            buffers.emplace_back(q.frame->data(), q.frame->size());
            bytes += q.frame->size();
        }
        in_flight_ = buffers.size();
        in_flight_droppable_bytes_ = 0;
        for (std::size_t i = 0; i < in_flight_; ++i) {
            if (queue_[i].droppable) {
                in_flight_droppable_bytes_ += queue_[i].frame->size();
            }
        }
        write_deadline_ = clock::now() + owner_.config().stall_timeout;
        auto [ec, written] = co_await asio::async_write(socket_, buffers, use_tuple);
        write_deadline_ = clock::time_point::max();
        if (ec) {
            close_now(ec.message());
            co_return;
        }
        owner_.stats_.bytes_out += written;
        for (std::size_t i = 0; i < in_flight_; ++i) {
            queued_bytes_ -= queue_.front().frame->size();
            if (queue_.front().droppable) {
                droppable_bytes_ -= queue_.front().frame->size();
            }
            queue_.pop_front();
        }
        in_flight_ = 0;
        in_flight_droppable_bytes_ = 0;
        if (control_backlog() <= owner_.config().queue_bytes) {
            resume_reading_.cancel();
        }
    }
}

awaitable<void> session::watchdog([[maybe_unused]] std::shared_ptr<session> self) {
    asio::steady_timer timer{socket_.get_executor()};
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
            close_now("flush deadline passed");
        } else if (now > write_deadline_) {
            close_now("not reading: no write progress for " +
                      std::to_string(owner_.config().stall_timeout.count()) + " ms");
        } else if (now > read_deadline_ && phase_ != phase::closing) {
            close_now(read_deadline_reason_);
        }
    }
}

}  // namespace ecsnet::server
