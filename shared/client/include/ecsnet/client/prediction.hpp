#pragma once

#include <array>
#include <chrono>
#include <concepts>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <boost/pfr/core.hpp>

#include "ecsnet/ecs/scheduler.hpp"
#include "ecsnet/ecs/world.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/protocol/mirror.hpp"

// Client-side prediction (docs/PREDICTION.md): the game's predicted systems, the same code the
// server runs, on a world of the entities this client predicts, at the client's input tick.
// When the server's state for tick T arrives, it is compared with the prediction for T after
// quantizing the prediction as the wire does; a disagreement restores the server's T and
// replays the stored inputs up to now, within a budget per call. A correction moves what is
// rendered by an error offset that decays. No network here: a session drives it (session.hpp),
// a test or a WebAssembly module can drive it alone.
namespace ecsnet::client {

struct prediction_options {
    // Ticks of predicted state and of input kept. A server state older than that cannot be
    // compared: it is adopted as it is (prediction_stats::too_old).
    std::size_t history_ticks = 64;
    // A quantized float field agrees within this many steps of its quantization: the
    // prediction restarts from the server's quantized state, the server from its exact one,
    // so a value near a step's edge may round to the next step on one side only.
    std::uint32_t tolerance_steps = 1;
    // A replay runs at most this many ticks, and this long, per call (reconcile, advance_to);
    // the rest goes on in the next call, while rendering keeps showing the previous
    // prediction. A replay never makes a frame longer than the budget: no death spiral.
    std::size_t replay_budget_ticks = 32;
    std::chrono::microseconds replay_budget_time{4000};
    // Smoothing (smooth<T>): a correction's offset halves every half_life of rendered time;
    // one larger than snap_distance (the length of the type's float fields as a vector) is
    // dropped at once: the entity jumps.
    std::chrono::milliseconds half_life{100};
    double snap_distance = 64.0;
    // A predicted spawn (spawns<T>) that the server's state has not shown this many ticks
    // after the tick it was made in is refused: it disappears (on_spawn_refused). The wait
    // covers a server that sends a new entity a few ticks late (a client's byte budget).
    std::uint64_t spawn_confirm_ticks = 8;
};

struct prediction_stats {
    std::uint64_t ticks_predicted{0};  // new ticks run
    std::uint64_t checks{0};           // server ticks compared with a prediction
    std::uint64_t mispredictions{0};   // ... that disagreed (one per tick, however many entities)
    std::uint64_t ticks_replayed{0};
    std::uint64_t replays_deferred{0};  // calls that stopped at the replay budget
    std::uint64_t too_old{0};           // server ticks older than the history: adopted
    std::uint64_t adopted{0};           // server ticks ahead of the prediction: adopted
    std::uint64_t snaps{0};             // corrections past snap_distance
    std::uint64_t system_failures{0};   // predicted system runs that threw
    double largest_error{0};            // of every misprediction so far
    std::uint64_t spawns_predicted{0};  // entities the predicted systems made (spawns<T>)
    std::uint64_t spawns_matched{0};    // ... that the server's entity replaced
    std::uint64_t spawns_refused{0};    // ... that disappeared (on_spawn_refused)
    std::uint64_t inputs_corrected{0};  // ticks whose input the server did not apply (acknowledge)
};

// One entity's disagreement at a server tick.
struct misprediction {
    std::uint64_t tick{0};
    ecs::Entity entity;  // the server's (the mirror's) entity
    std::string type;    // the first predicted type that disagreed
    // The distance between the predicted and the server's float fields of that type (as a
    // vector); for a type without float fields, or one present on one side only, 0.
    double error{0};
};

// An entity the predicted systems made (a bullet fired), shown at once and until the server's
// entity with the same spawn key arrives.
struct predicted_spawn {
    std::uint64_t id{0};    // the same from the tick it is made until it is matched or refused
    std::uint64_t tick{0};  // the tick it was made in
    ecs::Entity server;     // the server's entity (on_spawn_matched); null before
};

enum class spawn_refusal : std::uint8_t {
    // The server's state did not show it within spawn_confirm_ticks: the server refused it,
    // or destroyed it before a client could see it.
    unconfirmed,
    // A replay after a correction did not make it again (the corrected state could not).
    undone,
};
[[nodiscard]] const char* to_string(spawn_refusal reason) noexcept;

class prediction {
public:
    // `dt`: the server's tick period in seconds (Welcome's tick rate).
    explicit prediction(double dt, prediction_options options = {});
    prediction(const prediction&) = delete;
    prediction& operator=(const prediction&) = delete;
    ~prediction();

