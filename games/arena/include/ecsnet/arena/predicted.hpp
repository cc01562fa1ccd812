#pragma once

#include "ecsnet/arena/flight.hpp"
#include "ecsnet/client/prediction.hpp"

// What an arena client predicts (session_options::predict): its ship's Position and Heading
// (smoothed after a correction), Velocity, Ship, Owner and Stats (only its ammo compared: the
// score and deaths change on the server alone), its ShipTimers kept, with
// the Pilot input, flown and fired by the server's own systems; the bullets it fires are
// predicted spawns, matched with the server's by their Bullet (shooter, tick, sequence).
// Link ecsnet::client and ecsnet::arena_flight.
namespace ecsnet::arena {

// `size`: the arena's side, as the server's --arena-size (the walls the ship bounces off).
inline void predict(client::prediction& prediction, float size) {
    prediction.predict_smoothed<Position>()
        .predict<Velocity>()
        .predict_smoothed<Heading>()
        .predict<Ship>()
        .predict<protocol::Owner>()
        .predict<Stats>(+[](const Stats& predicted, const Stats& server) {
            return predicted.ammo == server.ammo;  // the gun's; score and deaths are the server's
        })
        .keep<ShipTimers>("ship_timers")
        .spawns<Bullet>()
        .input<Pilot>();
    add_steer(prediction.systems());
    add_gun(prediction.systems());
    add_move(prediction.systems(), size);
    add_settle(prediction.systems());
}

}  // namespace ecsnet::arena
