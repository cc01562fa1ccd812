#include "ecsnet/client/session.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>

#include <algorithm>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "transport.hpp"

namespace ecsnet::client {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using time_point = std::chrono::steady_clock::time_point;
using detail::sentence_part;
using std::chrono::milliseconds;

const char* to_string(session_state state) noexcept {
    switch (state) {
        case session_state::connecting:
            return "connecting";
        case session_state::joined:
            return "joined";
        case session_state::reconnecting:
            return "reconnecting";
        case session_state::closed:
            return "closed";
    }
    return "unknown";
}

namespace {

std::string millis(milliseconds d) { return std::to_string(d.count()) + " ms"; }

}  // namespace

namespace detail {

// Why a connection attempt ended. `connecting`: before the connection was up, and `text` is a
// whole sentence ("cannot connect to ..."); else `text` is the cause alone ("server closed the
// connection") and the session says what it ended.
struct link_failure {
    std::string text;
    bool connecting{false};
};

// What the two sides of one connection attempt hand each other, under `mutex`: the network
// side (link, on the thread that runs the io_context) appends what it reads and writes what
// update() queued; update() takes what was read and queues what to send. Nothing else of the
// session is shared between threads.
struct channel {
    struct chunk {
        std::vector<std::uint8_t> bytes;
        std::size_t wire_bytes;  // bytes and what carried them (WebSocket headers)
        time_point at;
    };

    explicit channel(std::size_t max_received) : max_received_bytes{max_received} {}

    std::mutex mutex;
    const std::size_t max_received_bytes;
    std::vector<chunk> received;
    std::size_t received_bytes{0};
    bool read_paused{false};  // received_bytes reached the bound: resume once taken
    bool connected{false};    // TCP (and TLS) up
    time_point last_received{};
    std::optional<link_failure> failure;
    std::deque<protocol::frame> outgoing;
    std::size_t unsent_bytes{0};  // queued or being written
};

// The sockets of one connection attempt: resolve, connect, TLS and/or the WebSocket upgrade,
// then read and write until it fails or is stopped. Runs only on the io_context's thread, once
// start() was posted there.
class link : public std::enable_shared_from_this<link> {
public:
    link(asio::io_context& io, std::shared_ptr<channel> ch, const transport_options& options)
        : transport_{make_transport(io, options)},
          resolver_{io},
          channel_{std::move(ch)},
          host_{options.host},
          port_{options.port},
          endpoint_{host_ + ":" + std::to_string(port_)},
          handshake_{options.tls != nullptr || options.websocket} {}

    void start() {
        if (stopped_) {
            return;
        }
        boost::system::error_code ec;
        const auto address = asio::ip::make_address(host_, ec);
        if (!ec) {  // no lookup for an address
            transport_->socket().async_connect(
                tcp::endpoint{address, port_},
                [self = shared_from_this()](const boost::system::error_code& e) {
                    self->connected(e);
                });
            return;
        }
        resolver_.async_resolve(
            host_, std::to_string(port_),
            [self = shared_from_this()](const boost::system::error_code& e,
                                        const tcp::resolver::results_type& endpoints) {
                if (self->stopped_) {
                    return;
                }
                if (e) {
                    self->fail("cannot resolve " + self->host_ + ": " + sentence_part(e.message()),
                               true);
                    return;
                }
                asio::async_connect(self->transport_->socket(), endpoints,
                                    [self](const boost::system::error_code& e2, const tcp::endpoint&) {
                                        self->connected(e2);
                                    });
            });
    }

    // Writes what update() queued, if nothing is being written.
    void flush() {
        if (stopped_ || !open_ || writing_) {
            return;
        }
        {
            const std::lock_guard lock{channel_->mutex};
            while (!channel_->outgoing.empty()) {
                writing_frames_.push_back(std::move(channel_->outgoing.front()));
                channel_->outgoing.pop_front();
            }
        }
        if (writing_frames_.empty()) {
            return;
        }
        std::vector<asio::const_buffer> buffers;
        buffers.reserve(writing_frames_.size());
        for (const auto& f : writing_frames_) {
            buffers.push_back(asio::buffer(*f));
        }
        writing_ = true;
        transport_->async_write(std::move(buffers),
                                [self = shared_from_this()](const std::string& failure,
                                                            std::size_t n) {
                                    self->written(failure, n);
                                });
    }

    void resume_reading() {
        if (open_) {
            read();
        }
    }

