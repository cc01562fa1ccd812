#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "ecsnet/ecs/bit_cast.hpp"
#include "ecsnet/ecs/config.hpp"
#include "ecsnet/ecs/dense_vector.hpp"
#include "ecsnet/ecs/entity.hpp"

namespace ecsnet::ecs {

namespace detail {

// An array indexed by entity index whose pages are allocated on first write, so a few large
// ids cost a few pages, not an array as long as the largest id. A page never written points to
// one shared read-only page of Empty values, so that a read tests only the page's range: a
// random lookup is bound by how many fit in the CPU's window at once, so by its instructions.
template <typename Value, Value Empty, std::size_t PageSize = 4096>
class paged_array {
    static_assert((PageSize & (PageSize - 1)) == 0, "page size must be a power of two");

public:
    paged_array() = default;
    paged_array(const paged_array&) = delete;
    paged_array& operator=(const paged_array&) = delete;
    paged_array(paged_array&& other) noexcept : pages_{std::move(other.pages_)} {
        other.pages_.clear();
    }
    paged_array& operator=(paged_array&& other) noexcept {
        if (this != &other) {
            release();
            pages_ = std::move(other.pages_);
            other.pages_.clear();
        }
        return *this;
    }
    ~paged_array() { release(); }

    [[nodiscard]] ECSNET_ECS_INLINE Value get(std::size_t index) const noexcept {
        const std::size_t page = index / PageSize;
        return page < pages_.size() ? pages_[page][index & (PageSize - 1)] : Empty;
    }

    // Whether the element's page is in the table (written or not): existing() may read it.
    // A bound on the index, not on index / PageSize: g++ then tests the 32-bit index as it is
    // and divides it once, for the page (one instruction fewer on every checked lookup). In
    // 64 bits: a table of 2^20 pages of a 32-bit index would wrap a 32-bit size_t (wasm32).
    [[nodiscard]] ECSNET_ECS_INLINE bool in_range(std::uint64_t index) const noexcept {
        return index < std::uint64_t{pages_.size()} * PageSize;
    }

    // Reference to the element, allocating its page when needed.
    [[nodiscard]] ECSNET_ECS_INLINE Value& at(std::size_t index) {
        const std::size_t page = index / PageSize;
        if (page >= pages_.size() || pages_[page] == unwritten()) [[unlikely]] {
            allocate(page);
        }
        return pages_[page][index & (PageSize - 1)];
    }

    // Precondition: the element's page exists (it was written before).
    [[nodiscard]] ECSNET_ECS_INLINE Value& existing(std::size_t index) noexcept {
        return pages_[index / PageSize][index & (PageSize - 1)];
    }
    [[nodiscard]] ECSNET_ECS_INLINE const Value& existing(std::size_t index) const noexcept {
        return pages_[index / PageSize][index & (PageSize - 1)];
    }

    [[nodiscard]] bool has_page(std::size_t index) const noexcept {
        const std::size_t page = index / PageSize;
        return page < pages_.size() && pages_[page] != unwritten();
    }

    void fill(Value value) noexcept {
        for (Value* page : pages_) {
            if (page != unwritten()) {
                std::fill_n(page, PageSize, value);
            }
        }
    }

    [[nodiscard]] std::size_t allocated_pages() const noexcept {
        return static_cast<std::size_t>(std::count_if(
            pages_.begin(), pages_.end(), [](const Value* p) { return p != unwritten(); }));
    }

private:
    static constexpr std::array<Value, PageSize> make_unwritten() noexcept {
        std::array<Value, PageSize> page{};
        page.fill(Empty);
        return page;
    }
    static constexpr std::array<Value, PageSize> unwritten_page_ = make_unwritten();
    // Only ever read through: at() allocates a page of its own before any write.
    static Value* unwritten() noexcept { return const_cast<Value*>(unwritten_page_.data()); }

    // Out of line: at() is on every insertion and write mark, a new page once per PageSize.
    [[gnu::noinline]] void allocate(std::size_t page) {
        if (page >= pages_.size()) {
            pages_.resize(page + 1, unwritten());
        }
        // Uninitialized, as make_unique_for_overwrite would (absent from emscripten's libc++ 14).
        auto fresh = std::unique_ptr<Value[]>(new Value[PageSize]);
        std::fill_n(fresh.get(), PageSize, Empty);
        pages_[page] = fresh.release();
    }

    void release() noexcept {
        for (Value* page : pages_) {
            if (page != unwritten()) {
                delete[] page;
            }
        }
    }

    std::vector<Value*> pages_;
};

// A sparse entry: the position in the packed array and the version of the entity there. An
// empty entry has the null version, which no live entity carries, and no position.
template <typename Traits>
struct sparse_slot {
    typename Traits::index_type pos{Traits::no_index};
    typename Traits::version_type version{Traits::null_version};
};

}  // namespace detail

// The set of entities that own one component type: a paged sparse array maps an entity index
// to a position in the packed array of entities. Insert, lookup and swap-and-pop removal are
// O(1); iteration walks the packed array. Lookups compare the whole entity, version included,
// so a stale id never finds the component of the index's new owner.
template <typename Entity>
class basic_sparse_set {
public:
    using entity_type = Entity;
    using traits_type = typename Entity::traits_type;
    using index_type = typename traits_type::index_type;
    using size_type = std::size_t;

