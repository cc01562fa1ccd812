#pragma once

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ecsnet/ecs/access.hpp"
#include "ecsnet/ecs/change_set.hpp"
#include "ecsnet/ecs/config.hpp"
#include "ecsnet/ecs/entity.hpp"
#include "ecsnet/ecs/entity_pool.hpp"
#include "ecsnet/ecs/error.hpp"
#include "ecsnet/ecs/handle.hpp"
#include "ecsnet/ecs/pool.hpp"
#include "ecsnet/ecs/signature.hpp"
#include "ecsnet/ecs/type_info.hpp"
#include "ecsnet/ecs/view.hpp"

namespace ecsnet::ecs {

template <typename Traits>
class basic_scheduler;

struct world_options {
    entity_pool_options entities{};
    // Record the per-tick change set (replication needs it). Off, every write is a little cheaper.
    bool track_changes = true;
};

namespace detail {

// Component type hash -> pool, open addressing. Type hashes are already well mixed, so the
// low bits index the table directly; a lookup is usually one probe. It sits on every world
// get/patch/emplace, where each instruction counts: a random lookup's speed is how many of
// them the CPU keeps in flight, so the table starts as one empty slot (no emptiness test) and
// keeps its mask.
template <typename Pool>
class type_table {
public:
    [[nodiscard]] ECSNET_ECS_INLINE Pool* find(std::uint64_t hash) const noexcept {
        for (std::size_t i = hash & mask_;; i = (i + 1) & mask_) {
            const slot& s = slots_[i];
            if (s.hash == hash && s.pool != nullptr) [[likely]] {
                return s.pool;
            }
            if (s.pool == nullptr) {
                return nullptr;
            }
        }
    }

    void insert(std::uint64_t hash, Pool* pool) {
        if ((size_ + 1) * 2 > slots_.size()) {
            std::vector<slot> old = std::move(slots_);
            slots_.assign(old.size() < 16 ? 16 : old.size() * 2, slot{});
            mask_ = slots_.size() - 1;
            size_ = 0;
            for (const slot& s : old) {
                if (s.pool != nullptr) {
                    place(s.hash, s.pool);
                }
            }
        }
        place(hash, pool);
    }

private:
    struct slot {
        std::uint64_t hash{0};
        Pool* pool{nullptr};
    };

    void place(std::uint64_t hash, Pool* pool) noexcept {
        std::size_t i = hash & mask_;
        while (slots_[i].pool != nullptr) {
            i = (i + 1) & mask_;
        }
        slots_[i] = slot{hash, pool};
        ++size_;
    }

    std::vector<slot> slots_ = std::vector<slot>(1);
    std::size_t mask_{0};
    std::size_t size_{0};
};

}  // namespace detail

// The world: the entity manager and every component storage (seeds 000-004's EntityManager).
//
// It can only live in a shared_ptr (make()), because handles hold a weak_ptr to it and
// must detect that it is gone. It is neither copyable nor movable; any number of worlds may
// coexist, and nothing in it is global or static.
//
// Single writer: a world is used by one thread at a time. Nothing in it locks.
//
// Writes (emplace, emplace_or_replace, replace, patch, remove, writing views) are recorded in
// the current tick's change set; get/try_get, storages, read-only views and everything reached
// from a const World& are const, so that no write escapes it. A T& handed out by a write
// (emplace, patch, a writing view's get...) is covered for the rest of the tick only.
//
// Structural operations (destroy, emplace, remove, remove_if_present, clear) are all-or-nothing
// with respect to their checks: validity, presence and access are checked for every component
// first, then every on_destroy listener runs while nothing is removed yet, then the removals
// happen and nothing after that throws. A failed check or a throwing listener leaves the
// entity, its components and the change set as they were (what listeners did stays done).
template <typename Traits>
class basic_world : public std::enable_shared_from_this<basic_world<Traits>> {
    struct private_tag {
        explicit private_tag() = default;
    };

public:
    using traits_type = Traits;
    using entity_type = basic_entity<Traits>;
    using index_type = typename Traits::index_type;
    using version_type = typename Traits::version_type;
    using handle_type = basic_handle<Traits>;
    using change_set_type = basic_change_set<entity_type>;
    using sink_type = signal<basic_world&, entity_type>;
    template <typename Component>
    using storage_type = basic_storage<entity_type, Component>;

