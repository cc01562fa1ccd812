#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <boost/pfr/core.hpp>
#include <boost/pfr/tuple_size.hpp>

#include "ecsnet/protocol/schema.hpp"
#include "ecsnet/protocol/wire_struct.hpp"

// How a game declares a replicated component, in its own code (docs/EXTENDING.md):
//
//     // game.fbs, compiled by flatc in the game's build:  struct Shield { strength: float; }
//     struct Shield { float strength; };
//     template <> struct ecsnet::protocol::replicated<Shield>
//         : ecsnet::protocol::replicate<game::wire::Shield, "shield"> {};
//
// and registers it on its server (component_registry::add<Shield>()). The component carries
// exactly the fields of its FlatBuffers struct, in order and type, checked at compile time;
// the struct's field names become the schema's. A string component (one std::string field)
// uses string_value as its wire type, a marker (an empty struct: FlatBuffers has no empty
// structs) marker_value.
namespace ecsnet::protocol {

template <std::size_t N>
struct fixed_string {
    char chars[N]{};
    constexpr fixed_string(const char (&text)[N]) noexcept {  // NOLINT: implicit on purpose
        std::copy_n(text, N, chars);
    }
    [[nodiscard]] constexpr std::string_view view() const noexcept { return {chars, N - 1}; }
};

// Every float field of the type is sent as an integer: value = min + q * step for q in
// [0, round((max - min) / step)], in as few bits as that range needs. Values outside [min, max]
// are clamped on the wire (the server keeps its own).
struct quantize {
    double min = 0;
    double max = 0;
    double step = 0;  // 0: floats travel whole
};

struct replicate_options {
    writer written_by = writer::owner;
    bool owner_only = false;   // replicated to the entity's owner only
    quantize quantized{};
    std::uint32_t max_bytes = 64;  // string components: longest value accepted
    // A player input: its owner sends it per tick with Input messages (docs/EXTENDING.md,
    // "Input types"), and it is replicated to nobody unless replicate_input is set (then like
    // any type: to everyone, or to the owner with owner_only). Fixed-size types only.
    bool input = false;
    bool replicate_input = false;
    // Clients interpolate its numeric fields between server ticks (docs/CLIENT.md).
    bool interpolate = false;
};

// The wire type of a string component.
struct string_value {};

// The wire type of a marker: an empty component whose presence is all it says (`struct Frozen
// {};`). It travels as one bool field, `present`, always true: the schema and the wire are those
// of any one-bool component, so every client (and the TypeScript SDK, which reads it as
// {present: true}) understands it. One byte per entity in a snapshot (a plain bool is 8 bits on
// the wire); a marker never changes, so it costs nothing after it is added.
struct marker_value {};

template <typename Wire, fixed_string Name, replicate_options Options = replicate_options{}>
struct replicate {
    using wire_type = Wire;
    static constexpr std::string_view name = Name.view();
    static constexpr replicate_options options = Options;
};

// Specialized by the game for each replicated type (see the top of this file).
template <typename T>
struct replicated;

template <typename T>
concept replicated_component = requires {
    typename replicated<T>::wire_type;
    { replicated<T>::name } -> std::convertible_to<std::string_view>;
};

namespace detail {

template <typename F>
consteval field_type field_type_of() {
    if constexpr (std::is_same_v<F, bool>) return field_type::bool_;
    else if constexpr (std::is_same_v<F, std::int8_t>) return field_type::int8;
    else if constexpr (std::is_same_v<F, std::uint8_t>) return field_type::uint8;
    else if constexpr (std::is_same_v<F, std::int16_t>) return field_type::int16;
    else if constexpr (std::is_same_v<F, std::uint16_t>) return field_type::uint16;
    else if constexpr (std::is_same_v<F, std::int32_t>) return field_type::int32;
    else if constexpr (std::is_same_v<F, std::uint32_t>) return field_type::uint32;
    else if constexpr (std::is_same_v<F, std::int64_t>) return field_type::int64;
    else if constexpr (std::is_same_v<F, std::uint64_t>) return field_type::uint64;
    else if constexpr (std::is_same_v<F, float>) return field_type::float32;
    else if constexpr (std::is_same_v<F, double>) return field_type::float64;
    else static_assert(sizeof(F) == 0, "replicated fields are scalars (bool, ints, float, double)");
}

// The largest q of a quantized range, round((max - min) / step), and the bits it takes (as
// schema.cpp computes them for a received schema).
constexpr std::uint64_t quantized_steps(quantize q) {
    const double steps = (q.max - q.min) / q.step;
    return static_cast<std::uint64_t>(steps + 0.5);
}

constexpr unsigned quantized_bits(quantize q) {
    const std::uint64_t steps = quantized_steps(q);
    unsigned bits = 1;
    while (bits < 64 && (std::uint64_t{1} << bits) - 1 < steps) {
        ++bits;
    }
    return bits;
}

template <typename T>
inline constexpr bool is_string_v = std::is_same_v<typename replicated<T>::wire_type, string_value>;

template <typename T>
inline constexpr bool is_marker_v = std::is_same_v<typename replicated<T>::wire_type, marker_value>;

template <typename T, std::size_t I>
consteval unsigned field_bits() {
    using F = boost::pfr::tuple_element_t<I, T>;
    constexpr quantize q = replicated<T>::options.quantized;
    if constexpr (std::is_floating_point_v<F>) {
        if constexpr (q.step > 0) {
            return quantized_bits(q);
        }
    }
    return sizeof(F) * 8;
}

template <typename T>
consteval std::size_t value_bits() {
    if constexpr (is_marker_v<T>) {
        return 8;  // present: a bool, 8 bits like every plain bool (PROTOCOL.md, "Schema")
    } else {
        return [&]<std::size_t... I>(std::index_sequence<I...>) {
            return (std::size_t{0} + ... + field_bits<T, I>());
        }(std::make_index_sequence<boost::pfr::tuple_size_v<T>>{});
    }
}

template <typename T>
consteval bool check_options() {
    constexpr auto options = replicated<T>::options;
    constexpr quantize q = options.quantized;
    static_assert(q.step >= 0 && (q.step == 0 || q.max > q.min),
                  "quantize needs max > min and a positive step");
    static_assert(q.step == 0 || (q.max - q.min) / q.step < 4294967295.0,
                  "quantized range too fine: more than 2^32 - 1 steps");
    static_assert(!options.input || options.written_by == writer::owner,
                  "an input type is written by its owner (written_by = writer::owner)");
    static_assert(!options.replicate_input || options.input,
                  "replicate_input is for input types (input = true)");
    static_assert(replicated<T>::name.size() > 0 &&
                      replicated<T>::name.size() <= max_schema_name_bytes,
                  "a wire name has 1 to 64 bytes");
    if constexpr (is_string_v<T>) {
        static_assert(boost::pfr::tuple_size_v<T> == 1 &&
                          std::is_same_v<boost::pfr::tuple_element_t<0, T>, std::string>,
                      "a string component has exactly one std::string field");
        static_assert(options.max_bytes > 0 && options.max_bytes <= max_string_bytes,
                      "max_bytes is 1 to 4096");
        static_assert(!options.input && !options.interpolate,
                      "input and interpolated types are fixed-size, not strings");
    } else if constexpr (is_marker_v<T>) {
        static_assert(std::is_empty_v<T> && std::is_aggregate_v<T>,
                      "a marker is an empty struct (marker_value as its wire type)");
        static_assert(options.quantized.step == 0 && !options.interpolate && !options.input,
                      "a marker has no value to quantize, interpolate or send as input");
    } else {
        static_assert(check_fields<T, typename replicated<T>::wire_type>());
    }
    return true;
}

template <typename F, quantize q>
std::uint64_t raw_bits(F value) noexcept {
    if constexpr (std::is_floating_point_v<F>) {
        if constexpr (q.step > 0) {
            // constexpr, not consteval: clang 14 refuses an immediate call on a template
            // parameter inside a template.
            constexpr auto max_q = static_cast<double>(quantized_steps(q));
            const double steps = std::round((static_cast<double>(value) - q.min) / q.step);
            // NaN compares false both ways: it goes out as 0.
            return steps > 0 ? static_cast<std::uint64_t>(std::min(steps, max_q)) : 0;
        } else if constexpr (sizeof(F) == 4) {
            return detail::bit_cast<std::uint32_t>(value);
        } else {
            return detail::bit_cast<std::uint64_t>(value);
        }
    } else if constexpr (std::is_same_v<F, bool>) {
        return value ? 1 : 0;
    } else {
        return static_cast<std::uint64_t>(static_cast<std::make_unsigned_t<F>>(value));
    }
}

template <typename F>
F from_raw_bits(std::uint64_t raw, const quantize& q) noexcept {
    if constexpr (std::is_floating_point_v<F>) {
        if (q.step > 0) {
            return static_cast<F>(q.min + static_cast<double>(raw) * q.step);
        }
        if constexpr (sizeof(F) == 4) {
            return detail::bit_cast<float>(static_cast<std::uint32_t>(raw));
        } else {
            return detail::bit_cast<double>(raw);
        }
    } else if constexpr (std::is_same_v<F, bool>) {
        return raw != 0;
    } else {
        return static_cast<F>(static_cast<std::make_unsigned_t<F>>(raw));
    }
}

}  // namespace detail

// Bytes of T's canonical value; 0 for a string component.
template <replicated_component T>
inline constexpr std::size_t value_bytes_v =
    detail::is_string_v<T> ? 0 : (detail::value_bits<T>() + 7) / 8;

// T's entry in the schema (the registry sets the id).
template <replicated_component T>
[[nodiscard]] component_info describe() {
    static_assert(detail::check_options<T>());
    constexpr auto options = replicated<T>::options;
    component_info info;
    info.name = std::string{replicated<T>::name};
    info.written_by = options.written_by;
    info.owner_only = options.owner_only;
    info.input = options.input;
    info.replicated = !options.input || options.replicate_input;
    info.interpolated = options.interpolate;
    if constexpr (detail::is_string_v<T>) {
        info.is_string = true;
        info.max_bytes = options.max_bytes;
    } else if constexpr (detail::is_marker_v<T>) {
        info.fields.push_back(field_info{"present", field_type::bool_, 8, quantization{}});
    } else {
        using W = typename replicated<T>::wire_type;
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            (info.fields.push_back(field_info{
                 std::string{W::Traits::field_names[I]},
                 detail::field_type_of<boost::pfr::tuple_element_t<I, T>>(),
                 static_cast<std::uint8_t>(detail::field_bits<T, I>()),
                 std::is_floating_point_v<boost::pfr::tuple_element_t<I, T>> &&
                         options.quantized.step > 0
                     ? quantization{options.quantized.min, options.quantized.max,
                                    options.quantized.step}
                     : quantization{}}),
             ...);
        }(std::make_index_sequence<boost::pfr::tuple_size_v<T>>{});
    }
    return info;
}

