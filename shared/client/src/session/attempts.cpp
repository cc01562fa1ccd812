// The connection attempts of a session: start, drop, reconnect with backoff, the bytes taken
// from and handed to the network side, the deadlines (session/impl.hpp).
#include <boost/asio/post.hpp>

#include <algorithm>
#include <stdexcept>

#include "impl.hpp"
#include "link.hpp"

namespace ecsnet::client {

namespace asio = boost::asio;
using time_point = std::chrono::steady_clock::time_point;
using std::chrono::milliseconds;
using detail::sentence_part;

namespace {

std::string millis(milliseconds d) { return std::to_string(d.count()) + " ms"; }

}  // namespace

session::impl::impl(session_options o)
    : options{std::move(o)},
      endpoint{options.connect.host + ":" + std::to_string(options.connect.port)},
      reader{options.connect.max_frame_bytes},
      clock{options.clock_options} {
    if (!options.connect.join) {
        throw client_error("a session always joins: connect_options::join must be true");
    }
    const auto& r = options.reconnect;
    if (options.ping_interval <= milliseconds{0} || options.silence_timeout <= milliseconds{0} ||
        options.connect.timeout <= milliseconds{0} || options.max_send_queue_bytes == 0 ||
        options.max_receive_queue_bytes == 0 || r.first_delay <= milliseconds{0} ||
        r.max_delay < r.first_delay || r.within <= milliseconds{0}) {
        throw client_error(
            "session options: the intervals, timeouts and queue bounds must be positive, and "
            "reconnect.max_delay at least reconnect.first_delay");
    }
    if (options.connect.tls) {
        tls.emplace(detail::make_tls_context(options.connect.ca_file));
    }
    install_mirror_events();
    work.emplace(io.get_executor());
    start_attempt(std::chrono::steady_clock::now());
    if (options.network_thread) {
        network = std::thread([this] {
            for (;;) {
                try {
                    io.run();
                    return;
                } catch (const std::exception& e) {
                    const std::lock_guard lock{network_mutex};
                    network_error = e.what();
                }
            }
        });
    }
}

session::impl::~impl() {
    drop_link();
    work.reset();
    if (network.joinable()) {
        network.join();
    } else {
        try {
            io.poll();  // the stopped link's aborted operations complete
        } catch (...) {  // NOLINT(bugprone-empty-catch): nothing to report to any more
        }
    }
}

void session::impl::start_attempt(time_point now) {
    ++attempt;
    channel = std::make_shared<detail::channel>(options.max_receive_queue_bytes);
    reader = protocol::frame_reader{options.connect.max_frame_bytes,
                                    options.connect.protocol_version >= protocol::compact_input_protocol_version};
    fed = 0;
    consumed = 0;
    arrivals.clear();
    failure.reset();
    welcomed = false;
    attempt_deadline = {};  // set by the next check: the sockets may not run before update()
    last_received = now;
    // A reconnect presents the resume key alone: the connect token was used up.
    const bool resuming = welcome.has_value();
    const protocol::hello hello{options.connect.protocol_version, options.connect.name,
                                options.connect.token,
                                resuming ? welcome->resume_key : options.connect.resume_key,
                                resuming ? std::string{} : options.connect.connect_token};
    const protocol::frame frame = protocol::encode(hello, protocol::schema{});
    channel->outgoing.push_back(frame);
    channel->unsent_bytes = frame->size();
    ++stats.frames_sent;
    stats.bytes_sent += frame->size();
    link = std::make_shared<detail::link>(
        io, channel,
        detail::transport_options{.host = options.connect.host,
                                  .port = options.connect.port,
                                  .tls = tls ? &*tls : nullptr,
                                  .websocket = options.connect.websocket,
                                  .ws_path = options.connect.ws_path});
    asio::post(io, [l = link] { l->start(); });
}

void session::impl::drop_link() noexcept {
    try {
        if (link && !options.network_thread) {
            // Only update() runs the io_context here: a game that stops calling it once the
            // session closed must not leave the socket open until the session goes.
            link->stop();
        } else if (link) {
            asio::post(io, [l = std::move(link)] { l->stop(); });
        }
    } catch (...) {  // NOLINT(bugprone-empty-catch): the link then stops when the session goes
    }
    link.reset();
    channel.reset();
    failure.reset();
    arrivals.clear();
    welcomed = false;
    flush_wanted = false;
}

void session::impl::post_flush() {
    if (link) {
        asio::post(io, [l = link] { l->flush(); });
    }
    flush_wanted = false;
}

void session::impl::poll() {
    if (options.network_thread) {
        std::optional<std::string> error;
        {
            const std::lock_guard lock{network_mutex};
            error = std::exchange(network_error, std::nullopt);
        }
        if (error) {
            finish("the network thread failed: " + *error);
        }
        return;
    }
    try {
        io.poll();
    } catch (const std::exception& e) {
        finish(std::string{"network failure: "} + e.what());
    }
}

bool session::impl::enqueue(protocol::frame f) {
    if (!channel) {
        return false;
    }
    const std::size_t size = f->size();
    bool overflow = false;
    {
        const std::lock_guard lock{channel->mutex};
        if (channel->failure) {
            return false;
        }
        overflow = channel->unsent_bytes + size > options.max_send_queue_bytes;
        if (overflow) {
            // Handled as a lost connection at the next receive(), after what already arrived.
            channel->failure = detail::link_failure{
                "send queue full: " + std::to_string(channel->unsent_bytes) +
                    " bytes not yet taken by the server, the bound is " +
                    std::to_string(options.max_send_queue_bytes),
                false};
        } else {
            channel->outgoing.push_back(std::move(f));
            channel->unsent_bytes += size;
        }
    }
    if (overflow) {
        if (link) {
            asio::post(io, [l = link] { l->stop(); });
        }
        return false;
    }
    ++stats.frames_sent;
    stats.bytes_sent += size;
    flush_wanted = true;
    return true;
}

void session::impl::receive() {
    if (!channel) {
        return;
    }
    std::vector<detail::channel::chunk> chunks;
    bool resume = false;
    {
        const std::lock_guard lock{channel->mutex};
        chunks.swap(channel->received);
        channel->received_bytes = 0;
        resume = std::exchange(channel->read_paused, false);
        if (channel->failure && !failure) {
            failure = channel->failure;
        }
        last_received = std::max(last_received, channel->last_received);
    }
    if (resume && link) {
        // Reading was paused by this side (the queue was full), not silent: the silence
        // timeout counts from now.
        last_received = std::max(last_received, std::chrono::steady_clock::now());
        asio::post(io, [l = link] { l->resume_reading(); });
    }
    if (std::exchange(join_pending, false)) {
        snapshot_completed();
    }
    for (const auto& c : chunks) {
        stats.bytes_received += c.wire_bytes;
        reader.feed(c.bytes);
        fed += c.bytes.size();
        arrivals.emplace_back(fed, c.at);
    }
    // Frames one at a time; an event that throws leaves the rest in the reader for the next
    // update().
    const std::uint64_t this_attempt = attempt;
    for (;;) {
        std::span<const std::uint8_t> frame;
        const auto status = reader.next(frame);
        if (status == protocol::frame_reader::status::need_more) {
            break;
        }
        if (status == protocol::frame_reader::status::oversize) {
            finish("the server at " + endpoint + " sent a frame larger than " +
                   std::to_string(reader.max_frame_bytes()) + " bytes");
            return;
        }
        consumed += frame.size();
        while (arrivals.size() > 1 && arrivals.front().first < consumed) {
            arrivals.pop_front();
        }
        handle_frame(frame, arrivals.front().second);
        if (attempt != this_attempt || state == session_state::closed) {
            return;  // the attempt ended: the rest belongs to a dropped connection
        }
    }
    if (failure) {
        const detail::link_failure f = *failure;
        lost(f, std::chrono::steady_clock::now());
    }
}

void session::impl::lost(const detail::link_failure& f, time_point now) {
    // A TLS or WebSocket server closes a plain TCP client at its first bytes, without a word.
    const bool other_transport = !options.connect.tls && !options.connect.websocket && !welcome &&
                                 !f.connecting &&
                                 (f.text == "server closed the connection" ||
                                  f.text == "connection reset by peer");
    const std::string joining =
        f.connecting ? f.text
                     : "cannot join " + endpoint + ": " + f.text +
                           (other_transport ? " (if it serves TLS, connect with tls; if it is a "
                                              "WebSocket port, with websocket)"
                                            : "");
    drop_link();
    switch (state) {
        case session_state::connecting:
            finish(joining);  // the first connection is not retried: the game decides
            return;
        case session_state::joined: {
            const std::string reason = "lost the connection to " + endpoint + ": " + f.text;
            if (!options.reconnect.enabled || welcome->resume_key.empty()) {
                finish(reason);
                return;
            }
            state = session_state::reconnecting;
            reconnect_deadline = now + options.reconnect.within;
            backoff = options.reconnect.first_delay;
            next_attempt = now + backoff;
            fire(active.disconnected, reason, true);
            return;
        }
        case session_state::reconnecting:
            backoff = std::min(backoff * 2, options.reconnect.max_delay);
            next_attempt = now + backoff;
            if (next_attempt >= reconnect_deadline) {
                finish("could not reconnect to " + endpoint + " within " +
                       millis(options.reconnect.within) + ": " + joining);
            }
            return;
        case session_state::closed:
            return;
    }
}

void session::impl::finish(std::string reason) {
    if (state == session_state::closed) {
        return;
    }
    drop_link();
    state = session_state::closed;
    closed_reason = std::move(reason);
    if (active.disconnected) {
        active.disconnected(closed_reason, false);
    }
}

void session::impl::check_deadlines(time_point now) {
    if (!link) {
        return;
    }
    if (state == session_state::joined) {
        if (now - last_received > options.silence_timeout) {
            lost({"nothing received for " + millis(options.silence_timeout), false}, now);
        }
        return;
    }
    if (attempt_deadline == time_point{}) {
        attempt_deadline = now + options.connect.timeout;
        if (state == session_state::reconnecting) {
            attempt_deadline = std::min(attempt_deadline, reconnect_deadline);
        }
    }
    if (now < attempt_deadline) {
        return;
    }
    bool connected = false;
    {
        const std::lock_guard lock{channel->mutex};
        connected = channel->connected;
    }
    lost({!connected  ? "cannot connect to " + endpoint + ": timed out"
          : !welcomed ? "timed out joining " + endpoint + " (no Welcome)"
                      : "timed out joining " + endpoint + " (no complete snapshot)",
          true},
         now);
}

}  // namespace ecsnet::client
