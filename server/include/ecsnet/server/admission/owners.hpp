#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "ecsnet/protocol/messages.hpp"

// Who owns what: the owner ids behind the Owner component and Welcome.client_id, bound to a
// credential, never to a self-declared name (docs/SERVER.md, "Identity"):
// - a verified connect token's player id: every connection of that player is one owner
//   (it too gets a resume key at Welcome, to reconnect without a new token);
// - otherwise a resume key, random and 256 bits, that the server gave the owner at Welcome:
//   a connection presenting it is that owner again; one without it is a new owner.
// An owner with no connection and no entity is forgotten, so the table is bounded by the
// live connections and entity owners. Ids never wrap to 0 (the server) nor collide with an
// owner still known or still owning entities.
namespace ecsnet::server {

// An owner as a checkpoint and the journal keep it (docs/PERSISTENCE.md): its credential's
// digest, never the resume key itself.
struct stored_owner {
    std::uint32_t id{0};
    std::string player;  // a connect token's player id; empty for a development owner
    std::array<std::uint8_t, 32> key_digest{};  // SHA-256 of its resume key
    bool has_key{false};
};

class owner_registry {
public:
    using resume_key = std::array<std::uint8_t, protocol::resume_key_bytes>;
    // True when `id` still owns entities: such an id is never handed out again.
    using owns_entities_fn = std::function<bool(std::uint32_t id)>;

    struct claim {
        std::uint32_t owner{};
        std::optional<resume_key> key;  // for Welcome: reconnects present it
        bool resumed{false};            // an existing owner (key or player seen before)
        bool new_key{false};            // the registry drew this key now (persist the owner)
    };

    explicit owner_registry(owns_entities_fn owns_entities, std::uint32_t first_id = 1);

    // Development identity: the owner of `presented` if it is a key this registry issued and
    // still knows (compared in constant time), else a new owner with a fresh key.
    [[nodiscard]] claim claim_by_key(std::span<const std::uint8_t> presented);
    // Token identity: the owner of a verified player id, created (with a resume key) on first
    // sight.
    [[nodiscard]] claim claim_by_player(const std::string& player);
    // The owner of a key this registry issued and still knows, if any; creates nothing. Token
    // mode resumes by key this way: an unknown key then needs a token.
    [[nodiscard]] std::optional<claim> find_by_key(std::span<const std::uint8_t> presented) const;
    // The player id an owner was claimed by (empty for a development owner or an unknown id).
    [[nodiscard]] std::string player_of(std::uint32_t owner) const;

    void connected(std::uint32_t owner);
    // Returns the connections the owner has left.
    std::size_t disconnected(std::uint32_t owner);
    [[nodiscard]] std::size_t connections(std::uint32_t owner) const noexcept;
    // Forgets the owner if it has no connection and owns no entity. Returns whether it did.
    bool forget_if_idle(std::uint32_t owner);

    // Persistence: every owner with its key's digest, the next id to try; restore() puts them
    // back (replacing owners of the same id). A restored owner has no key, only its digest: a
    // connection presenting the key is recognized by it; a player claimed again by token gets a
    // new key.
    [[nodiscard]] std::vector<stored_owner> save() const;
    [[nodiscard]] stored_owner save(std::uint32_t owner) const;
    [[nodiscard]] std::uint32_t next_id() const noexcept { return next_id_; }
    void restore(const stored_owner& owner);
    void set_next_id(std::uint32_t id) noexcept { next_id_ = id == 0 ? 1 : id; }
    // Ids of every owner (restore: forget the idle ones once the world is back).
    [[nodiscard]] std::vector<std::uint32_t> ids() const;

    [[nodiscard]] std::size_t size() const noexcept { return owners_.size(); }
    [[nodiscard]] bool contains(std::uint32_t owner) const noexcept { return owners_.contains(owner); }

private:
    struct record {
        std::size_t connections{0};
        std::optional<resume_key> key;  // none for an owner restored from disk
        std::string digest;             // SHA-256 of the key; empty when it has none
        std::string player;
    };

    [[nodiscard]] std::uint32_t allocate();
    void forget(std::unordered_map<std::uint32_t, record>::iterator it);

    owns_entities_fn owns_entities_;
    std::uint32_t next_id_;
    std::unordered_map<std::uint32_t, record> owners_;
    // Looked up by a SHA-256 of the key, so the lookup itself reveals nothing usable about
    // the stored keys; the key is then compared in constant time.
    std::unordered_map<std::string, std::uint32_t> by_key_digest_;
    std::unordered_map<std::string, std::uint32_t> by_player_;
};

}  // namespace ecsnet::server
