#include "ecsnet/protocol/messages.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>

namespace ecsnet::protocol {

namespace {

template <class... Ts>
struct overloaded : Ts... {
    using Ts::operator()...;
};
template <class... Ts>
overloaded(Ts...) -> overloaded<Ts...>;

flatbuffers::Offset<flatbuffers::String> optional_string(flatbuffers::FlatBufferBuilder& fbb,
                                                         const std::string& s) {
    return s.empty() ? 0 : fbb.CreateString(s);
}

flatbuffers::Offset<flatbuffers::Vector<std::uint8_t>> optional_bytes(
    flatbuffers::FlatBufferBuilder& fbb, const std::vector<std::uint8_t>& bytes) {
    return bytes.empty() ? 0 : fbb.CreateVector(bytes);
}

wire::EntityRef to_wire(ecs::Entity e) { return wire::EntityRef{e.index(), e.version()}; }

using columns_offset = flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::Column>>>;

// One single-value column per component, resolved against the server's schema.
columns_offset encode_set(flatbuffers::FlatBufferBuilder& fbb, const component_set& set,
                          const schema& types) {
    if (set.empty()) {
        return 0;
    }
    std::vector<flatbuffers::Offset<wire::Column>> columns;
    for (const component_value& v : set.values()) {
        const component_info* type = types.find(v.name);
        if (type == nullptr) {
            throw std::invalid_argument("the server has no component '" + v.name + "'");
        }
        if (v.layout != nullptr) {
            (void)types.checked(*v.layout);  // a typed value: its compiled layout
        }
        if (type->is_string) {
            const auto text = fbb.CreateString(v.text);
            const auto strings = fbb.CreateVector(&text, 1);
            columns.push_back(wire::CreateColumn(fbb, type->id, 0, 0, strings));
            continue;
        }
        // A value made for fewer fields (an older client): the fields added since are zero.
        std::vector<std::byte> bytes(type->value_bytes());
        if (v.bytes.size() > bytes.size()) {
            throw std::invalid_argument("a '" + v.name + "' value of " +
                                        std::to_string(v.bytes.size()) +
                                        " bytes does not fit the server's " +
                                        std::to_string(bytes.size()));
        }
        std::copy(v.bytes.begin(), v.bytes.end(), bytes.begin());
        const auto values = fbb.CreateVector(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                             bytes.size());
        columns.push_back(wire::CreateColumn(fbb, type->id, 0, values));
    }
    return fbb.CreateVector(columns);
}

flatbuffers::Offset<flatbuffers::Vector<std::uint16_t>> encode_types(
    flatbuffers::FlatBufferBuilder& fbb, const std::vector<std::string>& names,
    const schema& types) {
    std::vector<std::uint16_t> ids;
    for (const std::string& name : names) {
        const component_info* type = types.find(name);
        if (type == nullptr) {
            throw std::invalid_argument("the server has no component '" + name + "'");
        }
        ids.push_back(type->id);
    }
    return fbb.CreateVector(ids);
}

decode_error command_error(wire::ErrorCode code, std::string message, std::uint32_t request_id) {
    return decode_error{code, std::move(message), request_id, false, std::nullopt};
}

decode_error fatal_error(std::string message) {
    return decode_error{wire::ErrorCode::Malformed, std::move(message), std::nullopt, true,
                        std::nullopt};
}

// A command's component values: one column per type, each with exactly one value of the
// right size and no entity set, only types clients may write, every value valid.
std::optional<decode_error> decode_values(
    const flatbuffers::Vector<flatbuffers::Offset<wire::Column>>* columns, std::uint32_t request_id,
    const schema& types, component_set& out) {
    if (columns == nullptr) {
        return std::nullopt;
    }
    const auto malformed = [&](std::string text) {
        return command_error(wire::ErrorCode::Malformed, std::move(text), request_id);
    };
    const auto invalid = [&](std::string text) {
        return command_error(wire::ErrorCode::InvalidValue, std::move(text), request_id);
    };
    if (columns->size() > types.size()) {
        return malformed("more columns than component types");
    }
    for (const wire::Column* column : *columns) {
        const component_info* type = types.find(column->type());
        if (type == nullptr) {
            return malformed("unknown component type " + std::to_string(column->type()));
        }
        const std::string& name = type->name;
        if (out.find(name) != nullptr) {
            return malformed("component " + name + " given twice");
        }
        if (column->at() != nullptr) {
            return malformed("column " + name + " names entities, which this command does not allow");
        }
        component_value value;
        value.name = name;
        if (type->is_string) {
            const auto* strings = column->strings();
            if (column->values() != nullptr || strings == nullptr || strings->size() != 1) {
                return malformed("column " + name + " must hold exactly one string");
            }
            value.text = strings->Get(0)->str();
            if (value.text.size() > type->max_bytes) {
                return invalid(name + " is longer than " + std::to_string(type->max_bytes) +
                               " bytes");
            }
            if (!valid_utf8(value.text)) {
                return invalid(name + " is not valid UTF-8");
            }
        } else {
            const auto* values = column->values();
            if (column->strings() != nullptr || values == nullptr ||
                values->size() != type->value_bytes()) {
                return malformed("column " + name + " must hold exactly one value of " +
                                 std::to_string(type->value_bytes()) + " bytes");
            }
            value.bytes.resize(values->size());
            std::memcpy(value.bytes.data(), values->data(), values->size());
            std::string why;
            if (!valid_value(*type, value.bytes, &why)) {
                return invalid("invalid " + name + " value: " + why);
            }
        }
        if (type->written_by == writer::server) {
            return invalid(name + " is set by the server only");
        }
        if (type->input) {
            return invalid(name + " is an input type: it is sent with Input, per tick");
        }
        out.set(std::move(value));
    }
    return std::nullopt;
}

std::optional<decode_error> decode_removal_types(const flatbuffers::Vector<std::uint16_t>* ids,
                                                 std::uint32_t request_id, const schema& types,
                                                 std::vector<std::string>& out) {
    out.clear();
    if (ids == nullptr) {
        return std::nullopt;
    }
    for (const std::uint16_t id : *ids) {
        const component_info* type = types.find(id);
        if (type == nullptr) {
            return command_error(wire::ErrorCode::Malformed,
                                 "unknown component type " + std::to_string(id), request_id);
        }
        if (std::find(out.begin(), out.end(), type->name) != out.end()) {
            return command_error(wire::ErrorCode::Malformed,
                                 "component " + type->name + " named twice", request_id);
        }
        if (type->written_by == writer::server) {
            return command_error(wire::ErrorCode::InvalidValue,
                                 type->name + " is set by the server only", request_id);
        }
        if (type->input) {
            return command_error(wire::ErrorCode::InvalidValue,
                                 type->name + " is an input type: it is sent with Input, per tick",
                                 request_id);
        }
        out.push_back(type->name);
    }
    return std::nullopt;
}

std::optional<ecs::Entity> entity_of(const wire::EntityRef* ref) {
    if (ref == nullptr || ref->version() == 0) {
        return std::nullopt;
    }
    return ecs::Entity{ref->index(), ref->version()};
}

// The input types of an Input's columns, in column order (the order of its first tick's
// values), each checked to be one of the server's input types.
std::vector<const component_info*> input_types(const input& m, const schema& types) {
    if (m.ticks.empty() || m.ticks.size() > max_input_ticks) {
        throw std::invalid_argument("an Input carries 1 to " + std::to_string(max_input_ticks) +
                                    " ticks, not " + std::to_string(m.ticks.size()));
    }
    std::vector<const component_info*> out;
    for (const component_value& first : m.ticks.front().values()) {
        const component_info* type = types.find(first.name);
        if (type == nullptr) {
            throw std::invalid_argument("the server has no component '" + first.name + "'");
        }
        if (!type->input) {
            throw std::invalid_argument("component '" + first.name + "' is not an input type");
        }
        if (first.layout != nullptr) {
            (void)types.checked(*first.layout);
        }
        out.push_back(type);
    }
    return out;
}

// One column of an Input: every tick's value of `type`, bit-packed.
std::vector<std::byte> pack_input_column(const input& m, const component_info& type) {
    std::vector<std::byte> packed(column_bytes(type, m.ticks.size()));
    std::vector<std::byte> value(type.value_bytes());
    for (std::size_t i = 0; i < m.ticks.size(); ++i) {
        const component_value* v = m.ticks[i].find(type.name);
        if (v == nullptr || m.ticks[i].size() != m.ticks.front().size()) {
            throw std::invalid_argument("every tick of an Input holds the same input types");
        }
        if (v->bytes.size() > value.size()) {
            throw std::invalid_argument("a '" + v->name + "' value of " +
                                        std::to_string(v->bytes.size()) +
                                        " bytes does not fit the server's " +
                                        std::to_string(value.size()));
        }
        std::fill(value.begin(), value.end(), std::byte{0});
        std::copy(v->bytes.begin(), v->bytes.end(), value.begin());
        pack_value(type, value, packed, i);
    }
    return packed;
}

columns_offset encode_input_columns(flatbuffers::FlatBufferBuilder& fbb, const input& m,
                                    const schema& types) {
    std::vector<flatbuffers::Offset<wire::Column>> columns;
    for (const component_info* type : input_types(m, types)) {
        const std::vector<std::byte> packed = pack_input_column(m, *type);
        const auto values = fbb.CreateVector(reinterpret_cast<const std::uint8_t*>(packed.data()),
                                             packed.size());
        columns.push_back(wire::CreateColumn(fbb, type->id, 0, values));
    }
    return fbb.CreateVector(columns);
}

// An Input as either form carries it, before the checks both forms share.
struct input_fields {
    std::uint64_t first_tick;
    std::size_t count;
    std::uint64_t render_tick;
    float render_fraction;
};
struct input_column {
    std::uint32_t type;
    std::span<const std::byte> packed;
    bool shaped;  // values only: no `at`, no strings
};

// Everything about an Input but ownership and timing (the server's): 1 to max_input_ticks
// ticks from tick 1 on, columns of distinct input types with exactly tick_count packed values
// each, every value valid. out.entity is set by the caller.
std::optional<decode_error> check_input(const input_fields& in, std::span<const input_column> columns,
                                        const schema& types, input& out) {
    const auto refuse = [&](wire::ErrorCode code, std::string text) {
        return decode_error{code, std::move(text), std::nullopt, false, in.first_tick};
    };
    out.first_tick = in.first_tick;
    if (in.first_tick == 0) {
        return refuse(wire::ErrorCode::Malformed, "Input ticks start at 1");
    }
    const std::size_t count = in.count;
    if (count == 0 || count > max_input_ticks) {
        return refuse(wire::ErrorCode::Malformed, "an Input carries 1 to " +
                                                      std::to_string(max_input_ticks) +
                                                      " ticks, not " + std::to_string(count));
    }
    if (in.first_tick > std::numeric_limits<std::uint64_t>::max() - count) {
        return refuse(wire::ErrorCode::Malformed, "Input ticks past the largest tick");
    }
    out.render_tick = in.render_tick;
    out.render_fraction = in.render_fraction;
    if (!(out.render_fraction >= 0.0F && out.render_fraction < 1.0F)) {  // NaN too
        return refuse(wire::ErrorCode::Malformed, "an Input's render_fraction is in [0, 1)");
    }
    if (out.render_tick > in.first_tick + count - 1) {
        return refuse(wire::ErrorCode::Malformed,
                      "an Input's render tick " + std::to_string(out.render_tick) +
                          " is after its last tick " + std::to_string(in.first_tick + count - 1));
    }
    if (columns.empty()) {
        return refuse(wire::ErrorCode::Malformed, "Input carries no input type");
    }
    if (columns.size() > types.size()) {
        return refuse(wire::ErrorCode::Malformed, "more columns than component types");
    }
    out.ticks.assign(count, component_set{});
    std::vector<std::byte> value;
    for (const input_column& column : columns) {
        const component_info* type = types.find(column.type);
        if (type == nullptr) {
            return refuse(wire::ErrorCode::Malformed,
                          "unknown component type " + std::to_string(column.type));
        }
        const std::string& name = type->name;
        if (!type->input) {
            return refuse(wire::ErrorCode::InvalidValue, name + " is not an input type");
        }
        if (out.ticks.front().find(name) != nullptr) {
            return refuse(wire::ErrorCode::Malformed, "input type " + name + " given twice");
        }
        const std::size_t expected = column_bytes(*type, count);
        if (!column.shaped || column.packed.size() != expected) {
            return refuse(wire::ErrorCode::Malformed,
                          "column " + name + " must hold exactly " + std::to_string(count) +
                              " packed values (" + std::to_string(expected) + " bytes), no entities");
        }
        value.resize(type->value_bytes());
        for (std::size_t i = 0; i < count; ++i) {
            unpack_value(*type, column.packed, i, value);
            std::string why;
            if (!valid_value(*type, value, &why)) {
                return refuse(wire::ErrorCode::InvalidValue,
                              "invalid " + name + " value for tick " +
                                  std::to_string(in.first_tick + i) + ": " + why);
            }
            component_value v;
            v.name = name;
            v.bytes = value;
            out.ticks[i].set(std::move(v));
        }
    }
    return std::nullopt;
}

std::optional<decode_error> decode_input(const wire::Input& m, const schema& types, input& out) {
    const auto e = entity_of(m.entity());
    if (!e) {
        return decode_error{wire::ErrorCode::Malformed, "Input needs an entity with a non-zero version",
                            std::nullopt, false, m.first_tick()};
    }
    out.entity = *e;
    std::vector<input_column> columns;
    if (m.columns() != nullptr) {
        for (const wire::Column* column : *m.columns()) {
            const auto* values = column->values();
            columns.push_back(input_column{
                column->type(),
                values == nullptr ? std::span<const std::byte>{}
                                  : std::span<const std::byte>{reinterpret_cast<const std::byte*>(values->data()),
                                                               values->size()},
                column->at() == nullptr && column->strings() == nullptr && values != nullptr});
        }
    }
    return check_input({m.first_tick(), m.tick_count(), m.render_tick(), m.render_fraction()},
                       columns, types, out);
}

// Unsigned LEB128: 7 bits a byte, least significant first.
void put_leb128(std::vector<std::uint8_t>& out, std::uint64_t value) {
    while (value >= 0x80U) {
        out.push_back(static_cast<std::uint8_t>(value | 0x80U));
        value >>= 7U;
    }
    out.push_back(static_cast<std::uint8_t>(value));
}

// At most 10 bytes and no bit past 2^64 - 1; nullopt when it is cut short or breaks either.
std::optional<std::uint64_t> take_leb128(std::span<const std::uint8_t>& bytes) {
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < 10 && i < bytes.size(); ++i) {
        const std::uint64_t part = bytes[i] & 0x7FU;
        if (i == 9 && part > 1) {
            return std::nullopt;  // past 64 bits
        }
        value |= part << (7U * i);
        if ((bytes[i] & 0x80U) == 0) {
            bytes = bytes.subspan(i + 1);
            return value;
        }
    }
    return std::nullopt;
}

constexpr std::uint8_t compact_ticks_mask = 0x0FU;
constexpr std::uint8_t compact_render_bit = 0x10U;

// The frame of a compact `kind` whose body is in bytes[frame_prefix_bytes...].
frame finish_compact(std::shared_ptr<std::vector<std::uint8_t>> bytes, std::uint8_t kind) {
    const std::uint32_t word = compact_prefix_word(
        kind, static_cast<std::uint32_t>(bytes->size() - frame_prefix_bytes));
    for (std::size_t i = 0; i < frame_prefix_bytes; ++i) {
        (*bytes)[i] = static_cast<std::uint8_t>(word >> (8U * i));
    }
    return bytes;
}


}  // namespace

