#pragma once

#include <array>
#include <cstddef>
#include <type_traits>
#include <utility>

#include <boost/pfr/core.hpp>
#include <boost/pfr/tuple_size.hpp>

#include "ecsnet/protocol/bit_cast.hpp"

// A fixed-size component and its FlatBuffers struct, field by field. Values cross between the
// two only through the fields: the struct is built by flatc's constructor, which writes every
// field at its schema offset and zeroes the padding members, and read through its accessors.
// The component's own bytes, padding included, never reach the wire or the checksum (its
// padding can hold anything the memory held before: equal values would encode and hash
// differently, a false desync).
//
// The component side is any aggregate (fields listed by Boost.PFR: no per-type declaration);
// the schema side is what `flatc --cpp-static-reflection` generates (W::Traits).
namespace ecsnet::protocol {

// The schema's fields of a flatc-generated struct W: how many, and the type of each in
// declaration order (what its accessor returns; nested structs by value).
template <typename W>
inline constexpr std::size_t wire_field_count_v = W::Traits::fields_number;

template <typename W, std::size_t I>
using wire_field_t = std::remove_cvref_t<typename W::Traits::template FieldType<I>>;

// The fields of a component, in declaration order.
template <typename T>
inline constexpr std::size_t component_field_count_v = boost::pfr::tuple_size_v<T>;

template <typename T, std::size_t I>
using component_field_t = boost::pfr::tuple_element_t<I, T>;

// Offsets of W's fields as the FlatBuffers schema lays them out: each field at the next
// multiple of its alignment (a scalar's size, a nested struct's alignment), the struct's size a
// multiple of its own alignment. Checked against the generated struct's size below and against
// its bytes in tests/protocol/wire_struct_test.cpp.
template <typename W>
[[nodiscard]] consteval std::array<std::size_t, wire_field_count_v<W>> wire_field_offsets() {
    std::array<std::size_t, wire_field_count_v<W>> out{};
    std::size_t at = 0;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
        ((at = (at + alignof(wire_field_t<W, I>) - 1) / alignof(wire_field_t<W, I>) *
               alignof(wire_field_t<W, I>),
          out[I] = at, at += sizeof(wire_field_t<W, I>)),
         ...);
    }(std::make_index_sequence<wire_field_count_v<W>>{});
    return out;
}

template <typename W>
[[nodiscard]] consteval std::size_t wire_struct_size() {
    const auto offsets = wire_field_offsets<W>();
    constexpr std::size_t last = wire_field_count_v<W> - 1;
    const std::size_t end = offsets[last] + sizeof(wire_field_t<W, last>);
    return (end + alignof(W) - 1) / alignof(W) * alignof(W);
}

namespace detail {
template <typename T, typename W, std::size_t I>
consteval bool field_matches() {
    static_assert(std::is_same_v<component_field_t<T, I>, wire_field_t<W, I>>,
                  "field I of the component and of its FlatBuffers struct have different types "
                  "(fields must be declared in the schema's order, with the schema's types)");
    return true;
}
}  // namespace detail

// Compile-time check that component T carries exactly the fields of FlatBuffers struct W: the
// same number, each with the schema's type at the same position, and W laid out at the
// schema's offsets. Fails to compile, naming T, W and the field index, otherwise.
template <typename T, typename W>
consteval bool check_fields() {
    static_assert(std::is_aggregate_v<T>, "a fixed-size component must be an aggregate");
    static_assert(std::is_trivially_copyable_v<W> && std::is_standard_layout_v<W>,
                  "not a flatc-generated struct");
    static_assert(component_field_count_v<T> == wire_field_count_v<W>,
                  "the component and its FlatBuffers struct have different numbers of fields");
    static_assert(wire_struct_size<W>() == sizeof(W),
                  "the generated struct is not laid out at the schema's offsets");
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
        return (detail::field_matches<T, W, I>() && ...);
    }(std::make_index_sequence<wire_field_count_v<W>>{});
}

// The FlatBuffers struct holding value's fields; its padding is zero.
template <typename W, typename T>
[[nodiscard]] W to_wire(const T& value) noexcept {
    static_assert(check_fields<T, W>());
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
        return W(boost::pfr::get<I>(value)...);
    }(std::make_index_sequence<wire_field_count_v<W>>{});
}

// The component holding the struct's fields.
template <typename T, typename W>
[[nodiscard]] T from_wire(const W& value) noexcept {
    static_assert(check_fields<T, W>());
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
        return T{value.template get_field<I>()...};
    }(std::make_index_sequence<wire_field_count_v<W>>{});
}

// The canonical bytes of value: its FlatBuffers struct as it goes on the wire (little-endian
// fields at the schema's offsets, zero padding). What the checksum hashes.
template <typename W, typename T>
[[nodiscard]] std::array<std::byte, sizeof(W)> wire_bytes(const T& value) noexcept {
    return detail::bit_cast<std::array<std::byte, sizeof(W)>>(to_wire<W>(value));
}

}  // namespace ecsnet::protocol
