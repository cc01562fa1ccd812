// arena-client: a headless game client of the arena on the session SDK (docs/CLIENT.md). A game
// loop at --fps frames per second: update() the session, steer the player's ship with the
// arena's bot, print what would be drawn twice a second: the own ship predicted (the server's
// flight systems, run here: docs/PREDICTION.md) unless --no-prediction, and each correction.
// What a game's loop on ecsnet is.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

#include "ecsnet/arena/bot.hpp"
#include "ecsnet/arena/components.hpp"
#include "ecsnet/arena/predicted.hpp"
#include "ecsnet/client/session.hpp"

namespace arena = ecsnet::arena;
namespace client = ecsnet::client;
using namespace std::chrono_literals;

int main(int argc, char** argv) {
    client::session_options options;
    options.connect.name = "arena-client";
    double seconds = 10.0;
    double fps = 60.0;
    bool no_prediction = false;
    float arena_size = 4000.0F;
    CLI::App app{"arena-client: joins an arena-server, flies a ship with the bot, prints what it sees"};
    app.add_option("--host", options.connect.host, "Server address")->capture_default_str();
    app.add_option("--port", options.connect.port, "Server port")->capture_default_str();
    app.add_option("--seconds", seconds, "How long to play")->check(CLI::PositiveNumber)->capture_default_str();
    app.add_option("--fps", fps, "Frames per second of the loop")->check(CLI::Range(1.0, 1000.0))->capture_default_str();
    app.add_flag("--network-thread", options.network_thread, "Sockets on a thread of their own");
    app.add_flag("--no-prediction", no_prediction,
                 "Show the own ship as the server last said (interpolated), a round trip late");
    app.add_option("--arena-size", arena_size,
                   "The server's --arena-size: the walls the predicted ship bounces off")
        ->check(CLI::Range(200.0F, 2.0F * (arena::max_half_size - 192.0F)))
        ->capture_default_str();
    CLI11_PARSE(app, argc, argv);

    // A ship moves 12 units a tick at most, a bullet 32: a larger step is a respawn, shown as a
    // jump rather than a sweep across the map.
    options.interpolation_options.snap_distance = 100.0F;
    if (!no_prediction) {
        options.predict = [arena_size](client::prediction& p) { arena::predict(p, arena_size); };
    }
    client::session session{options};  // returns at once: connecting goes on inside update()
    session.events().joined = [&](const ecsnet::protocol::welcome& w) {
        std::printf("joined as player %u at tick %llu (%.0f ticks/s)\n", w.client_id,
                    static_cast<unsigned long long>(w.current_tick), static_cast<double>(w.tick_rate));
    };
    session.events().disconnected = [](const std::string& reason, bool will_reconnect) {
        std::printf("disconnected: %s%s\n", reason.c_str(), will_reconnect ? " (reconnecting)" : "");
    };
    session.events().reconnected = [](const ecsnet::protocol::welcome&) { std::printf("reconnected\n"); };
    // Each Welcome makes a new prediction: its correction report is set on the first frame after.
    const client::prediction* reporting = nullptr;

    arena::bot pilot;
    const auto frame = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(1.0 / fps));
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    auto next_frame = std::chrono::steady_clock::now();
    auto next_print = next_frame;
    while (std::chrono::steady_clock::now() < end &&
           session.state() != client::session_state::closed) {
        session.update();  // applies what arrived, fires the events, sends the input due
        if (client::prediction* p = session.predictor(); p != nullptr && p != reporting) {
            reporting = p;
            p->on_misprediction = [](const client::misprediction& m) {
                std::printf("correction at tick %llu: %s off by %.3f\n",
                            static_cast<unsigned long long>(m.tick), m.type.c_str(), m.error);
            };
            // A bullet shown at once that the server did not fire, or not at that tick.
            p->on_spawn_refused = [](const client::predicted_spawn& s, client::spawn_refusal why) {
                std::printf("correction: the bullet predicted at tick %llu is gone (%s)\n",
                            static_cast<unsigned long long>(s.tick), client::to_string(why));
            };
        }
        if (session.state() == client::session_state::joined) {
            if (const auto input = pilot.play(session.mirror(), session.client_id())) {
                session.set_input(pilot.ship(), *input);
            }
        }
        if (const auto now = std::chrono::steady_clock::now(); now >= next_print && !pilot.ship().is_null()) {
            next_print = now + 500ms;
            // Predicted (with what is left of a correction) or interpolated: what a game draws.
            const auto at = session.rendered<arena::Position>(pilot.ship());
            const auto stats = session.mirror().get<arena::Stats>(pilot.ship());  // owner-only
            // Bullets fired and not yet confirmed: a game draws them beside the mirror's.
            const std::size_t own_bullets =
                session.predictor() != nullptr ? session.predictor()->spawns_pending().size() : 0;
            if (at) {
                std::printf("tick %.1f  ship (%.1f, %.1f)  score %u  ammo %u  in view %zu  predicted bullets %zu  acked input %llu\n",
                            session.render_tick(), static_cast<double>(at->x), static_cast<double>(at->y),
                            stats ? stats->score : 0U, stats ? unsigned{stats->ammo} : 0U,
                            session.mirror().size(), own_bullets,
                            static_cast<unsigned long long>(session.acked_input_tick()));
            }
        }
        next_frame += frame;  // a game renders here; this one sleeps until the next frame
        std::this_thread::sleep_until(next_frame);
    }
    if (session.state() == client::session_state::closed) {
        std::fprintf(stderr, "arena-client: %s\n", session.closed_reason().c_str());
        return 1;
    }
    std::printf("played %.0f s: %llu bytes received, %llu input frames sent\n", seconds,
                static_cast<unsigned long long>(session.stats().bytes_received),
                static_cast<unsigned long long>(session.stats().input_frames_sent));
    if (const client::prediction* p = session.predictor()) {
        const client::prediction_stats& s = p->stats();
        std::printf(
            "predicted %llu ticks: %llu server ticks compared, %llu mispredicted (largest "
            "%.3f), %llu replayed, %llu snaps; %llu inputs late at the server, corrected "
            "from its acks; %llu bullets predicted, %llu matched, %llu refused\n",
            static_cast<unsigned long long>(s.ticks_predicted),
            static_cast<unsigned long long>(s.checks),
            static_cast<unsigned long long>(s.mispredictions), s.largest_error,
            static_cast<unsigned long long>(s.ticks_replayed),
            static_cast<unsigned long long>(s.snaps),
            static_cast<unsigned long long>(s.inputs_corrected),
            static_cast<unsigned long long>(s.spawns_predicted),
            static_cast<unsigned long long>(s.spawns_matched),
            static_cast<unsigned long long>(s.spawns_refused));
    }
    return 0;
}