component_set& component_set::set(component_value value) {
    for (auto& v : values_) {
        if (v.name == value.name) {
            v = std::move(value);
            return *this;
        }
    }
    values_.push_back(std::move(value));
    return *this;
}

const component_value* component_set::find(std::string_view name) const noexcept {
    for (const auto& v : values_) {
        if (v.name == name) {
            return &v;
        }
    }
    return nullptr;
}

frame encode(const client_message& message, const schema& types) {
    flatbuffers::FlatBufferBuilder fbb(256);
    const auto [type, body] = std::visit(
        overloaded{
            [&](const hello& m) {
                const auto name = optional_string(fbb, m.client_name);
                const auto token = optional_string(fbb, m.auth_token);
                const auto key = optional_bytes(fbb, m.resume_key);
                const auto connect = optional_string(fbb, m.connect_token);
                return std::pair{wire::ClientBody::Hello,
                                 wire::CreateHello(fbb, m.version, name, token, key, connect)
                                     .Union()};
            },
            [&](const spawn& m) {
                const auto columns = encode_set(fbb, m.components, types);
                return std::pair{wire::ClientBody::Spawn,
                                 wire::CreateSpawn(fbb, m.request_id, columns).Union()};
            },
            [&](const destroy& m) {
                const auto ref = to_wire(m.entity);
                return std::pair{wire::ClientBody::Destroy,
                                 wire::CreateDestroy(fbb, m.request_id, &ref).Union()};
            },
            [&](const set_components& m) {
                const auto columns = encode_set(fbb, m.components, types);
                const auto ref = to_wire(m.entity);
                return std::pair{
                    wire::ClientBody::SetComponent,
                    wire::CreateSetComponent(fbb, m.request_id, &ref, columns).Union()};
            },
            [&](const remove_components& m) {
                const auto ids = encode_types(fbb, m.types, types);
                const auto ref = to_wire(m.entity);
                return std::pair{
                    wire::ClientBody::RemoveComponent,
                    wire::CreateRemoveComponent(fbb, m.request_id, &ref, ids).Union()};
            },
            [&](const ping& m) {
                return std::pair{wire::ClientBody::Ping, wire::CreatePing(fbb, m.nonce).Union()};
            },
            [&](const resync_request& m) {
                const auto reason = optional_string(fbb, m.reason);
                return std::pair{wire::ClientBody::ResyncRequest,
                                 wire::CreateResyncRequest(fbb, reason).Union()};
            },
            [&](const focus& m) {
                return std::pair{wire::ClientBody::Focus, wire::CreateFocus(fbb, m.x, m.y).Union()};
            },
            [&](const input& m) {
                const auto columns = encode_input_columns(fbb, m, types);
                const auto ref = to_wire(m.entity);
                return std::pair{
                    wire::ClientBody::Input,
                    wire::CreateInput(fbb, &ref, m.first_tick,
                                      static_cast<std::uint16_t>(m.ticks.size()), columns,
                                      m.render_tick, m.render_fraction)
                        .Union()};
            },
        },
        message);
    return finish_frame(fbb, wire::CreateClientMessage(fbb, type, body));
}

