#include "ecsnet/protocol/schema.hpp"

#include "ecsnet/protocol/bit_cast.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <set>

namespace ecsnet::protocol {

namespace {

void set_why(std::string* why, std::string text) {
    if (why != nullptr) {
        *why = std::move(text);
    }
}

std::string shortest(double v) {
    return to_string(field_value{v});
}

std::uint64_t low_bits(unsigned bits) noexcept {
    return bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
}

bool valid_name(std::string_view name) noexcept {
    if (name.empty() || name.size() > max_schema_name_bytes) {
        return false;
    }
    for (const char c : name) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                        c == '_' || c == '-' || c == '.';
        if (!ok) {
            return false;
        }
    }
    return true;
}

// The largest q the field accepts.
double quantized_max(const field_info& f) noexcept {
    return static_cast<double>(
        quantized_steps(f.quantized.min, f.quantized.max, f.quantized.step));
}

}  // namespace

std::optional<field_type> to_field_type(std::uint8_t raw) noexcept {
    if (raw < static_cast<std::uint8_t>(field_type::bool_) ||
        raw > static_cast<std::uint8_t>(field_type::float64)) {
        return std::nullopt;
    }
    return static_cast<field_type>(raw);
}

std::string_view to_string(field_type type) noexcept {
    switch (type) {
        case field_type::bool_: return "bool";
        case field_type::int8: return "int8";
        case field_type::uint8: return "uint8";
        case field_type::int16: return "int16";
        case field_type::uint16: return "uint16";
        case field_type::int32: return "int32";
        case field_type::uint32: return "uint32";
        case field_type::int64: return "int64";
        case field_type::uint64: return "uint64";
        case field_type::float32: return "float";
        case field_type::float64: return "double";
    }
    return "?";
}

unsigned natural_bits(field_type type) noexcept {
    switch (type) {
        case field_type::bool_:
        case field_type::int8:
        case field_type::uint8: return 8;
        case field_type::int16:
        case field_type::uint16: return 16;
        case field_type::int32:
        case field_type::uint32:
        case field_type::float32: return 32;
        case field_type::int64:
        case field_type::uint64:
        case field_type::float64: return 64;
    }
    return 0;
}

bool is_float(field_type type) noexcept {
    return type == field_type::float32 || type == field_type::float64;
}

bool is_signed(field_type type) noexcept {
    return type == field_type::int8 || type == field_type::int16 || type == field_type::int32 ||
           type == field_type::int64;
}

std::uint64_t quantized_steps(double min, double max, double step) noexcept {
    return static_cast<std::uint64_t>(std::llround((max - min) / step));
}

unsigned quantized_bits(std::uint64_t steps) noexcept {
    unsigned bits = 1;
    while (bits < 64 && (std::uint64_t{1} << bits) - 1 < steps) {
        ++bits;
    }
    return bits;
}

std::string_view to_string(writer who) noexcept {
    switch (who) {
        case writer::server: return "server";
        case writer::owner: return "owner";
        case writer::any: return "any";
    }
    return "?";
}

std::size_t component_info::value_bits() const noexcept {
    std::size_t bits = 0;
    for (const auto& f : fields) {
        bits += f.bits;
    }
    return bits;
}

bool component_info::byte_aligned() const noexcept {
    for (const auto& f : fields) {
        if (f.bits % 8 != 0) {
            return false;
        }
    }
    return true;
}

const component_info* schema::find(std::string_view name) const noexcept {
    for (const auto& t : types_) {
        if (t.name == name) {
            return &t;
        }
    }
    return nullptr;
}

std::uint32_t schema::id_of(std::string_view name) const {
    if (const component_info* t = find(name)) {
        return t->id;
    }
    if (types_.empty()) {
        throw unknown_component("no component type '" + std::string{name} +
                                "': no schema yet (the server describes its types in Welcome)");
    }
    std::string known;
    for (const auto& t : types_) {
        known += (known.empty() ? "" : ", ") + t.name;
    }
    throw unknown_component("no component type '" + std::string{name} + "' on this server (it has: " +
                            known + ")");
}

