#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <tuple>
#include <type_traits>
#include <utility>

#include "ecsnet/ecs/config.hpp"
#include "ecsnet/ecs/error.hpp"
#include "ecsnet/ecs/pool.hpp"

namespace ecsnet::ecs {

template <typename... T>
struct exclude_t {
    explicit constexpr exclude_t() = default;
};

// view<A, B>(exclude<C>): entities with A and B and without C.
template <typename... T>
inline constexpr exclude_t<T...> exclude{};

template <typename Traits, typename Get, typename Exclude>
class basic_view;

// Entities that have every `Get` component and none of the `Exclude` ones, driven by the
// smallest of the Get storages.
//
// Access follows constness: view<const Position> reads; view<Position> is declared as
// writing Position, and every entity it visits has Position marked as updated in the change
// set. Iterating a view yields (entity, components...), for range-for with structured bindings
// or each(fn). A writing view's fn may return bool: then only the entities for which it
// returns true are marked (a system that writes some entities and leaves the rest unchanged).
//
// No write escapes the change set: a read-only type is held through a const pool, so every
// path (iteration, each, get<T>) yields const T& for it, whatever T the caller names; every
// T& a writing view hands out is marked first.
//
// During iteration, component values may be read and written, and entities may be created.
// Structural changes to the storages being iterated (emplace/remove of a Get type, destroy of
// an entity that has one) are not allowed: record them in a command buffer. With
// ECSNET_ECS_CHECKS on, a violation throws iteration_invalidated.
template <typename Traits, typename... Get, typename... Exclude>
class basic_view<Traits, exclude_t<Get...>, exclude_t<Exclude...>> {
    static_assert(sizeof...(Get) > 0, "a view needs at least one component type");

    using entity_type = basic_entity<Traits>;
    template <typename T>
    using pool_of = detail::pool<Traits, std::remove_const_t<T>>;
    // A read-only type's pool is const: nothing reached through it can be written.
    template <typename T>
    using pool_ptr = std::conditional_t<std::is_const_v<T>, const pool_of<T>*, pool_of<T>*>;
    using get_pools = std::tuple<pool_ptr<Get>...>;

    // Position in Get of the declared type for T (const or not).
    template <typename T>
    static constexpr std::size_t get_index() noexcept {
        constexpr bool same[] = {
            std::is_same_v<std::remove_const_t<T>, std::remove_const_t<Get>>...};
        std::size_t found = sizeof...(Get);
        for (std::size_t i = 0; i < sizeof...(Get); ++i) {
            if (same[i]) {
                found = i;
            }
        }
        return found;
    }
    template <typename T>
    using declared_t = std::tuple_element_t<get_index<T>(), std::tuple<Get...>>;
    using exclude_pools = std::tuple<const pool_of<Exclude>*...>;

public:
    basic_view() = default;
    basic_view(get_pools gets, exclude_pools excludes) : gets_{gets}, excludes_{excludes} {
        pick_driver();
    }

    class iterator {
    public:
        using value_type = std::tuple<entity_type, Get&...>;
        using reference = value_type;
        using difference_type = std::ptrdiff_t;
        using iterator_category = std::input_iterator_tag;

        iterator() = default;

        [[nodiscard]] value_type operator*() const {
            check();
            const entity_type e = view_->driver_->data()[pos_];
            view_->touch_writes(e);
            return value_type{e, view_->template fetch<Get>(e)...};
        }

        iterator& operator++() {
            check();
            ++pos_;
            skip();
            return *this;
        }
        void operator++(int) { ++*this; }

        friend bool operator==(const iterator& a, const iterator& b) noexcept {
            return a.pos_ == b.pos_;
        }

    private:
        friend class basic_view;
        iterator(const basic_view* view, std::size_t pos) : view_{view}, pos_{pos} {
            if constexpr (checks_enabled) {
                versions_ = view->structural_versions();
            }
            skip();
        }

        void skip() {
            const std::size_t end = view_->driver_size();
            while (pos_ < end && !view_->accepts(view_->driver_->data()[pos_])) {
                ++pos_;
            }
        }

        void check() const {
            if constexpr (checks_enabled) {
                if (view_->structural_versions() != versions_) {
                    throw iteration_invalidated(
                        "a storage changed structurally while a view iterated it; record "
                        "emplace/remove/destroy in a command buffer instead");
                }
            }
        }

        const basic_view* view_{nullptr};
        std::size_t pos_{0};
        std::array<std::uint64_t, sizeof...(Get)> versions_{};
    };

    [[nodiscard]] iterator begin() const { return iterator{this, 0}; }
    [[nodiscard]] iterator end() const { return iterator{this, driver_size()}; }