    void stop() {
        stopped_ = true;
        resolver_.cancel();
        transport_->close();
    }

private:
    void connected(const boost::system::error_code& ec) {
        if (stopped_) {
            return;
        }
        if (ec) {
            fail("cannot connect to " + endpoint_ + ": " + sentence_part(ec.message()), true);
            return;
        }
        boost::system::error_code ignored;
        transport_->socket().set_option(tcp::no_delay(true), ignored);
        if (!handshake_) {
            ready();
            return;
        }
        transport_->async_handshake([self = shared_from_this()](const std::string& failure) {
            if (self->stopped_) {
                return;
            }
            if (!failure.empty()) {
                self->fail(failure, true);
                return;
            }
            self->ready();
        });
    }

    void ready() {
        open_ = true;
        {
            const std::lock_guard lock{channel_->mutex};
            channel_->connected = true;
        }
        flush();
        read();
    }

    void read() {
        if (stopped_ || reading_) {
            return;
        }
        reading_ = true;
        transport_->async_read([self = shared_from_this()](const std::string& failure,
                                                           std::span<const std::uint8_t> bytes,
                                                           std::size_t wire_bytes) {
            self->received(failure, bytes, wire_bytes);
        });
    }

    void received(const std::string& failure, std::span<const std::uint8_t> bytes,
                  std::size_t wire_bytes) {
        reading_ = false;
        if (stopped_) {
            return;
        }
        if (!failure.empty()) {
            fail(failure, false);
            return;
        }
        const auto now = std::chrono::steady_clock::now();
        bool pause = false;
        {
            const std::lock_guard lock{channel_->mutex};
            channel_->received.push_back(
                {std::vector<std::uint8_t>(bytes.begin(), bytes.end()), wire_bytes, now});
            channel_->received_bytes += bytes.size();
            channel_->last_received = now;
            pause = channel_->received_bytes >= channel_->max_received_bytes;
            channel_->read_paused = pause;
        }
        if (!pause) {
            read();
        }
    }

    void written(const std::string& failure, std::size_t n) {
        writing_ = false;
        writing_frames_.clear();
        if (stopped_) {
            return;
        }
        if (!failure.empty()) {
            fail("sending failed: " + failure, false);
            return;
        }
        {
            const std::lock_guard lock{channel_->mutex};
            channel_->unsent_bytes -= std::min(n, channel_->unsent_bytes);
        }
        flush();
    }

    void fail(std::string text, bool connecting) {
        if (stopped_) {
            return;
        }
        {
            const std::lock_guard lock{channel_->mutex};
            if (!channel_->failure) {
                channel_->failure = link_failure{std::move(text), connecting};
            }
        }
        stop();
    }

    std::unique_ptr<transport> transport_;
    tcp::resolver resolver_;
    std::shared_ptr<channel> channel_;
    std::string host_;
    std::uint16_t port_;
    std::string endpoint_;
    bool handshake_;  // TLS or WebSocket
    std::vector<protocol::frame> writing_frames_;
    bool open_{false};
    bool reading_{false};
    bool writing_{false};
    bool stopped_{false};
};

}  // namespace detail

// The game's side: everything here runs on the thread that calls update() (and the network
// side too, without a network thread).
struct session::impl {
    explicit impl(session_options o);
    impl(const impl&) = delete;
    impl& operator=(const impl&) = delete;
    ~impl();

    // ---- the connection attempts ----------------------------------------------------------
    void start_attempt(time_point now);
    // Stops the current attempt's sockets and forgets what it had not delivered.
    void drop_link() noexcept;
    void post_flush();
    void poll();
    bool enqueue(protocol::frame f);
    bool enqueue(const protocol::client_message& message) {
        return enqueue(protocol::encode(message, mirror.types()));
    }

    // ---- what arrived, in order -------------------------------------------------------------
    void receive();
    void handle_frame(std::span<const std::uint8_t> bytes, time_point at);
    void replicate(const wire::ServerMessage& message, time_point at);
    void control(const wire::ServerMessage& message, time_point at);
    void welcomed_by(protocol::welcome w, time_point at);
    void snapshot_completed();

    // ---- state changes ----------------------------------------------------------------------
    void lost(const detail::link_failure& failure, time_point now);
    // Closed for good, with the last event: disconnected(reason, false).
    void finish(std::string reason);
    void check_deadlines(time_point now);

    // ---- what goes out each frame -----------------------------------------------------------
    void send_ping(time_point now);
    void send_input();