    // ---- what is predicted: declared by the game, before the first track() ------------------
    // A replicated type the prediction holds: copied from the server's state, compared with it.
    template <protocol::replicated_component T>
    prediction& predict() {
        return add(make_ops<T>(op_kind::replicated, false));
    }
    // A replicated type compared by the game's own rule: `agree(predicted, server)` says
    // whether the prediction stands. For a type the predicted systems compute only in part
    // (the arena's Stats: its ammo is the gun's, its score the server's alone): a score the
    // client cannot know is no misprediction. Restored from the server's like any other.
    template <protocol::replicated_component T>
    prediction& predict(bool (*agree)(const T& predicted, const T& server)) {
        type_ops ops = make_ops<T>(op_kind::replicated, false);
        ops.rule = reinterpret_cast<void (*)()>(agree);
        ops.agrees_by_rule = [](void (*rule)(), const std::byte* predicted_bytes,
                                const std::byte* server_bytes) {
            T predicted;
            T server;
            std::memcpy(&predicted, predicted_bytes, sizeof(T));
            std::memcpy(&server, server_bytes, sizeof(T));
            return reinterpret_cast<bool (*)(const T&, const T&)>(rule)(predicted, server);
        };
        return add(std::move(ops));
    }
    // ... and whose float fields are smoothed after a correction (rendered<T>).
    template <protocol::replicated_component T>
    prediction& predict_smoothed() {
        return add(make_ops<T>(op_kind::replicated, true));
    }
    // A type the server does not send (a cooldown): kept in the prediction's own history and
    // restored from it on a replay; a tracked entity starts with T{} unless the game sets it.
    template <typename T>
    prediction& keep(std::string name = "kept type") {
        type_ops ops = make_ops<T>(op_kind::local, false);
        ops.name = std::move(name);
        return add(std::move(ops));
    }
    // An input type: set_input's values for a tick are written into the entity before that
    // tick's systems, as the server does; a tick without one repeats the last.
    template <protocol::replicated_component T>
    prediction& input() {
        return add(make_ops<T>(op_kind::input, false));
    }

    // Predicted spawns: an entity that the predicted systems make with a T (a bullet fired)
    // is shown at once, and replaced by the server's entity whose T is equal when the
    // server's state shows it. T is the spawn key: whose input made the entity, the tick of
    // that input and its sequence in the tick (operator== compares them), written by the
    // same system on both sides. A replay that makes the same key again keeps the spawn, never
    // a second one. T is a predicted type too (predict<T>).
    template <protocol::replicated_component T>
        requires std::equality_comparable<T>
    prediction& spawns() {
        type_ops ops = make_ops<T>(op_kind::replicated, false);
        ops.same = [](const std::byte* a, const std::byte* b) {
            T x;
            T y;
            std::memcpy(&x, a, sizeof(T));
            std::memcpy(&y, b, sizeof(T));
            return x == y;
        };
        ops.each_with = [](const ecs::World& world, std::vector<ecs::Entity>& out) {
            world.view<const T>().each([&](ecs::Entity e, const T&) { out.push_back(e); });
        };
        add(std::move(ops));
        spawn_key_ = index_of<T>();
        return *this;
    }

    // The predicted systems: the game adds them with the same code as on its server.
    [[nodiscard]] ecs::Scheduler& systems() noexcept { return *systems_; }
    [[nodiscard]] ecs::World& world() noexcept { return *world_; }
    [[nodiscard]] const ecs::World& world() const noexcept { return *world_; }

    // ---- which entities -----------------------------------------------------------------------
    // Starts predicting a server entity (the own ship; or another, as prediction switching):
    // a world entity with the mirror's values of the predicted types. Returns it; the same
    // one when already tracked. Throws std::invalid_argument when the mirror lacks the entity.
    ecs::Entity track(ecs::Entity server_entity, const protocol::mirror& mirror);
    void untrack(ecs::Entity server_entity);
    [[nodiscard]] bool tracks(ecs::Entity server_entity) const noexcept;
    // The world entity predicting server_entity; null when untracked.
    [[nodiscard]] ecs::Entity local(ecs::Entity server_entity) const noexcept;
    [[nodiscard]] std::size_t size() const noexcept;

