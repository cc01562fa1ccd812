#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <flatbuffers/flatbuffers.h>

#include "ecsnet/wire/common_generated.h"

// What the server tells every client in Welcome: the replicated component types, with their
// fields, so that any client decodes, checks and displays a game's components without having
// been compiled with them (docs/PROTOCOL.md, "Schema").
//
// A fixed-size value goes on the wire as its fields bit-packed in declaration order, least
// significant bit first, each in `bits` bits: a plain field in its natural width, a quantized
// float in the fewest bits that cover its range at its step. A string value is a FlatBuffers
// string. The packed value alone, padded with zero bits to whole bytes, is its canonical form:
// what the mirror stores and the checksum hashes.
namespace ecsnet::protocol {

// Numbered as in FlatBuffers' reflection.fbs (BaseType), the names flatc's schemas use.
enum class field_type : std::uint8_t {
    bool_ = 2,
    int8 = 3,
    uint8 = 4,
    int16 = 5,
    uint16 = 6,
    int32 = 7,
    uint32 = 8,
    int64 = 9,
    uint64 = 10,
    float32 = 11,
    float64 = 12,
};

[[nodiscard]] std::optional<field_type> to_field_type(std::uint8_t raw) noexcept;
[[nodiscard]] std::string_view to_string(field_type type) noexcept;  // "float", "int32", ...
[[nodiscard]] unsigned natural_bits(field_type type) noexcept;
[[nodiscard]] bool is_float(field_type type) noexcept;
[[nodiscard]] bool is_signed(field_type type) noexcept;

// The largest q of a quantized range, and the bits it needs.
[[nodiscard]] std::uint64_t quantized_steps(double min, double max, double step) noexcept;
[[nodiscard]] unsigned quantized_bits(std::uint64_t steps) noexcept;

// Who may set a component with SetComponent, Spawn and RemoveComponent.
enum class writer : std::uint8_t {
    server = 0,  // nobody but the server's systems
    owner = 1,   // the client that owns the entity (and spawns it)
    any = 2,     // any joined client, on any entity
};
[[nodiscard]] std::string_view to_string(writer who) noexcept;

// A float field sent as an unsigned integer q in [0, round((max - min) / step)], in the fewest
// bits that hold it: value = min + q * step.
struct quantization {
    double min = 0;
    double max = 0;
    double step = 0;  // 0: not quantized
    friend bool operator==(const quantization&, const quantization&) = default;
};

struct field_info {
    std::string name;
    field_type type{field_type::float32};
    std::uint8_t bits{32};  // on the wire; below natural_bits only for a quantized float
    quantization quantized;

    friend bool operator==(const field_info&, const field_info&) = default;
};

struct component_info {
    std::uint16_t id{};
    std::string name;
    writer written_by{writer::owner};
    bool owner_only{false};   // replicated to the owning client only
    bool is_string{false};    // a UTF-8 string of at most max_bytes, no fields
    std::uint32_t max_bytes{0};
    std::vector<field_info> fields;
    bool input{false};         // a player input, sent per tick with Input messages
    bool replicated{true};     // false: in no Snapshot, Delta or Checksum
    bool interpolated{false};  // clients interpolate its numeric fields

    [[nodiscard]] std::size_t value_bits() const noexcept;
    // Canonical bytes of one value; 0 for a string.
    [[nodiscard]] std::size_t value_bytes() const noexcept { return (value_bits() + 7) / 8; }
    // Every field on byte boundaries: a column is its values' canonical bytes back to back.
    [[nodiscard]] bool byte_aligned() const noexcept;

