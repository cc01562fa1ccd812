#pragma once

#include <type_traits>

namespace ecsnet::ecs::detail {

// std::bit_cast, which the libc++ 14 of Debian's emscripten lacks (a game's prediction compiles
// these headers to WebAssembly). The builtin is what std::bit_cast is in GCC's and clang's
// standard libraries.
template <typename To, typename From>
    requires(sizeof(To) == sizeof(From) && std::is_trivially_copyable_v<To> &&
             std::is_trivially_copyable_v<From>)
[[nodiscard]] constexpr To bit_cast(const From& from) noexcept {
    return __builtin_bit_cast(To, from);
}

}  // namespace ecsnet::ecs::detail
