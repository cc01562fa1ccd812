#pragma once

#include "ecsnet/arena/flight.hpp"
#include "ecsnet/client/prediction.hpp"

// What an arena client predicts (session_options::predict): its ship's Position and Heading
// (smoothed after a correction), Velocity and Ship, with the Pilot input, flown by the
// server's own flight systems. Link ecsnet::client and ecsnet::arena_flight.
namespace ecsnet::arena {

// `size`: the arena's side, as the server's --arena-size (the walls the ship bounces off).
inline void predict(client::prediction& prediction, float size) {
    prediction.predict_smoothed<Position>()
        .predict<Velocity>()
        .predict_smoothed<Heading>()
        .predict<Ship>()
        .input<Pilot>();
    add_steer(prediction.systems());
    add_move(prediction.systems(), size);
    add_settle(prediction.systems());
}

}  // namespace ecsnet::arena