    friend bool operator==(const component_info&, const component_info&) = default;
};

inline constexpr std::size_t max_component_types = 64;  // component masks are 64-bit
inline constexpr std::size_t max_fields = 64;
inline constexpr std::size_t max_schema_name_bytes = 64;
inline constexpr std::uint32_t max_string_bytes = 4096;

// A type this program was compiled with does not match the server's type of the same wire
// name (schema::checked): reading or writing it would misread values.
class schema_mismatch : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A component type named by a caller that the server does not have (schema::id_of): a typo in
// a game's code, or a server running another game. The message lists the server's types.
class unknown_component : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

// The registered types, indexed by wire id (ids are 0..size-1).
class schema {
public:
    schema() = default;
    // A copy compares compiled layouts afresh (the cache is per object); a move keeps them.
    schema(const schema& other) : types_{other.types_}, verified_(other.types_.size()) {}
    schema& operator=(const schema& other) {
        if (this != &other) {
            types_ = other.types_;
            verified_ = std::vector<std::atomic<const component_info*>>(types_.size());
        }
        return *this;
    }
    schema(schema&&) noexcept = default;
    schema& operator=(schema&&) noexcept = default;
    ~schema() = default;

    // Checks everything a hostile peer could lie about (ids, names, types, bit widths, sizes);
    // nullopt with `why` set when the description is not usable.
    [[nodiscard]] static std::optional<schema> make(std::vector<component_info> types,
                                                    std::string* why = nullptr);

    [[nodiscard]] std::size_t size() const noexcept { return types_.size(); }
    [[nodiscard]] bool empty() const noexcept { return types_.empty(); }
    [[nodiscard]] const component_info* find(std::uint32_t id) const noexcept {
        return id < types_.size() ? &types_[id] : nullptr;
    }
    [[nodiscard]] const component_info* find(std::string_view name) const noexcept;
    // The wire id of the type called `name`. Throws unknown_component naming it and listing
    // the types there are (or saying there are none yet: no Welcome) when there is no such type.
    [[nodiscard]] std::uint32_t id_of(std::string_view name) const;
    [[nodiscard]] std::span<const component_info> types() const noexcept { return types_; }

    // The entry of the compiled type's wire name, once `compiled` (protocol::compiled_layout<T>(),
    // one object per type) was found able to read and write its values (incompatibility());
    // null when the schema has no such name. Throws schema_mismatch naming the type and its
    // first difference. The verdict is cached per entry: later calls with the same layout
    // cost a name lookup and one comparison. Safe from several threads.
    [[nodiscard]] const component_info* checked(const component_info& compiled) const;

