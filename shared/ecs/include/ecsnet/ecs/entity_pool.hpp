#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "ecsnet/ecs/dense_vector.hpp"
#include "ecsnet/ecs/entity.hpp"
#include "ecsnet/ecs/error.hpp"

namespace ecsnet::ecs {

struct entity_pool_options {
    // Freed indices are reused only while more than this many wait (FIFO: the oldest freed
    // first). 0 by default: the version already tells a stale id from the entity now at its
    // index, and a slot retires before its version wraps. A margin costs bytes on the wire:
    // the indices it keeps free are holes in every run of indices a delta sends.
    std::size_t min_free_indices = 0;
};

// Hands out entity ids: fresh indices, then recycled ones at a bumped version. A slot whose
// version would wrap past the maximum is retired for good instead of returning to version 1,
// so an id is never handed out twice.
template <typename Traits>
class basic_entity_pool {
public:
    using entity_type = basic_entity<Traits>;
    using index_type = typename Traits::index_type;
    using version_type = typename Traits::version_type;

    explicit basic_entity_pool(entity_pool_options options = {}) : options_{options} {}

    [[nodiscard]] entity_type create() {
        // Below the threshold we still recycle when no fresh index is left: the threshold is a
        // safety margin, and failing while indices wait would be a hidden limit.
        const bool fresh_left = slots_.size() <= static_cast<std::size_t>(Traits::max_index);
        settle_free_list();
        if (free_count() != 0 && (free_count() > options_.min_free_indices || !fresh_left)) {
            const index_type index = pop_free();
            slot& s = slots_[index];
            s.set_alive(true);
            ++alive_;
            return entity_type{index, s.version};
        }
        if (!fresh_left) {
            throw capacity_exhausted("entity pool exhausted: all " + std::to_string(slots_.size()) +
                                     " indices are alive or retired (" +
                                     std::to_string(retired_) + " retired)");
        }
        if (slots_.size() == slots_.capacity()) {
            slots_.reserve(slots_.empty() ? 1024 : slots_.size() * 2);
        }
        const auto index = static_cast<index_type>(slots_.size());
        slots_.push_back(slot{Traits::first_version, 1U});
        ++alive_;
        return entity_type{index, Traits::first_version};
    }

    // Makes room for one release, so that release() itself cannot fail.
    void reserve_release() {
        if (free_.size() == free_.capacity()) {
            free_.reserve(std::max<std::size_t>(1024, free_.capacity() * 2));
        }
    }

    // Precondition: valid(entity). Returns true when the slot was retired. Allocates (and then
    // could only fail by ending the program) unless reserve_release() was called before.
    bool release(entity_type entity) noexcept {
        slot& s = slots_[entity.index()];
        s.set_alive(false);
        --alive_;
        if (s.version == Traits::max_version) {
            ++retired_;
            return true;
        }
        ++s.version;
        free_.push_back(entity.index());
        return false;
    }

    [[nodiscard]] bool valid(entity_type entity) const noexcept {
        const auto index = static_cast<std::size_t>(entity.index());
        return index < slots_.size() && slots_[index].alive() &&
               slots_[index].version == entity.version() && !entity.is_null();
    }

    // The live entity at this index, or the null entity.
    [[nodiscard]] entity_type current(index_type index) const noexcept {
        const auto i = static_cast<std::size_t>(index);
        if (i < slots_.size() && slots_[i].alive()) {
            return entity_type{index, slots_[i].version};
        }
        return entity_type{};
    }

    // The version a slot holds now: the live entity's, or the next one to be handed out.
    [[nodiscard]] version_type version_at(index_type index) const noexcept {
        const auto i = static_cast<std::size_t>(index);
        return i < slots_.size() ? slots_[i].version : Traits::null_version;
    }

    template <typename Fn>
    void each(Fn&& fn) const {
        for (std::size_t i = 0; i < slots_.size(); ++i) {
            if (slots_[i].alive()) {
                fn(entity_type{static_cast<index_type>(i), slots_[i].version});
            }
        }
    }