std::optional<schema> schema::make(std::vector<component_info> types, std::string* why) {
    if (types.size() > max_component_types) {
        set_why(why, "schema lists " + std::to_string(types.size()) + " component types, more than " +
                         std::to_string(max_component_types));
        return std::nullopt;
    }
    std::set<std::string_view> names;
    for (std::size_t id = 0; id < types.size(); ++id) {
        const component_info& t = types[id];
        const std::string what = "component type " + std::to_string(id);
        if (t.id != id) {
            set_why(why, what + " has wire id " + std::to_string(t.id) + " (ids are positions)");
            return std::nullopt;
        }
        if (!valid_name(t.name)) {
            set_why(why, what + " has an invalid name (1 to 64 of A-Z a-z 0-9 _ - .)");
            return std::nullopt;
        }
        if (!names.insert(t.name).second) {
            set_why(why, what + " repeats the name '" + t.name + "'");
            return std::nullopt;
        }
        const std::string named = "component '" + t.name + "'";
        if (t.written_by != writer::server && t.written_by != writer::owner &&
            t.written_by != writer::any) {
            set_why(why, named + " has an unknown writer");
            return std::nullopt;
        }
        if (t.input && t.written_by != writer::owner) {
            set_why(why, named + " is an input type not written by its owner");
            return std::nullopt;
        }
        if (!t.replicated && !t.input) {
            set_why(why, named + " is not replicated but is not an input type");
            return std::nullopt;
        }
        if (t.is_string && (t.input || t.interpolated)) {
            set_why(why, named + " is a string type marked input or interpolated");
            return std::nullopt;
        }
        if (t.is_string) {
            if (!t.fields.empty() || t.max_bytes == 0 || t.max_bytes > max_string_bytes) {
                set_why(why, named + " is a string type with fields or a max_bytes outside 1.." +
                                 std::to_string(max_string_bytes));
                return std::nullopt;
            }
            continue;
        }
        if (t.fields.empty() || t.fields.size() > max_fields) {
            set_why(why, named + " has " + std::to_string(t.fields.size()) +
                             " fields (a fixed-size type has 1 to " + std::to_string(max_fields) +
                             ")");
            return std::nullopt;
        }
        std::set<std::string_view> field_names;
        for (const field_info& f : t.fields) {
            const std::string field = named + " field '" + f.name + "'";
            if (!valid_name(f.name) || !field_names.insert(f.name).second) {
                set_why(why, named + " has an invalid or repeated field name");
                return std::nullopt;
            }
            if (!to_field_type(static_cast<std::uint8_t>(f.type))) {
                set_why(why, field + " has unknown type id " +
                                 std::to_string(static_cast<unsigned>(f.type)));
                return std::nullopt;
            }
            const unsigned natural = natural_bits(f.type);
            const bool quantized = f.quantized.step != 0;
            if (quantized) {
                const auto& q = f.quantized;
                if (!is_float(f.type) || !(q.step > 0) || !std::isfinite(q.step) ||
                    !std::isfinite(q.min) || !std::isfinite(q.max) || !(q.max > q.min) ||
                    !((q.max - q.min) / q.step < 4294967295.0)) {
                    set_why(why, field + " has an invalid quantization (floats only; finite "
                                         "min < max; step > 0; at most 2^32 - 1 steps)");
                    return std::nullopt;
                }
                const unsigned needed = quantized_bits(quantized_steps(q.min, q.max, q.step));
                if (f.bits != needed) {
                    set_why(why, field + " is quantized to " +
                                     std::to_string(quantized_steps(q.min, q.max, q.step)) +
                                     " steps, which take " + std::to_string(needed) +
                                     " bits, not " + std::to_string(f.bits));
                    return std::nullopt;
                }
            } else if (f.bits != natural) {
                set_why(why, field + " is " + std::string{to_string(f.type)} + " in " +
                                 std::to_string(f.bits) + " bits; unquantized fields take " +
                                 std::to_string(natural));
                return std::nullopt;
            }
        }
    }
    schema out;
    out.types_ = std::move(types);
    out.verified_ = std::vector<std::atomic<const component_info*>>(out.types_.size());
    return out;
}

const component_info* schema::checked(const component_info& compiled) const {
    const component_info* actual = find(compiled.name);
    if (actual == nullptr) {
        return nullptr;
    }
    auto& verdict = verified_[actual->id];
    if (verdict.load(std::memory_order_relaxed) == &compiled) [[likely]] {
        return actual;
    }
    if (auto problem = incompatibility(compiled, *actual)) {
        throw schema_mismatch("the server's schema does not match this client: " + *problem);
    }
    verdict.store(&compiled, std::memory_order_relaxed);
    return actual;
}

