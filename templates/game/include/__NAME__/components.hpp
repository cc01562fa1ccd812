#pragma once

// __NAME__'s components: Position, Velocity, Move, how each replicates, and
// register_components(), all written by ecsnet-codegen from schema/__NAME__.fbs.
#include "__NAME___components.hpp"

namespace __NAME__ {

// The field is the square [-field_half_size, field_half_size]^2.
inline constexpr float field_half_size = 500.0F;
inline constexpr float player_speed = 200.0F;  // units per second at a full Move

}  // namespace __NAME__
