#include "ecsnet/client/prediction_module.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "ecsnet/client/prediction.hpp"
#include "ecsnet/protocol/frame.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/protocol/mirror.hpp"
#include "tick_completion.hpp"

// The module's one prediction, fed as client::session feeds its own (session/input.cpp).
namespace {

using ecsnet::client::prediction;
using ecsnet::ecs::Entity;

struct module_state {
    std::string config;
    ecsnet::client::prediction_options options;
    ecsnet::protocol::mirror mirror;
    std::unique_ptr<prediction> predicted;
    std::vector<prediction::declared_type> types;
    std::uint64_t reconciled_tick{0};
    ecsnet::client::detail::tick_completion completion;
    std::vector<std::uint64_t> frame;  // 8-byte aligned
    std::string error;
    std::string types_json{"[]"};
    ecsnet::protocol::component_set staged;
    std::vector<double> view;
    std::vector<double> events;
    std::vector<double> stats;
};

module_state& state() {
    static module_state s;
    return s;
}

int fail(std::string why) {
    state().error = std::move(why);
    return 0;
}

// An InputAck tells the prediction which input the server ran its tick on.
void acknowledge(module_state& s, const ecsnet::protocol::server_control& message) {
    if (const auto* ack = std::get_if<ecsnet::protocol::input_ack>(&message);
        ack != nullptr && s.predicted) {
        s.predicted->acknowledge(*ack);
    }
}

void start(module_state& s, const ecsnet::protocol::welcome& w) {
    s.mirror.set_schema(w.components);
    s.predicted.reset();
    s.types.clear();
    s.types_json = "[]";
    s.reconciled_tick = 0;
    s.completion.restart(w.components);
    s.staged = {};
    auto p = std::make_unique<prediction>(1.0 / static_cast<double>(w.tick_rate), s.options);
    ecsnet::client::declare_prediction(*p, s.config);
    p->on_misprediction = [&s](const ecsnet::client::misprediction& m) {
        double type = -1;
        for (std::size_t i = 0; i < s.types.size(); ++i) {
            if (s.types[i].name == m.type) {
                type = static_cast<double>(i);
                break;
            }
        }
        s.events.insert(s.events.end(), {1.0, static_cast<double>(m.tick), static_cast<double>(m.entity.index()),
                                         static_cast<double>(m.entity.version()), type, m.error});
    };
    p->on_spawn_matched = [&s](const ecsnet::client::predicted_spawn& spawn) {
        s.events.insert(s.events.end(), {2.0, static_cast<double>(spawn.id), static_cast<double>(spawn.tick),
                                         static_cast<double>(spawn.server.index()),
                                         static_cast<double>(spawn.server.version()), 0.0});
    };
    p->on_spawn_refused = [&s](const ecsnet::client::predicted_spawn& spawn, ecsnet::client::spawn_refusal why) {
        s.events.insert(s.events.end(), {3.0, static_cast<double>(spawn.id), static_cast<double>(spawn.tick),
                                         why == ecsnet::client::spawn_refusal::undone ? 1.0 : 0.0, 0.0, 0.0});
    };
    s.types = p->declared_types();
    // By hand, not nlohmann::json: it would double the module's size.
    const auto quoted = [](const std::string& text) {
        std::string out = "\"";
        for (const char c : text) {
            if (c == '"' || c == '\\') {
                out += '\\';
            }
            out += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
        }
        return out + "\"";
    };
    s.types_json = "[";
    for (const auto& t : s.types) {
        s.types_json += std::string{s.types_json.size() > 1 ? "," : ""} + "{\"name\":" + quoted(t.name) +
                        ",\"replicated\":" + (t.replicated ? "true" : "false") +
                        ",\"input\":" + (t.input ? "true" : "false") +
                        ",\"fields\":" + std::to_string(t.fields) + "}";
    }
    s.types_json += "]";
    s.predicted = std::move(p);
}

void write_view(module_state& s) {
    s.view.clear();
    const prediction& p = *s.predicted;
    const auto record = [&](double kind, double a, double b, auto&& fields_of) {
        s.view.insert(s.view.end(), {kind, a, b, 0.0});
        for (std::size_t i = 0; i < s.types.size(); ++i) {
            if (!s.types[i].replicated) {
                continue;
            }
            const std::size_t at = s.view.size();
            s.view.resize(at + 1 + s.types[i].fields, 0.0);
            s.view[at] = fields_of(i, s.view.data() + at + 1) ? 1.0 : 0.0;
        }
    };
    for (const Entity e : p.tracked()) {
        record(0.0, e.index(), e.version(),
               [&](std::size_t type, double* out) { return p.rendered_fields(e, type, out); });
    }
    for (const ecsnet::client::predicted_spawn& spawn : p.spawns_pending()) {
        record(1.0, static_cast<double>(spawn.id), static_cast<double>(spawn.tick),
               [&](std::size_t type, double* out) { return p.rendered_fields(spawn, type, out); });
    }
}

}  // namespace