// T's entry as this program was compiled with it, one object per type: what typed access
// (mirror::get<T>, component_set::set<T>) checks against the server's entry of the same name
// (schema::checked).
template <replicated_component T>
[[nodiscard]] const component_info& compiled_layout() {
    static const component_info info = describe<T>();
    return info;
}

// Writes value's canonical bytes into out (value_bytes_v<T> bytes or more, zeroed): field by
// field, never the component's own bytes (its padding could hold anything).
template <replicated_component T>
void pack(const T& value, std::byte* out) noexcept {
    static_assert(!detail::is_string_v<T>);
    if constexpr (detail::is_marker_v<T>) {
        out[0] = std::byte{1};  // present
        return;
    }
    constexpr quantize q = replicated<T>::options.quantized;
    constexpr bool aligned = [] {
        return [&]<std::size_t... I>(std::index_sequence<I...>) {
            return ((detail::field_bits<T, I>() % 8 == 0) && ...);
        }(std::make_index_sequence<boost::pfr::tuple_size_v<T>>{});
    }();
    if constexpr (aligned) {
        // Whole bytes: little-endian scalars back to back.
        std::size_t at = 0;
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            ((std::memcpy(out + at,
                          &static_cast<const std::uint64_t&>(
                              detail::raw_bits<boost::pfr::tuple_element_t<I, T>, q>(
                                  boost::pfr::get<I>(value))),
                          detail::field_bits<T, I>() / 8),  // little-endian host (hash.hpp)
              at += detail::field_bits<T, I>() / 8),
             ...);
        }(std::make_index_sequence<boost::pfr::tuple_size_v<T>>{});
    } else {
        bit_writer writer{std::span<std::byte>{out, value_bytes_v<T>}};
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            (writer.write(detail::raw_bits<boost::pfr::tuple_element_t<I, T>, q>(
                              boost::pfr::get<I>(value)),
                          detail::field_bits<T, I>()),
             ...);
        }(std::make_index_sequence<boost::pfr::tuple_size_v<T>>{});
    }
}

