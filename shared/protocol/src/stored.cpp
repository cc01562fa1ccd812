#include "ecsnet/protocol/stored.hpp"

#include <stdexcept>

namespace ecsnet::protocol {

namespace {

std::size_t stored_bytes(field_type type) noexcept {
    return type == field_type::bool_ ? 1 : natural_bits(type) / 8;
}

template <typename F>
F load(const std::byte* in) noexcept {
    F value{};
    std::memcpy(&value, in, sizeof(F));
    return value;
}

template <typename F>
void store(F value, std::byte* out) noexcept {
    std::memcpy(out, &value, sizeof(F));
}

}  // namespace

std::size_t stored_type::value_bytes() const noexcept {
    std::size_t bytes = 0;
    for (const stored_field& f : fields) {
        bytes += stored_bytes(f.type);
    }
    return bytes;
}

std::string describe(const stored_type& type) {
    if (type.is_string) {
        return type.name + " (string)";
    }
    std::string out = type.name + " {";
    for (std::size_t i = 0; i < type.fields.size(); ++i) {
        out += (i == 0 ? "" : ", ") + type.fields[i].name + ": " +
               std::string{to_string(type.fields[i].type)};
    }
    return out + "}";
}

std::string incompatibility(const stored_type& saved, const stored_type& current) {
    if (saved.is_string != current.is_string) {
        return "stored as " + describe(saved) + ", now " + describe(current);
    }
    if (saved.fields == current.fields) {
        return {};
    }
    // The first difference, in words.
    const std::size_t n = std::min(saved.fields.size(), current.fields.size());
    for (std::size_t i = 0; i < n; ++i) {
        const stored_field& was = saved.fields[i];
        const stored_field& is = current.fields[i];
        if (was != is) {
            return "field " + std::to_string(i) + " was " + was.name + ": " +
                   std::string{to_string(was.type)} + ", now " + is.name + ": " +
                   std::string{to_string(is.type)} + " (stored as " + describe(saved) + ", now " +
                   describe(current) + ")";
        }
    }
    return std::to_string(saved.fields.size()) + " fields stored, " +
           std::to_string(current.fields.size()) + " now (stored as " + describe(saved) +
           ", now " + describe(current) + ")";
}

std::vector<field_value> decode_fields(const stored_type& type, std::span<const std::byte> value) {
    if (value.size() < type.value_bytes()) {
        throw std::invalid_argument("a stored " + type.name + " value has " +
                                    std::to_string(value.size()) + " bytes, not " +
                                    std::to_string(type.value_bytes()));
    }
    std::vector<field_value> out;
    out.reserve(type.fields.size());
    const std::byte* at = value.data();
    for (const stored_field& f : type.fields) {
        switch (f.type) {
            case field_type::bool_: out.emplace_back(*at != std::byte{0}); break;
            case field_type::int8: out.emplace_back(std::int64_t{load<std::int8_t>(at)}); break;
            case field_type::uint8: out.emplace_back(std::uint64_t{load<std::uint8_t>(at)}); break;
            case field_type::int16: out.emplace_back(std::int64_t{load<std::int16_t>(at)}); break;
            case field_type::uint16: out.emplace_back(std::uint64_t{load<std::uint16_t>(at)}); break;
            case field_type::int32: out.emplace_back(std::int64_t{load<std::int32_t>(at)}); break;
            case field_type::uint32: out.emplace_back(std::uint64_t{load<std::uint32_t>(at)}); break;
            case field_type::int64: out.emplace_back(load<std::int64_t>(at)); break;
            case field_type::uint64: out.emplace_back(load<std::uint64_t>(at)); break;
            case field_type::float32: out.emplace_back(double{load<float>(at)}); break;
            case field_type::float64: out.emplace_back(load<double>(at)); break;
        }
        at += stored_bytes(f.type);
    }
    return out;
}

void encode_fields(const stored_type& type, std::span<const field_value> values, std::byte* out) {
    if (values.size() != type.fields.size()) {
        throw std::invalid_argument(std::to_string(values.size()) + " values for the " +
                                    std::to_string(type.fields.size()) + " fields of " +
                                    describe(type));
    }
    for (std::size_t i = 0; i < values.size(); ++i) {
        const auto as = [&](auto zero) {
            return std::visit([](auto v) { return static_cast<decltype(zero)>(v); }, values[i]);
        };
        switch (type.fields[i].type) {
            case field_type::bool_: *out = std::byte{as(false) ? std::uint8_t{1} : std::uint8_t{0}}; break;
            case field_type::int8: store(as(std::int8_t{}), out); break;
            case field_type::uint8: store(as(std::uint8_t{}), out); break;
            case field_type::int16: store(as(std::int16_t{}), out); break;
            case field_type::uint16: store(as(std::uint16_t{}), out); break;
            case field_type::int32: store(as(std::int32_t{}), out); break;
            case field_type::uint32: store(as(std::uint32_t{}), out); break;
            case field_type::int64: store(as(std::int64_t{}), out); break;
            case field_type::uint64: store(as(std::uint64_t{}), out); break;
            case field_type::float32: store(as(float{}), out); break;
            case field_type::float64: store(as(double{}), out); break;
        }
        out += stored_bytes(type.fields[i].type);
    }
}

}  // namespace ecsnet::protocol