    // The only way to get a world.
    [[nodiscard]] static std::shared_ptr<basic_world> make(world_options options = {}) {
        return std::make_shared<basic_world>(private_tag{}, options);
    }

    // Use make(): the tag keeps this constructor out of reach.
    basic_world(private_tag, world_options options) : entities_{options.entities} {
        log_.enabled = options.track_changes;
        log_.entities = &entities_;
    }
    basic_world(const basic_world&) = delete;
    basic_world(basic_world&&) = delete;
    basic_world& operator=(const basic_world&) = delete;
    basic_world& operator=(basic_world&&) = delete;
    ~basic_world() = default;

    // ---- entities -------------------------------------------------------------------------

    [[nodiscard]] entity_type create() {
        const entity_type e = entities_.create();
        if (log_.enabled) {
            entities_.set_stamp(e.index(), log_.epoch);
            log_.note_created(e);
        }
        return e;
    }

    // Destroys the entity and all its components. on_destroy fires for each of them first,
    // while the entity is still whole: a listener that throws leaves it untouched. Creating and
    // destroying entities are entity-level: a system needs no component declaration.
    void destroy(entity_type e) {
        require_valid(e, "destroy");
        if (signature::any_bit(signatures_.row(e.index()), [&](component_id id) {
                return !pools_[id]->on_destroy.empty();
            })) {
            publish_destroyed(e);
            if (!entities_.valid(e)) {
                return;  // a listener destroyed it already
            }
        }
        entities_.reserve_release();
        const bool record = log_.enabled && !log_.created_this_tick(e.index());
        if (record) {
            // Nothing throws from here on. Geometric growth: reserve(size + 1) reallocates to
            // exactly that, and made destroying n entities in one tick O(n^2).
            if (log_.destroyed.size() == log_.destroyed.capacity()) {
                log_.destroyed.reserve(std::max<std::size_t>(64, log_.destroyed.capacity() * 2));
            }
        }
        // The current row: a listener may have added or removed components.
        signature::for_each_bit(signatures_.row(e.index()), [&](component_id id) {
            auto& p = *pools_[id];
            if (p.set().contains(e)) {
                p.note_removal();
                p.erase(e);
            }
        });
        signatures_.clear(e.index());
        if (!names_.empty()) {
            names_.erase(e.index());
        }
        if (record) {
            log_.destroyed.push_back(e);
        }
        entities_.release(e);
    }

    // on_destroy for each component of e, while the entity is still whole.
    [[gnu::noinline]] void publish_destroyed(entity_type e) {
        // Copy the row: listeners may change the signature while we walk it.
        std::uint64_t words[8];
        std::vector<std::uint64_t> wide;
        const auto row = signatures_.row(e.index());
        std::uint64_t* copy = words;
        if (row.size() > std::size(words)) {
            wide.assign(row.begin(), row.end());
            copy = wide.data();
        } else {
            std::copy(row.begin(), row.end(), words);
        }
        const std::span<const std::uint64_t> ids{copy, row.size()};
        signature::for_each_bit(ids, [&](component_id id) {
            auto& p = *pools_[id];
            // Skipped once a listener destroyed the entity, or removed that component.
            if (!p.on_destroy.empty() && p.set().contains(e)) {
                p.on_destroy.publish(*this, e);
            }
        });
    }

    // Non-throwing form: false when the entity is not alive.
    bool try_destroy(entity_type e) {
        if (!valid(e)) {
            return false;
        }
        destroy(e);
        return true;
    }

    // ---- persistence (server/.../world_image.hpp) -------------------------------------------

