// What a session sends each update(): input for each tick and the pings that keep the server
// clock (session/impl.hpp); the input calls of the public session.
#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

#include "impl.hpp"

namespace ecsnet::client {

namespace asio = boost::asio;
using time_point = std::chrono::steady_clock::time_point;
using std::chrono::milliseconds;

namespace {

// Whether a and b hold different values of a bool field (a button) of the same typed value.
// Other fields (an analog stick's floats) do not count: a value that keeps changing is sent
// as it is at each tick.
bool buttons_differ(const protocol::component_set& a, const protocol::component_set& b) {
    for (const protocol::component_value& va : a.values()) {
        const protocol::component_value* vb = b.find(va.name);
        if (vb == nullptr || va.layout == nullptr || va.bytes.size() != vb->bytes.size() ||
            va.bytes.size() != va.layout->value_bytes()) {
            continue;
        }
        protocol::bit_reader ra{va.bytes};
        protocol::bit_reader rb{vb->bytes};
        for (const protocol::field_info& field : va.layout->fields) {
            const bool differ = ra.read(field.bits) != rb.read(field.bits);
            if (differ && field.type == protocol::field_type::bool_) {
                return true;
            }
        }
    }
    return false;
}

}  // namespace

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
    if (predicted && next_input_tick <= predicted->tick()) {
        // The prediction ran this tick already, with the input before: this one starts at the
        // next, on both sides. (Stamped `due`, the server would apply it a tick before the
        // prediction, and every shot of a held trigger would land a tick apart.)
        next_input_tick = predicted->tick() + 1;
    }
    if (due < next_input_tick) {
        return;  // this tick's input is sent already
    }
    // A slow frame: every tick since the last Input, the newest 16 at most (older ones
    // would arrive late anyway).
    const std::uint64_t oldest = due >= batch ? due - batch + 1 : 1;
    const std::uint64_t first = std::max(next_input_tick, oldest);
    // The screen the player saw as it set this input: lag compensation rewinds to it. As a
    // whole tick and the fraction towards the next, never past the tick stamped.
    // From protocol 6 in 256ths, rounded down, in either form: what the server rewinds to does
    // not depend on whether the Input went compact.
    const bool compact = welcome && welcome->version >= protocol::compact_input_protocol_version;
    const auto render_at = [due, compact](double shown) {
        shown = std::max(shown, 0.0);
        const auto tick = std::min(static_cast<std::uint64_t>(shown), due);
        float fraction =
            tick == due ? 0.0F : std::min(static_cast<float>(shown - static_cast<double>(tick)), 0.99999F);
        if (compact) {
            fraction = std::floor(fraction * 256.0F) / 256.0F;
        }
        return std::pair{tick, fraction};
    };
    const std::optional<double> changed_shown = std::exchange(input_shown, std::nullopt);
    const auto [shown_tick, fraction] = render_at(changed_shown.value_or(clock.render_tick()));
    protocol::input message{input_entity, first,
                            std::vector<protocol::component_set>(due - first + 1, input),
                            shown_tick, fraction};
    if (unsent_press) {
        // The press first, for one tick; the value now from the next. An Input of that one
        // tick carries the press's render tick, and the next one the release's.
        message.ticks.front() = *std::exchange(unsent_press, std::nullopt);
        const std::optional<double> press_shown = std::exchange(unsent_press_shown, std::nullopt);
        if (message.ticks.size() == 1 && press_shown) {
            input_shown = changed_shown;
            std::tie(message.render_tick, message.render_fraction) = render_at(*press_shown);
        }
    }
    sent_input = message.ticks.back();
    next_input_tick = due + 1;
    protocol::frame frame;
    // Kept once the frame is on its way: a compact Input never refers to one the server did
    // not get.
    std::optional<protocol::input_reference> reference = input_reference;
    try {
        frame = compact ? protocol::encode_input(message, mirror.types(), reference)
                        : protocol::encode(message, mirror.types());
    } catch (const std::exception& e) {  // the server's types changed under a reconnect
        last_rejected = protocol::input_rejected{first, wire::ErrorCode::InvalidValue,
                                                 std::string{"input not sent: "} + e.what(), 1};
        input = {};
        input_entity = {};
        fire(active.input_rejected, *last_rejected);
        return;
    }
    if (predicted) {
        // The player sees its input at once: the prediction runs these ticks with it.
        for (std::uint64_t tick = std::max(first, predicted->tick() + 1); tick <= due; ++tick) {
            predicted->set_input(tick, input_entity, message.ticks[tick - first]);
        }
    }
    const bool compact_frame = protocol::is_compact(
        protocol::read_prefix(std::span<const std::uint8_t>{*frame}.first<protocol::frame_prefix_bytes>()));
    if (enqueue(std::move(frame))) {
        input_reference = std::move(reference);
        ++stats.input_frames_sent;
        stats.compact_input_frames_sent += compact_frame ? 1 : 0;
        stats.input_ticks_sent += message.ticks.size();
        last_input_tick = due;
    }
}

void session::impl::start_prediction() {
    predicted.reset();
    reconciled_tick = 0;
    if (!options.predict || !welcome) {
        return;
    }
    completion.restart(welcome->components);
    predicted = std::make_unique<prediction>(1.0 / static_cast<double>(welcome->tick_rate),
                                             options.predict_options);
    options.predict(*predicted);
    for (const ecs::Entity e : owned) {
        if (mirror.contains(e)) {
            (void)predicted->track(e, mirror);
        }
    }
}

void session::impl::predict(time_point now) {
    if (!predicted) {
        return;
    }
    if (completion.whole() && mirror.ready() && mirror.tick() > reconciled_tick) {
        reconciled_tick = mirror.tick();
        predicted->reconcile(reconciled_tick, mirror);
    }
    if (clock.synchronized() && predicted->size() > 0) {
        predicted->advance_to(clock.input_tick());
    }
    if (last_update != time_point{}) {
        predicted->decay(now - last_update);
    }
    last_update = now;
}

prediction* session::predictor() noexcept { return impl_->predicted.get(); }
const prediction* session::predictor() const noexcept { return impl_->predicted.get(); }

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
        s.sent_input = {};
        s.unsent_press.reset();
        s.unsent_press_shown.reset();
    }
    const protocol::component_set before = s.input;
    for (const protocol::component_value& v : values.values()) {
        s.input.set(v);
    }
    // A button pressed and released before any Input carried the press (a tap shorter than a
    // tick: frames come twice as often as 30 Hz ticks): the press still goes out, for a tick.
    if (!s.unsent_press && !buttons_differ(s.input, s.sent_input) && buttons_differ(before, s.sent_input)) {
        s.unsent_press = before;
        s.unsent_press_shown = s.input_shown;
    }
    // The moment the player acted is when the input changed: the first Input sent after it
    // carries that frame's render tick, later ones (the key held) the render tick as they go.
    if (s.clock.synchronized() && !(s.input == before)) {
        s.input_shown = s.clock.render_tick();
    }
}

void session::clear_input() noexcept {
    impl_->input = {};
    impl_->input_entity = {};
    impl_->next_input_tick = 0;
    impl_->sent_input = {};
    impl_->unsent_press.reset();
    impl_->unsent_press_shown.reset();
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

}  // namespace ecsnet::client