// Appends value's fields to a column being bit-packed (the encoder's path).
template <replicated_component T>
void pack_fields(const T& value, bit_packer& packer) noexcept {
    if constexpr (detail::is_marker_v<T>) {
        packer.put(1, 8);  // present
        return;
    }
    constexpr quantize q = replicated<T>::options.quantized;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
        (packer.put(detail::raw_bits<boost::pfr::tuple_element_t<I, T>, q>(boost::pfr::get<I>(value)) &
                        ((detail::field_bits<T, I>() >= 64)
                             ? ~std::uint64_t{0}
                             : (std::uint64_t{1} << detail::field_bits<T, I>()) - 1),
                    detail::field_bits<T, I>()),
         ...);
    }(std::make_index_sequence<boost::pfr::tuple_size_v<T>>{});
}

template <replicated_component T>
[[nodiscard]] std::array<std::byte, value_bytes_v<T>> pack(const T& value) noexcept {
    std::array<std::byte, value_bytes_v<T>> out{};
    pack(value, out.data());
    return out;
}

// The value from canonical bytes (at least value_bytes_v<T>; trailing fields the sender
// added later are ignored).
template <replicated_component T>
[[nodiscard]] T unpack(const std::byte* in) noexcept {
    static_assert(!detail::is_string_v<T>);
    if constexpr (detail::is_marker_v<T>) {
        return T{};
    }
    constexpr quantize q = replicated<T>::options.quantized;
    bit_reader reader{std::span<const std::byte>{in, value_bytes_v<T>}};
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
        return T{detail::from_raw_bits<boost::pfr::tuple_element_t<I, T>>(
            reader.read(detail::field_bits<T, I>()), q)...};
    }(std::make_index_sequence<boost::pfr::tuple_size_v<T>>{});
}

// The value as a client receives it: each float field on the wire's grid (clamped to its
// range). A game that predicts writes its predicted state through this at the end of each
// tick, on the server and in the prediction alike: a client that restarts from the server's
// state then restarts from the exact state the server goes on from (docs/PREDICTION.md).
template <replicated_component T>
[[nodiscard]] T quantized(const T& value) noexcept {
    return unpack<T>(pack(value).data());
}

// A string component's text.
template <replicated_component T>
[[nodiscard]] const std::string& text_of(const T& value) noexcept {
    static_assert(detail::is_string_v<T>);
    return boost::pfr::get<0>(value);
}

}  // namespace ecsnet::protocol