    // ---- ticks ---------------------------------------------------------------------------------
    // The input values for `tick` (newer than tick()) of a tracked entity: kept until the
    // history forgets the tick. The values are the wire's (quantized), as the server gets them.
    void set_input(std::uint64_t tick, ecs::Entity server_entity, const protocol::component_set& values);
    // Predicts up to `tick` (a later tick than tick(): the session's input tick).
    void advance_to(std::uint64_t tick);
    // The server's InputAck, each one: it ran `tick` on the input of `applied_tick` (0: none
    // yet). The inputs set for ticks that reached it late become the ones it used, and the next
    // reconcile() runs the prediction again from the tick before the oldest, so that what the
    // server never sends (kept types) follows it too (docs/PREDICTION.md, "Late inputs").
    void acknowledge(const protocol::input_ack& ack);
    // The server's state for `tick` is in the mirror: compare, and replay when they disagree.
    // Tracked entities the mirror no longer has are untracked.
    void reconcile(std::uint64_t tick, const protocol::mirror& mirror);

    // The newest predicted tick, and the tick the world holds (behind while a replay waits
    // for the next call's budget).
    [[nodiscard]] std::uint64_t tick() const noexcept { return tick_; }
    [[nodiscard]] std::uint64_t world_tick() const noexcept { return world_tick_; }
    [[nodiscard]] bool replaying() const noexcept { return world_tick_ < tick_; }

    // ---- rendering -----------------------------------------------------------------------------
    // T's predicted value at tick() (while a replay waits: the prediction made before it).
    template <typename T>
    [[nodiscard]] std::optional<T> predicted(ecs::Entity server_entity) const {
        std::optional<T> out;
        const std::byte* bytes = newest(server_entity, index_of<T>());
        if (bytes != nullptr) {
            T value;
            std::memcpy(&value, bytes, sizeof(T));
            out = value;
        }
        return out;
    }
    // predicted<T>() plus what is left of the corrections' offset (predict_smoothed<T>).
    template <typename T>
    [[nodiscard]] std::optional<T> rendered(ecs::Entity server_entity) const {
        std::optional<T> out = predicted<T>(server_entity);
        if (out) {
            if (const std::vector<double>* offset = offset_of(server_entity, index_of<T>())) {
                add_to_floats(*out, offset->data());
            }
        }
        return out;
    }
    // The spawns the server has not matched yet: drawn beside the mirror's entities (a matched
    // one is the mirror's entity, predicted: rendered<T>(spawn.server)). In the order made.
    [[nodiscard]] std::vector<predicted_spawn> spawns_pending() const;
    // A pending spawn's T as rendered<T>() gives it for a tracked entity.
    template <typename T>
    [[nodiscard]] std::optional<T> rendered(const predicted_spawn& spawn) const {
        std::optional<T> out;
        const std::size_t type = index_of<T>();
        if (const std::byte* bytes = newest_of(spawn.id, type)) {
            T value;
            std::memcpy(&value, bytes, sizeof(T));
            if (const std::vector<double>* offset = offset_of_id(spawn.id, type)) {
                add_to_floats(value, offset->data());
            }
            out = value;
        }
        return out;
    }
    // Rendered time went by: the offsets decay.
    void decay(std::chrono::duration<double> elapsed) noexcept;
    // What is left of server_entity's offset for T, as the length of its float fields.
    template <typename T>
    [[nodiscard]] double offset(ecs::Entity server_entity) const {
        const std::vector<double>* o = offset_of(server_entity, index_of<T>());
        return o == nullptr ? 0.0 : length(*o);
    }

    // ---- type-erased reading (a WebAssembly module's C ABI: client/prediction_module.h) ------
    struct declared_type {
        std::string name;  // the wire name; "(kept type)" or keep()'s name for a kept type
        bool replicated{false};  // the server sends it (predict, spawns, input)
        bool input{false};
        std::size_t fields{0};  // its fields, as rendered_fields() writes them
    };
    // The types declared, in the order declared.
    [[nodiscard]] std::vector<declared_type> declared_types() const;
    // The server entities tracked (matched spawns included; pending ones are spawns_pending()).
    [[nodiscard]] std::vector<ecs::Entity> tracked() const;
    // rendered<T>() of declared type `type`, its fields in order as numbers (a bool's or an
    // enum's as its value) into out[0 .. declared_types()[type].fields); false when absent.
    bool rendered_fields(ecs::Entity server_entity, std::size_t type, double* out) const;
    bool rendered_fields(const predicted_spawn& spawn, std::size_t type, double* out) const;

