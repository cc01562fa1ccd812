#pragma once

// Conversions between the state files' tables (schemas/state.fbs) and the server's types,
// shared by the checkpoint codec (state_dir.cpp), the journal and inspect-state.

#include <flatbuffers/flatbuffers.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include "ecsnet/protocol/stored.hpp"
#include "ecsnet/server/admission/owners.hpp"
#include "ecsnet/server/admission/replay_cache.hpp"
#include "ecsnet/wire/state_generated.h"

namespace ecsnet::server::detail {

inline flatbuffers::Offset<state::StoredType> write_type(flatbuffers::FlatBufferBuilder& fbb,
                                                         const protocol::stored_type& type) {
    std::vector<flatbuffers::Offset<state::StoredField>> fields;
    fields.reserve(type.fields.size());
    for (const protocol::stored_field& f : type.fields) {
        fields.push_back(state::CreateStoredField(fbb, fbb.CreateString(f.name),
                                                  static_cast<std::uint8_t>(f.type)));
    }
    return state::CreateStoredType(fbb, fbb.CreateString(type.name), type.replicated,
                                   type.is_string, fbb.CreateVector(fields));
}

// The type a verified table describes, or why it cannot be (an unknown field type).
inline std::optional<protocol::stored_type> read_type(const state::StoredType& table,
                                                      std::string* why) {
    protocol::stored_type type;
    type.name = table.name() == nullptr ? std::string{} : table.name()->str();
    type.replicated = table.replicated();
    type.is_string = table.is_string();
    if (type.name.empty()) {
        *why = "a stored type has no name";
        return std::nullopt;
    }
    if (table.fields() != nullptr) {
        for (const state::StoredField* f : *table.fields()) {
            const auto field_type = protocol::to_field_type(f->type());
            if (!field_type) {
                *why = "type '" + type.name + "' has a field of unknown type " +
                       std::to_string(f->type());
                return std::nullopt;
            }
            type.fields.push_back(protocol::stored_field{
                f->name() == nullptr ? std::string{} : f->name()->str(), *field_type});
        }
    }
    if (type.is_string && !type.fields.empty()) {
        *why = "string type '" + type.name + "' has fields";
        return std::nullopt;
    }
    return type;
}

inline flatbuffers::Offset<state::StoredOwner> write_owner(flatbuffers::FlatBufferBuilder& fbb,
                                                           const stored_owner& owner) {
    const auto player = fbb.CreateString(owner.player);
    const auto digest = owner.has_key
                            ? fbb.CreateVector(owner.key_digest.data(), owner.key_digest.size())
                            : flatbuffers::Offset<flatbuffers::Vector<std::uint8_t>>{};
    return state::CreateStoredOwner(fbb, owner.id, player, digest);
}

inline stored_owner read_owner(const state::StoredOwner& table) {
    stored_owner owner;
    owner.id = table.id();
    owner.player = table.player() == nullptr ? std::string{} : table.player()->str();
    if (table.key_digest() != nullptr && table.key_digest()->size() == owner.key_digest.size()) {
        std::memcpy(owner.key_digest.data(), table.key_digest()->data(), owner.key_digest.size());
        owner.has_key = true;
    }
    return owner;
}

inline flatbuffers::Offset<state::AdmittedToken> write_token(flatbuffers::FlatBufferBuilder& fbb,
                                                             const replay_cache::entry& token) {
    const auto player = fbb.CreateString(token.player);
    const auto jti = fbb.CreateString(token.jti);
    const auto expires = std::chrono::duration_cast<std::chrono::seconds>(
                             token.expires.time_since_epoch())
                             .count();
    return state::CreateAdmittedToken(fbb, player, jti, expires);
}

inline replay_cache::entry read_token(const state::AdmittedToken& table) {
    return replay_cache::entry{
        table.player() == nullptr ? std::string{} : table.player()->str(),
        table.jti() == nullptr ? std::string{} : table.jti()->str(),
        replay_cache::time_point{std::chrono::seconds{table.expires_unix_s()}}};
}

}  // namespace ecsnet::server::detail