    friend bool operator==(const schema& a, const schema& b) noexcept {
        return a.types_ == b.types_;
    }

private:
    std::vector<component_info> types_;
    // Per wire id: the compiled layout last found compatible with the entry, or null.
    mutable std::vector<std::atomic<const component_info*>> verified_;
};

// Why `expected` (what a client was compiled with) cannot read values of `actual` (what the
// server sends), or nullopt when it can: same kind, and the expected fields are the first
// fields of the actual ones with the same names, types and encodings (bits, quantization).
// Fields the server added at the end are fine: an older client ignores them. Who may write
// the type, whom it is replicated to and a string's size limit are not compared: they change
// no value's bytes, and the server enforces them on every command. E.g. "component 'beacon':
// field 2 is 'team' uint8 on the server, 'y' float in this client (fields may only be added
// at the end)". Allocates only when it finds a difference.
[[nodiscard]] std::optional<std::string> incompatibility(const component_info& expected,
                                                         const component_info& actual);

// A component value in a command, by wire name: canonical bytes, or text for a string type.
struct component_value {
    std::string name;
    std::vector<std::byte> bytes;
    std::string text;
    // Set when a typed value made it (component_set::set<T>): the encoder checks it against
    // the server's entry (schema::checked) before sending. Not part of the value.
    const component_info* layout = nullptr;
    friend bool operator==(const component_value& a, const component_value& b) noexcept {
        return a.name == b.name && a.bytes == b.bytes && a.text == b.text;
    }
};

// ---- bits -----------------------------------------------------------------------------------

namespace detail {
// Little-endian loads and stores of 0 to 8 bytes, each size a fixed-size copy (a plain load),
// not a call: values are read and written a few bytes at a time on every mirror update.
[[nodiscard]] inline std::uint64_t load_le(const std::byte* in, std::size_t n) noexcept {
    std::uint64_t word = 0;
    switch (n) {
        case 8: std::memcpy(&word, in, 8); break;
        case 7: std::memcpy(&word, in, 7); break;
        case 6: std::memcpy(&word, in, 6); break;
        case 5: std::memcpy(&word, in, 5); break;
        case 4: std::memcpy(&word, in, 4); break;
        case 3: std::memcpy(&word, in, 3); break;
        case 2: std::memcpy(&word, in, 2); break;
        case 1: std::memcpy(&word, in, 1); break;
        default: break;
    }
    return word;
}
inline void store_le(std::byte* out, std::uint64_t word, std::size_t n) noexcept {
    switch (n) {
        case 8: std::memcpy(out, &word, 8); break;
        case 7: std::memcpy(out, &word, 7); break;
        case 6: std::memcpy(out, &word, 6); break;
        case 5: std::memcpy(out, &word, 5); break;
        case 4: std::memcpy(out, &word, 4); break;
        case 3: std::memcpy(out, &word, 3); break;
        case 2: std::memcpy(out, &word, 2); break;
        case 1: std::memcpy(out, &word, 1); break;
        default: break;
    }
}
}  // namespace detail

// Appends values of up to 64 bits, least significant bit first.
class bit_writer {
public:
    explicit bit_writer(std::span<std::byte> out) noexcept : out_{out} {}
    void write(std::uint64_t value, unsigned bits) noexcept;
    [[nodiscard]] std::size_t bit_position() const noexcept { return at_; }

private:
    std::span<std::byte> out_;  // zeroed by the caller
    std::size_t at_{0};
};

class bit_reader {
public:
    explicit bit_reader(std::span<const std::byte> in, std::size_t first_bit = 0) noexcept
        : in_{in}, at_{first_bit} {}
    // The caller checked that the bits are there.
    [[nodiscard]] std::uint64_t read(unsigned bits) noexcept {
        if (bits <= 57) {
            // One unaligned little-endian load covers the shift (< 8) and the bits.
            const std::size_t at = at_ / 8;
            std::uint64_t word = detail::load_le(in_.data() + at, std::min<std::size_t>(8, in_.size() - at));
            word = (word >> (at_ % 8)) & ((std::uint64_t{1} << bits) - 1);
            at_ += bits;
            return word;
        }
        return read_long(bits);
    }
    void skip(std::size_t bits) noexcept { at_ += bits; }
    [[nodiscard]] std::size_t bit_position() const noexcept { return at_; }

private:
    [[nodiscard]] std::uint64_t read_long(unsigned bits) noexcept;

    std::span<const std::byte> in_;
    std::size_t at_;
};

// Appends values of up to 64 bits through a 64-bit accumulator: the encoder's path for
// bit-packed columns (one shift and or per field, a store per 8 bytes).
class bit_packer {
public:
    explicit bit_packer(std::byte* out) noexcept : out_{out} {}
    void put(std::uint64_t value, unsigned bits) noexcept {  // value < 2^bits
        acc_ |= value << used_;  // used_ < 64
        if (used_ + bits >= 64) {
            std::memcpy(out_, &acc_, 8);  // little-endian host
            out_ += 8;
            acc_ = used_ == 0 ? 0 : value >> (64 - used_);
            used_ = used_ + bits - 64;
        } else {
            used_ += bits;
        }
    }
    // Writes the bits still held (the last partial byte's high bits zero).
    void flush() noexcept {
        std::memcpy(out_, &acc_, (used_ + 7) / 8);
        out_ += (used_ + 7) / 8;
        acc_ = 0;
        used_ = 0;
    }

private:
    std::byte* out_;
    std::uint64_t acc_{0};
    unsigned used_{0};
};

// The checks valid_value makes, laid out once per type: a mirror runs them on every value.
class value_checker {
public:
    value_checker() = default;
    explicit value_checker(const component_info& type);
    [[nodiscard]] bool operator()(std::span<const std::byte> value) const noexcept {
        if (value_bytes_ <= 8) {
            // The usual value fits a word: one load, then shifts.
            return word_ok(detail::load_le(value.data(), value_bytes_));
        }
        return check_long(value);
    }
    // A value of at most 8 bytes, loaded little-endian into a word.
    [[nodiscard]] bool word_ok(std::uint64_t word) const noexcept {
        // Floats: NaN and infinities are the values whose exponent bits are all ones.
        for (std::size_t k = 0; k < exponent_count_; ++k) {
            if ((word & exponents_[k]) == exponents_[k]) {
                return false;
            }
        }
        for (const check& c : quantized_) {
            const std::uint64_t mask =
                c.bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << c.bits) - 1;
            if (!passes(c.what, (word >> c.bit_offset) & mask, c.max_q)) {
                return false;
            }
        }
        return true;
    }

private:
    enum class kind : std::uint8_t { float32, float64, quantized };
    [[nodiscard]] static bool passes(kind what, std::uint64_t bits, std::uint64_t max_q) noexcept {
        switch (what) {
            case kind::float32: return ((bits >> 23U) & 0xFFU) != 0xFFU;
            case kind::float64: return ((bits >> 52U) & 0x7FFU) != 0x7FFU;
            case kind::quantized: return bits <= max_q;
        }
        return true;
    }
    [[nodiscard]] bool check_long(std::span<const std::byte> value) const noexcept;
    struct check {
        std::uint32_t bit_offset;
        std::uint8_t bits;
        kind what;
        std::uint64_t max_q;
    };
    std::vector<check> checks_;
    std::size_t value_bytes_{0};
    // For values of at most 8 bytes: the floats' exponent masks within the word, and the
    // quantized checks.
    std::array<std::uint64_t, 8> exponents_{};
    std::size_t exponent_count_{0};
    std::vector<check> quantized_;
};

