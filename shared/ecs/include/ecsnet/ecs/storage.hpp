#pragma once

#include <cassert>
#include <cstddef>
#include <span>
#include <type_traits>
#include <utility>

#include "ecsnet/ecs/dense_vector.hpp"
#include "ecsnet/ecs/sparse_set.hpp"

namespace ecsnet::ecs {

// Components of one type, packed in the same order as the sparse set's entities, so that
// position i of values() belongs to entities()[i]. Any movable type is accepted.
//
// This is the raw container: it records no changes and fires no signals. The world wraps
// it (world.hpp) and is the way to write; read-only access to a storage is the fastest way
// to look components up by entity.
template <typename Entity, typename Component>
class basic_storage : public basic_sparse_set<Entity> {
    static_assert(std::is_move_constructible_v<Component> && std::is_move_assignable_v<Component>,
                  "components must be movable");
    static_assert(!std::is_reference_v<Component> && !std::is_const_v<Component>,
                  "store plain component types");

    using base = basic_sparse_set<Entity>;

public:
    using entity_type = Entity;
    using value_type = Component;
    using size_type = std::size_t;

    template <typename... Args>
    Component& emplace(entity_type entity, Args&&... args) {
        assert(!base::contains(entity) && "entity already has this component");
        if constexpr (std::is_aggregate_v<Component>) {
            values_.push_back(Component{std::forward<Args>(args)...});
        } else {
            values_.emplace_back(std::forward<Args>(args)...);
        }
        try {
            base::insert_entity(entity);
        } catch (...) {
            values_.pop_back();
            throw;
        }
        return values_.back();
    }

    // Precondition: contains(entity).
    void erase(entity_type entity) noexcept(std::is_nothrow_move_assignable_v<Component>) {
        const size_type pos = base::erase_entity(entity);
        if (pos != values_.size() - 1) {
            values_[pos] = std::move(values_.back());
        }
        values_.pop_back();
    }

    void clear() noexcept {
        base::clear_entities();
        values_.clear();
    }

    // Precondition: contains(entity).
    [[nodiscard]] const Component& get(entity_type entity) const noexcept {
        return values_[base::index_of(entity)];
    }
    [[nodiscard]] Component& get(entity_type entity) noexcept {
        return values_[base::index_of(entity)];
    }

    [[nodiscard]] ECSNET_ECS_INLINE const Component* try_get(entity_type entity) const noexcept {
        const auto pos = base::find(entity);
        return pos < base::npos ? &values_[pos] : nullptr;
    }
    [[nodiscard]] ECSNET_ECS_INLINE Component* try_get(entity_type entity) noexcept {
        const auto pos = base::find(entity);
        return pos < base::npos ? &values_[pos] : nullptr;
    }

    [[nodiscard]] std::span<const Component> values() const noexcept { return values_; }
    [[nodiscard]] std::span<Component> values() noexcept { return values_; }

    void reserve(size_type capacity) {
        base::reserve(capacity);
        values_.reserve(capacity);
    }

private:
    detail::dense_vector<Component> values_;
};

}  // namespace ecsnet::ecs