    // Every slot (versions, liveness, free list), as a checkpoint keeps it.
    [[nodiscard]] typename basic_entity_pool<Traits>::state save_entities() const {
        return entities_.save();
    }
    // The same into `out`, reusing its memory.
    void save_entities(typename basic_entity_pool<Traits>::state& out) const {
        entities_.save(out);
    }
    // Puts back the slots save_entities() gave, in a world that never had an entity: ids come
    // back exactly (stale ones stay stale), recycling continues in the same order. The live
    // entities then get their components with emplace. Recorded as created, like entities
    // made before the first tick. Throws std::logic_error when the world had an entity,
    // std::invalid_argument (pool::restore) on an inconsistent state.
    void restore_entities(const typename basic_entity_pool<Traits>::state& saved) {
        if (entities_.slots() != 0) {
            throw std::logic_error("restore_entities needs a world that never had an entity (" +
                                   std::to_string(entities_.slots()) + " slots used)");
        }
        entities_.restore(saved);
        if (log_.enabled) {
            entities_.each([&](entity_type e) {
                entities_.set_stamp(e.index(), log_.epoch);
                log_.note_created(e);
            });
        }
    }
    // Creates exactly e again (a journal replay recreating an id the world handed out before a
    // restart); recorded as created. Throws std::invalid_argument when e's slot is alive.
    entity_type revive(entity_type e) {
        entities_.revive(e);
        if (log_.enabled) {
            entities_.set_stamp(e.index(), log_.epoch);
            log_.note_created(e);
        }
        return e;
    }

    [[nodiscard]] bool valid(entity_type e) const noexcept { return entities_.valid(e); }
    [[nodiscard]] std::size_t alive() const noexcept { return entities_.alive(); }
    [[nodiscard]] const basic_entity_pool<Traits>& entities() const noexcept { return entities_; }
    // The live entity at this index, or null: turns an index from the wire into an entity.
    [[nodiscard]] entity_type current(index_type index) const noexcept {
        return entities_.current(index);
    }

    // fn(entity) for every live entity, in index order.
    template <typename Fn>
    void each(Fn&& fn) const {
        entities_.each(std::forward<Fn>(fn));
    }

    [[nodiscard]] handle_type handle(entity_type e) {
        return handle_type{this->weak_from_this(), e};
    }

    // Optional debug name of an entity (seed 002's entity names); dropped on destroy.
    void set_name(entity_type e, std::string name) {
        require_valid(e, "set_name");
        names_[e.index()] = std::move(name);
    }
    [[nodiscard]] std::string_view name(entity_type e) const {
        if (!valid(e)) {
            return {};
        }
        const auto it = names_.find(e.index());
        return it == names_.end() ? std::string_view{} : std::string_view{it->second};
    }

    // ---- component types ------------------------------------------------------------------

    // Registers T (done implicitly on first use) and optionally gives it a debug name.
    template <typename T>
    component_id register_component(std::string_view name = {}) {
        auto& p = assure<T>();
        if (!name.empty()) {
            p.rename(std::string{name});
        }
        return p.id();
    }

    template <typename T>
    [[nodiscard]] std::optional<component_id> component_of() const noexcept {
        const auto* p = find_pool<T>();
        return p == nullptr ? std::nullopt : std::optional<component_id>{p->id()};
    }

    [[nodiscard]] std::size_t component_count() const noexcept { return pools_.size(); }
    [[nodiscard]] std::string_view component_name(component_id id) const {
        return id < pools_.size() ? std::string_view{pools_[id]->name()} : std::string_view{};
    }

    [[nodiscard]] signature signature_of(entity_type e) const {
        require_valid(e, "signature_of");
        return signature{signatures_.row(e.index())};
    }

    // ---- components -----------------------------------------------------------------------

    template <typename T, typename... Args>
    T& emplace(entity_type e, Args&&... args) {
        auto& p = assure<T>();
        check_access(p, true);
        require_valid(e, "emplace", p.name());
        if (p.storage.contains(e)) {
            throw component_exists("entity " + to_string(e) + " already has " + p.name());
        }
        // Both may allocate: first, so that nothing throws after the emplace. A mark for a
        // component that then failed to construct is dropped by take_changes (not there, was
        // not there).
        signatures_.ensure_row(e.index());
        p.touch_added(e);
        T& value = p.storage.emplace(e, std::forward<Args>(args)...);
        signatures_.set(e.index(), p.id());
        if (!p.on_construct.empty()) {
            p.on_construct.publish(*this, e);
            return p.storage.get(e);  // a listener may have moved it
        }
        return value;
    }

