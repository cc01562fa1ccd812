// ecsnet-codegen: a game's components declared once, in its schema. From each FlatBuffers struct
// marked `(ecsnet_component: "name")` it writes the C++ component (an aggregate with the struct's
// fields), its protocol::replicated<> specialization and register_components(), and the same
// types for TypeScript. An empty table so marked is a marker (FlatBuffers has no empty structs):
// an empty C++ struct, marker_value on the wire. ecsnet_add_components() (cmake/ecsnetSchemas.cmake) runs it at build
// time; docs/EXTENDING.md, "Declared once", lists the attributes.
//
//   ecsnet-codegen [--cpp OUT.hpp] [--ts OUT.ts] [-I DIR]... SCHEMA.fbs
#include <flatbuffers/idl.h>
#include <flatbuffers/util.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

struct usage_error {
    std::string what;
};

// The attributes a schema declares (`attribute "ecsnet_component";` ...) and uses.
constexpr const char* component_attribute = "ecsnet_component";    // struct: the wire name
constexpr const char* writer_attribute = "ecsnet_written_by";      // struct: server, owner, any
constexpr const char* quantize_attribute = "ecsnet_quantize";      // struct: "min max step"
constexpr const char* interpolate_attribute = "ecsnet_interpolate";  // struct
constexpr const char* input_attribute = "ecsnet_input";            // struct
constexpr const char* owner_only_attribute = "ecsnet_owner_only";  // struct
constexpr const char* range_attribute = "ecsnet_range";            // field: "min max": valid()

struct field {
    std::string name;
    std::string cpp_type;
    std::string ts_type;
    bool is_float = false;
    std::optional<std::pair<double, double>> range;
};

struct component {
    std::string type;       // the C++ and TypeScript type name (the struct's)
    std::string wire_name;  // the schema's name ("position")
    std::string written_by = "owner";
    std::optional<std::vector<double>> quantize;  // min, max, step
    bool interpolate = false;
    bool input = false;
    bool owner_only = false;
    bool marker = false;  // an empty table: protocol::marker_value
    std::vector<field> fields;
    std::vector<std::string> doc;
};

[[noreturn]] void fail(const std::string& schema, const std::string& what) {
    throw usage_error{schema + ": " + what};
}

std::vector<double> numbers(const std::string& schema, const std::string& where,
                            const std::string& text, std::size_t count) {
    std::vector<double> out;
    std::istringstream in{text};
    std::string word;
    while (in >> word) {
        double v = 0;
        const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
        if (ec != std::errc{} || end != word.data() + word.size() || !std::isfinite(v)) {
            fail(schema, where + ": '" + word + "' is not a number (\"" + text + "\")");
        }
        out.push_back(v);
    }
    if (out.size() != count) {
        fail(schema, where + ": needs " + std::to_string(count) + " numbers, got \"" + text + "\"");
    }
    return out;
}

// C++ and TypeScript types of a scalar field; nothing else fits a component.
bool scalar_types(flatbuffers::BaseType t, field& f) {
    using flatbuffers::BaseType;
    switch (t) {
        case BaseType::BASE_TYPE_BOOL: f.cpp_type = "bool"; f.ts_type = "boolean"; return true;
        case BaseType::BASE_TYPE_CHAR: f.cpp_type = "std::int8_t"; f.ts_type = "number"; return true;
        case BaseType::BASE_TYPE_UCHAR: f.cpp_type = "std::uint8_t"; f.ts_type = "number"; return true;
        case BaseType::BASE_TYPE_SHORT: f.cpp_type = "std::int16_t"; f.ts_type = "number"; return true;
        case BaseType::BASE_TYPE_USHORT: f.cpp_type = "std::uint16_t"; f.ts_type = "number"; return true;
        case BaseType::BASE_TYPE_INT: f.cpp_type = "std::int32_t"; f.ts_type = "number"; return true;
        case BaseType::BASE_TYPE_UINT: f.cpp_type = "std::uint32_t"; f.ts_type = "number"; return true;
        case BaseType::BASE_TYPE_LONG: f.cpp_type = "std::int64_t"; f.ts_type = "bigint"; return true;
        case BaseType::BASE_TYPE_ULONG: f.cpp_type = "std::uint64_t"; f.ts_type = "bigint"; return true;
        case BaseType::BASE_TYPE_FLOAT: f.cpp_type = "float"; f.ts_type = "number"; f.is_float = true; return true;
        case BaseType::BASE_TYPE_DOUBLE: f.cpp_type = "double"; f.ts_type = "number"; f.is_float = true; return true;
        default: return false;
    }
}