decoded_client decode_client_frame(std::span<const std::uint8_t> bytes, const schema& types) {
    decoded_client out;
    std::string why;
    const wire::ClientMessage* root = verify_client_frame(bytes, &why);
    if (root == nullptr) {
        out.error = fatal_error("malformed frame: " + why);
        return out;
    }
    const auto fail = [&](decode_error e) {
        out.error = std::move(e);
        return out;
    };
    switch (root->body_type()) {
        case wire::ClientBody::Hello: {
            const auto* m = root->body_as_Hello();
            hello h;
            h.version = m->protocol_version();
            h.client_name = m->client_name() != nullptr ? m->client_name()->str() : "";
            h.auth_token = m->auth_token() != nullptr ? m->auth_token()->str() : "";
            if (h.client_name.size() > max_client_name_bytes || !valid_utf8(h.client_name)) {
                return fail(fatal_error("client name must be UTF-8 of at most " +
                                        std::to_string(max_client_name_bytes) + " bytes"));
            }
            if (h.auth_token.size() > max_token_bytes) {
                return fail(fatal_error("auth token longer than " +
                                        std::to_string(max_token_bytes) + " bytes"));
            }
            if (const auto* key = m->resume_key()) {
                if (key->size() != resume_key_bytes) {
                    return fail(fatal_error("resume key must be " +
                                            std::to_string(resume_key_bytes) + " bytes, not " +
                                            std::to_string(key->size())));
                }
                h.resume_key.assign(key->begin(), key->end());
            }
            // Its length is the identity check's (an identity refusal, docs/PROTOCOL.md
            // "Identity"), as is everything else about it: a server with a known resume key or
            // without tokens never looks at it.
            if (const auto* token = m->connect_token()) {
                h.connect_token = token->str();
            }
            out.message = std::move(h);
            return out;
        }
        case wire::ClientBody::Spawn: {
            const auto* m = root->body_as_Spawn();
            spawn s{m->request_id(), {}};
            if (auto e = decode_values(m->components(), s.request_id, types, s.components)) {
                return fail(std::move(*e));
            }
            out.message = std::move(s);
            return out;
        }
        case wire::ClientBody::Destroy: {
            const auto* m = root->body_as_Destroy();
            const auto e = entity_of(m->entity());
            if (!e) {
                return fail(command_error(wire::ErrorCode::Malformed,
                                          "Destroy needs an entity with a non-zero version",
                                          m->request_id()));
            }
            out.message = destroy{m->request_id(), *e};
            return out;
        }
        case wire::ClientBody::SetComponent: {
            const auto* m = root->body_as_SetComponent();
            set_components s{m->request_id(), {}, {}};
            const auto e = entity_of(m->entity());
            if (!e) {
                return fail(command_error(wire::ErrorCode::Malformed,
                                          "SetComponent needs an entity with a non-zero version",
                                          s.request_id));
            }
            s.entity = *e;
            if (auto err = decode_values(m->components(), s.request_id, types, s.components)) {
                return fail(std::move(*err));
            }
            if (s.components.empty()) {
                return fail(command_error(wire::ErrorCode::Malformed,
                                          "SetComponent carries no component", s.request_id));
            }
            out.message = std::move(s);
            return out;
        }
        case wire::ClientBody::RemoveComponent: {
            const auto* m = root->body_as_RemoveComponent();
            remove_components r{m->request_id(), {}, {}};
            const auto e = entity_of(m->entity());
            if (!e) {
                return fail(command_error(wire::ErrorCode::Malformed,
                                          "RemoveComponent needs an entity with a non-zero version",
                                          r.request_id));
            }
            r.entity = *e;
            if (auto err = decode_removal_types(m->types(), r.request_id, types, r.types)) {
                return fail(std::move(*err));
            }
            if (r.types.empty()) {
                return fail(command_error(wire::ErrorCode::Malformed,
                                          "RemoveComponent names no component", r.request_id));
            }
            out.message = std::move(r);
            return out;
        }
        case wire::ClientBody::Ping:
            out.message = ping{root->body_as_Ping()->nonce()};
            return out;
        case wire::ClientBody::ResyncRequest: {
            const auto* reason = root->body_as_ResyncRequest()->reason();
            std::string text = reason != nullptr ? reason->str() : "";
            if (text.size() > max_reason_bytes || !valid_utf8(text)) {
                return fail(fatal_error("resync reason must be UTF-8 of at most " +
                                        std::to_string(max_reason_bytes) + " bytes"));
            }
            out.message = resync_request{std::move(text)};
            return out;
        }
        case wire::ClientBody::Focus: {
            const auto* m = root->body_as_Focus();
            if (!std::isfinite(m->x()) || !std::isfinite(m->y())) {
                return fail(fatal_error("Focus needs finite coordinates"));
            }
            out.message = focus{m->x(), m->y()};
            return out;
        }
        case wire::ClientBody::Input: {
            input in;
            if (auto e = decode_input(*root->body_as_Input(), types, in)) {
                return fail(std::move(*e));
            }
            out.message = std::move(in);
            return out;
        }
        case wire::ClientBody::NONE:
        default:
            // The verifier passes unknown union tags on purpose (forward compatibility).
            return fail(fatal_error("unknown message type " +
                                    std::to_string(static_cast<unsigned>(root->body_type()))));
    }
}