    template <typename T, typename... Args>
    T& emplace_or_replace(entity_type e, Args&&... args) {
        auto& p = assure<T>();
        if (p.storage.contains(e)) {
            return replace<T>(e, std::forward<Args>(args)...);
        }
        return emplace<T>(e, std::forward<Args>(args)...);
    }

    template <typename T, typename... Args>
    T& replace(entity_type e, Args&&... args) {
        return patch<T>(e, [&](T& value) {
            if constexpr (std::is_aggregate_v<T>) {
                value = T{std::forward<Args>(args)...};
            } else {
                value = T(std::forward<Args>(args)...);
            }
        });
    }

    // Mutates the component in place through each fn(T&), records the update and fires
    // on_update.
    template <typename T, typename... Fn>
    T& patch(entity_type e, Fn&&... fn) {
        auto& p = assure<T>();
        check_access(p, true);
        T& value = require_component(p, e, "patch");
        p.touch(e);
        (std::forward<Fn>(fn)(value), ...);
        if (!p.on_update.empty()) {
            const auto before = p.storage.structural_version();
            p.on_update.publish(*this, e);
            // Only a structural change to the storage can have moved the value.
            return p.storage.structural_version() == before ? value : p.storage.get(e);
        }
        return value;
    }

    // The component, writable in place, marked as updated in the change set like a writing
    // view's (on_update listeners do not run: patch() runs them after its fn). The reference
    // is covered for the rest of the tick. component_missing when e has no T.
    template <typename T>
    [[nodiscard]] T& write(entity_type e) {
        auto& p = assure<T>();
        check_access(p, true);
        T& value = require_component(p, e, "write");
        p.touch(e);
        return value;
    }

    // const T&, or a tuple of const references for several types. Checked in every build, like
    // std::vector::at: invalid_entity when e is not alive at its version (a stale or recycled
    // handle), component_missing when it has no T; the message names the entity, the type and
    // why. try_get() when a null is the answer. Reading what a view's iteration hands over
    // needs no lookup at all; get_unchecked() is for callers that guarantee e and T.
    template <typename... T>
    [[nodiscard]] decltype(auto) get(entity_type e) const {
        if constexpr (sizeof...(T) == 1) {
            return get_one<T...>(e);
        } else {
            return std::tuple<const T&...>{get_one<T>(e)...};
        }
    }

    // EnTT's get: the caller guarantees that e is alive and has each T. One sparse load and
    // one component load; a broken promise is undefined behaviour in release builds (with
    // ECSNET_ECS_CHECKS, debug builds, it throws as get() does).
    template <typename... T>
    [[nodiscard]] decltype(auto) get_unchecked(entity_type e) const {
        if constexpr (sizeof...(T) == 1) {
            return get_unchecked_one<T...>(e);
        } else {
            return std::tuple<const T&...>{get_unchecked_one<T>(e)...};
        }
    }

    template <typename T>
    [[nodiscard]] ECSNET_ECS_INLINE const T* try_get(entity_type e) const {
        const auto* p = find_checked<T>();
        if (p == nullptr) {
            return nullptr;
        }
        return p->storage.try_get(e);
    }

    template <typename... T>
    [[nodiscard]] bool all_of(entity_type e) const {
        return (has_one<T>(e) && ...);
    }
    template <typename... T>
    [[nodiscard]] bool any_of(entity_type e) const {
        return (has_one<T>(e) || ...);
    }
    template <typename T>
    [[nodiscard]] bool has(entity_type e) const {
        return has_one<T>(e);
    }

    // EnTT's names: erase is strict, remove tolerant.
    // Removes the components; component_missing when one is not there (then none is removed).
    template <typename... T>
    void erase(entity_type e) {
        // A braced list registers new types left to right, as their ids must follow.
        std::apply([&](auto&... pools) { erase_from(e, pools...); },
                   std::tuple<pool_t<T>&...>{assure<T>()...});
    }

