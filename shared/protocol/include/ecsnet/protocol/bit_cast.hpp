#pragma once

#include "ecsnet/ecs/bit_cast.hpp"

namespace ecsnet::protocol::detail {

using ecs::detail::bit_cast;  // std::bit_cast where emscripten's libc++ 14 lacks it

}  // namespace ecsnet::protocol::detail