input_reference reference_of(const input& message, const schema& types) {
    input_reference out{message.entity, {}};
    for (const component_info* type : input_types(message, types)) {
        out.types.push_back(type->id);
    }
    return out;
}

frame encode_compact_input(const input& message, const schema& types,
                           const input_reference& reference) {
    if (reference_of(message, types) != reference) {
        throw std::invalid_argument("a compact Input must have its reference's entity and input types");
    }
    const std::uint64_t last = message.first_tick + message.ticks.size() - 1;
    if (message.first_tick == 0 || last < message.first_tick || message.render_tick > last ||
        !(message.render_fraction >= 0.0F && message.render_fraction < 1.0F)) {
        throw std::invalid_argument("an Input needs ticks from 1 on and a render tick up to its last");
    }
    auto bytes = std::make_shared<std::vector<std::uint8_t>>(frame_prefix_bytes, std::uint8_t{0});
    const bool render = message.render_tick != 0;
    bytes->push_back(static_cast<std::uint8_t>((message.ticks.size() - 1) | (render ? compact_render_bit : 0U)));
    put_leb128(*bytes, message.first_tick);
    if (render) {
        put_leb128(*bytes, last - message.render_tick);
        bytes->push_back(static_cast<std::uint8_t>(
            std::min(255.0F, std::floor(message.render_fraction * 256.0F))));
    }
    for (const std::uint32_t id : reference.types) {
        const std::vector<std::byte> packed = pack_input_column(message, *types.find(id));
        const auto* first = reinterpret_cast<const std::uint8_t*>(packed.data());
        bytes->insert(bytes->end(), first, first + packed.size());
    }
    return finish_compact(std::move(bytes), static_cast<std::uint8_t>(compact_kind::input));
}

