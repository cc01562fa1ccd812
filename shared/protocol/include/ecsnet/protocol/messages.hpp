#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "ecsnet/ecs/entity.hpp"
#include "ecsnet/protocol/columns.hpp"
#include "ecsnet/protocol/replicated.hpp"
#include "ecsnet/protocol/schema.hpp"
#include "ecsnet/protocol/frame.hpp"

// Every message except Snapshot and Delta (replication.hpp, mirror.hpp) as a plain C++ value,
// with its encoder and a decoder that checks everything the FlatBuffers verifier lets through
// on purpose: unknown union tags, out-of-range enums, NaN/Inf numbers, over-long strings,
// columns of the wrong shape.
namespace ecsnet::protocol {

inline constexpr std::size_t max_client_name_bytes = 64;
inline constexpr std::size_t max_token_bytes = 256;
inline constexpr std::size_t max_reason_bytes = 256;
inline constexpr std::size_t resume_key_bytes = 32;
// A JWT: checked with the identity (docs/PROTOCOL.md, "Identity"), not when a Hello is decoded.
inline constexpr std::size_t max_connect_token_bytes = 2048;
inline constexpr std::size_t max_player_id_bytes = 64;

// At most one value per component type, by wire name.
class component_set {
public:
    template <replicated_component T>
    component_set& set(const T& value) {
        component_value v;
        v.name = std::string{replicated<T>::name};
        v.layout = &compiled_layout<T>();
        if constexpr (detail::is_string_v<T>) {
            v.text = text_of(value);
        } else {
            const auto bytes = pack(value);
            v.bytes.assign(bytes.begin(), bytes.end());
        }
        return set(std::move(v));
    }
    // Replaces the value of the same name.
    component_set& set(component_value value);

    // T's value, when the set has one. Not checked against a schema: a set holds values by
    // name (the server reads decoded commands with its own types).
    template <replicated_component T>
    [[nodiscard]] std::optional<T> get() const {
        const component_value* v = find(replicated<T>::name);
        if (v == nullptr) {
            return std::nullopt;
        }
        if constexpr (detail::is_string_v<T>) {
            T out{};
            boost::pfr::get<0>(out) = v->text;
            return out;
        } else {
            if (v->bytes.size() < value_bytes_v<T>) {
                return std::nullopt;
            }
            return unpack<T>(v->bytes.data());
        }
    }
    [[nodiscard]] const component_value* find(std::string_view name) const noexcept;
    [[nodiscard]] std::span<const component_value> values() const noexcept { return values_; }
    [[nodiscard]] bool empty() const noexcept { return values_.empty(); }
    [[nodiscard]] std::size_t size() const noexcept { return values_.size(); }

    friend bool operator==(const component_set&, const component_set&) = default;

private:
    std::vector<component_value> values_;  // in the order set
};

// ---- client -> server -----------------------------------------------------------------------

struct hello {
    // A constructor, not an aggregate: the identity fields came later, and call sites that
    // predate them name only the first three.
    hello() = default;
    hello(std::uint32_t version_, std::string client_name_, std::string auth_token_,
          std::vector<std::uint8_t> resume_key_ = {}, std::string connect_token_ = {})
        : version{version_},
          client_name{std::move(client_name_)},
          auth_token{std::move(auth_token_)},
          resume_key{std::move(resume_key_)},
          connect_token{std::move(connect_token_)} {}

    std::uint32_t version = protocol_version;
    std::string client_name;  // display only
    std::string auth_token;
    std::vector<std::uint8_t> resume_key;  // empty or resume_key_bytes
    std::string connect_token;
    friend bool operator==(const hello&, const hello&) = default;
};
struct spawn {
    std::uint32_t request_id{};
    component_set components;
    friend bool operator==(const spawn&, const spawn&) = default;
};
struct destroy {
    std::uint32_t request_id{};
    ecs::Entity entity;
    friend bool operator==(const destroy&, const destroy&) = default;
};
struct set_components {
    std::uint32_t request_id{};
    ecs::Entity entity;
    component_set components;
    friend bool operator==(const set_components&, const set_components&) = default;
};
struct remove_components {
    std::uint32_t request_id{};
    ecs::Entity entity;
    std::vector<std::string> types;  // wire names
    friend bool operator==(const remove_components&, const remove_components&) = default;
};
struct ping {
    std::uint64_t nonce{};
    friend bool operator==(const ping&, const ping&) = default;
};
struct resync_request {
    std::string reason;
    friend bool operator==(const resync_request&, const resync_request&) = default;
};

// Moves the centre of the client's area of interest (servers with interest management).
struct focus {
    float x{};
    float y{};
    friend bool operator==(const focus&, const focus&) = default;
};

// Protocol 4. The player's input for `entity` (the sender owns it) for the ticks first_tick,
// first_tick + 1, ...: one set of values per tick, of input types only (ComponentType.input),
// the same types in every tick. Never answered by a CommandResult (docs/PROTOCOL.md, "Input").
inline constexpr std::size_t max_input_ticks = 16;
struct input {
    // A constructor, not an aggregate: the render tick came with protocol 5, and call sites
    // that predate it name only the first three.
    input() = default;
    input(ecs::Entity entity_, std::uint64_t first_tick_, std::vector<component_set> ticks_,
          std::uint64_t render_tick_ = 0, float render_fraction_ = 0.0F)
        : entity{entity_},
          first_tick{first_tick_},
          ticks{std::move(ticks_)},
          render_tick{render_tick_},
          render_fraction{render_fraction_} {}