    // ---- events -------------------------------------------------------------------------------
    void install_mirror_events();
    template <typename Fn, typename... Args>
    void fire(const Fn& fn, Args&&... args) {
        if (state != session_state::closed && fn) {
            fn(std::forward<Args>(args)...);
        }
    }
    // Snapshots under interest management hold what is in view: what they drop went out of
    // view, it was not destroyed.
    [[nodiscard]] bool snapshot_of_view() const noexcept {
        return applying_snapshot && welcome && welcome->interest_radius > 0.0F;
    }
    void record_all(ecs::Entity e);
    void record(ecs::Entity e, std::uint32_t type);
    void restart_histories(std::uint64_t tick);

    session_options options;
    std::string endpoint;

    // The TLS context outlives the io_context, whose handlers hold links that use it.
    std::optional<asio::ssl::context> tls;
    asio::io_context io;
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
    std::thread network;
    std::mutex network_mutex;
    std::optional<std::string> network_error;  // a handler threw on the network thread

    // The current attempt; null between attempts and once closed.
    std::shared_ptr<detail::link> link;
    std::shared_ptr<detail::channel> channel;
    std::uint64_t attempt{0};
    protocol::frame_reader reader;
    // Bytes fed to the reader and taken out as frames, and when the bytes up to each offset
    // arrived: a frame arrived with its last byte.
    std::uint64_t fed{0};
    std::uint64_t consumed{0};
    std::deque<std::pair<std::uint64_t, time_point>> arrivals;
    std::optional<detail::link_failure> failure;  // taken from the channel, handled after its frames
    time_point attempt_deadline{};
    time_point last_received{};
    bool welcomed{false};  // this attempt's Welcome arrived
    bool flush_wanted{false};

    session_state state{session_state::connecting};
    std::string closed_reason;
    session_events events;
    session_events active;  // this update()'s: events may replace `events`
    bool in_update{false};

    time_point reconnect_deadline{};
    time_point next_attempt{};
    milliseconds backoff{0};

    protocol::mirror mirror;
    std::optional<protocol::welcome> welcome;
    std::optional<interpolation> history;
    std::vector<std::uint32_t> interpolated;  // wire ids
    std::vector<bool> is_interpolated;
    server_clock clock;
    bool applying_snapshot{false};
    bool snapshot_done{false};
    bool join_pending{false};

    ecs::Entity input_entity{};
    protocol::component_set input;
    std::uint64_t next_input_tick{0};  // 0: the next Input starts at the input tick
    std::uint64_t last_input_tick{0};
    std::optional<protocol::input_ack> last_ack;
    std::optional<protocol::input_rejected> last_rejected;

    time_point next_ping{};
    std::uint64_t ping_nonce{0};
    std::deque<std::pair<std::uint64_t, time_point>> pings;  // nonce, sent