    // Removes the components that are there; returns how many were removed.
    template <typename... T>
    std::size_t remove(entity_type e) {
        return std::apply([&](auto&... pools) { return remove_from(e, pools...); },
                          std::tuple<pool_t<T>&...>{assure<T>()...});
    }

    // Removes every component; the entity stays alive.
    void clear(entity_type e) {
        require_valid(e, "clear");
        const signature sig{signatures_.row(e.index())};
        sig.each([&](component_id id) { check_access(*pools_[id], true); });
        sig.each([&](component_id id) {
            auto& p = *pools_[id];
            if (!p.on_destroy.empty() && p.set().contains(e)) {
                p.on_destroy.publish(*this, e);
            }
        });
        if (!entities_.valid(e)) {
            return;  // a listener destroyed it
        }
        // The current row: a listener may have added or removed components.
        const signature now{signatures_.row(e.index())};
        now.each([&](component_id id) {
            auto& p = *pools_[id];
            if (p.set().contains(e)) {
                p.touch(e);
            }
        });
        now.each([&](component_id id) { erase_recorded(*pools_[id], e); });
    }

    // ---- bulk access ----------------------------------------------------------------------

    template <typename... Get, typename... Exclude>
    [[nodiscard]] basic_view<Traits, exclude_t<Get...>, exclude_t<Exclude...>> view(
        exclude_t<Exclude...> = exclude_t<Exclude...>{}) {
        return {std::tuple{&checked_pool<Get>(!std::is_const_v<Get>)...},
                std::tuple{static_cast<const pool_t<Exclude>*>(&checked_pool<Exclude>(false))...}};
    }

    template <typename... Get, typename... Exclude>
    [[nodiscard]] basic_view<Traits, exclude_t<Get...>, exclude_t<Exclude...>> view(
        exclude_t<Exclude...> = exclude_t<Exclude...>{}) const {
        static_assert((std::is_const_v<Get> && ...), "a const world gives read-only views");
        return {std::tuple{find_checked<Get>()...}, std::tuple{find_checked<Exclude>()...}};
    }

    // Read-only access to a storage: the fastest lookups by entity; its get() is unchecked
    // (an assert in debug builds), its try_get() checked.
    template <typename T>
    [[nodiscard]] const storage_type<T>& storage() {
        auto& p = assure<T>();
        check_access(p, false);
        return p.storage;
    }
    // A const world cannot register T: an unregistered type reads as an empty storage (an
    // immutable one shared by every world, since nothing can ever be added to it).
    template <typename T>
    [[nodiscard]] const storage_type<T>& storage() const {
        if (const auto* p = find_checked<T>()) {
            return p->storage;
        }
        static const storage_type<T> empty;
        return empty;
    }
    template <typename T>
    [[nodiscard]] const storage_type<T>* find_storage() const {
        const auto* p = find_checked<T>();
        return p == nullptr ? nullptr : &p->storage;
    }

    // ---- signals --------------------------------------------------------------------------

    template <typename T>
    [[nodiscard]] sink_type& on_construct() {
        return assure<T>().on_construct;
    }
    template <typename T>
    [[nodiscard]] sink_type& on_update() {
        return assure<T>().on_update;
    }
    template <typename T>
    [[nodiscard]] sink_type& on_destroy() {
        return assure<T>().on_destroy;
    }

    // ---- change tracking ------------------------------------------------------------------

    // The changes since the previous call, net of everything in between; starts a new tick.
    [[nodiscard]] change_set_type take_changes() {
        change_set_type out;
        take_changes(out);
        return out;
    }

