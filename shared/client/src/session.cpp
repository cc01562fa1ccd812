#include "ecsnet/client/session.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "session/impl.hpp"

namespace ecsnet::client {

namespace asio = boost::asio;
using time_point = std::chrono::steady_clock::time_point;
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
        s.predict(now);
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

const std::vector<ecs::Entity>& session::owned_entities() const noexcept {
    return impl_->owned;
}

const protocol::mirror& session::mirror() const noexcept { return impl_->mirror; }
const server_clock& session::server_time() const noexcept { return impl_->clock; }
session_stats session::stats() const noexcept { return impl_->stats; }
session_events& session::events() noexcept { return impl_->events; }

const interpolation* session::history() const noexcept {
    return impl_->history ? &*impl_->history : nullptr;
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