std::optional<std::string> incompatibility(const component_info& expected,
                                           const component_info& actual) {
    const auto named = [&] { return "component '" + expected.name + "': "; };
    const auto kind = [](bool is_string) {
        return is_string ? "a string type" : "a fixed-size type";
    };
    if (expected.is_string != actual.is_string) {
        return named() + kind(actual.is_string) + " on the server, " + kind(expected.is_string) +
               " in this client";
    }
    if (expected.input != actual.input) {
        const auto input = [](bool is_input) { return is_input ? "an input type" : "not an input type"; };
        return named() + input(actual.input) + " on the server, " + input(expected.input) +
               " in this client";
    }
    if (actual.fields.size() < expected.fields.size()) {
        return named() + std::to_string(actual.fields.size()) + " fields on the server, " +
               std::to_string(expected.fields.size()) + " in this client";
    }
    for (std::size_t i = 0; i < expected.fields.size(); ++i) {
        const field_info& e = expected.fields[i];
        const field_info& a = actual.fields[i];
        if (e != a) {
            const auto describe = [](const field_info& f) {
                std::string s = "'" + f.name + "' " + std::string{to_string(f.type)};
                if (f.quantized.step != 0) {
                    s += " quantized " + shortest(f.quantized.min) + " to " +
                         shortest(f.quantized.max) + " by " + shortest(f.quantized.step);
                }
                if (f.bits != natural_bits(f.type) || f.quantized.step != 0) {
                    s += " (" + std::to_string(f.bits) + " bits)";
                }
                return s;
            };
            return named() + "field " + std::to_string(i) + " is " + describe(a) +
                   " on the server, " + describe(e) +
                   " in this client (fields may only be added at the end)";
        }
    }
    return std::nullopt;
}

// ---- bits -------------------------------------------------------------------------------------

void bit_writer::write(std::uint64_t value, unsigned bits) noexcept {
    value &= low_bits(bits);
    if ((at_ & 7U) == 0 && (bits & 7U) == 0) {
        std::memcpy(out_.data() + (at_ >> 3U), &value, bits >> 3U);  // little-endian host
        at_ += bits;
        return;
    }
    while (bits > 0) {
        const unsigned shift = static_cast<unsigned>(at_ & 7U);
        const unsigned n = std::min(8U - shift, bits);
        auto& b = out_[at_ >> 3U];
        b |= static_cast<std::byte>((value & low_bits(n)) << shift);
        value >>= n;
        bits -= n;
        at_ += n;
    }
}

std::uint64_t bit_reader::read_long(unsigned bits) noexcept {
    std::uint64_t value = 0;
    if ((at_ & 7U) == 0 && (bits & 7U) == 0) {
        std::memcpy(&value, in_.data() + (at_ >> 3U), bits >> 3U);
        at_ += bits;
        return value;
    }
    unsigned done = 0;
    while (done < bits) {
        const unsigned shift = static_cast<unsigned>(at_ & 7U);
        const unsigned n = std::min(8U - shift, bits - done);
        const auto b = static_cast<std::uint64_t>(in_[at_ >> 3U]);
        value |= ((b >> shift) & low_bits(n)) << done;
        done += n;
        at_ += n;
    }
    return value;
}

std::size_t column_bytes(const component_info& type, std::size_t count) noexcept {
    return (type.value_bits() * count + 7) / 8;
}

void unpack_value(const component_info& type, std::span<const std::byte> column, std::size_t i,
                  std::span<std::byte> out) noexcept {
    unpack_value(type.value_bits(), type, column, i, out);
}

void unpack_value(std::size_t bits, const component_info& type, std::span<const std::byte> column,
                  std::size_t i, std::span<std::byte> out) noexcept {
    if (bits % 8 != 0 && bits <= 57) {
        // One unaligned 64-bit read holds the whole value (up to 7 bits of shift + 57).
        const std::size_t first = i * bits;
        const std::size_t at = first / 8;
        std::uint64_t word =
            detail::load_le(column.data() + at, std::min<std::size_t>(8, column.size() - at));
        word = (word >> (first % 8)) & low_bits(static_cast<unsigned>(bits));
        detail::store_le(out.data(), word, (bits + 7) / 8);
        return;
    }
    if (bits % 8 == 0) {
        std::memcpy(out.data(), column.data() + i * (bits / 8), bits / 8);
        return;
    }
    std::memset(out.data(), 0, out.size());
    bit_reader reader{column, i * bits};
    bit_writer writer{out};
    for (const field_info& f : type.fields) {
        writer.write(reader.read(f.bits), f.bits);
    }
}

