#pragma once

// The logic of the fuzz targets, shared by the libFuzzer entry points (fuzz_*.cpp, clang
// only) and by the GoogleTest regression test (regression_test.cpp, any compiler), which replays
// tests/fuzz/corpus/<target>/ and every past finding through exactly the same code.
//
// Each function takes one fuzz input. It returns normally when everything held; a violated
// property (or an exception escaping the code under test) goes to the failure handler, which
// aborts by default so that libFuzzer records the input.

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace ecsnet::fuzz {

// fuzz_client_frame: arbitrary bytes arriving on a server connection. They go through a
// frame_reader (64 KiB limit) in uneven chunks; every frame through decode_client_frame and a
// simulated session (Hello, Ping, ResyncRequest, commands) on a small world with game systems,
// a replication encoder and a mirror that follows the world. Raw frames, concatenated, are the
// input format: tests/protocol/golden/client_*.bin are valid inputs.
void fuzz_client_frame_one(const std::uint8_t* data, std::size_t size);

// fuzz_commands: a script of commands applied through the wire codec to a command_processor
// with small quotas, checked against a model of the world after every step. Format:
//   u8 per-client quota (1 + b % 8), u8 world limit (1 + b % 32), then operations until the
//   input ends, each an op byte: kind = op & 7, client = command_clients[(op >> 3) & 7],
//   variant = op >> 6, followed by the kind's operands (see fuzz_targets.cpp, read_*):
//   0 spawn(components)  1 destroy(entity)  2 set(entity, components)  3 remove(entity, mask)
//   4 tick (variant 1: resync the mirror)  5 despawn_all_of(client)
//   6 not a command (variant: 0/3 Hello, 1 Ping, 2 ResyncRequest)  7 server destroys (entity)
// Missing bytes read as zero.
void fuzz_commands_one(const std::uint8_t* data, std::size_t size);

// fuzz_mirror: a client mirror applying what a server sends. Format: u8 config (bits 0-1 pick
// mirror::options::max_index from mirror_max_indices, bit 2 installs callbacks), then frames,
// each a u16 little-endian body length and that many bytes; the harness adds the 4-byte frame
// prefix, so a body is a frame without its prefix.
void fuzz_mirror_one(const std::uint8_t* data, std::size_t size);

// fuzz_schema: a client meeting a server's schema (issue 13: a schema that lies is refused with
// a clear reason, never a crash). Format: the fuzz_mirror format, whose first frame is taken
// as the Welcome: decode_schema and decode_server_control; a refused schema must have a reason
// (and the Welcome is refused for it); an accepted one must satisfy schema::make's rules and
// survive encode_schema / decode_schema / schema::make unchanged. Then a mirror with that
// schema applies the following frames (Snapshot, Delta, ...) with fuzz_mirror's checks, and
// never holds a value whose size differs from its type's value_bytes().
void fuzz_schema_one(const std::uint8_t* data, std::size_t size);

// fuzz_session: bytes a client sends to the real server (ecsnet::server::server, in this
// process, listening on 127.0.0.1) over a real TCP connection, one connection per input
// (session_target.cpp). Format: u8 flags, then the bytes to send.
//   bit 0      send a valid Hello first, so that commands reach the tick
//   bits 1-3   write in chunks of session_chunks[(flags >> 1) & 7] bytes, the server running
//              between chunks
//   bit 4      shut down the sending side after the last byte (the server reads EOF)
//   bit 5      the server with interest management (the demo's grid, radius 200, a byte
//              budget): Focus messages move the client's view
//   bit 6      the server with connect tokens (HS256; over bit 5): bit 0's Hello carries a
//              fresh token, or with bit 7 one whose signature has a character changed
// Checks: every frame the server sends verifies and decodes; a client mirror fed with them
// never finds an inconsistency or a checksum mismatch, and (whole-world server) equals the
// world whenever it has caught up with the server's tick; the server logs no error, keeps
// ticking, drops the connection once the client closed it and then holds no entity of that
// client.
void fuzz_session_one(const std::uint8_t* data, std::size_t size);

// Stops fuzz_session's servers and joins their threads; they are made again on the next input.
// Called at exit (libFuzzer) and when a test program's tests have run (regression_test.cpp).
void fuzz_session_stop() noexcept;

inline constexpr std::size_t session_chunks[8] = {65536, 1, 3, 7, 64, 512, 4096, 2};

inline constexpr std::uint32_t command_clients[8] = {1, 2, 3, 1, 2, 0, 0x80000000U, 0xFFFFFFFFU};
inline constexpr std::uint32_t mirror_max_indices[4] = {4095, 65535, (1U << 24U) - 1, 0};

// Operation kinds of fuzz_commands.
enum class command_op : std::uint8_t {
    spawn = 0,
    destroy = 1,
    set = 2,
    remove = 3,
    tick = 4,
    despawn = 5,
    not_a_command = 6,
    server_destroy = 7,
};

// What a failed check throws when the handler is throwing_failure_handler.
class check_failure : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

using failure_handler = void (*)(const std::string& message);

// The default handler prints the message to stderr and aborts.
void set_failure_handler(failure_handler handler) noexcept;
// Throws check_failure: for tests, where an abort would end the whole test program.
[[noreturn]] void throwing_failure_handler(const std::string& message);
// Hands a violated property to the current handler (failure.cpp).
[[noreturn]] void report_failure(const std::string& message);
// True when ECSNET_FUZZ_TRACE is set (and not 0): the targets then print every step to stderr.
[[nodiscard]] bool tracing() noexcept;

}  // namespace ecsnet::fuzz