const flatbuffers::Value* attribute(const flatbuffers::Definition& d, const char* name) {
    return d.attributes.Lookup(name);
}

// The components of `schema` (its own structs marked ecsnet_component, in schema order) and the
// namespace of their wire structs.
std::vector<component> read_schema(const std::string& schema, const std::vector<std::string>& includes,
                                   std::string& wire_namespace) {
    std::string text;
    if (!flatbuffers::LoadFile(schema.c_str(), false, &text)) {
        fail(schema, "cannot read it");
    }
    std::vector<std::string> dirs = includes;
    dirs.push_back(std::filesystem::path{schema}.parent_path().string());
    std::vector<const char*> paths;
    for (const auto& d : dirs) {
        paths.push_back(d.c_str());
    }
    paths.push_back(nullptr);
    flatbuffers::IDLOptions options;
    flatbuffers::Parser parser{options};
    if (!parser.Parse(text.c_str(), paths.data(), schema.c_str())) {
        throw usage_error{parser.error_};
    }
    std::vector<component> out;
    for (const flatbuffers::StructDef* s : parser.structs_.vec) {
        const auto* name = attribute(*s, component_attribute);
        if (name == nullptr || s->file != schema) {
            continue;
        }
        const std::string where = "struct " + s->name;
        component c;
        if (!s->fixed) {
            if (!s->fields.vec.empty()) {
                fail(schema, "table " + s->name + ": a component is a struct, not a table (an empty "
                             "table is a marker)");
            }
            c.marker = true;
        }
        c.type = s->name;
        c.wire_name = name->constant;
        c.doc = s->doc_comment;
        if (c.wire_name.empty()) {
            fail(schema, where + ": ecsnet_component needs the wire name, e.g. (ecsnet_component: \"position\")");
        }
        if (const auto* w = attribute(*s, writer_attribute)) {
            c.written_by = w->constant;
            if (c.written_by != "server" && c.written_by != "owner" && c.written_by != "any") {
                fail(schema, where + ": ecsnet_written_by is \"" + c.written_by + "\", not server, owner or any");
            }
        }
        if (const auto* q = attribute(*s, quantize_attribute)) {
            c.quantize = numbers(schema, where + " ecsnet_quantize (min max step)", q->constant, 3);
        }
        c.interpolate = attribute(*s, interpolate_attribute) != nullptr;
        c.input = attribute(*s, input_attribute) != nullptr;
        c.owner_only = attribute(*s, owner_only_attribute) != nullptr;
        if (c.marker && (c.quantize || c.interpolate || c.input)) {
            fail(schema, "table " + s->name + ": a marker has no value to quantize, interpolate or "
                         "send as input");
        }
        for (const flatbuffers::FieldDef* f : s->fields.vec) {
            field out_field;
            out_field.name = f->name;
            if (!scalar_types(f->value.type.base_type, out_field)) {
                fail(schema, where + "." + f->name + ": only numbers and bools can be component fields");
            }
            if (const auto* r = attribute(*f, range_attribute)) {
                const auto v = numbers(schema, where + "." + f->name + " ecsnet_range (min max)", r->constant, 2);
                out_field.range = std::pair{v[0], v[1]};
            }
            c.fields.push_back(std::move(out_field));
        }
        wire_namespace = s->defined_namespace != nullptr ? s->defined_namespace->GetFullyQualifiedName("") : "";
        out.push_back(std::move(c));
    }
    if (out.empty()) {
        fail(schema, "no struct marked (ecsnet_component: \"name\"); declare the attributes with "
                     "attribute \"ecsnet_component\"; ... (docs/EXTENDING.md, \"Declared once\")");
    }
    return out;
}

std::string number(double v) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.17g", v);
    std::string s = buffer;
    if (s.find_first_of(".eEn") == std::string::npos) {
        s += ".0";
    }
    return s;
}

