#pragma once

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ecsnet/ecs/change_set.hpp"
#include "ecsnet/ecs/config.hpp"
#include "ecsnet/ecs/entity.hpp"
#include "ecsnet/ecs/signal.hpp"
#include "ecsnet/ecs/signature.hpp"
#include "ecsnet/ecs/sparse_set.hpp"
#include "ecsnet/ecs/storage.hpp"

namespace ecsnet::ecs {

template <typename Traits>
class basic_world;

namespace detail {

// What the world keeps per component type besides the values: identity, signals and the
// marks of change tracking. One pool per type per world (seed 003's component manager).
template <typename Traits>
class pool_base {
public:
    using entity_type = basic_entity<Traits>;
    using world_type = basic_world<Traits>;
    using sink_type = signal<world_type&, entity_type>;

    pool_base(component_id id, std::uint64_t hash, std::string name, change_log<entity_type>& log)
        : id_{id}, hash_{hash}, name_{std::move(name)}, log_{&log} {}
    pool_base(const pool_base&) = delete;
    pool_base& operator=(const pool_base&) = delete;
    virtual ~pool_base() = default;

    [[nodiscard]] component_id id() const noexcept { return id_; }
    [[nodiscard]] std::uint64_t hash() const noexcept { return hash_; }
    [[nodiscard]] const std::string& name() const noexcept { return name_; }
    void rename(std::string name) { name_ = std::move(name); }

    // What the running system may do with this type (everything outside systems). The world
    // sets it when a system starts, so an access check is one compare, not a call per access.
    enum class grant : std::uint8_t { none, read, write };
    [[nodiscard]] grant granted() const noexcept { return granted_; }
    void set_granted(grant g) noexcept { granted_ = g; }

    [[nodiscard]] virtual const basic_sparse_set<entity_type>& set() const noexcept = 0;
    // Removes the component without signals or marks (the world sends those).
    virtual void erase(entity_type entity) = 0;

    sink_type on_construct;
    sink_type on_update;
    sink_type on_destroy;

    // Records that the component of `entity`, which it has, is being written. Its write mark's
    // page exists (touch_added made it), so the mark is one load: this is on every tracked
    // write (patch, write, a writing view's entities).
    ECSNET_ECS_INLINE void touch(entity_type entity) {
        if (!log_->enabled || log_->created_this_tick(entity.index())) {
            return;  // a new entity is sent whole
        }
        assert(marks_.has_page(entity.index()) && "touch: the component was never added");
        record(entity, marks_.existing(entity.index()), true);
    }

    // Records that the component of `entity` is about to be added. Allocates its write mark's
    // page even when the entity is new this tick, for every later touch().
    ECSNET_ECS_INLINE void touch_added(entity_type entity) {
        if (!log_->enabled) {
            return;
        }
        std::uint32_t& mark = marks_.at(entity.index());
        if (log_->created_this_tick(entity.index())) {
            return;  // a new entity is sent whole
        }
        record(entity, mark, false);
    }

    // Records that a component is being removed this tick (remove, or its entity destroyed).
    void note_removal() {
        if (log_->enabled) {
            begin_epoch();
            structural_ = true;
        }
    }

    // Net changes of this tick, given a predicate telling whether an entity is still alive.
    template <typename IsAlive>
    void collect(basic_component_changes<entity_type>& out, IsAlive&& is_alive) const {
        if (!dirty_ || dirty_epoch_ != log_->epoch) {
            return;
        }
        if (!structural_) {
            // Only values were written: every touched entity still has the component, and
            // none was created this tick (touch() skips those), so all are plain updates.
            out.updated.insert(out.updated.end(), touched_.begin(),
                               touched_.begin() + static_cast<std::ptrdiff_t>(touched_count_));
            return;
        }
        const auto& entities = set();
        out.updated.reserve(out.updated.size() + touched_count_);  // nearly all are updates
        for (std::size_t i = 0; i < touched_count_; ++i) {
            const entity_type first = touched_[i];
            const bool existed = (marks_.get(first.index()) & 1U) != 0;
            const entity_type now = entities.find_index(first.index());
            if (!now.is_null()) {
                if (!log_->created_this_tick(now.index())) {
                    (existed ? out.updated : out.added).push_back(now);
                }
            } else if (existed && is_alive(first)) {
                out.removed.push_back(first);
            }
        }
    }

    [[nodiscard]] bool dirty() const noexcept { return dirty_ && dirty_epoch_ == log_->epoch; }

    // After the epoch counter wrapped: forget every mark so none looks current by accident.
    void reset_marks() noexcept {
        marks_.fill(0);
        touched_count_ = 0;
        dirty_ = false;
        structural_ = false;
        dirty_epoch_ = 0;
    }

private:
    // `existed`: the component was there before this write; only a tick's first write keeps it.
    ECSNET_ECS_INLINE void record(entity_type entity, std::uint32_t& mark, bool existed) {
        begin_epoch();
        if (!existed) {
            structural_ = true;
        }
        if ((mark >> 1U) != log_->epoch) {
            mark = (log_->epoch << 1U) | (existed ? 1U : 0U);
            // Not push_back: GCC kept it out of line, a call on every write of the tick.
            if (touched_count_ == touched_.size()) [[unlikely]] {
                grow_touched();
            }
            touched_[touched_count_++] = entity;
        }
    }

    ECSNET_ECS_INLINE void begin_epoch() {
        if (dirty_epoch_ != log_->epoch) {
            dirty_epoch_ = log_->epoch;
            touched_count_ = 0;
            dirty_ = true;
            structural_ = false;
        }
    }

    component_id id_;
    std::uint64_t hash_;
    std::string name_;
    change_log<entity_type>* log_;

    paged_array<std::uint32_t, 0U> marks_;  // (epoch << 1) | existed-before-first-write
    // The entities written this epoch are the first touched_count_; the rest is room to grow.
    std::vector<entity_type> touched_;
    std::size_t touched_count_{0};
    [[gnu::noinline]] void grow_touched() {
        touched_.resize(std::max<std::size_t>(64, touched_.size() * 2));
    }
    std::uint32_t dirty_epoch_{0};
    grant granted_{grant::write};
    bool dirty_{false};
    bool structural_{false};  // a component was added or removed this epoch
};

template <typename Traits, typename Component>
class pool final : public pool_base<Traits> {
public:
    using base = pool_base<Traits>;
    using entity_type = typename base::entity_type;
    using storage_type = basic_storage<entity_type, Component>;

    using base::base;

    [[nodiscard]] const basic_sparse_set<entity_type>& set() const noexcept override {
        return storage;
    }
    void erase(entity_type entity) override { storage.erase(entity); }

    storage_type storage;
};

}  // namespace detail

}  // namespace ecsnet::ecs