void pack_value(const component_info& type, std::span<const std::byte> value,
                std::span<std::byte> column, std::size_t i) noexcept {
    const std::size_t bits = type.value_bits();
    if (bits % 8 == 0) {
        std::memcpy(column.data() + i * (bits / 8), value.data(), bits / 8);
        return;
    }
    bit_reader reader{value};
    std::size_t at = i * bits;
    for (const field_info& f : type.fields) {
        std::uint64_t v = reader.read(f.bits);
        for (unsigned done = 0; done < f.bits;) {
            const unsigned shift = static_cast<unsigned>(at & 7U);
            const unsigned n = std::min(8U - shift, static_cast<unsigned>(f.bits) - done);
            column[at >> 3U] |= static_cast<std::byte>((v & low_bits(n)) << shift);
            v >>= n;
            done += n;
            at += n;
        }
    }
}

// ---- field values -----------------------------------------------------------------------------

field_value field_from_bits(const field_info& field, std::uint64_t bits) noexcept {
    if (field.quantized.step != 0) {
        return field.quantized.min + static_cast<double>(bits) * field.quantized.step;
    }
    switch (field.type) {
        case field_type::bool_: return bits != 0;
        case field_type::int8: return std::int64_t{static_cast<std::int8_t>(bits)};
        case field_type::int16: return std::int64_t{static_cast<std::int16_t>(bits)};
        case field_type::int32: return std::int64_t{static_cast<std::int32_t>(bits)};
        case field_type::int64: return static_cast<std::int64_t>(bits);
        case field_type::uint8:
        case field_type::uint16:
        case field_type::uint32:
        case field_type::uint64: return bits;
        case field_type::float32:
            return static_cast<double>(detail::bit_cast<float>(static_cast<std::uint32_t>(bits)));
        case field_type::float64: return detail::bit_cast<double>(bits);
    }
    return std::uint64_t{0};
}

std::optional<std::uint64_t> field_bits(const field_info& field, const field_value& value) {
    const auto as_double = [&]() -> std::optional<double> {
        if (const auto* d = std::get_if<double>(&value)) return *d;
        if (const auto* i = std::get_if<std::int64_t>(&value)) return static_cast<double>(*i);
        if (const auto* u = std::get_if<std::uint64_t>(&value)) return static_cast<double>(*u);
        return std::nullopt;
    };
    if (is_float(field.type)) {
        const auto d = as_double();
        if (!d || !std::isfinite(*d)) {
            return std::nullopt;
        }
        if (field.quantized.step != 0) {
            const double q = std::round((*d - field.quantized.min) / field.quantized.step);
            if (q < 0 || q > quantized_max(field)) {
                return std::nullopt;
            }
            return static_cast<std::uint64_t>(q);
        }
        if (field.type == field_type::float32) {
            if (std::abs(*d) > std::numeric_limits<float>::max()) {
                return std::nullopt;
            }
            return detail::bit_cast<std::uint32_t>(static_cast<float>(*d));
        }
        return detail::bit_cast<std::uint64_t>(*d);
    }
    if (field.type == field_type::bool_) {
        if (const auto* b = std::get_if<bool>(&value)) return *b ? 1 : 0;
        if (const auto* u = std::get_if<std::uint64_t>(&value); u && *u <= 1) return *u;
        if (const auto* i = std::get_if<std::int64_t>(&value); i && (*i == 0 || *i == 1)) {
            return static_cast<std::uint64_t>(*i);
        }
        return std::nullopt;
    }
    const unsigned bits = natural_bits(field.type);
    if (is_signed(field.type)) {
        std::int64_t v = 0;
        if (const auto* i = std::get_if<std::int64_t>(&value)) {
            v = *i;
        } else if (const auto* u = std::get_if<std::uint64_t>(&value)) {
            if (*u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
                return std::nullopt;
            }
            v = static_cast<std::int64_t>(*u);
        } else {
            return std::nullopt;
        }
        if (bits < 64) {
            const std::int64_t lo = -(std::int64_t{1} << (bits - 1));
            const std::int64_t hi = (std::int64_t{1} << (bits - 1)) - 1;
            if (v < lo || v > hi) {
                return std::nullopt;
            }
        }
        return static_cast<std::uint64_t>(v) & low_bits(bits);
    }
    std::uint64_t v = 0;
    if (const auto* u = std::get_if<std::uint64_t>(&value)) {
        v = *u;
    } else if (const auto* i = std::get_if<std::int64_t>(&value); i && *i >= 0) {
        v = static_cast<std::uint64_t>(*i);
    } else {
        return std::nullopt;
    }
    if (v > low_bits(bits)) {
        return std::nullopt;
    }
    return v;
}