    // The same into `into`, whose lists are cleared and reused: a server that keeps one change
    // set across ticks allocates nothing per tick once its lists have grown, where each
    // fresh set grew its lists again (for a tick destroying a million entities, most of the
    // cost of recording them).
    void take_changes(change_set_type& into) {
        into.tick = log_.tick;
        into.created.clear();
        into.destroyed.clear();
        for (auto& c : into.components) {
            c.added.clear();
            c.updated.clear();
            c.removed.clear();
        }
        // Reused in id order; the lists of a type with no change this tick wait at the end.
        std::size_t used = 0;
        if (log_.enabled) {
            std::size_t created = 0;
            for (const auto& run : log_.created) {
                created += run.count;
            }
            into.created.reserve(created);
            log_.each_created([&](entity_type e) {
                if (entities_.valid(e)) {
                    into.created.push_back(e);
                }
            });
            // The log takes the set's emptied list, with its capacity, for the next tick.
            into.destroyed.swap(log_.destroyed);
            const auto alive = [this](entity_type e) { return entities_.valid(e); };
            for (const auto& p : pools_) {
                if (!p->dirty()) {
                    continue;
                }
                if (used == into.components.size()) {
                    if (spare_changes_.empty()) {
                        into.components.emplace_back();
                    } else {
                        into.components.push_back(std::move(spare_changes_.back()));
                        spare_changes_.pop_back();
                    }
                }
                basic_component_changes<entity_type>& changes = into.components[used];
                changes.id = p->id();
                changes.type_hash = p->hash();
                changes.name = p->name();
                p->collect(changes, alive);
                if (!changes.added.empty() || !changes.updated.empty() ||
                    !changes.removed.empty()) {
                    ++used;
                }
            }
        }
        // Lists of types that did not change this tick are kept for a later one (at most one
        // per type: sets from elsewhere must not make the spares grow).
        for (std::size_t i = used; i < into.components.size() && spare_changes_.size() < pools_.size();
             ++i) {
            spare_changes_.push_back(std::move(into.components[i]));
        }
        into.components.resize(used);
        advance_tick();
    }

    // Drops the pending changes and starts a new tick.
    void discard_changes() { advance_tick(); }

    [[nodiscard]] std::uint64_t tick() const noexcept { return log_.tick; }
    [[nodiscard]] bool tracks_changes() const noexcept { return log_.enabled; }

private:
    friend class basic_scheduler<Traits>;
    template <typename T>
    using pool_t = detail::pool<Traits, std::remove_const_t<T>>;
    using pool_base = detail::pool_base<Traits>;

    // Every component access starts here: the lookup stays small enough to inline, and
    // registering a type (once per world) is out of line.
    template <typename T>
    ECSNET_ECS_INLINE pool_t<T>& assure() {
        if (auto* found = types_.find(type_hash_v<std::remove_const_t<T>>)) [[likely]] {
            return static_cast<pool_t<T>&>(*found);
        }
        return add_pool<T>();
    }

    template <typename T>
    [[gnu::noinline]] pool_t<T>& add_pool() {
        using plain = std::remove_const_t<T>;
        const auto id = static_cast<component_id>(pools_.size());
        auto created = std::make_unique<pool_t<T>>(id, type_hash_v<plain>,
                                                   std::string{type_name_v<plain>}, log_);
        auto* raw = created.get();
        raw->set_granted(grant_for(*raw));
        signatures_.ensure_bits(pools_.size() + 1);
        pools_.push_back(std::move(created));
        types_.insert(type_hash_v<plain>, raw);
        return *raw;
    }

    template <typename T>
    [[nodiscard]] ECSNET_ECS_INLINE const pool_t<T>* find_pool() const noexcept {
        return static_cast<const pool_t<T>*>(types_.find(type_hash_v<std::remove_const_t<T>>));
    }

    template <typename T>
    [[nodiscard]] ECSNET_ECS_INLINE const pool_t<T>* find_checked() const {
        const auto* p = find_pool<T>();
        if (p != nullptr) [[likely]] {
            check_access(*p, false);
        } else if (access_ != nullptr &&
                   !access_->allows(type_hash_v<std::remove_const_t<T>>, false)) [[unlikely]] {
            // A type never registered is an access violation too, unless declared.
            throw_access(type_name_v<std::remove_const_t<T>>, false);
        }
        return p;
    }

    template <typename T>
    pool_t<T>& checked_pool(bool write) {
        auto& p = assure<T>();
        check_access(p, write);
        return p;
    }

    // The checks below sit on every get/patch/emplace: their fast paths stay small enough to
    // inline and the throwing paths (string building) live in cold out-of-line functions.
    template <typename T>
    [[nodiscard]] ECSNET_ECS_INLINE const pool_t<T>& existing_pool(entity_type e,
                                                                    const char* what) const {
        // find_checked: an undeclared type is an access violation even if never registered.
        const auto* p = find_checked<T>();
        if (p == nullptr) [[unlikely]] {
            throw_unregistered(e, what, type_name_v<std::remove_const_t<T>>);
        }
        return *p;
    }