    ecs::Entity entity;
    std::uint64_t first_tick{};
    std::vector<component_set> ticks;  // 1 to max_input_ticks
    // Protocol 5: the render tick shown when the last tick's input was set (0: not given),
    // and the fraction towards the next, in [0, 1).
    std::uint64_t render_tick{};
    float render_fraction{};
    friend bool operator==(const input&, const input&) = default;
};

// Protocol 6: what a compact Input takes from the last full Input of its connection, the
// entity and the input types in column order.
struct input_reference {
    ecs::Entity entity;
    std::vector<std::uint32_t> types;  // wire ids
    friend bool operator==(const input_reference&, const input_reference&) = default;
};

using client_message = std::variant<hello, spawn, destroy, set_components, remove_components, ping,
                                    resync_request, focus, input>;
// The message's name on the wire: "Spawn", "SetComponent", ... (for logs).
[[nodiscard]] const char* message_name(const client_message& message) noexcept;

// Component values and names are resolved against the server's schema (Welcome). Throws
// std::invalid_argument naming a component the schema does not have, or a value that does not
// fit it; schema_mismatch when a typed value's compiled type (component_set::set<T>) differs
// from the schema's entry (schema::checked), as mirror::get<T> does.
[[nodiscard]] frame encode(const client_message& message, const schema& types);

struct decode_error {
    wire::ErrorCode code{wire::ErrorCode::Malformed};
    std::string message;
    std::optional<std::uint32_t> request_id;  // known when the command could be read that far
    // Fatal: the frame itself is bad (unverifiable, unknown type); close the connection.
    // Otherwise one command is bad: answer it with a CommandResult and go on, or, for an
    // Input (input_tick set: its first tick), with an InputRejected.
    bool fatal{true};
    std::optional<std::uint64_t> input_tick;
};

struct decoded_client {
    std::optional<client_message> message;
    decode_error error;  // meaningful when !message
};

// Verifies and decodes one whole frame (prefix included) against the server's own schema:
// every column names a known type, holds exactly one value of the right size, and only types
// clients may write.
[[nodiscard]] decoded_client decode_client_frame(std::span<const std::uint8_t> bytes,
                                                 const schema& types);

// The reference a full Input sets: its entity and its columns' types, in the order encode()
// writes them. Throws std::invalid_argument for an Input encode() would refuse.
[[nodiscard]] input_reference reference_of(const input& message, const schema& types);
// A compact Input frame (prefix included) of `message`, whose reference_of() must equal
// `reference` (std::invalid_argument otherwise, or for an Input encode() would refuse). The
// render fraction goes in 256ths, rounded down.
[[nodiscard]] frame encode_compact_input(const input& message, const schema& types,
                                         const input_reference& reference);
// What a client of a protocol 6 server sends for `message`: a compact Input when `reference`
// (the connection's, nullopt at its start) equals the message's and the Input is well-formed,
// else the full Input. `reference` then holds what the server's will: the message's when the
// full Input passes the server's decoding, nullopt when the server will refuse it (a compact
// Input changes nothing). Throws std::invalid_argument as encode() does.
[[nodiscard]] frame encode_input(const input& message, const schema& types,
                                 std::optional<input_reference>& reference);
// The body of a compact Input (after its prefix) as the full Input it stands for, with the
// same checks; `reference` null: none yet on this connection (refused). An error is never
// fatal: it is answered with an InputRejected.
[[nodiscard]] std::optional<decode_error> decode_compact_input(std::span<const std::uint8_t> body,
                                                               const schema& types,
                                                               const input_reference* reference,
                                                               input& out);

// ---- server -> client -----------------------------------------------------------------------

struct welcome {
    welcome() = default;
    welcome(std::uint32_t client_id_, std::uint32_t version_, float tick_rate_,
            std::uint64_t current_tick_, std::uint32_t checksum_interval_,
            std::vector<std::uint8_t> resume_key_ = {}, std::string player_id_ = {},
            schema components_ = {})
        : client_id{client_id_},
          version{version_},
          tick_rate{tick_rate_},
          current_tick{current_tick_},
          checksum_interval{checksum_interval_},
          resume_key{std::move(resume_key_)},
          player_id{std::move(player_id_)},
          components{std::move(components_)} {}

