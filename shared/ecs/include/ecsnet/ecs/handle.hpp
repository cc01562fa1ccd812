#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "ecsnet/ecs/entity.hpp"
#include "ecsnet/ecs/error.hpp"

namespace ecsnet::ecs {

template <typename Traits>
class basic_world;

// An entity as seen from outside the world: a weak_ptr to the world plus the entity value
// (seed 000). It never keeps the world alive and never dangles: a handle to a destroyed
// entity, to a slot recycled at a newer version, or into a dead world is simply not valid().
//
// Every operation comes in two forms: the plain one throws (expired_world, invalid_entity,
// component_missing...), the try_ one returns false / nullptr / 0 instead.
// Hot loops should work on plain entities through the world; a handle locks its weak_ptr on
// every call.
template <typename Traits>
class basic_handle {
public:
    using entity_type = basic_entity<Traits>;
    using world_type = basic_world<Traits>;

    basic_handle() = default;
    basic_handle(std::weak_ptr<world_type> world, entity_type entity)
        : world_{std::move(world)}, entity_{entity} {}

    [[nodiscard]] entity_type entity() const noexcept { return entity_; }
    // The world, or null when it is gone.
    [[nodiscard]] std::shared_ptr<world_type> world() const noexcept { return world_.lock(); }
    [[nodiscard]] bool expired() const noexcept { return world_.expired(); }

    [[nodiscard]] bool valid() const noexcept {
        const auto w = world_.lock();
        return w != nullptr && w->valid(entity_);
    }
    [[nodiscard]] explicit operator bool() const noexcept { return valid(); }

    // Same world (even after it died), same index, same version.
    friend bool operator==(const basic_handle& a, const basic_handle& b) noexcept {
        return !a.world_.owner_before(b.world_) && !b.world_.owner_before(a.world_) &&
               a.entity_ == b.entity_;
    }

    void destroy() const { locked("destroy")->destroy(entity_); }
    bool try_destroy() const {
        const auto w = world_.lock();
        return w != nullptr && w->valid(entity_) && (w->destroy(entity_), true);
    }

    template <typename T>
    [[nodiscard]] bool has() const {
        const auto w = world_.lock();
        return w != nullptr && w->template has<T>(entity_);
    }

    // A copy: the handle cannot guarantee the world outlives a reference.
    template <typename T>
    [[nodiscard]] T get() const {
        return locked("get")->template get<T>(entity_);  // checked in every build
    }
    template <typename T>
    [[nodiscard]] std::optional<T> try_get() const {
        const auto w = world_.lock();
        if (w == nullptr) {
            return std::nullopt;
        }
        const T* value = w->template try_get<T>(entity_);
        return value == nullptr ? std::nullopt : std::optional<T>{*value};
    }

    template <typename T, typename... Args>
    void emplace(Args&&... args) const {
        locked("emplace")->template emplace<T>(entity_, std::forward<Args>(args)...);
    }
    template <typename T, typename... Args>
    bool try_emplace(Args&&... args) const {
        const auto w = world_.lock();
        if (w == nullptr || !w->valid(entity_) || w->template has<T>(entity_)) {
            return false;
        }
        w->template emplace<T>(entity_, std::forward<Args>(args)...);
        return true;
    }

    template <typename T, typename... Args>
    void emplace_or_replace(Args&&... args) const {
        locked("emplace_or_replace")
            ->template emplace_or_replace<T>(entity_, std::forward<Args>(args)...);
    }

    template <typename T, typename... Args>
    void replace(Args&&... args) const {
        locked("replace")->template replace<T>(entity_, std::forward<Args>(args)...);
    }

    template <typename T, typename... Fn>
    void patch(Fn&&... fn) const {
        locked("patch")->template patch<T>(entity_, std::forward<Fn>(fn)...);
    }
    template <typename T, typename... Fn>
    bool try_patch(Fn&&... fn) const {
        const auto w = world_.lock();
        if (w == nullptr || !w->template has<T>(entity_)) {
            return false;
        }
        w->template patch<T>(entity_, std::forward<Fn>(fn)...);
        return true;
    }

    // Strict: component_missing when one is absent (world::erase).
    template <typename... T>
    void erase() const {
        locked("erase")->template erase<T...>(entity_);
    }
    // Tolerant: removes those present, returns how many (world::remove); 0 when stale.
    template <typename... T>
    std::size_t remove() const {
        const auto w = world_.lock();
        return w == nullptr || !w->valid(entity_) ? 0
                                                   : w->template remove<T...>(entity_);
    }

private:
    [[nodiscard]] std::shared_ptr<world_type> locked(const char* what) const {
        auto w = world_.lock();
        if (w == nullptr) {
            throw expired_world(std::string{what} + ": handle " + to_string(entity_) +
                                " refers to a world that no longer exists");
        }
        return w;
    }

    std::weak_ptr<world_type> world_;
    entity_type entity_{};
};

using Handle = basic_handle<default_entity_traits>;

}  // namespace ecsnet::ecs

template <typename Traits>
struct std::hash<ecsnet::ecs::basic_handle<Traits>> {
    // Handles that compare equal share the entity; the world is left out of the hash because
    // owner equality has no hashable key.
    [[nodiscard]] std::size_t operator()(const ecsnet::ecs::basic_handle<Traits>& h) const noexcept {
        return std::hash<ecsnet::ecs::basic_entity<Traits>>{}(h.entity());
    }
};
