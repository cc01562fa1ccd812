#pragma once

#include <stddef.h>
#include <stdint.h>

// A game's prediction as a module: the C ABI the TypeScript SDK calls in the game's WebAssembly
// build (ecsnet_add_prediction_module in CMake; docs/PREDICTION.md, "In the browser"). The
// module holds the C++ SDK's own protocol::mirror and client::prediction, fed with the server's
// frames as they arrive, so the browser predicts with the code the server runs and the C++
// SDK's algorithms. Compiled natively too: the golden replay test drives both builds through
// these same calls.
//
// One prediction per module instance (a page that needs two instantiates the module twice).
// Ticks are doubles: exact up to 2^53, and a plain number in JavaScript.
#ifdef __cplusplus
#include <string_view>

namespace ecsnet::client {
class prediction;

// Defined by the game's module: declares what it predicts and adds its systems, as
// session_options::predict does in a native client. `config` is the text the page passed to
// ecsnet_configure (the arena: its size). Throwing refuses the Welcome (ecsnet_error says why).
void declare_prediction(prediction& p, std::string_view config);
}  // namespace ecsnet::client

extern "C" {
#endif

// The prediction_options, in this order, as ecsnet_configure takes them.
enum ecsnet_option {
    ecsnet_option_history_ticks,
    ecsnet_option_tolerance_steps,
    ecsnet_option_replay_budget_ticks,
    ecsnet_option_replay_budget_ms,
    ecsnet_option_half_life_ms,
    ecsnet_option_snap_distance,
    ecsnet_option_spawn_confirm_ticks,
    ecsnet_option_count
};

// The game's config text (copied) and the options (`count` of them in ecsnet_option order; the
// rest keep their defaults; NaN keeps one). Takes effect at the next Welcome. 0 when an option
// is out of range (ecsnet_error says which).
int ecsnet_configure(const char* game_config, const double* options, size_t count);

// A buffer of at least `size` bytes, 8-byte aligned (FlatBuffers reads in place), for the next
// frame: the caller writes a whole server frame (its length prefix included) into it, then calls
// ecsnet_receive. Valid until the next ecsnet_frame_buffer call.
uint8_t* ecsnet_frame_buffer(size_t size);
// Applies the frame in the buffer. Give it every frame the server sent, in order, compact ones
// included: Welcome starts a new prediction (the server's types and tick rate), Snapshot, Delta
// and Checksum go to the mirror, and any frame after a Delta tells that its tick is whole (its
// owner-only Delta, if any, is in): ecsnet_update compares a tick only then. 1 applied or
// ignored; 0 refused (malformed, or inconsistent: the mirror then waits for a snapshot, as the
// caller's own mirror does), ecsnet_error says why.
int ecsnet_receive(size_t size);
const char* ecsnet_error(void);

// Starts or stops predicting a server entity (the player's own). 1 done; 0 when there is no
// prediction yet or the mirror lacks the entity.
int ecsnet_track(uint32_t index, uint32_t version);
void ecsnet_untrack(uint32_t index, uint32_t version);

// The input for a tick: ecsnet_input_value stages each value (a wire type id and its canonical
// bytes, as an Input message carries it), ecsnet_set_input gives the staged set to `tick` for
// that entity and clears it. 0 when a type id is unknown or not an input, or the bytes are not
// its size.
int ecsnet_input_value(uint32_t type, const uint8_t* bytes, size_t size);
int ecsnet_set_input(double tick, uint32_t index, uint32_t version);

// A frame: reconciles with the mirror's newest server tick once whole, predicts up to
// `input_tick` (the session's), and decays the smoothing offsets by `elapsed_seconds` of rendered
// time. Clears the events of the previous update. 0 when there is no prediction.
int ecsnet_update(double input_tick, double elapsed_seconds);

// The declared types as JSON: [{"name", "replicated", "input", "fields"}...], in the order
// ecsnet_view writes them. "[]" before the first Welcome.
const char* ecsnet_types_json(void);

// What to draw, after ecsnet_update: `*count` doubles, record after record, each
//   kind (0: a tracked server entity, 1: a pending spawn), a, b, c,
//   then for every replicated declared type: present (0 or 1), then its fields (0 when absent);
// a tracked entity: a = index, b = version, c = 0; a pending spawn: a = its id, b = its tick,
// c = 0. The stride is 4 + the sum of (1 + fields) over the replicated types.
const double* ecsnet_view(size_t* count);

// The events of the last update, 6 doubles each:
//   1 misprediction: tick, index, version, declared type index, error
//   2 spawn matched: id, tick, server index, server version, 0
//   3 spawn refused: id, tick, reason (0 unconfirmed, 1 undone), 0, 0
const double* ecsnet_events(size_t* count);

// prediction_stats in declaration order but the last (13 numbers), then the predicted tick, the
// world's tick and the mirror's tick, then prediction_stats::inputs_corrected: 17 doubles.
// Zeros before the first Welcome.
const double* ecsnet_stats(void);

#ifdef __cplusplus
}
#endif
