#pragma once

#include <cstdint>

namespace ecsnet::server {

// The server's counters as plain numbers (server::stats(), /status, the stats line), read from
// its metrics (metrics.hpp), where they are kept.
struct server_stats {
    std::uint64_t ticks{0};
    std::uint64_t overruns{0};
    std::uint64_t connections{0};
    std::uint64_t refused{0};           // server full, bad version, bad token
    std::uint64_t resyncs{0};
    std::uint64_t dropped_frames{0};    // deltas/checksums dropped for slow clients
    std::uint64_t rate_limited{0};
    std::uint64_t invalid_frames{0};
    std::uint64_t bytes_out{0};
    std::uint64_t bytes_in{0};          // read from every session (frames, and what a closing one discards)
    std::uint64_t accept_errors{0};
    std::uint64_t pending_evicted{0};    // oldest pre-Hello connection closed to make room
    std::uint64_t pending_refused{0};    // too many pre-Hello connections from one address
    std::uint64_t resyncs_requested{0};  // ResyncRequests received
    std::uint64_t resyncs_coalesced{0};  // ... that cost nothing: one was already due
    std::uint64_t identity_refused{0};   // missing, forged, expired, replayed, wrong-world tokens
    std::uint64_t seats_taken_over{0};   // connections that got "signed in elsewhere"
    std::uint64_t address_refused{0};    // --max-clients-per-address reached (no tokens)
    std::uint64_t skipped_ticks{0};      // missed in a stall and not replayed (tick_loop)
    std::uint64_t system_failures{0};    // system runs that threw (the tick went on)
    std::uint64_t command_failures{0};   // commands refused with GameFailed: the game's code threw
    std::uint64_t policy_failures{0};    // interest policy calls that threw (a fallback was used)
    std::uint64_t despawn_failures{0};   // entities an on_destroy listener kept from despawning
    std::uint64_t grace_despawns{0};     // owners whose entities went when their grace ended
    // Player input (input_buffer.hpp): ticks of input applied, dropped for arriving after
    // their tick, ticks run on an entity's previous input, Input frames refused (rate, shape,
    // owner, too early: each answered by InputRejected), and applications the game's code
    // failed (a listener threw).
    std::uint64_t inputs_applied{0};
    std::uint64_t inputs_late{0};
    std::uint64_t inputs_repeated{0};
    std::uint64_t inputs_refused{0};
    std::uint64_t input_failures{0};
    // Interest management, summed over clients: entities that came into a view (spawns in
    // view included), went out of one, and sends put off for a byte budget (per tick).
    std::uint64_t view_entered{0};
    std::uint64_t view_left{0};
    std::uint64_t view_deferred{0};
};

}  // namespace ecsnet::server
