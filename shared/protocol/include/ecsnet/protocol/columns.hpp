#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "ecsnet/protocol/components.hpp"
#include "ecsnet/protocol/wire_struct.hpp"
#include "ecsnet/wire/common_generated.h"

// How a replicated component type maps onto ComponentColumns: generated once per entry of
// ECSNET_REPLICATED_COMPONENTS, so the codec, the mirror and the checksum are written once for
// all types.
namespace ecsnet::protocol {

static_assert(std::endian::native == std::endian::little,
              "the checksum hashes native u32 words as their little-endian wire bytes");

enum class writer : std::uint8_t { client, server };

template <typename T>
struct column;

#define ECSNET_DETAIL_DEFINE_COLUMN(Type, field, who)                                            \
    template <>                                                                               \
    struct column<Type> {                                                                     \
        static constexpr std::string_view name = #field;                                      \
        static constexpr writer written_by = writer::who;                                     \
        using vector_type = std::remove_const_t<std::remove_pointer_t<                        \
            decltype(std::declval<const wire::ComponentColumns&>().field())>>;                \
        static const wire::IndexSet* at(const wire::ComponentColumns& c) {                    \
            return c.field##_at();                                                            \
        }                                                                                     \
        static const vector_type* values(const wire::ComponentColumns& c) { return c.field(); } \
        static void add_at(wire::ComponentColumnsBuilder& b,                                  \
                           flatbuffers::Offset<wire::IndexSet> o) {                           \
            b.add_##field##_at(o);                                                            \
        }                                                                                     \
        static void add_values(wire::ComponentColumnsBuilder& b,                              \
                               flatbuffers::Offset<vector_type> o) {                          \
            b.add_##field(o);                                                                 \
        }                                                                                     \
    };
ECSNET_REPLICATED_COMPONENTS(ECSNET_DETAIL_DEFINE_COLUMN)
#undef ECSNET_DETAIL_DEFINE_COLUMN

namespace detail {
template <typename Tuple>
struct drop_first;
template <typename First, typename... Rest>
struct drop_first<std::tuple<First, Rest...>> {
    using type = std::tuple<Rest...>;
};
#define ECSNET_DETAIL_LIST_TYPE(Type, field, who) , Type
using replicated_tuple =
    typename drop_first<std::tuple<void ECSNET_REPLICATED_COMPONENTS(ECSNET_DETAIL_LIST_TYPE)>>::type;
#undef ECSNET_DETAIL_LIST_TYPE

template <typename T, typename Tuple, std::size_t I = 0>
constexpr std::size_t tuple_index() {
    static_assert(I < std::tuple_size_v<Tuple>, "type is not a replicated component");
    if constexpr (std::is_same_v<T, std::tuple_element_t<I, Tuple>>) {
        return I;
    } else {
        return tuple_index<T, Tuple, I + 1>();
    }
}
}  // namespace detail

// std::tuple<Position, Velocity, ...>: every replicated type, in wire-id order.
using replicated_components = detail::replicated_tuple;
inline constexpr std::size_t replicated_count = std::tuple_size_v<replicated_components>;
static_assert(replicated_count <= 64, "component masks are 64-bit");

// A type's wire id: its position in ECSNET_REPLICATED_COMPONENTS.
template <typename T>
inline constexpr std::uint32_t wire_id_v =
    static_cast<std::uint32_t>(detail::tuple_index<T, replicated_components>());

// Calls fn.template operator()<T>() for every replicated type, in wire-id order.
template <typename Fn>
constexpr void for_each_component(Fn&& fn) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
        (fn.template operator()<std::tuple_element_t<I, replicated_components>>(), ...);
    }(std::make_index_sequence<replicated_count>{});
}

template <typename T>
inline constexpr bool is_string_component_v =
    std::is_same_v<typename column<T>::vector_type,
                   flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>>;

// The FlatBuffers struct of a fixed-size component.
template <typename T>
using wire_struct_t = std::remove_const_t<std::remove_pointer_t<typename column<T>::vector_type::return_type>>;