    [[nodiscard]] const prediction_stats& stats() const noexcept { return stats_; }
    [[nodiscard]] const prediction_options& options() const noexcept { return options_; }
    // Each disagreement, as reconcile() finds it.
    std::function<void(const misprediction&)> on_misprediction;
    // A predicted spawn's fate: the server's entity replaced it (spawn.server), or it
    // disappeared: a correction event.
    std::function<void(const predicted_spawn&)> on_spawn_matched;
    std::function<void(const predicted_spawn&, spawn_refusal)> on_spawn_refused;

private:
    enum class op_kind : std::uint8_t { replicated, local, input };
    // One predicted type, its value handled as bytes (predicted types are trivially copyable).
    struct type_ops {
        std::string name;
        const void* key{nullptr};  // one per C++ type
        op_kind kind{};
        bool smoothed{false};
        std::size_t size{0};
        std::size_t floats{0};
        bool (*save)(const ecs::World&, ecs::Entity, std::byte*){nullptr};  // false: absent
        void (*load)(ecs::World&, ecs::Entity, const std::byte*){nullptr};   // null: remove
        void (*init)(ecs::World&, ecs::Entity){nullptr};                    // T{} unless present
        bool (*fetch)(const protocol::mirror&, ecs::Entity, std::byte*){nullptr};
        bool (*apply_input)(ecs::World&, ecs::Entity, const protocol::component_set&){nullptr};
        // Agreement within `tolerance` steps; `error`: the float fields' distance.
        bool (*agrees)(const std::byte* predicted, const std::byte* server, std::uint32_t tolerance,
                       double& error){nullptr};
        void (*to_floats)(const std::byte*, double*){nullptr};
        // Every field as a number, after adding `offset` (null: none) to the float fields.
        std::size_t fields{0};
        void (*to_fields)(const std::byte*, const double* offset, double* out){nullptr};
        // predict<T>(agree): the game's rule instead of `agrees`, and the rule itself.
        bool (*agrees_by_rule)(void (*)(), const std::byte*, const std::byte*){nullptr};
        void (*rule)(){nullptr};
        // A spawn key (spawns<T>): equality, and the world's entities that have one.
        bool (*same)(const std::byte*, const std::byte*){nullptr};
        void (*each_with)(const ecs::World&, std::vector<ecs::Entity>&){nullptr};
    };
    struct entity_state;
    struct state_slot;
    struct input_slot;
    struct tracked_entity;

    template <typename T>
    static const void* key_of() noexcept {
        static const char key = 0;
        return &key;
    }
    template <typename T>
    [[nodiscard]] std::size_t index_of() const noexcept {
        const void* key = key_of<T>();
        for (std::size_t i = 0; i < types_.size(); ++i) {
            if (types_[i].key == key) {
                return i;
            }
        }
        return types_.size();
    }

    template <typename T>
    static type_ops make_ops(op_kind kind, bool smoothed);
    template <typename T>
    static void add_to_floats(T& value, const double* offset) noexcept;
    [[nodiscard]] static double length(const std::vector<double>& v) noexcept;