std::string cpp_namespace_of(const std::string& schema, const std::string& wire_namespace) {
    // The wire structs live in <game>.wire (flatc); the components take <game>.
    const auto dot = wire_namespace.rfind('.');
    if (dot == std::string::npos || wire_namespace.substr(dot + 1) != "wire") {
        fail(schema, "the components' structs must be in a namespace ending in .wire (\"namespace " +
                         (wire_namespace.empty() ? std::string{"mygame"} : wire_namespace) +
                         ".wire;\"): the C++ components take the namespace before it");
    }
    std::string ns = wire_namespace.substr(0, dot);
    for (std::size_t at = 0; (at = ns.find('.', at)) != std::string::npos;) {
        ns.replace(at, 1, "::");
    }
    return ns;
}

std::string cpp(const std::string& schema, const std::vector<component>& components,
                const std::string& wire_namespace) {
    const std::string ns = cpp_namespace_of(schema, wire_namespace);
    const std::string wire = ns + "::wire";
    const std::string stem = std::filesystem::path{schema}.stem().string();
    std::ostringstream o;
    o << "// Generated by ecsnet-codegen from " << std::filesystem::path{schema}.filename().string()
      << ": do not edit.\n#pragma once\n\n#include <cmath>\n#include <cstdint>\n\n#include \"" << stem
      << "_generated.h\"\n#include \"ecsnet/protocol/registry.hpp\"\n#include \"ecsnet/protocol/replicated.hpp\"\n\n"
      << "namespace " << ns << " {\n";
    for (const component& c : components) {
        o << "\n";
        for (const auto& line : c.doc) {
            o << "//" << line << "\n";
        }
        o << "struct " << c.type << " {\n";
        for (const field& f : c.fields) {
            o << "    " << f.cpp_type << " " << f.name << "{};\n";
        }
        bool checks = false;
        std::ostringstream valid;
        for (const field& f : c.fields) {
            if (f.is_float) {
                valid << (checks ? " &&\n               " : "") << "std::isfinite(" << f.name << ")";
                checks = true;
            }
            if (f.range) {
                valid << (checks ? " &&\n               " : "") << f.name << " >= " << number(f.range->first)
                      << " && " << f.name << " <= " << number(f.range->second);
                checks = true;
            }
        }
        if (checks) {
            o << "    // The server refuses a client's value that is not (InvalidValue).\n"
              << "    [[nodiscard]] bool valid() const noexcept {\n        return " << valid.str() << ";\n    }\n";
        }
        o << "    friend bool operator==(const " << c.type << "&, const " << c.type << "&) = default;\n};\n";
    }
    o << "\n}  // namespace " << ns << "\n";
    for (const component& c : components) {
        std::vector<std::string> options;
        if (c.written_by != "owner") {
            options.push_back(".written_by = ecsnet::protocol::writer::" + c.written_by);
        }
        if (c.owner_only) {
            options.push_back(".owner_only = true");
        }
        if (c.quantize) {
            const auto& q = *c.quantize;
            options.push_back(".quantized = {.min = " + number(q[0]) + ", .max = " + number(q[1]) +
                              ", .step = " + number(q[2]) + "}");
        }
        if (c.input) {
            options.push_back(".input = true");
        }
        if (c.interpolate) {
            options.push_back(".interpolate = true");
        }
        const std::string wire_type =
            c.marker ? std::string{"ecsnet::protocol::marker_value"} : wire + "::" + c.type;
        o << "\ntemplate <>\nstruct ecsnet::protocol::replicated<" << ns << "::" << c.type << ">\n    : replicate<"
          << wire_type << ", \"" << c.wire_name << "\"";
        if (!options.empty()) {
            o << ",\n                replicate_options{";
            for (std::size_t i = 0; i < options.size(); ++i) {
                o << (i == 0 ? "" : ",\n                                  ") << options[i];
            }
            o << "}";
        }
        o << "> {};\n";
    }
    o << "\nnamespace " << ns << " {\n\n"
      << "// The schema's components, in its order: the server registers them (game.register_components),\n"
      << "// and so does any program reading them by type.\n"
      << "inline void register_components(ecsnet::protocol::component_registry& types) {\n";
    for (const component& c : components) {
        o << "    types.add<" << c.type << ">();\n";
    }
    o << "}\n\n}  // namespace " << ns << "\n";
    return o.str();
}