field_value read_field(const component_info& type, std::span<const std::byte> value,
                       std::size_t field) {
    bit_reader reader{value};
    for (std::size_t i = 0; i < field; ++i) {
        reader.skip(type.fields[i].bits);
    }
    return field_from_bits(type.fields[field], reader.read(type.fields[field].bits));
}

std::optional<std::vector<std::byte>> make_value(const component_info& type,
                                                 std::span<const field_value> fields,
                                                 std::string* why) {
    if (type.is_string || fields.size() != type.fields.size()) {
        set_why(why, "'" + type.name + "' takes " + std::to_string(type.fields.size()) +
                         " values (" + [&] {
                             std::string names;
                             for (const auto& f : type.fields) {
                                 names += (names.empty() ? "" : ", ") + f.name;
                             }
                             return names;
                         }() + "), not " + std::to_string(fields.size()));
        return std::nullopt;
    }
    std::vector<std::byte> out(type.value_bytes());
    bit_writer writer{out};
    for (std::size_t i = 0; i < fields.size(); ++i) {
        const field_info& f = type.fields[i];
        const auto bits = field_bits(f, fields[i]);
        if (!bits) {
            std::string range;
            if (f.quantized.step != 0) {
                range = " quantized to the range " + to_string(field_value{f.quantized.min}) +
                        " to " + to_string(field_value{f.quantized.max});
            }
            set_why(why, "value " + to_string(fields[i]) + " does not fit " + type.name + "." +
                             f.name + ", a " + std::string{to_string(f.type)} + range);
            return std::nullopt;
        }
        writer.write(*bits, f.bits);
    }
    return out;
}

value_checker::value_checker(const component_info& type) : value_bytes_{type.value_bytes()} {
    std::uint32_t offset = 0;
    for (const field_info& f : type.fields) {
        if (f.quantized.step != 0) {
            checks_.push_back({offset, f.bits, kind::quantized,
                               quantized_steps(f.quantized.min, f.quantized.max, f.quantized.step)});
        } else if (f.type == field_type::float32) {
            checks_.push_back({offset, f.bits, kind::float32, 0});
        } else if (f.type == field_type::float64) {
            checks_.push_back({offset, f.bits, kind::float64, 0});
        }
        offset += f.bits;
    }
    for (const check& c : checks_) {
        if (c.what == kind::quantized) {
            quantized_.push_back(c);
        } else if (c.bit_offset + c.bits <= 64) {
            exponents_[exponent_count_++] = c.what == kind::float32
                                                ? std::uint64_t{0xFF} << (c.bit_offset + 23)
                                                : std::uint64_t{0x7FF} << (c.bit_offset + 52);
        }
    }
}

bool value_checker::check_long(std::span<const std::byte> value) const noexcept {
    for (const check& c : checks_) {
        if (!passes(c.what, bit_reader{value, c.bit_offset}.read(c.bits), c.max_q)) {
            return false;
        }
    }
    return true;
}

bool valid_value(const component_info& type, std::span<const std::byte> value, std::string* why) {
    // On every value a mirror applies: bit tests, no conversions.
    bit_reader reader{value};
    for (const field_info& f : type.fields) {
        const std::uint64_t bits = reader.read(f.bits);
        bool ok = true;
        const char* problem = "";
        if (f.quantized.step != 0) {
            ok = static_cast<double>(bits) <= quantized_max(f);
            problem = " is beyond its quantized range";
        } else if (f.type == field_type::float32) {
            ok = ((bits >> 23U) & 0xFFU) != 0xFFU;
            problem = " is not a finite number";
        } else if (f.type == field_type::float64) {
            ok = ((bits >> 52U) & 0x7FFU) != 0x7FFU;
            problem = " is not a finite number";
        }
        if (!ok) {
            set_why(why, type.name + "." + f.name + problem);
            return false;
        }
    }
    return true;
}

