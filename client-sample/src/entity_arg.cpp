#include "entity_arg.hpp"
#include "in_quotes.hpp"

#include <charconv>
#include <cstdint>
#include <limits>

namespace ecsnet::client_cli {

namespace {

// Messages are built with += only: GCC 12 at -O3 warns falsely (-Wrestrict, PR 105329) on
// "literal" + std::string&&.
constexpr std::string_view form_hint = " (write index:version, e.g. 5:1)";

// A whole decimal number of u32 range: digits only (no sign, no spaces, no hex).
bool parse_u32(std::string_view text, std::string_view what, std::string_view whole,
               std::uint32_t& out, std::string* why) {
    const auto fail = [&](std::string_view problem, bool quote_part) {
        if (why != nullptr) {
            *why = in_quotes(whole);
            *why += ": the ";
            *why += what;
            *why += ' ';
            *why += quote_part ? in_quotes(text) : std::string{text};
            *why += problem;
            *why += form_hint;
        }
        return false;
    };
    if (text.empty()) {
        if (why != nullptr) {
            *why = in_quotes(whole);
            *why += ": the ";
            *why += what;
            *why += " is missing";
            *why += form_hint;
        }
        return false;
    }
    if (text.find_first_not_of("0123456789") != std::string_view::npos) {
        return fail(" is not a decimal number", true);
    }
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    if (ec == std::errc::result_out_of_range) {
        std::string problem{" is out of range (at most "};
        problem += std::to_string(std::numeric_limits<std::uint32_t>::max());
        problem += ')';
        return fail(problem, false);
    }
    if (ec != std::errc{} || end != text.data() + text.size()) {
        return fail(" is not a decimal number", true);
    }
    return true;
}

}  // namespace

std::optional<ecs::Entity> parse_entity(std::string_view text, std::string* why) {
    const auto colon = text.find(':');
    if (colon == std::string_view::npos) {
        if (why != nullptr) {
            const bool digits =
                !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
            *why = in_quotes(text);
            *why += " has no version (write index:version, e.g. ";
            *why += digits ? text : std::string_view{"5"};
            *why += ":1)";
        }
        return std::nullopt;
    }
    std::uint32_t index = 0;
    std::uint32_t version = 0;
    if (!parse_u32(text.substr(0, colon), "index", text, index, why) ||
        !parse_u32(text.substr(colon + 1), "version", text, version, why)) {
        return std::nullopt;
    }
    if (version == ecs::default_entity_traits::null_version) {
        if (why != nullptr) {
            *why = in_quotes(text);
            *why += ": version 0 names no entity (versions start at 1)";
        }
        return std::nullopt;
    }
    return ecs::Entity{index, version};
}

}  // namespace ecsnet::client_cli