    // fn(entity, components&...) or fn(components&...).
    template <typename Fn>
    void each(Fn&& fn) const {
        if (driver_ == nullptr) {
            return;
        }
        static_assert(std::is_invocable_v<Fn&, entity_type, Get&...> ||
                          std::is_invocable_v<Fn&, Get&...>,
                      "each() takes fn(entity, components&...) or fn(components&...)");
        if constexpr (sizeof...(Get) == 1 && sizeof...(Exclude) == 0) {
            each_single(fn);
        } else {
            each_dispatch(fn, std::index_sequence_for<Get...>{});
        }
    }

    [[nodiscard]] bool contains(entity_type e) const noexcept {
        return driver_ != nullptr && accepts(e);
    }

    // Upper bound of the number of entities visited: the size of the smallest Get storage.
    [[nodiscard]] std::size_t size_hint() const noexcept { return driver_size(); }

    // The component of an entity in the view. const T& when T or the view's declaration of it
    // is const; otherwise T&, and the component is marked updated (the caller may write).
    // Checked in every build: component_missing when e does not hold a T at its version (a
    // stale, recycled or null id, or no T), so no build reads memory that is not e's T. That
    // e also passes the view's other types and exclusions is contains(e), checked here too
    // only with ECSNET_ECS_CHECKS (debug builds): in release it would be a random lookup per
    // other type. each() hands its components over without a lookup; get_unchecked() is for
    // callers that guarantee contains(e).
    template <typename T>
    [[nodiscard]] ECSNET_ECS_INLINE decltype(auto) get(entity_type e) const {
        // The values' address is read before the check so that a loop of gets can keep it
        // in a register: read after a branch that may throw, it is read again every time.
        auto* values = pool_for<T>(e)->storage.values().data();
        return value_at<T>(e, values + checked_position<T>(e));
    }

    // EnTT's view.get: precondition contains(e), undefined behaviour otherwise in release
    // builds (with ECSNET_ECS_CHECKS, debug builds, it throws as get() does). A random lookup
    // is bound by how many fit in the CPU's window at once, so by its instructions, and the
    // check is a third of them.
    template <typename T>
    [[nodiscard]] ECSNET_ECS_INLINE decltype(auto) get_unchecked(entity_type e) const {
        if constexpr (checks_enabled) {
            return get_at<T>(e, checked_position<T>(e));
        } else {
            return get_at<T>(e, pool_for<T>(e)->storage.index_of(e));
        }
    }

private:
    template <typename T>
    [[nodiscard]] ECSNET_ECS_INLINE auto* pool_for(entity_type e) const {
        static_assert(get_index<T>() < sizeof...(Get), "get<T>: T is not a component of this view");
        auto* pool = std::get<get_index<T>()>(gets_);
        if (pool == nullptr) [[unlikely]] {
            throw_not_in_view(e);  // T was never registered: the view is empty
        }
        return pool;
    }
    template <typename T>
    [[nodiscard]] ECSNET_ECS_INLINE std::size_t checked_position(entity_type e) const {
        const auto& storage = pool_for<T>(e)->storage;
        const auto pos = storage.find(e);
        if (pos >= storage.npos) [[unlikely]] {
            throw_not_in_view(e);
        }
        if constexpr (checks_enabled) {
            if (!contains(e)) [[unlikely]] {
                throw_not_in_view(e);
            }
        }
        return pos;
    }
    template <typename T>
    [[nodiscard]] ECSNET_ECS_INLINE decltype(auto) get_at(entity_type e, std::size_t pos) const {
        return value_at<T>(e, std::get<get_index<T>()>(gets_)->storage.values().data() + pos);
    }
    template <typename T, typename Value>
    [[nodiscard]] ECSNET_ECS_INLINE decltype(auto) value_at(entity_type e, Value* value) const {
        using declared = declared_t<T>;
        if constexpr (std::is_const_v<T> || std::is_const_v<declared>) {
            return static_cast<const std::remove_const_t<T>&>(*value);
        } else {
            touch_one<declared>(e);
            return static_cast<declared&>(*value);
        }
    }

    [[noreturn]] [[gnu::cold]] [[gnu::noinline]] static void throw_not_in_view(entity_type e) {
        throw component_missing("entity " + to_string(e) + " is not in this view");
    }

    void pick_driver() {
        driver_ = nullptr;
        bool missing = false;
        std::apply(
            [&](auto*... pools) {
                ((pools == nullptr ? (missing = true)
                                   : (driver_ == nullptr || pools->storage.size() < driver_->size()
                                          ? (driver_ = &pools->storage, false)
                                          : false)),
                 ...);
            },
            gets_);
        if (missing) {
            driver_ = nullptr;  // a type nobody registered: nothing can match
        }
    }

    template <typename Fn, typename... C>
    static decltype(auto) invoke(Fn& fn, entity_type e, C&... components) {
        if constexpr (std::is_invocable_v<Fn&, entity_type, C&...>) {
            return fn(e, components...);
        } else {
            return fn(components...);
        }
    }

