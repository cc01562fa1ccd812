#pragma once

#include <string>
#include <string_view>

namespace ecsnet::client_cli {

// 'text', for error messages. Not named quoted: with a std::string argument, argument-dependent
// lookup would pick std::quoted wherever <iomanip> is included. Built with += only: GCC 12 at
// -O3 warns falsely (-Wrestrict, PR 105329) on "literal" + std::string&&.
[[nodiscard]] inline std::string in_quotes(std::string_view text) {
    std::string out{"'"};
    out += text;
    out += '\'';
    return out;
}

}  // namespace ecsnet::client_cli