// Every fixed-size component carries its FlatBuffers struct's fields, type for type
// (wire_struct.hpp): checked here for all of them, whether or not a codec uses the type yet.
static_assert([]<std::size_t... I>(std::index_sequence<I...>) {
    return ([]<typename T>() {
        if constexpr (is_string_component_v<T>) {
            return true;
        } else {
            return check_fields<T, wire_struct_t<T>>();
        }
    }.template operator()<std::tuple_element_t<I, replicated_components>>() && ...);
}(std::make_index_sequence<replicated_count>{}));

template <typename T>
[[nodiscard]] bool valid_value(const T& value) noexcept {
    if constexpr (requires { value.valid(); }) {
        return value.valid();
    } else {
        return true;
    }
}

// ---- values ---------------------------------------------------------------------------------

// Writes `count` values, value_at(i) for i in [0, count), as the type's value column.
template <typename T, typename ValueAt>
[[nodiscard]] flatbuffers::Offset<typename column<T>::vector_type> encode_values(
    flatbuffers::FlatBufferBuilder& fbb, std::size_t count, ValueAt&& value_at) {
    if constexpr (is_string_component_v<T>) {
        std::vector<flatbuffers::Offset<flatbuffers::String>> strings;
        strings.reserve(count);
        for (std::size_t i = 0; i < count; ++i) {
            strings.push_back(fbb.CreateString(static_cast<const T&>(value_at(i)).value));
        }
        return fbb.CreateVector(strings);
    } else {
        using W = wire_struct_t<T>;
        W* out = nullptr;
        const auto offset = fbb.CreateUninitializedVectorOfStructs<W>(count, &out);
        for (std::size_t i = 0; i < count; ++i) {
            // Field by field: the value's padding bytes stay off the wire.
            ::new (static_cast<void*>(out + i)) W(to_wire<W>(static_cast<const T&>(value_at(i))));
        }
        return offset;
    }
}

// The i-th value of a verified value column.
template <typename T>
[[nodiscard]] T decode_value(const typename column<T>::vector_type& values, std::size_t i) {
    if constexpr (is_string_component_v<T>) {
        const auto* s = values.Get(static_cast<flatbuffers::uoffset_t>(i));
        return T{std::string{s->data(), s->size()}};
    } else {
        return from_wire<T>(*values.Get(static_cast<flatbuffers::uoffset_t>(i)));
    }
}

// The bytes of a value as they are hashed by the checksum (docs/PROTOCOL.md): its FlatBuffers
// struct as on the wire (zero padding, never the component's own bytes), or the string's UTF-8
// bytes. A std::array for a struct, a span into the value for a string.
template <typename T>
[[nodiscard]] auto value_bytes(const T& value) noexcept {
    if constexpr (is_string_component_v<T>) {
        return std::as_bytes(std::span{value.value.data(), value.value.size()});
    } else {
        return wire_bytes<wire_struct_t<T>>(value);
    }
}

// ---- index sets -----------------------------------------------------------------------------

// Splits indices (in the caller's order) into runs of >= 3 consecutive ones and a list of the
// rest; `order` receives positions into `indices` in the order the set lists them, which is
// the order values must follow.
struct index_set_plan {
    std::vector<wire::IndexRun> runs;
    std::vector<std::uint32_t> list;
    std::vector<std::uint32_t> order;

    void build(std::span<const std::uint32_t> indices);
    [[nodiscard]] flatbuffers::Offset<wire::IndexSet> encode(
        flatbuffers::FlatBufferBuilder& fbb) const;
};

// Expands a verified IndexSet in order, refusing more than `limit` indices in all (a hostile
// peer could announce 2^32 of them in 8 bytes). Returns false when over the limit or when a
// run wraps past the largest index.
[[nodiscard]] bool expand_index_set(const wire::IndexSet* set, std::size_t limit,
                                    std::vector<std::uint32_t>& out);

// Number of indices the set announces, saturated at limit + 1.
[[nodiscard]] std::size_t index_set_size(const wire::IndexSet* set, std::size_t limit) noexcept;

}  // namespace ecsnet::protocol