// Bytes of a column holding `count` packed values of `type`.
[[nodiscard]] std::size_t column_bytes(const component_info& type, std::size_t count) noexcept;

// Copies value `i` of a packed column into its canonical bytes (out: type.value_bytes()).
void unpack_value(const component_info& type, std::span<const std::byte> column, std::size_t i,
                  std::span<std::byte> out) noexcept;
// The same for a value of `value_bits` bits (the mirror keeps it per type).
void unpack_value(std::size_t value_bits, const component_info& type,
                  std::span<const std::byte> column, std::size_t i,
                  std::span<std::byte> out) noexcept;
// Appends canonical bytes as value `i` of a zeroed column.
void pack_value(const component_info& type, std::span<const std::byte> value,
                std::span<std::byte> column, std::size_t i) noexcept;

// ---- field values, for generic clients ----------------------------------------------------

// A field's value as a program that was not compiled with the type sees it: integers as
// themselves, floats (quantized ones dequantized) as double.
using field_value = std::variant<std::int64_t, std::uint64_t, double, bool>;

[[nodiscard]] field_value read_field(const component_info& type, std::span<const std::byte> value,
                                     std::size_t field);
// Canonical bytes from one field value each; nullopt with `why` when a value does not fit
// the field (out of range, not finite, wrong count).
[[nodiscard]] std::optional<std::vector<std::byte>> make_value(
    const component_info& type, std::span<const field_value> fields, std::string* why = nullptr);
// Checks canonical bytes: floats finite, quantized values in range; `why` names the field.
[[nodiscard]] bool valid_value(const component_info& type, std::span<const std::byte> value,
                               std::string* why = nullptr);
[[nodiscard]] std::string to_string(const field_value& value);

// The raw bits of a field value as packed (floats: IEEE bits, or q for a quantized one).
[[nodiscard]] std::optional<std::uint64_t> field_bits(const field_info& field,
                                                      const field_value& value);
[[nodiscard]] field_value field_from_bits(const field_info& field, std::uint64_t bits) noexcept;

}  // namespace ecsnet::protocol

namespace ecsnet::protocol {

// ---- on the wire (Welcome.components) -----------------------------------------------------

[[nodiscard]] flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::ComponentType>>>
encode_schema(flatbuffers::FlatBufferBuilder& fbb, const schema& types);

// From a verified Welcome; nullopt with `why` when the description lies (schema::make).
[[nodiscard]] std::optional<schema> decode_schema(
    const flatbuffers::Vector<flatbuffers::Offset<wire::ComponentType>>* types,
    std::string* why = nullptr);

}  // namespace ecsnet::protocol