    // Marks the written components of `e` around fn: before the call, or, when fn returns
    // bool, after it and only if it returned true.
    template <typename Fn, typename... C>
    void visit(Fn& fn, entity_type e, C&... components) const {
        if constexpr (std::is_same_v<decltype(invoke(fn, e, components...)), bool>) {
            if (invoke(fn, e, components...)) {
                touch_writes(e);
            }
        } else {
            touch_writes(e);
            invoke(fn, e, components...);
        }
    }

    // One storage and no filter: its packed values line up with the entities.
    template <typename Fn>
    void each_single(Fn& fn) const {
        [[maybe_unused]] const auto versions = structural_versions();
        const std::size_t count = driver_->size();
        const entity_type* entities = driver_->data();
        for (std::size_t i = 0; i < count; ++i) {
            const entity_type e = entities[i];
            auto& value = std::get<0>(gets_)->storage.values()[i];
            visit(fn, e, static_cast<Get&>(value)...);
            check_unchanged(versions);
        }
    }

    // Picks, once, the loop instantiated for the storage that drives (each_driven<D>).
    template <typename Fn, std::size_t... I>
    void each_dispatch(Fn& fn, std::index_sequence<I...> seq) const {
        static_cast<void>(
            ((driver_ == &std::get<I>(gets_)->storage ? (each_driven<I>(fn, seq), true) : false) ||
             ...));
    }

    // The driver's packed values line up with its entities, so its components are read by
    // position and it needs no membership test; only the other storages are looked up.
    template <std::size_t D, typename Fn, std::size_t... I>
    void each_driven(Fn& fn, std::index_sequence<I...>) const {
        [[maybe_unused]] const auto versions = structural_versions();
        const std::size_t count = driver_->size();
        const entity_type* entities = driver_->data();
        auto* const driven = std::get<D>(gets_)->storage.values().data();
        for (std::size_t i = 0; i < count; ++i) {
            const entity_type e = entities[i];
            if (!accepts_except<D>(e, std::index_sequence<I...>{})) {
                continue;
            }
            visit(fn, e, fetch_driven<D, I>(e, driven, i)...);
            check_unchanged(versions);
        }
    }

    void check_unchanged(
        [[maybe_unused]] const std::array<std::uint64_t, sizeof...(Get)>& versions) const {
        if constexpr (checks_enabled) {
            if (structural_versions() != versions) {
                throw iteration_invalidated(
                    "a storage changed structurally while view.each() iterated it; record "
                    "emplace/remove/destroy in a command buffer instead");
            }
        }
    }

    // accepts(e) for an entity of Get storage D.
    template <std::size_t D, std::size_t... I>
    [[nodiscard]] bool accepts_except(entity_type e, std::index_sequence<I...>) const noexcept {
        return ((I == D || std::get<I>(gets_)->storage.contains(e)) && ...) && !excluded(e);
    }

    template <std::size_t D, std::size_t J, typename Driven>
    [[nodiscard]] decltype(auto) fetch_driven(entity_type e, Driven* driven,
                                              std::size_t i) const noexcept {
        using T = std::tuple_element_t<J, std::tuple<Get...>>;
        if constexpr (J == D) {
            return static_cast<T&>(driven[i]);
        } else {
            return fetch<T>(e);
        }
    }

    [[nodiscard]] std::size_t driver_size() const noexcept {
        return driver_ == nullptr ? 0 : driver_->size();
    }

    [[nodiscard]] bool accepts(entity_type e) const noexcept {
        return std::apply([&](auto*... pools) { return (pools->storage.contains(e) && ...); },
                          gets_) &&
               !excluded(e);
    }

    [[nodiscard]] bool excluded(entity_type e) const noexcept {
        if constexpr (sizeof...(Exclude) == 0) {
            return false;
        } else {
            return std::apply(
                [&](auto*... pools) {
                    return ((pools != nullptr && pools->storage.contains(e)) || ...);
                },
                excludes_);
        }
    }

    // T is one of Get, as declared: T& is const for a read-only type (its pool is const).
    template <typename T>
    [[nodiscard]] T& fetch(entity_type e) const noexcept {
        auto& storage = std::get<get_index<T>()>(gets_)->storage;
        return storage.values().data()[storage.index_of(e)];
    }

    void touch_writes(entity_type e) const {
        (touch_one<Get>(e), ...);
    }

    template <typename T>
    void touch_one(entity_type e) const {
        if constexpr (!std::is_const_v<T>) {
            std::get<get_index<T>()>(gets_)->touch(e);
        }
    }

    [[nodiscard]] std::array<std::uint64_t, sizeof...(Get)> structural_versions() const noexcept {
        if (driver_ == nullptr) {
            return {};
        }
        return std::apply(
            [](auto*... pools) {
                return std::array<std::uint64_t, sizeof...(Get)>{
                    pools->storage.structural_version()...};
            },
            gets_);
    }

    get_pools gets_{};
    exclude_pools excludes_{};
    const basic_sparse_set<entity_type>* driver_{nullptr};
};

}  // namespace ecsnet::ecs