std::string to_string(const field_value& value) {
    return std::visit(
        [](const auto& v) -> std::string {
            using V = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<V, bool>) {
                return v ? "true" : "false";
            } else if constexpr (std::is_same_v<V, double>) {
                char buffer[64];
                const int n = std::snprintf(buffer, sizeof buffer, "%.9g", v);
                return std::string(buffer, static_cast<std::size_t>(std::max(n, 0)));
            } else {
                return std::to_string(v);
            }
        },
        value);
}

// ---- on the wire ------------------------------------------------------------------------------

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::ComponentType>>> encode_schema(
    flatbuffers::FlatBufferBuilder& fbb, const schema& types) {
    std::vector<flatbuffers::Offset<wire::ComponentType>> out;
    for (const component_info& t : types.types()) {
        std::vector<flatbuffers::Offset<wire::Field>> fields;
        for (const field_info& f : t.fields) {
            fields.push_back(wire::CreateField(fbb, fbb.CreateString(f.name),
                                               static_cast<wire::FieldType>(f.type), f.bits,
                                               f.quantized.min, f.quantized.max,
                                               f.quantized.step));
        }
        // One builder call a statement: as arguments their order would be the compiler's (g++
        // and clang differ), and so would Welcome's bytes. g++'s order, the golden frames'.
        flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::Field>>> field_list;
        if (!t.is_string) {
            field_list = fbb.CreateVector(fields);
        }
        const auto name = fbb.CreateString(t.name);
        out.push_back(wire::CreateComponentType(
            fbb, t.id, name, static_cast<wire::Writer>(t.written_by), t.owner_only,
            t.is_string ? t.max_bytes : 0, field_list, t.input, t.replicated, t.interpolated));
    }
    return fbb.CreateVector(out);
}

std::optional<schema> decode_schema(
    const flatbuffers::Vector<flatbuffers::Offset<wire::ComponentType>>* types, std::string* why) {
    std::vector<component_info> out;
    if (types == nullptr) {
        return schema::make({}, why);
    }
    if (types->size() > max_component_types) {
        set_why(why, "schema lists " + std::to_string(types->size()) +
                         " component types, more than " + std::to_string(max_component_types));
        return std::nullopt;
    }
    for (const auto* t : *types) {
        component_info info;
        info.id = t->id();
        info.name = t->name() == nullptr ? std::string{} : t->name()->str();
        const auto who = static_cast<std::uint8_t>(t->writer());
        if (who > static_cast<std::uint8_t>(writer::any)) {
            set_why(why, "component '" + info.name + "' has unknown writer " + std::to_string(who));
            return std::nullopt;
        }
        info.written_by = static_cast<writer>(who);
        info.owner_only = t->owner_only();
        info.is_string = t->max_bytes() > 0;
        info.max_bytes = t->max_bytes();
        info.input = t->input();
        info.replicated = t->replicated();
        info.interpolated = t->interpolated();
        if (const auto* fields = t->fields()) {
            if (fields->size() > max_fields) {
                set_why(why, "component '" + info.name + "' has more than " +
                                 std::to_string(max_fields) + " fields");
                return std::nullopt;
            }
            for (const auto* f : *fields) {
                field_info field;
                field.name = f->name() == nullptr ? std::string{} : f->name()->str();
                const auto raw = static_cast<std::uint8_t>(f->type());
                if (!to_field_type(raw)) {
                    set_why(why, "component '" + info.name + "' field '" + field.name +
                                     "' has unknown type id " + std::to_string(raw));
                    return std::nullopt;
                }
                field.type = static_cast<field_type>(raw);
                field.bits = f->bits();
                field.quantized = quantization{f->min(), f->max(), f->step()};
                info.fields.push_back(std::move(field));
            }
        }
        out.push_back(std::move(info));
    }
    return schema::make(std::move(out), why);
}

}  // namespace ecsnet::protocol