std::string typescript(const std::string& schema, const std::vector<component>& components) {
    std::ostringstream o;
    o << "// Generated by ecsnet-codegen from " << std::filesystem::path{schema}.filename().string()
      << ": do not edit.\n// The game's components as the TypeScript SDK reads and writes them, by wire name:\n"
      << "//   session.mirror.get<Position>(e, 'position'), session.setInput(e, { move: { x: 1, y: 0 } }).\n";
    for (const component& c : components) {
        o << "\n";
        for (const auto& line : c.doc) {
            o << "//" << line << "\n";
        }
        o << "export interface " << c.type << " {\n";
        if (c.marker) {
            o << "  present: true;  // a marker: its presence is all it says\n";
        }
        for (const field& f : c.fields) {
            o << "  " << f.name << ": " << f.ts_type << ";\n";
        }
        o << "}\n";
    }
    o << "\n// Wire name -> type.\nexport interface Components {\n";
    for (const component& c : components) {
        o << "  " << c.wire_name << ": " << c.type << ";\n";
    }
    o << "}\n\nexport type ComponentName = keyof Components;\n\n"
      << "// The input types (sent with setInput).\nexport const inputTypes: readonly ComponentName[] = [";
    bool first = true;
    for (const component& c : components) {
        if (c.input) {
            o << (first ? "" : ", ") << "'" << c.wire_name << "'";
            first = false;
        }
    }
    o << "];\n";
    return o.str();
}

// Writes `text` to `path` only when it differs: an unchanged output does not rebuild its users.
void write(const std::string& path, const std::string& text) {
    std::ifstream in{path, std::ios::binary};
    if (in) {
        std::ostringstream old;
        old << in.rdbuf();
        if (old.str() == text) {
            return;
        }
    }
    std::ofstream out{path, std::ios::binary | std::ios::trunc};
    out << text;
    if (!out.flush()) {
        throw usage_error{"cannot write " + path};
    }
}

}  // namespace

int main(int argc, char** argv) {
    std::string cpp_out;
    std::string ts_out;
    std::string schema;
    std::vector<std::string> includes;
    try {
        for (int i = 1; i < argc; ++i) {
            const std::string_view arg = argv[i];
            const auto value = [&]() -> std::string {
                if (i + 1 >= argc) {
                    throw usage_error{std::string{arg} + " needs a value"};
                }
                return argv[++i];
            };
            if (arg == "--cpp") {
                cpp_out = value();
            } else if (arg == "--ts") {
                ts_out = value();
            } else if (arg == "-I") {
                includes.push_back(value());
            } else if (arg == "-h" || arg == "--help") {
                std::printf("usage: ecsnet-codegen [--cpp OUT.hpp] [--ts OUT.ts] [-I DIR]... SCHEMA.fbs\n"
                            "Writes the C++ components (with their replicated<> and register_components())\n"
                            "and the TypeScript types of the structs SCHEMA marks (ecsnet_component: \"name\").\n");
                return 0;
            } else if (!arg.empty() && arg.front() == '-') {
                throw usage_error{"unknown option " + std::string{arg} + " (--help)"};
            } else if (!schema.empty()) {
                throw usage_error{"one schema at a time (" + schema + ", then " + std::string{arg} + ")"};
            } else {
                schema = arg;
            }
        }
        if (schema.empty() || (cpp_out.empty() && ts_out.empty())) {
            throw usage_error{"usage: ecsnet-codegen [--cpp OUT.hpp] [--ts OUT.ts] [-I DIR]... SCHEMA.fbs"};
        }
        std::string wire_namespace;
        const auto components = read_schema(schema, includes, wire_namespace);
        if (!cpp_out.empty()) {
            write(cpp_out, cpp(schema, components, wire_namespace));
        }
        if (!ts_out.empty()) {
            write(ts_out, typescript(schema, components));
        }
        return 0;
    } catch (const usage_error& e) {
        std::fprintf(stderr, "ecsnet-codegen: %s\n", e.what.c_str());
        return 1;
    }
}
