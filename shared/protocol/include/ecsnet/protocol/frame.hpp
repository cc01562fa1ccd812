#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ecsnet/wire/client_generated.h"
#include "ecsnet/wire/server_generated.h"

// Framing: every message is one size-prefixed FlatBuffer, a 4-byte little-endian length then
// that many bytes, with file identifier "ECSC" (client -> server) or "ECSS" (server -> client).
namespace ecsnet::protocol {

// 4 added player input (Input, InputAck, InputRejected, ComponentType.input), 5 the render
// tick, 6 the compact Input. A server speaks every version from oldest_protocol_version on,
// and answers in the client's (Welcome).
inline constexpr std::uint32_t protocol_version = 6;
inline constexpr std::uint32_t compact_input_protocol_version = 6;
inline constexpr std::uint32_t oldest_protocol_version = 3;
inline constexpr std::size_t frame_prefix_bytes = 4;
// Client -> server frames are small commands.
inline constexpr std::size_t default_max_client_frame = 64 * 1024;
// Server -> client frames carry deltas of whole worlds (a tick of 1M moving entities is ~8 MB).
inline constexpr std::size_t default_max_server_frame = 64 * 1024 * 1024;

// A complete frame, prefix included, shared by every session that sends it: a tick's delta
// is encoded once and queued to all clients as the same bytes.
using frame = std::shared_ptr<const std::vector<std::uint8_t>>;

[[nodiscard]] frame finish_frame(flatbuffers::FlatBufferBuilder& fbb,
                                 flatbuffers::Offset<wire::ClientMessage> root);
[[nodiscard]] frame finish_frame(flatbuffers::FlatBufferBuilder& fbb,
                                 flatbuffers::Offset<wire::ServerMessage> root);

// The body length announced by a prefix.
[[nodiscard]] std::uint32_t read_prefix(std::span<const std::uint8_t, frame_prefix_bytes> prefix) noexcept;

// Protocol 6: a prefix with its top bit set starts a compact frame, whose kind and body
// length the prefix holds (docs/PROTOCOL.md, "Protocol 6"). Each direction has its own kinds;
// only a peer that named version 6 or later sends or receives them.
enum class compact_kind : std::uint8_t { input = 1 };             // client -> server
enum class compact_server_kind : std::uint8_t { input_ack = 1 };  // server -> client
struct compact_prefix {
    std::uint8_t kind;     // 7 bits
    std::uint32_t length;  // 24 bits
};
[[nodiscard]] constexpr bool is_compact(std::uint32_t prefix) noexcept {
    return (prefix & 0x80000000U) != 0;
}
[[nodiscard]] constexpr compact_prefix compact_of(std::uint32_t prefix) noexcept {
    return {static_cast<std::uint8_t>((prefix >> 24U) & 0x7FU), prefix & 0xFFFFFFU};
}
[[nodiscard]] constexpr std::uint32_t compact_prefix_word(std::uint8_t kind, std::uint32_t length) noexcept {
    return 0x80000000U | (std::uint32_t{kind & 0x7FU} << 24U) | (length & 0xFFFFFFU);
}

// Verifies exactly these bytes (prefix included) as a client frame: length prefix matches,
// identifier, the FlatBuffers verifier with tight limits, and a body present whenever the
// message has a type (the verifier lets a tag without its table through). Returns the root,
// or null with the reason in `why`. Nothing may read the frame before this passed. The bytes
// must start at an 8-byte aligned address: FlatBuffers reads scalars in place.
[[nodiscard]] const wire::ClientMessage* verify_client_frame(std::span<const std::uint8_t> bytes,
                                                             std::string* why = nullptr);
[[nodiscard]] const wire::ServerMessage* verify_server_frame(std::span<const std::uint8_t> bytes,
                                                             std::string* why = nullptr);

// Cuts a byte stream into frames without trusting it: a length over the maximum is refused
// before any buffer for it is allocated.
class frame_reader {
public:
    enum class status { need_more, frame, oversize };

    // `compact`: a prefix with its top bit set is a compact frame of its low 24 bits' length
    // (a client of protocol 6); otherwise it is a length, over any limit.
    explicit frame_reader(std::size_t max_frame_bytes, bool compact = false)
        : max_{max_frame_bytes}, compact_{compact} {}

    void feed(std::span<const std::uint8_t> bytes);

    // On status::frame, `out` is the next whole frame (prefix included), valid until the next
    // call to feed() or next(), and 8-byte aligned as FlatBuffers needs (a frame after one of
    // odd length is copied). After oversize the stream is unusable: close it.
    [[nodiscard]] status next(std::span<const std::uint8_t>& out);

    // Hands over the storage of the frame last returned by next(), so that the frame stays
    // valid across later feed() and next() calls for as long as the caller keeps what this
    // returns (for a consumer that reads on while it still uses the frame); the reader goes on
    // with a copy of the bytes it held beyond that frame.
    [[nodiscard]] std::vector<std::vector<std::uint8_t>> detach();

    [[nodiscard]] std::size_t buffered() const noexcept { return buffer_.size() - consumed_; }
    [[nodiscard]] std::size_t max_frame_bytes() const noexcept { return max_; }

private:
    std::size_t max_;
    bool compact_;
    std::vector<std::uint8_t> buffer_;
    std::size_t consumed_{0};
    std::vector<std::uint8_t> aligned_;  // a copy of a frame that starts misaligned in buffer_
};

}  // namespace ecsnet::protocol