    std::uint32_t last_request_id{0};
    session_stats stats;
};

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
    reader = protocol::frame_reader{options.connect.max_frame_bytes};
    fed = 0;
    consumed = 0;
    arrivals.clear();
    failure.reset();
    welcomed = false;
    attempt_deadline = {};  // set by the next check: the sockets may not run before update()
    last_received = now;
    // A reconnect presents the resume key alone: the connect token was used up.
    const bool resuming = welcome.has_value();
    const protocol::hello hello{protocol::protocol_version, options.connect.name,
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

void session::impl::handle_frame(std::span<const std::uint8_t> bytes, time_point at) {
    std::string why;
    const wire::ServerMessage* message = protocol::verify_server_frame(bytes, &why);
    if (message == nullptr) {
        finish("malformed frame from the server at " + endpoint + ": " + why);
        return;
    }
    ++stats.frames_received;
    switch (message->body_type()) {
        case wire::ServerBody::Snapshot:
        case wire::ServerBody::Delta:
        case wire::ServerBody::Checksum:
            if (!welcomed) {
                finish("the server at " + endpoint + " sent world state before Welcome");
                return;
            }
            replicate(*message, at);
            return;
        default:
            control(*message, at);
    }
}

void session::impl::replicate(const wire::ServerMessage& message, time_point at) {
    applying_snapshot = message.body_type() == wire::ServerBody::Snapshot;
    snapshot_done = false;
    struct reset {
        bool& flag;
        ~reset() { flag = false; }
    } done{applying_snapshot};
    bool applied = false;
    try {
        applied = mirror.apply(message);  // the world's events fire in here
    } catch (...) {
        // An event threw. A snapshot's last chunk is in all the same (its events come after
        // the swap): histories restart, and joined fires at the next update().
        const auto* snapshot = message.body_as_Snapshot();
        if (!snapshot_done && snapshot != nullptr &&
            snapshot->chunk() + 1 == snapshot->chunk_count() && mirror.ready() &&
            mirror.tick() == snapshot->tick()) {
            restart_histories(snapshot->tick());
            snapshot_done = true;
        }
        join_pending = snapshot_done;
        throw;
    }
    if (state == session_state::closed) {
        return;
    }
    if (!applied) {
        // Inconsistent: the mirror waits for a new snapshot, asked for once per inconsistency.
        if (auto reason = mirror.take_resync_reason()) {
            (void)enqueue(protocol::resync_request{reason->substr(0, protocol::max_reason_bytes)});
        }
        return;
    }
    if (message.body_type() == wire::ServerBody::Delta) {
        clock.on_tick(message.body_as_Delta()->tick(), at);
        if (history) {
            // A tick with no interpolated change is news too: what did not move stands still
            // instead of being extrapolated along its last step.
            history->on_tick(message.body_as_Delta()->tick());
        }
    }
    if (snapshot_done) {
        clock.on_tick(mirror.tick(), at);
        snapshot_completed();
    }
}

void session::impl::control(const wire::ServerMessage& message, time_point at) {
    std::string why;
    auto decoded = protocol::decode_server_control(message, &why);
    if (!decoded) {
        finish("invalid message from the server at " + endpoint + ": " + why);
        return;
    }
    if (auto* w = std::get_if<protocol::welcome>(&*decoded)) {
        welcomed_by(std::move(*w), at);
    } else if (const auto* r = std::get_if<protocol::command_result>(&*decoded)) {
        fire(active.command_result, *r);
    } else if (const auto* p = std::get_if<protocol::pong>(&*decoded)) {
        const auto it = std::find_if(pings.begin(), pings.end(),
                                     [&](const auto& sent) { return sent.first == p->nonce; });
        if (it != pings.end()) {
            clock.on_pong(it->second, at);
            pings.erase(pings.begin(), it + 1);
        }
    } else if (const auto* a = std::get_if<protocol::input_ack>(&*decoded)) {
        last_ack = *a;
        clock.on_input_ack(*a, at);
    } else if (const auto* rejected = std::get_if<protocol::input_rejected>(&*decoded)) {
        last_rejected = *rejected;
        fire(active.input_rejected, *rejected);
    } else if (const auto* d = std::get_if<protocol::disconnect>(&*decoded)) {
        // The server's word is final: a refusal (token, version, full) or an end (kicked,
        // signed in elsewhere, shutting down). Reconnecting would only repeat it.
        const std::string reason = d->reason.empty() ? "no reason given" : d->reason;
        if (!welcomed) {
            finish("the server at " + endpoint + " refused" +
                   (state == session_state::reconnecting ? " the reconnect: " : ": ") + reason);
        } else {
            finish("disconnected by the server at " + endpoint + ": " + reason);
        }
    }
}

void session::impl::welcomed_by(protocol::welcome w, time_point at) {
    if (welcomed) {
        finish("the server at " + endpoint + " sent a second Welcome");
        return;
    }
    for (const protocol::component_info& expected : options.connect.expected_types) {
        if (const auto* actual = w.components.find(expected.name)) {
            if (auto problem = protocol::incompatibility(expected, *actual)) {
                finish("the schema of the server at " + endpoint +
                       " does not match this client: " + *problem);
                return;
            }
        }
    }
    if (!(w.tick_rate > 0.0F)) {
        finish("the server at " + endpoint + " announced a tick rate of " +
               std::to_string(w.tick_rate));
        return;
    }
    if (!history || w.components != mirror.types()) {
        // Other types (a reconnect found a changed server): what the mirror held is gone.
        mirror.each([&](ecs::Entity e) { fire(active.destroyed, e); });
        mirror.set_schema(w.components);
        history.emplace(w.components, options.interpolation_options);
        interpolated.clear();
        is_interpolated.assign(w.components.size(), false);
        for (const auto& info : w.components.types()) {
            if (info.interpolated && !info.is_string) {
                interpolated.push_back(info.id);
                is_interpolated[info.id] = true;
            }
        }
    }
    if (!welcome || welcome->tick_rate != w.tick_rate || w.current_tick < mirror.tick()) {
        auto o = options.clock_options;
        o.rate = static_cast<double>(w.tick_rate);
        clock = server_clock{o};
    }
    clock.on_welcome(w.current_tick, at);
    if (welcome && welcome->client_id != w.client_id) {
        // The server forgot the player (a restart, no tokens): its entity is not ours any more.
        input = {};
        input_entity = {};
    }
    welcome = std::move(w);
    welcomed = true;
    // A new stream of pings, inputs and acks (the server counts per connection).
    next_ping = {};
    pings.clear();
    next_input_tick = 0;
    last_ack.reset();
}

void session::impl::snapshot_completed() {
    if (state == session_state::connecting) {
        state = session_state::joined;
        fire(active.joined, *welcome);
    } else if (state == session_state::reconnecting) {
        state = session_state::joined;
        ++stats.reconnects;
        fire(active.reconnected, *welcome);
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

void session::impl::send_ping(time_point now) {
    if (now < next_ping) {
        return;
    }
    next_ping = now + options.ping_interval;
    if (enqueue(protocol::ping{++ping_nonce})) {
        pings.emplace_back(ping_nonce, now);
        while (pings.size() > 16) {
            pings.pop_front();
        }
    }
}

void session::impl::send_input() {
    if (input.empty() || input_entity.is_null() || !clock.synchronized()) {
        return;
    }
    const std::uint64_t due = clock.input_tick();
    const std::uint64_t batch = protocol::max_input_ticks;
    if (next_input_tick == 0 || due + batch < next_input_tick) {
        next_input_tick = due;  // the first, or the estimate went back by more than a batch
    }
    if (due < next_input_tick) {
        return;  // this tick's input is sent already
    }
    // A slow frame: every tick since the last Input, the newest 16 at most (older ones
    // would arrive late anyway).
    const std::uint64_t oldest = due >= batch ? due - batch + 1 : 1;
    const std::uint64_t first = std::max(next_input_tick, oldest);
    const protocol::input message{input_entity, first,
                                  std::vector<protocol::component_set>(due - first + 1, input)};
    next_input_tick = due + 1;
    protocol::frame frame;
    try {
        frame = protocol::encode(message, mirror.types());
    } catch (const std::exception& e) {  // the server's types changed under a reconnect
        last_rejected = protocol::input_rejected{first, wire::ErrorCode::InvalidValue,
                                                 std::string{"input not sent: "} + e.what(), 1};
        input = {};
        input_entity = {};
        fire(active.input_rejected, *last_rejected);
        return;
    }
    if (enqueue(std::move(frame))) {
        ++stats.input_frames_sent;
        stats.input_ticks_sent += message.ticks.size();
        last_input_tick = due;
    }
}

void session::impl::record(ecs::Entity e, std::uint32_t type) {
    if (history && type < is_interpolated.size() && is_interpolated[type]) {
        history->on_tick(mirror.event_tick());
        history->record(e, type, mirror.value(e, type));
    }
}

void session::impl::record_all(ecs::Entity e) {
    if (!history) {
        return;
    }
    history->appeared(e);
    for (const std::uint32_t type : interpolated) {
        if (mirror.has(e, type)) {
            record(e, type);
        }
    }
}

void session::impl::install_mirror_events() {
    auto& on = mirror.events();
    on.on_spawn = [this](ecs::Entity e) {
        record_all(e);
        fire(snapshot_of_view() ? active.entered : active.spawned, e);
    };
    on.on_enter = [this](ecs::Entity e) {
        record_all(e);
        fire(active.entered, e);
    };
    on.on_update = [this](ecs::Entity e, std::uint32_t type) {
        record(e, type);
        fire(active.updated, e, type);
    };
    on.on_remove = [this](ecs::Entity e, std::uint32_t type) {
        if (history) {
            history->forget(e, type);
        }
        fire(active.removed, e, type);
    };
    on.on_destroy = [this](ecs::Entity e) {
        fire(snapshot_of_view() ? active.left : active.destroyed, e);
        if (history) {
            history->forget(e);
        }
    };
    on.on_leave = [this](ecs::Entity e) {
        fire(active.left, e);
        if (history) {
            history->forget(e);
        }
    };
    on.on_snapshot = [this](std::uint64_t tick, std::size_t) {
        snapshot_done = true;
        restart_histories(tick);
    };
}

void session::impl::restart_histories(std::uint64_t tick) {
    // From the snapshot's tick: no interpolation across the gap before it.
    if (history) {
        history->clear();
        history->on_tick(tick);
        mirror.each([&](ecs::Entity e) { record_all(e); });
    }
}

// ---- session -----------------------------------------------------------------------------------

session::session(session_options options) : impl_{std::make_unique<impl>(std::move(options))} {}

session::~session() = default;

void session::update() {
    impl& s = *impl_;
    if (s.in_update) {
        throw std::logic_error(
            "ecsnet::client::session::update() called from one of its events: events run "
            "inside update(); do that work after update() returns");
    }
    s.in_update = true;
    struct leave {
        impl& s;
        ~leave() { s.in_update = false; }
    } guard{s};
    s.active = s.events;
    s.poll();
    if (s.state == session_state::closed) {
        return;
    }
    s.receive();
    const auto now = std::chrono::steady_clock::now();
    if (s.state != session_state::closed) {
        s.check_deadlines(now);
    }
    if (s.state == session_state::reconnecting && !s.link && now >= s.next_attempt) {
        s.start_attempt(now);
    }
    if (s.welcome) {
        s.clock.advance(now);
    }
    if (s.state == session_state::joined) {
        s.send_ping(now);
        s.send_input();
    }
    if (s.flush_wanted) {
        s.post_flush();
    }
    if (!s.options.network_thread && s.state != session_state::closed) {
        s.poll();  // writes (and a new attempt's connect) start in this frame
    }
}

session_state session::state() const noexcept { return impl_->state; }
const std::string& session::closed_reason() const noexcept { return impl_->closed_reason; }

const protocol::welcome& session::welcome() const {
    if (!impl_->welcome) {
        throw client_error("not joined: no Welcome received yet");
    }
    return *impl_->welcome;
}

std::uint32_t session::client_id() const noexcept {
    return impl_->welcome ? impl_->welcome->client_id : 0;
}

const protocol::mirror& session::mirror() const noexcept { return impl_->mirror; }
const server_clock& session::server_time() const noexcept { return impl_->clock; }
session_stats session::stats() const noexcept { return impl_->stats; }
session_events& session::events() noexcept { return impl_->events; }

const interpolation* session::history() const noexcept {
    return impl_->history ? &*impl_->history : nullptr;
}

void session::set_input(ecs::Entity entity, const protocol::component_set& values) {
    impl& s = *impl_;
    if (!s.welcome) {
        throw client_error("set_input before Welcome: the server's input types are not known yet");
    }
    if (entity.is_null()) {
        throw client_error("set_input: no entity");
    }
    try {
        (void)protocol::encode(protocol::input{entity, 1, {values}}, s.mirror.types());
    } catch (const std::invalid_argument& e) {
        throw client_error(std::string{"set_input: "} + e.what());
    }
    if (entity != s.input_entity) {
        s.input = {};
        s.input_entity = entity;
        s.next_input_tick = 0;
    }
    for (const protocol::component_value& v : values.values()) {
        s.input.set(v);
    }
}

void session::clear_input() noexcept {
    impl_->input = {};
    impl_->input_entity = {};
    impl_->next_input_tick = 0;
}

std::uint64_t session::acked_input_tick() const noexcept {
    return impl_->last_ack ? impl_->last_ack->applied_tick : 0;
}
std::uint64_t session::last_input_tick() const noexcept { return impl_->last_input_tick; }
const std::optional<protocol::input_ack>& session::last_input_ack() const noexcept {
    return impl_->last_ack;
}
const std::optional<protocol::input_rejected>& session::last_input_rejected() const noexcept {
    return impl_->last_rejected;
}

bool session::send(const protocol::client_message& message) {
    impl& s = *impl_;
    if (std::holds_alternative<protocol::hello>(message)) {
        throw client_error("Hello is the session's to send");
    }
    if (s.state != session_state::joined) {
        return false;
    }
    protocol::frame frame;
    try {
        frame = protocol::encode(message, s.mirror.types());
    } catch (const std::invalid_argument& e) {
        throw client_error(e.what());
    }
    if (!s.enqueue(std::move(frame))) {
        return false;
    }
    if (!s.in_update) {
        s.post_flush();
    }
    return true;
}

std::uint32_t session::next_request_id() noexcept { return ++impl_->last_request_id; }

void session::close() noexcept {
    impl& s = *impl_;
    if (s.state == session_state::closed) {
        return;
    }
    s.drop_link();
    s.state = session_state::closed;
    s.closed_reason = "closed by the client";
}

}  // namespace ecsnet::client
