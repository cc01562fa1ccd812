#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "ecsnet/protocol/schema.hpp"

// Components on the command line: `--set TYPE=V1,V2,...`, TYPE a wire name, the values in the
// order of the type's fields; a string type takes the whole text after '='. The client was
// not compiled with the game's types: the values are checked against the schema the server
// sent in Welcome.
namespace ecsnet::client_cli {

struct component_arg {
    std::string type;    // wire name
    std::string values;  // as written
    friend bool operator==(const component_arg&, const component_arg&) = default;
};

// Splits "TYPE=VALUES"; null with `why` quoting the text when it has no '=' or no type.
[[nodiscard]] std::optional<component_arg> parse_component_arg(std::string_view text,
                                                               std::string* why);

// The server's type of this wire name, when a client may write it; null with `why` for a
// type the server lacks (listing those it has) or one only the server sets.
[[nodiscard]] const protocol::component_info* resolve_type(const protocol::schema& types,
                                                           std::string_view name, std::string* why);

// The value to send for `arg`, for up to `count` entities: canonical bytes of the server's
// type, or a string type's text with "{n}" left in it (substitute_number per entity; the
// longest one, with n = count, must fit). Null with `why` naming the type, its fields and the
// bad value: a type the server lacks (listing those it has), one only the server sets, a
// wrong number of values, a value that is not a number or does not fit its field.
[[nodiscard]] std::optional<protocol::component_value> resolve_component(
    const protocol::schema& types, const component_arg& arg, std::size_t count, std::string* why);

// The value of every field zero, when the type allows it (a default position).
[[nodiscard]] std::optional<protocol::component_value> zero_value(
    const protocol::component_info& type);

// `text` with every "{n}" replaced by `number`.
[[nodiscard]] std::string substitute_number(std::string text, std::size_t number);

}  // namespace ecsnet::client_cli