frame encode_input(const input& message, const schema& types,
                   std::optional<input_reference>& reference) {
    input_reference own = reference_of(message, types);
    const std::uint64_t count = message.ticks.size();
    const bool well_formed = message.first_tick != 0 &&
                             message.first_tick < std::numeric_limits<std::uint64_t>::max() - count &&
                             message.render_tick <= message.first_tick + count - 1 &&
                             message.render_fraction >= 0.0F && message.render_fraction < 1.0F;
    if (well_formed && reference == own) {
        return encode_compact_input(message, types, own);
    }
    frame full = encode(client_message{message}, types);
    // The server decodes with the same schema: it keeps the reference exactly when this does.
    const decoded_client decoded = decode_client_frame(*full, types);
    if (decoded.message && std::holds_alternative<input>(*decoded.message)) {
        reference = std::move(own);
    } else {
        reference.reset();
    }
    return full;
}

frame encode_compact_input_ack(const input_ack& ack) {
    auto bytes = std::make_shared<std::vector<std::uint8_t>>(frame_prefix_bytes, std::uint8_t{0});
    bytes->reserve(frame_prefix_bytes + 20);
    put_leb128(*bytes, ack.tick);
    put_leb128(*bytes, ack.tick - std::min(ack.applied_tick, ack.tick));
    // Zigzag: a small lead either way is one byte.
    const auto lead = static_cast<std::uint32_t>(ack.lead);
    put_leb128(*bytes, (lead << 1U) ^ (ack.lead < 0 ? 0xFFFFFFFFU : 0U));
    put_leb128(*bytes, ack.late);
    put_leb128(*bytes, ack.repeated);
    return finish_compact(std::move(bytes), static_cast<std::uint8_t>(compact_server_kind::input_ack));
}

