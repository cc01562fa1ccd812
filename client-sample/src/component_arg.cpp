#include "component_arg.hpp"
#include "in_quotes.hpp"

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "ecsnet/protocol/messages.hpp"

namespace ecsnet::client_cli {

namespace {

using protocol::component_info;
using protocol::field_info;
using protocol::field_type;
using protocol::field_value;

// Messages are built with += only: GCC 12 at -O3 warns falsely (-Wrestrict, PR 105329) on
// "literal" + std::string&&.
std::string_view trim(std::string_view text) {
    const auto first = text.find_first_not_of(" \t");
    if (first == std::string_view::npos) {
        return {};
    }
    const auto last = text.find_last_not_of(" \t");
    return text.substr(first, last - first + 1);
}

std::string field_names(const component_info& type) {
    std::string out;
    for (const field_info& f : type.fields) {
        out += out.empty() ? "" : ", ";
        out += f.name;
    }
    return out;
}

template <typename Int>
std::optional<Int> whole_number(std::string_view text) {
    Int value{};
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size()) {
        return std::nullopt;
    }
    return value;
}

// One field's text as the program reads numbers: the schema says how; whether it fits the
// field (range, finiteness, quantization) is make_value's business.
std::optional<field_value> parse_field(const field_info& field, std::string_view text) {
    if (protocol::is_float(field.type)) {
        const std::string copy{text};
        char* end = nullptr;
        const double value = std::strtod(copy.c_str(), &end);
        if (copy.empty() || end != copy.c_str() + copy.size()) {
            return std::nullopt;
        }
        return value;
    }
    if (field.type == field_type::bool_) {
        if (text == "true" || text == "1") {
            return true;
        }
        if (text == "false" || text == "0") {
            return false;
        }
        return std::nullopt;
    }
    if (const auto value = whole_number<std::int64_t>(text)) {
        return *value;
    }
    if (const auto value = whole_number<std::uint64_t>(text)) {
        return *value;
    }
    return std::nullopt;
}

bool fail(std::string* why, std::string text) {
    if (why != nullptr) {
        *why = std::move(text);
    }
    return false;
}

}  // namespace

std::optional<component_arg> parse_component_arg(std::string_view text, std::string* why) {
    const auto equals = text.find('=');
    if (equals == std::string_view::npos || trim(text.substr(0, equals)).empty()) {
        std::string message = in_quotes(text);
        message += " is not TYPE=VALUES (e.g. position=1.5,-2 or name=ship)";
        fail(why, std::move(message));
        return std::nullopt;
    }
    return component_arg{std::string{trim(text.substr(0, equals))},
                         std::string{text.substr(equals + 1)}};
}

const component_info* resolve_type(const protocol::schema& types, std::string_view name,
                                   std::string* why) {
    const component_info* type = types.find(name);
    if (type == nullptr) {
        std::string message = "the server has no component ";
        message += in_quotes(name);
        message += "; it has: ";
        bool first = true;
        for (const component_info& t : types.types()) {
            message += first ? "" : ", ";
            message += t.name;
            first = false;
        }
        fail(why, std::move(message));
        return nullptr;
    }
    if (type->written_by == protocol::writer::server) {
        std::string message = "component ";
        message += in_quotes(type->name);
        message += " is set by the server only";
        fail(why, std::move(message));
        return nullptr;
    }
    return type;
}

std::optional<protocol::component_value> resolve_component(const protocol::schema& types,
                                                           const component_arg& arg,
                                                           std::size_t count, std::string* why) {
    const component_info* type = resolve_type(types, arg.type, why);
    if (type == nullptr) {
        return std::nullopt;
    }
    protocol::component_value out;
    out.name = type->name;
    if (type->is_string) {
        const std::string longest = substitute_number(arg.values, count);
        if (longest.size() > type->max_bytes) {
            std::string message = in_quotes(longest);
            message += " is ";
            message += std::to_string(longest.size());
            message += " bytes long; a ";
            message += type->name;
            message += " holds at most ";
            message += std::to_string(type->max_bytes);
            fail(why, std::move(message));
            return std::nullopt;
        }
        if (!protocol::valid_utf8(arg.values)) {
            std::string message = "the ";
            message += type->name;
            message += " value is not valid UTF-8";
            fail(why, std::move(message));
            return std::nullopt;
        }
        out.text = arg.values;
        return out;
    }

    std::vector<std::string_view> parts;
    for (std::string_view rest{arg.values};;) {
        const auto comma = rest.find(',');
        parts.push_back(trim(rest.substr(0, comma)));
        if (comma == std::string_view::npos) {
            break;
        }
        rest.remove_prefix(comma + 1);
    }
    if (parts.size() != type->fields.size()) {
        std::string message = in_quotes(type->name);
        message += " takes ";
        message += std::to_string(type->fields.size());
        message += type->fields.size() == 1 ? " value (" : " values (";
        message += field_names(*type);
        message += "), not ";
        message += std::to_string(parts.size());
        message += ": ";
        message += in_quotes(arg.values);
        fail(why, std::move(message));
        return std::nullopt;
    }
    std::vector<field_value> values;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        const field_info& field = type->fields[i];
        const auto value = parse_field(field, parts[i]);
        if (!value) {
            std::string message = in_quotes(parts[i]);
            message += field.type == field_type::bool_  ? " is not true or false: "
                       : protocol::is_float(field.type) ? " is not a number: "
                                                        : " is not a whole number: ";
            message += type->name;
            message += '.';
            message += field.name;
            message += " is a";
            message += protocol::to_string(field.type).starts_with('i') ? "n " : " ";
            message += protocol::to_string(field.type);
            message += " (";
            message += type->name;
            message += " takes ";
            message += field_names(*type);
            message += ')';
            fail(why, std::move(message));
            return std::nullopt;
        }
        values.push_back(*value);
    }
    std::string problem;
    auto bytes = protocol::make_value(*type, values, &problem);
    if (!bytes) {
        fail(why, std::move(problem));
        return std::nullopt;
    }
    out.bytes = std::move(*bytes);
    return out;
}

std::optional<protocol::component_value> zero_value(const protocol::component_info& type) {
    protocol::component_value out;
    out.name = type.name;
    if (type.is_string) {
        return out;
    }
    const std::vector<field_value> zeros(type.fields.size(), field_value{std::int64_t{0}});
    auto bytes = protocol::make_value(type, zeros);
    if (!bytes) {
        return std::nullopt;
    }
    out.bytes = std::move(*bytes);
    return out;
}

std::string substitute_number(std::string text, std::size_t number) {
    const std::string n = std::to_string(number);
    for (auto at = text.find("{n}"); at != std::string::npos; at = text.find("{n}", at)) {
        text.replace(at, 3, n);
        at += n.size();
    }
    return text;
}

}  // namespace ecsnet::client_cli
