#pragma once

#include <compare>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <ostream>
#include <string>
#include <type_traits>

namespace ecsnet::ecs {

// The widths of an entity's index and version. Tests use tiny types to reach the limits
// (version wrap, index exhaustion) in a handful of operations.
template <std::unsigned_integral Index, std::unsigned_integral Version>
struct entity_traits {
    using index_type = Index;
    using version_type = Version;

    // Version 0 is the null version: no live entity ever carries it.
    static constexpr version_type null_version = 0;
    static constexpr version_type first_version = 1;
    static constexpr version_type max_version = std::numeric_limits<version_type>::max();
    // The largest index is kept free so that it can mark "no index" inside sparse arrays.
    static constexpr index_type max_index = std::numeric_limits<index_type>::max() - 1;
    static constexpr index_type no_index = std::numeric_limits<index_type>::max();
};

using default_entity_traits = entity_traits<std::uint32_t, std::uint32_t>;

// An entity is a plain value: an index into the world's slots plus the version of the slot
// at the time the entity was created. It owns nothing and is trivially copyable, so the hot
// paths (storages, views, change sets) work on it directly.
template <typename Traits>
class basic_entity {
public:
    using traits_type = Traits;
    using index_type = typename Traits::index_type;
    using version_type = typename Traits::version_type;

    constexpr basic_entity() noexcept = default;
    constexpr basic_entity(index_type index, version_type version) noexcept
        : index_{index}, version_{version} {}

    [[nodiscard]] constexpr index_type index() const noexcept { return index_; }
    [[nodiscard]] constexpr version_type version() const noexcept { return version_; }
    [[nodiscard]] constexpr bool is_null() const noexcept {
        return version_ == Traits::null_version;
    }
    [[nodiscard]] explicit constexpr operator bool() const noexcept { return !is_null(); }

    friend constexpr bool operator==(basic_entity, basic_entity) noexcept = default;
    friend constexpr auto operator<=>(basic_entity, basic_entity) noexcept = default;

private:
    index_type index_{0};
    version_type version_{Traits::null_version};
};

using Entity = basic_entity<default_entity_traits>;

template <typename Traits>
inline constexpr basic_entity<Traits> null_entity{};

static_assert(std::is_trivially_copyable_v<Entity>);
static_assert(sizeof(Entity) == 8);

// "index:version", the form used in logs, errors, the client and the protocol docs.
template <typename Traits>
[[nodiscard]] std::string to_string(basic_entity<Traits> entity) {
    return std::to_string(static_cast<std::uint64_t>(entity.index())) + ':' +
           std::to_string(static_cast<std::uint64_t>(entity.version()));
}

template <typename Traits>
std::ostream& operator<<(std::ostream& out, basic_entity<Traits> entity) {
    return out << to_string(entity);
}

}  // namespace ecsnet::ecs

template <typename Traits>
struct std::hash<ecsnet::ecs::basic_entity<Traits>> {
    [[nodiscard]] std::size_t operator()(ecsnet::ecs::basic_entity<Traits> entity) const noexcept {
        const auto packed = (static_cast<std::uint64_t>(entity.version()) << 32U) ^
                            static_cast<std::uint64_t>(entity.index());
        // splitmix64 finaliser: indices are dense small integers, so spread them.
        std::uint64_t z = packed + 0x9e3779b97f4a7c15ULL;
        z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27U)) * 0x94d049bb133111ebULL;
        return static_cast<std::size_t>(z ^ (z >> 31U));
    }
};