    std::uint32_t client_id{};
    std::uint32_t version = protocol_version;
    float tick_rate{};
    std::uint64_t current_tick{};
    std::uint32_t checksum_interval{};
    std::vector<std::uint8_t> resume_key;  // empty or resume_key_bytes
    std::string player_id;                 // from a verified connect token
    schema components;                     // the replicated types, by wire id
    // Interest management: 0 when the client receives the whole world, else the radius around
    // the focus it sets with `focus` messages; and its byte budget (0: unlimited).
    float interest_radius{0.0F};
    std::uint32_t client_budget{0};
    friend bool operator==(const welcome&, const welcome&) = default;
};
struct command_result {
    std::uint32_t request_id{};
    bool ok{};
    wire::ErrorCode code{wire::ErrorCode::None};
    std::string message;
    ecs::Entity entity;
    friend bool operator==(const command_result&, const command_result&) = default;
};
struct pong {
    std::uint64_t nonce{};
    std::uint64_t tick{};
    friend bool operator==(const pong&, const pong&) = default;
};
struct checksum_report {
    std::uint64_t tick{};
    std::uint64_t hash{};
    std::uint32_t entity_count{};
    // The entity indices [first_index, end_index) covered; the defaults: all of them.
    std::uint32_t first_index{0};
    std::uint32_t end_index{std::numeric_limits<std::uint32_t>::max()};
    // Indices left out of the sum on both sides (interest management: values that wait for
    // bandwidth); entity_count does not count them.
    std::vector<std::uint32_t> excluded{};
    friend bool operator==(const checksum_report&, const checksum_report&) = default;
};
struct disconnect {
    std::string reason;
    friend bool operator==(const disconnect&, const disconnect&) = default;
};
// Protocol 4, to a client that sends Input: the last of each tick's frames.
struct input_ack {
    std::uint64_t tick{};
    std::uint64_t applied_tick{};  // the newest tick whose input was applied; 0: none yet
    std::int32_t lead{};           // newest input held minus tick; negative: inputs arrive late
    std::uint32_t late{};          // inputs dropped for arriving after their tick, in all
    std::uint32_t repeated{};      // ticks run on the previous input, in all
    friend bool operator==(const input_ack&, const input_ack&) = default;
};
// Protocol 4: an Input refused; `refused` counts the refusals since the previous one.
struct input_rejected {
    std::uint64_t first_tick{};
    wire::ErrorCode code{wire::ErrorCode::Malformed};
    std::string message;
    std::uint32_t refused{1};
    friend bool operator==(const input_rejected&, const input_rejected&) = default;
};

using server_control = std::variant<welcome, command_result, pong, checksum_report, disconnect,
                                    input_ack, input_rejected>;

[[nodiscard]] frame encode(const server_control& message);

// Decodes a verified ServerMessage that is not Snapshot or Delta. Null with `why` set when
// it is one of those, of an unknown type, or carries invalid values.
[[nodiscard]] std::optional<server_control> decode_server_control(const wire::ServerMessage& message,
                                                                  std::string* why = nullptr);

// Protocol 6: the InputAck as a compact frame (prefix included), what a client of version 6
// or later receives each tick instead of the FlatBuffers one.
[[nodiscard]] frame encode_compact_input_ack(const input_ack& ack);
// A whole compact server frame (prefix included, its top bit set) as the message it carries.
// Null with `why` set for an unknown kind or a body that does not decode exactly.
[[nodiscard]] std::optional<server_control> decode_compact_server_frame(std::span<const std::uint8_t> bytes,
                                                                        std::string* why = nullptr);

[[nodiscard]] const char* to_string(wire::ErrorCode code) noexcept;

// True when the bytes are well-formed UTF-8.
[[nodiscard]] bool valid_utf8(std::string_view text) noexcept;

}  // namespace ecsnet::protocol