    // 31 bits per slot for the owner's bookkeeping (the world's change log writes the tick an
    // entity was created in): kept beside the version, the check costs no extra cache line.
    [[nodiscard]] std::uint32_t stamp(index_type index) const noexcept {
        const auto i = static_cast<std::size_t>(index);
        return i < slots_.size() ? slots_[i].state >> 1U : 0;
    }
    // Precondition: index < slots(), stamp < 2^31.
    void set_stamp(index_type index, std::uint32_t stamp) noexcept {
        std::uint32_t& state = slots_[static_cast<std::size_t>(index)].state;
        state = (stamp << 1U) | (state & 1U);
    }
    void clear_stamps() noexcept {
        for (slot& s : slots_) {
            s.state &= 1U;
        }
    }

    // Every slot as it is: what a checkpoint keeps so that ids come back exactly, stale ones
    // stay stale and recycling goes on in the same order after a restart.
    struct state {
        std::vector<version_type> versions;  // per slot: the live version, or the next one
        std::vector<std::uint8_t> alive;     // per slot: 1 when alive
        std::vector<index_type> free;        // recycled indices, next to be reused first
    };

    [[nodiscard]] state save() const {
        state out;
        save(out);
        return out;
    }
    // The same into `out`, in the memory its vectors already hold: a server that checkpoints
    // every few seconds copies into pages it has, not into fresh ones the kernel must fault in
    // and zero (most of a 1M-entity copy's time).
    void save(state& out) const {
        out.versions.resize(slots_.size());
        out.alive.resize(slots_.size());
        for (std::size_t i = 0; i < slots_.size(); ++i) {
            out.versions[i] = slots_[i].version;
            out.alive[i] = slots_[i].alive() ? 1 : 0;
        }
        settle_free_list();
        out.free.assign(free_.begin() + static_cast<std::ptrdiff_t>(free_head_), free_.end());
    }

    // Replaces every slot with `saved` (stamps cleared). A slot neither alive nor free must be
    // retired (at the maximum version). Throws std::invalid_argument naming the first
    // inconsistency (sizes, a free index out of range, alive or listed twice, a lost slot),
    // and then leaves the pool as it was.
    void restore(const state& saved) {
        const std::size_t n = saved.versions.size();
        if (saved.alive.size() != n) {
            throw std::invalid_argument("entity pool state: " + std::to_string(n) +
                                        " versions but " + std::to_string(saved.alive.size()) +
                                        " alive flags");
        }
        if (n > static_cast<std::size_t>(Traits::max_index) + 1) {
            throw std::invalid_argument("entity pool state: " + std::to_string(n) +
                                        " slots, more than indices exist");
        }
        std::vector<std::uint8_t> listed(n, 0);
        for (const index_type index : saved.free) {
            const auto i = static_cast<std::size_t>(index);
            if (i >= n || saved.alive[i] != 0 || listed[i] != 0 ||
                saved.versions[i] == Traits::null_version) {
                throw std::invalid_argument("entity pool state: free index " +
                                            std::to_string(i) +
                                            " is out of range, alive, listed twice or null");
            }
            listed[i] = 1;
        }
        std::size_t alive = 0;
        std::size_t retired = 0;
        for (std::size_t i = 0; i < n; ++i) {
            if (saved.versions[i] == Traits::null_version) {
                throw std::invalid_argument("entity pool state: slot " + std::to_string(i) +
                                            " has the null version");
            }
            if (saved.alive[i] != 0) {
                ++alive;
            } else if (listed[i] == 0) {
                if (saved.versions[i] != Traits::max_version) {
                    throw std::invalid_argument("entity pool state: slot " + std::to_string(i) +
                                                " is neither alive, free nor retired");
                }
                ++retired;
            }
        }
        detail::dense_vector<slot> slots;
        slots.reserve(std::max<std::size_t>(n, 1024));
        for (std::size_t i = 0; i < n; ++i) {
            slots.push_back(slot{saved.versions[i], saved.alive[i] != 0 ? 1U : 0U});
        }
        std::vector<index_type> free(saved.free.begin(), saved.free.end());
        slots_ = std::move(slots);
        free_ = std::move(free);
        free_head_ = 0;
        free_unsettled_ = false;
        alive_ = alive;
        retired_ = retired;
    }