std::optional<server_control> decode_compact_server_frame(std::span<const std::uint8_t> bytes,
                                                          std::string* why) {
    const auto fail = [&](std::string text) -> std::optional<server_control> {
        if (why != nullptr) {
            *why = std::move(text);
        }
        return std::nullopt;
    };
    if (bytes.size() < frame_prefix_bytes) {
        return fail("compact frame without its prefix");
    }
    const std::uint32_t word = read_prefix(bytes.first<frame_prefix_bytes>());
    std::span<const std::uint8_t> body = bytes.subspan(frame_prefix_bytes);
    if (!is_compact(word) || compact_of(word).length != body.size()) {
        return fail("compact frame prefix does not match the frame");
    }
    if (compact_of(word).kind != static_cast<std::uint8_t>(compact_server_kind::input_ack)) {
        return fail("unknown compact frame kind " + std::to_string(compact_of(word).kind));
    }
    std::array<std::uint64_t, 5> fields{};
    for (std::uint64_t& field : fields) {
        const auto value = take_leb128(body);
        if (!value) {
            return fail("compact InputAck: a field is not a LEB128 number of at most 64 bits");
        }
        field = *value;
    }
    const auto [tick, back, zigzag, late, repeated] = fields;
    if (!body.empty()) {
        return fail("compact InputAck: " + std::to_string(body.size()) + " bytes after its fields");
    }
    if (back > tick) {
        return fail("InputAck applied an input of a tick before tick 0");
    }
    constexpr std::uint64_t u32 = std::numeric_limits<std::uint32_t>::max();
    if (zigzag > u32 || late > u32 || repeated > u32) {
        return fail("compact InputAck: lead, late or repeated past 32 bits");
    }
    const auto z = static_cast<std::uint32_t>(zigzag);
    const auto lead = static_cast<std::int32_t>((z >> 1U) ^ (0U - (z & 1U)));
    return input_ack{tick, tick - back, lead, static_cast<std::uint32_t>(late),
                     static_cast<std::uint32_t>(repeated)};
}