    [[noreturn]] [[gnu::cold]] [[gnu::noinline]] void throw_unregistered(
        entity_type e, const char* what, std::string_view type) const {
        require_valid(e, what, type);
        throw component_missing(std::string{what} + ": entity " + to_string(e) + " has no " +
                                std::string{type} + " (type never registered)");
    }

    template <typename P>
    ECSNET_ECS_INLINE auto& require_component(P& p, entity_type e, const char* what) const {
        // One test of the position, not a second one of a pointer made from it: random lookups
        // are bound by how many fit in the CPU's window at once, so by their instructions.
        const auto pos = p.storage.find(e);
        if (pos >= p.storage.npos) [[unlikely]] {
            throw_missing(p, e, what);
        }
        return p.storage.values()[pos];
    }

    [[noreturn]] [[gnu::cold]] [[gnu::noinline]] void throw_missing(const pool_base& p,
                                                                    entity_type e,
                                                                    const char* what) const {
        require_valid(e, what, p.name());
        throw component_missing(std::string{what} + ": entity " + to_string(e) + " has no " +
                                p.name());
    }

    // `type` names the component of a component operation, for the message.
    ECSNET_ECS_INLINE void require_valid(entity_type e, const char* what,
                                         std::string_view type = {}) const {
        if (!entities_.valid(e)) [[unlikely]] {
            throw_invalid(e, what, type);
        }
    }

    [[noreturn]] [[gnu::cold]] [[gnu::noinline]] void throw_invalid(entity_type e, const char* what,
                                                                    std::string_view type) const {
        std::string why;
        if (e.is_null()) {
            why = "it is the null entity";
        } else if (static_cast<std::size_t>(e.index()) >= entities_.slots()) {
            why = "no entity was ever created at index " + std::to_string(e.index());
        } else if (const entity_type now = entities_.current(e.index()); !now.is_null()) {
            why = "index " + std::to_string(e.index()) + " is now " + to_string(now) +
                  " (stale handle)";
        } else {
            why = "it was destroyed";
        }
        std::string op{what};
        if (!type.empty()) {
            op += '<' + std::string{type} + '>';
        }
        throw invalid_entity(op + ": entity " + to_string(e) + " is not alive: " + why);
    }

    template <typename T>
    [[nodiscard]] ECSNET_ECS_INLINE const T& get_one(entity_type e) const {
        return require_component(existing_pool<T>(e, "get"), e, "get");
    }
    template <typename T>
    [[nodiscard]] ECSNET_ECS_INLINE const T& get_unchecked_one(entity_type e) const {
        const auto& p = existing_pool<T>(e, "get_unchecked");
        if constexpr (checks_enabled) {
            return require_component(p, e, "get_unchecked");
        } else {
            return p.storage.get(e);
        }
    }

    template <typename T>
    [[nodiscard]] bool has_one(entity_type e) const {
        const auto* p = find_checked<T>();
        if (p == nullptr) {
            return false;
        }
        return p->storage.contains(e);
    }

    // Each pool is looked up once per call (a type-table probe each time was a fifth of erase).
    template <typename... P>
    void erase_from(entity_type e, P&... pools) {
        (check_access(pools, true), ...);
        (require_present(pools, e), ...);
        if constexpr (sizeof...(P) == 1) {
            (remove_known_present(e, pools), ...);
        } else {
            remove_present(e, pools...);
        }
    }
    template <typename... P>
    std::size_t remove_from(entity_type e, P&... pools) {
        (check_access(pools, true), ...);
        if constexpr (sizeof...(P) == 1) {
            if (!(pools.storage.contains(e) && ...)) {
                return 0;
            }
            (remove_known_present(e, pools), ...);
            return 1;
        } else {
            return remove_present(e, pools...);
        }
    }