    prediction& add(type_ops ops);
    [[nodiscard]] const std::byte* newest(ecs::Entity server_entity, std::size_t type) const noexcept;
    [[nodiscard]] const std::byte* newest_of(std::uint64_t id, std::size_t type) const noexcept;
    [[nodiscard]] const std::vector<double>* offset_of(ecs::Entity server_entity,
                                                       std::size_t type) const noexcept;
    [[nodiscard]] const std::vector<double>* offset_of_id(std::uint64_t id,
                                                          std::size_t type) const noexcept;
    [[nodiscard]] std::size_t offset_in_state(std::size_t type) const noexcept;
    tracked_entity& add_tracked(ecs::Entity server_entity, ecs::Entity local);
    void collect_spawns(std::uint64_t tick);
    void match_spawns(std::uint64_t tick, const protocol::mirror& mirror);
    void refuse(std::size_t index, spawn_refusal reason);
    void run_tick(std::uint64_t tick);
    bool catch_up();
    void save_state(std::uint64_t tick);
    [[nodiscard]] state_slot* state_at(std::uint64_t tick) noexcept;
    [[nodiscard]] const state_slot* state_at(std::uint64_t tick) const noexcept;
    [[nodiscard]] const input_slot* input_at(std::uint64_t tick) const noexcept;
    void restore(const protocol::mirror* mirror, const state_slot* own, std::uint64_t tick);
    void correct_inputs(std::uint64_t from, std::uint64_t to, const input_slot* used);
    [[nodiscard]] bool rerun_corrected_inputs(std::uint64_t tick);
    void remember_rendered();
    void settle_offsets();
    [[nodiscard]] tracked_entity* find(ecs::Entity server_entity) noexcept;
    [[nodiscard]] const tracked_entity* find(ecs::Entity server_entity) const noexcept;
    [[nodiscard]] const tracked_entity* find_id(std::uint64_t id) const noexcept;