    // Makes exactly `entity` alive again (a journal replay recreating an id the world handed
    // out): its slot, and any before it, are added when missing; its index leaves the free
    // list. Throws std::invalid_argument when the slot is alive or the version is null.
    // O(1): the free list drops revived indices at its next use (settle_free_list), so that a
    // replay of n rows into a world with f free slots costs O(n + f), not O(n x f).
    void revive(entity_type entity) {
        const auto i = static_cast<std::size_t>(entity.index());
        if (entity.is_null() || i > static_cast<std::size_t>(Traits::max_index)) {
            throw std::invalid_argument("cannot revive a null entity or index " + std::to_string(i));
        }
        if (i < slots_.size() && slots_[i].alive()) {
            throw std::invalid_argument("cannot revive entity " + std::to_string(i) + "v" +
                                        std::to_string(entity.version()) +
                                        ": its slot is alive at version " +
                                        std::to_string(slots_[i].version));
        }
        while (slots_.size() <= i) {
            if (slots_.size() == slots_.capacity()) {
                slots_.reserve(slots_.empty() ? 1024 : slots_.size() * 2);
            }
            const auto added = static_cast<index_type>(slots_.size());
            slots_.push_back(slot{Traits::first_version, 0U});
            if (added != entity.index()) {
                free_.push_back(added);
            }
        }
        slots_[i].version = entity.version();
        slots_[i].set_alive(true);
        ++alive_;
        free_unsettled_ = true;
    }

    [[nodiscard]] std::size_t alive() const noexcept { return alive_; }
    [[nodiscard]] std::size_t slots() const noexcept { return slots_.size(); }
    [[nodiscard]] std::size_t free_count() const {
        settle_free_list();
        return free_.size() - free_head_;
    }
    [[nodiscard]] std::size_t retired() const {
        settle_free_list();
        return retired_;
    }
    [[nodiscard]] const entity_pool_options& options() const noexcept { return options_; }

private:
    struct slot {
        version_type version;
        std::uint32_t state;  // (stamp << 1) | alive: a slot stays 8 bytes

        [[nodiscard]] bool alive() const noexcept { return (state & 1U) != 0; }
        void set_alive(bool alive) noexcept { state = (state & ~1U) | (alive ? 1U : 0U); }
    };

    entity_pool_options options_;
    detail::dense_vector<slot> slots_;
    // FIFO on a vector: pushes append, pops advance free_head_, and the consumed prefix is
    // dropped once it is the larger half (a deque's push was a third of destroy's cost).
    [[nodiscard]] index_type pop_free() noexcept {
        const index_type index = free_[free_head_++];
        if (free_head_ == free_.size()) {
            free_.clear();
            free_head_ = 0;
        } else if (free_head_ >= 4096 && free_head_ * 2 >= free_.size()) {
            free_.erase(free_.begin(), free_.begin() + static_cast<std::ptrdiff_t>(free_head_));
            free_head_ = 0;
        }
        return index;
    }

    // After revive(): a revived index may still be queued, and one revived and released again
    // is queued twice (its old place and the end). Keeps, in order, the last entry of each
    // index whose slot is not alive; every other dead slot is then retired. O(free + slots).
    void settle_free_list() const {
        if (!free_unsettled_) {
            return;
        }
        std::vector<std::uint8_t> kept(slots_.size(), 0);
        std::vector<index_type> settled;
        settled.reserve(free_.size() - free_head_);
        for (std::size_t k = free_.size(); k-- > free_head_;) {
            const auto i = static_cast<std::size_t>(free_[k]);
            if (!slots_[i].alive() && kept[i] == 0) {
                kept[i] = 1;
                settled.push_back(free_[k]);
            }
        }
        std::reverse(settled.begin(), settled.end());
        free_ = std::move(settled);
        free_head_ = 0;
        retired_ = slots_.size() - alive_ - free_.size();
        free_unsettled_ = false;
    }

    // Mutable: settling changes how the free list is stored, never what it holds.
    mutable std::vector<index_type> free_;
    mutable std::size_t free_head_{0};
    std::size_t alive_{0};
    mutable std::size_t retired_{0};
    mutable bool free_unsettled_{false};
};

}  // namespace ecsnet::ecs