    // remove_present() for one type that e has: the common case, without asking the storage
    // three more times whether e has it (a quarter of an emplace-then-erase).
    template <typename P>
    ECSNET_ECS_INLINE void remove_known_present(entity_type e, P& p) {
        if (!p.on_destroy.empty()) {
            p.on_destroy.publish(*this, e);
            if (!p.storage.contains(e)) {
                return;  // the listener removed it, or destroyed e
            }
        }
        p.touch(e);
        p.note_removal();
        p.storage.erase(e);
        signatures_.reset(e.index(), p.id());
    }

    template <typename P>
    ECSNET_ECS_INLINE void require_present(const P& p, entity_type e) const {
        if (!p.storage.contains(e)) [[unlikely]] {
            throw_missing(p, e, "erase");
        }
    }

    // Removes the components of `pools` that e has, once their checks passed: every on_destroy
    // listener first (a throwing one leaves all of them in place), then the marks (which may
    // allocate), then the removals, which do not throw. Returns how many were there.
    template <typename... P>
    std::size_t remove_present(entity_type e, P&... pools) {
        const std::size_t present = (std::size_t{pools.storage.contains(e)} + ... + 0);
        if (present == 0) {
            return 0;
        }
        (publish_destroy(pools, e), ...);
        ((pools.storage.contains(e) ? pools.touch(e) : void()), ...);
        (erase_recorded(pools, e), ...);
        return present;
    }

    template <typename P>
    void publish_destroy(P& p, entity_type e) {
        if (!p.on_destroy.empty() && p.storage.contains(e)) {
            p.on_destroy.publish(*this, e);
        }
    }

    // The component's mark is set already. A template so that, called with a typed pool,
    // erase() is not a virtual call.
    template <typename P>
    void erase_recorded(P& p, entity_type e) {
        if (p.set().contains(e)) {
            p.note_removal();
            p.erase(e);
            signatures_.reset(e.index(), p.id());
        }
    }

    // No call on the way: a call in a lookup loop costs more than itself (the loop's
    // floating-point sums then live in memory across it).
    ECSNET_ECS_INLINE void check_access(const pool_base& p, bool write) const {
        using grant = typename pool_base::grant;
        if (p.granted() < (write ? grant::write : grant::read)) [[unlikely]] {
            throw_access(p.name(), write);
        }
    }

    [[nodiscard]] typename pool_base::grant grant_for(const pool_base& p) const noexcept {
        using grant = typename pool_base::grant;
        if (access_ == nullptr || access_->allows(p.hash(), true)) {
            return grant::write;
        }
        return access_->allows(p.hash(), false) ? grant::read : grant::none;
    }

    [[noreturn]] [[gnu::cold]] [[gnu::noinline]] void throw_access(std::string_view type,
                                                                   bool write) const {
        throw access_violation("system '" + access_system_ + "' " + (write ? "writes " : "reads ") +
                               std::string{type} + " without declaring it (it declared " +
                               access_->describe() + ")");
    }

    void advance_tick() {
        log_.created.clear();
        log_.destroyed.clear();
        ++log_.tick;
        if (++log_.epoch >= (std::uint32_t{1} << 31U)) {
            // Marks keep 31 bits of epoch: after ~2^31 ticks start over from a clean slate.
            log_.epoch = 1;
            entities_.clear_stamps();
            for (auto& p : pools_) {
                p->reset_marks();
            }
        }
    }

    // Used by the scheduler while a system runs.
    void set_access(const component_access* access, std::string system) noexcept {
        access_ = access;
        access_system_ = std::move(system);
        for (auto& p : pools_) {
            p->set_granted(grant_for(*p));
        }
    }

    basic_entity_pool<Traits> entities_;
    detail::change_log<entity_type> log_;
    std::vector<basic_component_changes<entity_type>> spare_changes_;  // take_changes(into)
    detail::signature_table signatures_;
    std::vector<std::unique_ptr<pool_base>> pools_;  // by component id
    detail::type_table<pool_base> types_;
    std::unordered_map<index_type, std::string> names_;
    const component_access* access_{nullptr};
    std::string access_system_;
};

using World = basic_world<default_entity_traits>;

}  // namespace ecsnet::ecs