extern "C" {

int ecsnet_configure(const char* game_config, const double* options, size_t count) {
    module_state& s = state();
    ecsnet::client::prediction_options o;
    const auto given = [&](ecsnet_option which) {
        return static_cast<std::size_t>(which) < count && !std::isnan(options[which]);
    };
    const auto whole = [&](ecsnet_option which, const char* name, double least, auto& into) {
        if (!given(which)) {
            return true;
        }
        const double v = options[which];
        if (!(v >= least && v <= 1e9 && std::floor(v) == v)) {
            s.error = std::string{name} + " must be a whole number from " + std::to_string(least);
            return false;
        }
        into = static_cast<std::remove_reference_t<decltype(into)>>(v);
        return true;
    };
    // A positive number, given to `set`; true when not given.
    const auto positive = [&](ecsnet_option which, const char* name, auto&& set) {
        if (!given(which)) {
            return true;
        }
        const double v = options[which];
        if (!(v > 0 && std::isfinite(v))) {
            s.error = std::string{name} + " must be a positive number";
            return false;
        }
        set(v);
        return true;
    };
    if (!whole(ecsnet_option_history_ticks, "history_ticks", 2, o.history_ticks) ||
        !whole(ecsnet_option_tolerance_steps, "tolerance_steps", 0, o.tolerance_steps) ||
        !whole(ecsnet_option_replay_budget_ticks, "replay_budget_ticks", 1, o.replay_budget_ticks) ||
        !whole(ecsnet_option_spawn_confirm_ticks, "spawn_confirm_ticks", 1, o.spawn_confirm_ticks) ||
        !positive(ecsnet_option_replay_budget_ms, "replay_budget_ms",
                  [&](double ms) { o.replay_budget_time = std::chrono::microseconds{static_cast<std::int64_t>(ms * 1000.0)}; }) ||
        !positive(ecsnet_option_half_life_ms, "half_life_ms",
                  [&](double ms) { o.half_life = std::chrono::milliseconds{static_cast<std::int64_t>(ms)}; }) ||
        !positive(ecsnet_option_snap_distance, "snap_distance", [&](double d) { o.snap_distance = d; })) {
        return 0;
    }
    s.options = o;
    s.config = game_config == nullptr ? "" : game_config;
    return 1;
}

uint8_t* ecsnet_frame_buffer(size_t size) {
    std::vector<std::uint64_t>& frame = state().frame;
    frame.resize((size + 7) / 8);
    return reinterpret_cast<uint8_t*>(frame.data());
}

int ecsnet_receive(size_t size) {
    module_state& s = state();
    if (size > s.frame.size() * 8) {
        return fail("ecsnet_receive: " + std::to_string(size) + " bytes, more than ecsnet_frame_buffer gave");
    }
    const std::span<const std::uint8_t> bytes{reinterpret_cast<const std::uint8_t*>(s.frame.data()), size};
    if (size >= ecsnet::protocol::frame_prefix_bytes &&
        ecsnet::protocol::is_compact(ecsnet::protocol::read_prefix(bytes.first<ecsnet::protocol::frame_prefix_bytes>()))) {
        std::string why;
        const auto ack = ecsnet::protocol::decode_compact_server_frame(bytes, &why);
        if (!ack) {
            return fail("malformed server frame: " + why);
        }
        acknowledge(s, *ack);
        s.completion.handled(nullptr);  // an InputAck: it ends its tick
        return 1;
    }
    std::string why;
    const auto* message = ecsnet::protocol::verify_server_frame(bytes, &why);
    if (message == nullptr) {
        return fail("malformed server frame: " + why);
    }
    try {
        switch (message->body_type()) {
            case ecsnet::wire::ServerBody::Welcome: {
                const auto control = ecsnet::protocol::decode_server_control(*message, &why);
                if (!control) {
                    return fail("malformed Welcome: " + why);
                }
                start(s, std::get<ecsnet::protocol::welcome>(*control));
                break;
            }
            case ecsnet::wire::ServerBody::Snapshot:
            case ecsnet::wire::ServerBody::Delta:
            case ecsnet::wire::ServerBody::Checksum:
                if (!s.mirror.apply(*message)) {
                    return fail(s.mirror.error());
                }
                break;
            case ecsnet::wire::ServerBody::InputAck: {
                const auto control = ecsnet::protocol::decode_server_control(*message, &why);
                if (!control) {
                    return fail("malformed InputAck: " + why);
                }
                acknowledge(s, *control);
                break;
            }
            default:
                break;
        }
    } catch (const std::exception& e) {
        s.predicted.reset();
        return fail(e.what());
    }
    s.completion.handled(message);
    return 1;
}

const char* ecsnet_error(void) { return state().error.c_str(); }

int ecsnet_track(uint32_t index, uint32_t version) {
    module_state& s = state();
    const Entity e{index, version};
    if (!s.predicted) {
        return fail("ecsnet_track before a Welcome");
    }
    if (!s.mirror.contains(e)) {
        return fail("ecsnet_track: the mirror has no entity " + std::to_string(index) + "v" + std::to_string(version));
    }
    (void)s.predicted->track(e, s.mirror);
    return 1;
}

void ecsnet_untrack(uint32_t index, uint32_t version) {
    if (state().predicted) {
        state().predicted->untrack(Entity{index, version});
    }
}

int ecsnet_input_value(uint32_t type, const uint8_t* bytes, size_t size) {
    module_state& s = state();
    const ecsnet::protocol::component_info* info = s.mirror.types().find(type);
    if (info == nullptr || info->is_string || !info->input) {
        return fail("ecsnet_input_value: no input type of wire id " + std::to_string(type));
    }
    if (size != info->value_bytes()) {
        return fail("ecsnet_input_value: " + info->name + " is " + std::to_string(info->value_bytes()) +
                    " bytes, not " + std::to_string(size));
    }
    ecsnet::protocol::component_value v;
    v.name = info->name;
    v.bytes.assign(reinterpret_cast<const std::byte*>(bytes), reinterpret_cast<const std::byte*>(bytes) + size);
    s.staged.set(std::move(v));
    return 1;
}

int ecsnet_set_input(double tick, uint32_t index, uint32_t version) {
    module_state& s = state();
    if (!s.predicted) {
        return fail("ecsnet_set_input before a Welcome");
    }
    const auto t = static_cast<std::uint64_t>(tick);
    if (t > s.predicted->tick()) {
        s.predicted->set_input(t, Entity{index, version}, s.staged);
    }
    s.staged = {};
    return 1;
}

int ecsnet_update(double input_tick, double elapsed_seconds) {
    module_state& s = state();
    s.events.clear();
    if (!s.predicted) {
        return fail("ecsnet_update before a Welcome");
    }
    try {
        if (s.completion.whole() && s.mirror.ready() && s.mirror.tick() > s.reconciled_tick) {
            s.reconciled_tick = s.mirror.tick();
            s.predicted->reconcile(s.reconciled_tick, s.mirror);
        }
        const auto tick = static_cast<std::uint64_t>(input_tick);
        if (s.predicted->size() > 0 && tick > s.predicted->tick()) {
            s.predicted->advance_to(tick);
        }
        if (elapsed_seconds > 0) {
            s.predicted->decay(std::chrono::duration<double>{elapsed_seconds});
        }
        write_view(s);
    } catch (const std::exception& e) {
        return fail(e.what());
    }
    return 1;
}

const char* ecsnet_types_json(void) { return state().types_json.c_str(); }

const double* ecsnet_view(size_t* count) {
    *count = state().view.size();
    return state().view.data();
}

const double* ecsnet_events(size_t* count) {
    *count = state().events.size();
    return state().events.data();
}

const double* ecsnet_stats(void) {
    module_state& s = state();
    s.stats.assign(17, 0.0);
    if (s.predicted) {
        const ecsnet::client::prediction_stats& p = s.predicted->stats();
        s.stats = {static_cast<double>(p.ticks_predicted), static_cast<double>(p.checks),
                   static_cast<double>(p.mispredictions), static_cast<double>(p.ticks_replayed),
                   static_cast<double>(p.replays_deferred), static_cast<double>(p.too_old),
                   static_cast<double>(p.adopted), static_cast<double>(p.snaps),
                   static_cast<double>(p.system_failures), p.largest_error,
                   static_cast<double>(p.spawns_predicted), static_cast<double>(p.spawns_matched),
                   static_cast<double>(p.spawns_refused), static_cast<double>(s.predicted->tick()),
                   static_cast<double>(s.predicted->world_tick()), static_cast<double>(s.mirror.tick()),
                   static_cast<double>(p.inputs_corrected)};
    }
    return s.stats.data();
}

}  // extern "C"