std::optional<decode_error> decode_compact_input(std::span<const std::uint8_t> body,
                                                 const schema& types,
                                                 const input_reference* reference, input& out) {
    std::uint64_t first_tick = 0;
    const auto refuse = [&](std::string text) {
        return decode_error{wire::ErrorCode::Malformed, "compact Input: " + std::move(text),
                            std::nullopt, false, first_tick};
    };
    if (body.empty()) {
        return refuse("no flags");
    }
    const std::uint8_t flags = body.front();
    body = body.subspan(1);
    if ((flags & ~(compact_ticks_mask | compact_render_bit)) != 0) {
        return refuse("flag bits 5 to 7 must be zero");
    }
    const std::size_t count = (flags & compact_ticks_mask) + 1U;
    const auto first = take_leb128(body);
    if (!first) {
        return refuse("first_tick is not a LEB128 number of at most 64 bits");
    }
    first_tick = *first;
    if (reference == nullptr) {
        return refuse("a compact Input before any full Input on this connection");
    }
    input_fields fields{first_tick, count, 0, 0.0F};
    if ((flags & compact_render_bit) != 0) {
        const auto back = take_leb128(body);
        if (!back || body.empty()) {
            return refuse("the render tick is not a LEB128 number followed by its fraction");
        }
        if (first_tick != 0 && first_tick <= std::numeric_limits<std::uint64_t>::max() - count) {
            const std::uint64_t last = first_tick + count - 1;
            if (*back >= last) {
                return refuse("the render tick would be before tick 1");
            }
            fields.render_tick = last - *back;
        }
        fields.render_fraction = static_cast<float>(body.front()) / 256.0F;
        body = body.subspan(1);
    }
    std::vector<input_column> columns;
    for (const std::uint32_t id : reference->types) {
        const component_info* type = types.find(id);
        const std::size_t size = type == nullptr ? 0 : column_bytes(*type, count);
        if (body.size() < size) {
            return refuse("the body ends inside the values");
        }
        columns.push_back(input_column{id, std::as_bytes(body.first(size)), true});
        body = body.subspan(size);
    }
    if (!body.empty()) {
        return refuse(std::to_string(body.size()) + " bytes after the values");
    }
    out.entity = reference->entity;
    return check_input(fields, columns, types, out);
}

frame encode(const server_control& message) {
    flatbuffers::FlatBufferBuilder fbb(256);
    const auto [type, body] = std::visit(
        overloaded{
            [&](const welcome& m) {
                const auto key = optional_bytes(fbb, m.resume_key);
                const auto player = optional_string(fbb, m.player_id);
                const auto components = encode_schema(fbb, m.components);
                return std::pair{wire::ServerBody::Welcome,
                                 wire::CreateWelcome(fbb, m.client_id, m.version, m.tick_rate,
                                                     m.current_tick, m.checksum_interval, key,
                                                     player, components, m.interest_radius,
                                                     m.client_budget)
                                     .Union()};
            },
            [&](const command_result& m) {
                const auto text = optional_string(fbb, m.message);
                const auto ref = to_wire(m.entity);
                return std::pair{wire::ServerBody::CommandResult,
                                 wire::CreateCommandResult(fbb, m.request_id, m.ok, m.code, text,
                                                           m.entity.is_null() ? nullptr : &ref)
                                     .Union()};
            },
            [&](const pong& m) {
                return std::pair{wire::ServerBody::Pong,
                                 wire::CreatePong(fbb, m.nonce, m.tick).Union()};
            },
            [&](const checksum_report& m) {
                const auto excluded =
                    m.excluded.empty() ? 0 : fbb.CreateVector(m.excluded).o;
                return std::pair{wire::ServerBody::Checksum,
                                 wire::CreateChecksum(fbb, m.tick, m.hash, m.entity_count,
                                                      m.first_index, m.end_index,
                                                      flatbuffers::Offset<flatbuffers::Vector<std::uint32_t>>{excluded})
                                     .Union()};
            },
            [&](const disconnect& m) {
                const auto reason = optional_string(fbb, m.reason);
                return std::pair{wire::ServerBody::Disconnect,
                                 wire::CreateDisconnect(fbb, reason).Union()};
            },
            [&](const input_ack& m) {
                return std::pair{wire::ServerBody::InputAck,
                                 wire::CreateInputAck(fbb, m.tick, m.applied_tick, m.lead, m.late,
                                                      m.repeated)
                                     .Union()};
            },
            [&](const input_rejected& m) {
                const auto text = optional_string(fbb, m.message);
                return std::pair{wire::ServerBody::InputRejected,
                                 wire::CreateInputRejected(fbb, m.first_tick, m.code, text,
                                                           m.refused)
                                     .Union()};
            },
        },
        message);
    return finish_frame(fbb, wire::CreateServerMessage(fbb, type, body));
}

