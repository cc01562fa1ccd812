#pragma once

#include <cstdint>
#include <string_view>
#include <type_traits>

namespace ecsnet::ecs {

namespace detail {

template <typename T>
[[nodiscard]] constexpr std::string_view pretty_function() noexcept {
    return __PRETTY_FUNCTION__;
}

// Extracts "T" from the compiler's signature of pretty_function<T>(). Both g++ and clang
// print "... [with T = Name; ...]" or "... [T = Name]".
template <typename T>
[[nodiscard]] constexpr std::string_view extract_type_name() noexcept {
    constexpr std::string_view full = pretty_function<T>();
    constexpr std::string_view marker = "T = ";
    const auto start = full.find(marker) + marker.size();
    const auto end = full.find_first_of(";]", start);
    return full.substr(start, end - start);
}

[[nodiscard]] constexpr std::uint64_t fnv1a(std::string_view text) noexcept {
    std::uint64_t hash = 0xcbf29ce484222325ULL;
    for (const char c : text) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 0x100000001b3ULL;
    }
    return hash;
}

}  // namespace detail

// Identity of a component type, computed at compile time: no registry, no static counter,
// so independent worlds (and processes built from the same code) agree on it.
template <typename T>
struct type_info {
    using type = std::remove_cvref_t<T>;
    static constexpr std::string_view name = detail::extract_type_name<type>();
    static constexpr std::uint64_t hash = detail::fnv1a(name);
};

template <typename T>
inline constexpr std::uint64_t type_hash_v = type_info<T>::hash;

template <typename T>
inline constexpr std::string_view type_name_v = type_info<T>::name;

}  // namespace ecsnet::ecs