    static constexpr index_type npos = traits_type::no_index;

    // One read of the sparse page: the version stored there tells a stale id apart without
    // touching the packed array (a random lookup then costs one cache miss less).
    [[nodiscard]] ECSNET_ECS_INLINE bool contains(entity_type entity) const noexcept {
        return position(entity) != npos;
    }

    // Position of the entity in the packed array, or npos when it is not in the set.
    [[nodiscard]] ECSNET_ECS_INLINE index_type position(entity_type entity) const noexcept {
        const std::uint64_t found = find(entity);
        return found < npos ? static_cast<index_type>(found) : npos;
    }

    // The entity's position when below npos; npos or more when it is not in the set. For
    // checked lookups on hot paths: one comparison tests the version and the empty slot.
    [[nodiscard]] ECSNET_ECS_INLINE std::uint64_t find(entity_type entity) const noexcept {
        if constexpr (packs_in_64_bits) {
            // slot ^ (the entity's version, no index) is (position, 0) when the versions
            // match, so it is below npos only when the position is not npos either.
            const auto bits = detail::bit_cast<std::uint64_t>(entity);
            const auto index = static_cast<std::uint32_t>(bits);
            if (!sparse_.in_range(index)) {
                return npos;
            }
            return detail::bit_cast<std::uint64_t>(sparse_.existing(index)) ^ (bits & version_bits);
        } else {
            const detail::sparse_slot<traits_type> slot = sparse_.get(entity.index());
            return slot.version == entity.version() ? slot.pos : npos;
        }
    }

    // The entity stored at this index, whatever its version, or the null entity.
    [[nodiscard]] entity_type find_index(index_type index) const noexcept {
        const detail::sparse_slot<traits_type> slot = sparse_.get(index);
        return slot.pos != npos ? entity_type{index, slot.version} : entity_type{};
    }

    // Position of the entity in the packed array. Precondition: contains(entity); unchecked
    // (an assert in debug builds), so its page is not tested either: one load, as EnTT's.
    [[nodiscard]] ECSNET_ECS_INLINE size_type index_of(entity_type entity) const noexcept {
        assert(contains(entity) && "entity is not in the sparse set");
        return sparse_.existing(entity.index()).pos;
    }

    [[nodiscard]] size_type size() const noexcept { return packed_.size(); }
    [[nodiscard]] bool empty() const noexcept { return packed_.empty(); }
    [[nodiscard]] std::span<const entity_type> entities() const noexcept { return packed_; }
    [[nodiscard]] const entity_type* data() const noexcept { return packed_.data(); }

    // Increases on every insertion and removal: iterators compare it to detect that the set
    // changed under them.
    [[nodiscard]] std::uint64_t structural_version() const noexcept { return structural_version_; }

    void reserve(size_type capacity) { packed_.reserve(capacity); }

protected:
    // Precondition: !contains(entity) and no other version of the index is present.
    size_type insert_entity(entity_type entity) {
        // Page first, then packed array, then link: a throwing allocation leaves no trace.
        detail::sparse_slot<traits_type>& slot = sparse_.at(entity.index());
        const auto pos = static_cast<index_type>(packed_.size());
        packed_.push_back(entity);
        slot = {pos, entity.version()};
        ++structural_version_;
        return pos;
    }

    // Swap-and-pop. Returns the position that was vacated (now holding the former last
    // element, unless the removed entity was last). Precondition: contains(entity).
    size_type erase_entity(entity_type entity) noexcept {
        detail::sparse_slot<traits_type>& slot = sparse_.existing(entity.index());
        const index_type pos = slot.pos;
        const entity_type last = packed_.back();
        packed_[pos] = last;
        sparse_.existing(last.index()).pos = pos;
        slot = empty_slot;
        packed_.pop_back();
        ++structural_version_;
        return pos;
    }

    void clear_entities() noexcept {
        for (const entity_type e : packed_) {
            sparse_.existing(e.index()) = empty_slot;
        }
        packed_.clear();
        ++structural_version_;
    }

private:
    static constexpr detail::sparse_slot<traits_type> empty_slot{};
    // An entity and a sparse slot are each two 32-bit halves, index or position first.
    static constexpr bool packs_in_64_bits = std::is_same_v<traits_type, default_entity_traits> &&
                                             std::endian::native == std::endian::little;
    static constexpr std::uint64_t version_bits = 0xFFFF'FFFF'0000'0000ULL;

    detail::paged_array<detail::sparse_slot<traits_type>, empty_slot> sparse_;
    detail::dense_vector<entity_type> packed_;
    std::uint64_t structural_version_{0};
};

}  // namespace ecsnet::ecs