std::optional<server_control> decode_server_control(const wire::ServerMessage& message,
                                                    std::string* why) {
    const auto fail = [&](std::string reason) -> std::optional<server_control> {
        if (why != nullptr) {
            *why = std::move(reason);
        }
        return std::nullopt;
    };
    switch (message.body_type()) {
        case wire::ServerBody::Welcome: {
            const auto* m = message.body_as_Welcome();
            if (!std::isfinite(m->tick_rate()) || m->tick_rate() <= 0.0F) {
                return fail("Welcome with a tick rate that is not a positive number");
            }
            welcome w{m->client_id(), m->protocol_version(), m->tick_rate(),
                      m->current_tick(), m->checksum_interval(), {}, {}};
            if (const auto* key = m->resume_key()) {
                if (key->size() != resume_key_bytes) {
                    return fail("Welcome with a resume key of " + std::to_string(key->size()) +
                                " bytes, not " + std::to_string(resume_key_bytes));
                }
                w.resume_key.assign(key->begin(), key->end());
            }
            if (const auto* player = m->player_id()) {
                if (player->size() > max_player_id_bytes || !valid_utf8(player->string_view())) {
                    return fail("Welcome with a player id that is not UTF-8 of at most " +
                                std::to_string(max_player_id_bytes) + " bytes");
                }
                w.player_id = player->str();
            }
            std::string schema_why;
            auto components = decode_schema(m->components(), &schema_why);
            if (!components) {
                return fail("Welcome with an unusable schema: " + schema_why);
            }
            w.components = std::move(*components);
            if (!std::isfinite(m->interest_radius()) || m->interest_radius() < 0.0F) {
                return fail("Welcome with an interest radius that is not a number >= 0");
            }
            w.interest_radius = m->interest_radius();
            w.client_budget = m->client_budget();
            return w;
        }
        case wire::ServerBody::CommandResult: {
            const auto* m = message.body_as_CommandResult();
            // A code newer than this client is kept as it came (to_string() names it
            // "unknown error"): a failed command is a failed command, whatever the reason.
            std::string text = m->message() != nullptr ? m->message()->str() : "";
            if (text.size() > 4096 || !valid_utf8(text)) {
                return fail("CommandResult message is not UTF-8 of at most 4096 bytes");
            }
            ecs::Entity e;
            if (const auto* ref = m->entity()) {
                e = ecs::Entity{ref->index(), ref->version()};
            }
            return command_result{m->request_id(), m->ok(), m->code(), std::move(text), e};
        }
        case wire::ServerBody::Pong: {
            const auto* m = message.body_as_Pong();
            return pong{m->nonce(), m->tick()};
        }
        case wire::ServerBody::Checksum: {
            const auto* m = message.body_as_Checksum();
            if (m->first_index() >= m->end_index()) {
                return fail("Checksum covers an empty index range");
            }
            checksum_report report{m->tick(), m->hash(), m->entity_count(), m->first_index(),
                                   m->end_index(), {}};
            if (const auto* excluded = m->excluded()) {
                report.excluded.assign(excluded->begin(), excluded->end());
            }
            return report;
        }
        case wire::ServerBody::Disconnect: {
            const auto* reason = message.body_as_Disconnect()->reason();
            std::string text = reason != nullptr ? reason->str() : "";
            if (text.size() > max_reason_bytes || !valid_utf8(text)) {
                return fail("Disconnect reason is not UTF-8 of at most 256 bytes");
            }
            return disconnect{std::move(text)};
        }
        case wire::ServerBody::InputAck: {
            const auto* m = message.body_as_InputAck();
            if (m->applied_tick() > m->tick()) {
                return fail("InputAck applied an input of a tick it has not run");
            }
            return input_ack{m->tick(), m->applied_tick(), m->lead(), m->late(), m->repeated()};
        }
        case wire::ServerBody::InputRejected: {
            const auto* m = message.body_as_InputRejected();
            std::string text = m->message() != nullptr ? m->message()->str() : "";
            if (text.size() > 4096 || !valid_utf8(text)) {
                return fail("InputRejected message is not UTF-8 of at most 4096 bytes");
            }
            return input_rejected{m->first_tick(), m->code(), std::move(text), m->refused()};
        }
        case wire::ServerBody::Snapshot:
        case wire::ServerBody::Delta:
            return fail("Snapshot and Delta go to the mirror");
        case wire::ServerBody::NONE:
        default:
            return fail("unknown server message type " +
                        std::to_string(static_cast<unsigned>(message.body_type())));
    }
}

const char* message_name(const client_message& message) noexcept {
    static constexpr std::array names{"Hello", "Spawn", "Destroy", "SetComponent", "RemoveComponent",
                                      "Ping", "ResyncRequest", "Focus", "Input"};
    static_assert(names.size() == std::variant_size_v<client_message>,
                  "a name for every client message");
    return names[message.index()];
}

const char* to_string(wire::ErrorCode code) noexcept {
    if (code < wire::ErrorCode::MIN || code > wire::ErrorCode::MAX) {
        return "unknown error";
    }
    return wire::EnumNameErrorCode(code);
}

bool valid_utf8(std::string_view text) noexcept {
    std::size_t i = 0;
    while (i < text.size()) {
        const auto c = static_cast<unsigned char>(text[i]);
        std::size_t extra = 0;
        std::uint32_t cp = 0;
        if (c < 0x80) {
            ++i;
            continue;
        }
        if ((c & 0xE0U) == 0xC0U) {
            extra = 1;
            cp = c & 0x1FU;
        } else if ((c & 0xF0U) == 0xE0U) {
            extra = 2;
            cp = c & 0x0FU;
        } else if ((c & 0xF8U) == 0xF0U) {
            extra = 3;
            cp = c & 0x07U;
        } else {
            return false;
        }
        if (i + extra >= text.size()) {
            return false;
        }
        for (std::size_t k = 1; k <= extra; ++k) {
            const auto cc = static_cast<unsigned char>(text[i + k]);
            if ((cc & 0xC0U) != 0x80U) {
                return false;
            }
            cp = (cp << 6U) | (cc & 0x3FU);
        }
        // Overlong forms, surrogates and code points past U+10FFFF are invalid.
        if ((extra == 1 && cp < 0x80) || (extra == 2 && cp < 0x800) ||
            (extra == 3 && cp < 0x10000) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            return false;
        }
        i += extra + 1;
    }
    return true;
}

}  // namespace ecsnet::protocol