    prediction_options options_;
    std::shared_ptr<ecs::World> world_;
    std::unique_ptr<ecs::Scheduler> systems_;
    std::vector<type_ops> types_;
    std::vector<tracked_entity> tracked_;
    std::vector<state_slot> states_;  // a ring by tick
    std::vector<input_slot> inputs_;  // a ring by tick
    std::uint64_t tick_{0};
    std::uint64_t world_tick_{0};
    std::uint64_t highest_run_{0};  // ticks up to this one were run before: running one again is a replay
    bool correcting_{false};        // a replay's offsets are taken when it catches up
    std::uint64_t corrected_from_{0};  // the oldest run tick acknowledge() corrected; 0: none
    std::uint64_t acked_tick_{0};      // the newest InputAck's tick; 0: none yet
    std::uint64_t tracked_tick_{0};    // the mirror's tick at the tracks before the first advance
    std::size_t spawn_key_{static_cast<std::size_t>(-1)};  // spawns<T>'s type index
    std::uint64_t next_id_{1};
    prediction_stats stats_;
};

// ---- the typed parts ------------------------------------------------------------------------

namespace detail {

template <typename T>
inline constexpr std::size_t float_fields_v = [] {
    if constexpr (std::is_aggregate_v<T> && std::is_empty_v<T>) {
        return std::size_t{0};
    } else {
        return []<std::size_t... I>(std::index_sequence<I...>) {
            return (std::size_t{0} + ... +
                    (std::is_floating_point_v<boost::pfr::tuple_element_t<I, T>> ? 1U : 0U));
        }(std::make_index_sequence<boost::pfr::tuple_size_v<T>>{});
    }
}();

template <typename T>
inline constexpr std::size_t fields_v = [] {
    if constexpr (std::is_aggregate_v<T> && std::is_empty_v<T>) {
        return std::size_t{0};
    } else {
        return boost::pfr::tuple_size_v<T>;
    }
}();

template <typename F>
[[nodiscard]] double field_number(const F& field) noexcept {
    if constexpr (std::is_enum_v<F>) {
        return static_cast<double>(static_cast<std::underlying_type_t<F>>(field));
    } else if constexpr (std::is_arithmetic_v<F>) {
        return static_cast<double>(field);
    } else {
        static_assert(std::is_arithmetic_v<F>, "a predicted type's fields are numbers, bools or enums");
        return 0.0;
    }
}

template <typename T, typename Fn>
void each_float(T& value, Fn&& fn) {
    if constexpr (float_fields_v<T> > 0) {
        std::size_t n = 0;
        boost::pfr::for_each_field(value, [&](auto& field) {
            if constexpr (std::is_floating_point_v<std::remove_cvref_t<decltype(field)>>) {
                fn(field, n++);
            }
        });
    }
}

}  // namespace detail

template <typename T>
prediction::type_ops prediction::make_ops(op_kind kind, bool smoothed) {
    static_assert(std::is_trivially_copyable_v<T> && std::is_default_constructible_v<T>,
                  "a predicted type is trivially copyable (a string component cannot be predicted)");
    type_ops ops;
    ops.key = key_of<T>();
    ops.kind = kind;
    ops.smoothed = smoothed;
    ops.size = sizeof(T);
    ops.floats = detail::float_fields_v<T>;
    if constexpr (protocol::replicated_component<T>) {
        ops.name = std::string{protocol::replicated<T>::name};
    } else {
        ops.name = "(kept type)";
    }
    ops.save = [](const ecs::World& world, ecs::Entity e, std::byte* out) {
        const T* value = world.try_get<T>(e);
        if (value != nullptr) {
            std::memcpy(out, value, sizeof(T));
        }
        return value != nullptr;
    };
    ops.load = [](ecs::World& world, ecs::Entity e, const std::byte* in) {
        if (in == nullptr) {
            if (world.has<T>(e)) {
                world.erase<T>(e);
            }
            return;
        }
        T value;
        std::memcpy(&value, in, sizeof(T));
        world.emplace_or_replace<T>(e, value);
    };
    ops.init = [](ecs::World& world, ecs::Entity e) {
        if (!world.has<T>(e)) {
            world.emplace<T>(e);
        }
    };
    ops.to_floats = [](const std::byte* in, double* out) {
        T value;
        std::memcpy(&value, in, sizeof(T));
        detail::each_float(value, [&](auto& field, std::size_t i) { out[i] = static_cast<double>(field); });
    };
    ops.fields = detail::fields_v<T>;
    ops.to_fields = [](const std::byte* in, const double* offset, double* out) {
        T value;
        std::memcpy(&value, in, sizeof(T));
        if (offset != nullptr) {
            add_to_floats(value, offset);
        }
        if constexpr (detail::fields_v<T> > 0) {
            std::size_t n = 0;
            boost::pfr::for_each_field(value, [&](const auto& field) { out[n++] = detail::field_number(field); });
        }
    };
    if constexpr (protocol::replicated_component<T>) {
        ops.fetch = [](const protocol::mirror& mirror, ecs::Entity e, std::byte* out) {
            const std::optional<T> value = mirror.get<T>(e);
            if (value) {
                std::memcpy(out, &*value, sizeof(T));
            }
            return value.has_value();
        };
        ops.apply_input = [](ecs::World& world, ecs::Entity e, const protocol::component_set& set) {
            const std::optional<T> value = set.get<T>();
            if (value) {
                world.emplace_or_replace<T>(e, *value);
            }
            return value.has_value();
        };
        ops.agrees = [](const std::byte* predicted_bytes, const std::byte* server_bytes,
                        std::uint32_t tolerance, double& error) {
            T predicted;
            T server;
            std::memcpy(&predicted, predicted_bytes, sizeof(T));
            std::memcpy(&server, server_bytes, sizeof(T));
            constexpr protocol::quantize q = protocol::replicated<T>::options.quantized;
            bool agree = true;
            double squares = 0;
            [&]<std::size_t... I>(std::index_sequence<I...>) {
                (
                    [&] {
                        using F = boost::pfr::tuple_element_t<I, T>;
                        const F p = boost::pfr::get<I>(predicted);
                        const F s = boost::pfr::get<I>(server);
                        if constexpr (std::is_floating_point_v<F>) {
                            const double d = static_cast<double>(p) - static_cast<double>(s);
                            squares += std::isfinite(d) ? d * d : 0.0;
                            if constexpr (q.step > 0) {
                                // Both quantized as the wire does: within `tolerance` steps.
                                const std::uint64_t a = protocol::detail::raw_bits<F, q>(p);
                                const std::uint64_t b = protocol::detail::raw_bits<F, q>(s);
                                agree = agree && (a > b ? a - b : b - a) <= tolerance;
                            } else {
                                agree = agree && p == s;
                            }
                        } else {
                            agree = agree && p == s;
                        }
                    }(),
                    ...);
            }(std::make_index_sequence<boost::pfr::tuple_size_v<T>>{});
            error = std::sqrt(squares);
            return agree;
        };
    }
    return ops;
}

template <typename T>
void prediction::add_to_floats(T& value, const double* offset) noexcept {
    detail::each_float(value, [&](auto& field, std::size_t i) {
        using F = std::remove_cvref_t<decltype(field)>;
        field = static_cast<F>(static_cast<double>(field) + offset[i]);
    });
}

}  // namespace ecsnet::client
