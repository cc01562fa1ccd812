#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <boost/pfr/core.hpp>
#include <boost/pfr/tuple_size.hpp>

#include "ecsnet/protocol/replicated.hpp"
#include "ecsnet/protocol/schema.hpp"

// How component values are kept on disk (checkpoints and the journal, docs/PERSISTENCE.md):
// every field whole, never quantized (the server's own value, not the wire's), little-endian,
// back to back; bool as one byte. A string component keeps its text. The layout is derived
// from the type like the wire's, and each file carries the stored_type of every type it
// holds, so that a reader needs no game type and a changed type is detected by name.
//
// A component the game keeps without replicating it is declared like a replicated one:
//
//     struct Hunger { float level; std::uint32_t meals; };
//     template <> struct ecsnet::protocol::persistent<Hunger>
//         : ecsnet::protocol::persist<"hunger"> {};
//
// and registered with component_registry::persist<Hunger>(). Its fields are named f0, f1, ...
// (Boost 1.81's PFR has no field names); checks compare their order and types.
namespace ecsnet::protocol {

struct stored_field {
    std::string name;
    field_type type{field_type::float32};

    friend bool operator==(const stored_field&, const stored_field&) = default;
};

struct stored_type {
    std::string name;
    bool replicated{true};  // false: kept, never replicated (persist<T>)
    bool is_string{false};  // the value is a text, no fields
    std::vector<stored_field> fields;

    // Bytes of one value (0 for a string type).
    [[nodiscard]] std::size_t value_bytes() const noexcept;

    friend bool operator==(const stored_type&, const stored_type&) = default;
};

// "shield {strength: float}", "label (string)": for messages.
[[nodiscard]] std::string describe(const stored_type& type);
// Why a value stored as `saved` cannot be read as `current` (same name assumed): a field
// added, removed, renamed, retyped or moved, string against fields. Empty when it can.
[[nodiscard]] std::string incompatibility(const stored_type& saved, const stored_type& current);

// A field's value without its type (schema.hpp's field_value): what inspect-state prints and
// migrations work on.

// The fields of a stored value (`value` holds value_bytes() bytes). Throws
// std::invalid_argument when it is shorter.
[[nodiscard]] std::vector<field_value> decode_fields(const stored_type& type,
                                                     std::span<const std::byte> value);
// Writes `values` (one per field, converted to each field's type as a static_cast would)
// into out (value_bytes() bytes). Throws std::invalid_argument on a count mismatch.
void encode_fields(const stored_type& type, std::span<const field_value> values, std::byte* out);

// Specialized by the game for each type it keeps without replicating (see the top).
template <typename T>
struct persistent;

template <fixed_string Name>
struct persist {
    static constexpr std::string_view name = Name.view();
};

template <typename T>
concept persistent_component = requires {
    { persistent<T>::name } -> std::convertible_to<std::string_view>;
};

namespace detail {

template <typename T>
consteval bool is_stored_string() {
    if constexpr (boost::pfr::tuple_size_v<T> == 1) {
        return std::is_same_v<boost::pfr::tuple_element_t<0, T>, std::string>;
    } else {
        return false;
    }
}

template <typename F>
consteval std::size_t stored_bytes_of() {
    return std::is_same_v<F, bool> ? 1 : sizeof(F);
}

// An empty type (a marker) is stored as one bool field, `present`, as it travels
// (replicated.hpp, marker_value): every stored type has fields.
template <typename T>
inline constexpr bool is_stored_marker = std::is_empty_v<T>;

template <typename T>
consteval std::size_t stored_value_bytes() {
    if constexpr (is_stored_string<T>()) {
        return 0;
    } else if constexpr (is_stored_marker<T>) {
        return 1;
    } else {
        return [&]<std::size_t... I>(std::index_sequence<I...>) {
            return (std::size_t{0} + ... + stored_bytes_of<boost::pfr::tuple_element_t<I, T>>());
        }(std::make_index_sequence<boost::pfr::tuple_size_v<T>>{});
    }
}

// `names(i)` names field i.
template <typename T, typename Names>
stored_type stored_type_of(std::string_view name, bool replicated, Names names) {
    stored_type type;
    type.name = std::string{name};
    type.replicated = replicated;
    if constexpr (is_stored_string<T>()) {
        type.is_string = true;
    } else if constexpr (is_stored_marker<T>) {
        type.fields.push_back(stored_field{"present", field_type::bool_});
    } else {
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            (type.fields.push_back(stored_field{
                 names(I), field_type_of<boost::pfr::tuple_element_t<I, T>>()}),
             ...);
        }(std::make_index_sequence<boost::pfr::tuple_size_v<T>>{});
    }
    return type;
}

// value's fields, whole and little-endian (hash.hpp: the hosts are), into out.
template <typename T>
void stored_pack(const T& value, std::byte* out) noexcept {
    static_assert(!is_stored_string<T>());
    if constexpr (is_stored_marker<T>) {
        out[0] = std::byte{1};  // present
        return;
    }
    std::size_t at = 0;
    boost::pfr::for_each_field(value, [&](const auto& field) {
        using F = std::remove_cvref_t<decltype(field)>;
        if constexpr (std::is_same_v<F, bool>) {
            out[at] = std::byte{field ? std::uint8_t{1} : std::uint8_t{0}};
        } else {
            std::memcpy(out + at, &field, sizeof(F));
        }
        at += stored_bytes_of<F>();
    });
}

template <typename T>
[[nodiscard]] T stored_unpack(const std::byte* in) noexcept {
    static_assert(!is_stored_string<T>());
    T value{};
    std::size_t at = 0;
    boost::pfr::for_each_field(value, [&](auto& field) {
        using F = std::remove_cvref_t<decltype(field)>;
        if constexpr (std::is_same_v<F, bool>) {
            field = in[at] != std::byte{0};
        } else {
            std::memcpy(&field, in + at, sizeof(F));
        }
        at += stored_bytes_of<F>();
    });
    return value;
}

// T from field values (a migration's result): each converted as a static_cast would.
template <typename T>
[[nodiscard]] T from_field_values(std::span<const field_value> values) {
    static_assert(!is_stored_string<T>());
    T value{};
    std::size_t i = 0;
    boost::pfr::for_each_field(value, [&](auto& field) {
        using F = std::remove_cvref_t<decltype(field)>;
        field = std::visit([](auto v) { return static_cast<F>(v); }, values[i++]);
    });
    return value;
}

}  // namespace detail

}  // namespace ecsnet::protocol
