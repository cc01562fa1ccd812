#include "ecsnet/server/owners.hpp"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <stdexcept>

namespace ecsnet::server {

namespace {

std::string digest_of(std::span<const std::uint8_t> key) {
    std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
    SHA256(key.data(), key.size(), digest.data());
    return std::string(reinterpret_cast<const char*>(digest.data()), digest.size());
}

owner_registry::resume_key fresh_key() {
    owner_registry::resume_key key{};
    if (RAND_bytes(key.data(), static_cast<int>(key.size())) != 1) {
        throw std::runtime_error("cannot draw a resume key: OpenSSL's RAND_bytes failed");
    }
    return key;
}

}  // namespace

owner_registry::owner_registry(owns_entities_fn owns_entities, std::uint32_t first_id)
    : owns_entities_{std::move(owns_entities)}, next_id_{first_id == 0 ? 1 : first_id} {}

std::uint32_t owner_registry::allocate() {
    // 2^32 - 1 candidates; live owners are bounded by connections and entity owners, far
    // fewer, so this loop ends; the bound only guards against a full table.
    for (std::uint64_t tries = 0; tries < (std::uint64_t{1} << 32); ++tries) {
        const std::uint32_t id = next_id_;
        next_id_ = next_id_ == UINT32_MAX ? 1 : next_id_ + 1;  // 0 is the server
        if (!owners_.contains(id) && !owns_entities_(id)) {
            return id;
        }
    }
    throw std::runtime_error("no free owner id");
}

std::optional<owner_registry::claim> owner_registry::find_by_key(
    std::span<const std::uint8_t> presented) const {
    if (presented.size() == protocol::resume_key_bytes) {
        const auto found = by_key_digest_.find(digest_of(presented));
        if (found != by_key_digest_.end()) {
            const auto it = owners_.find(found->second);
            if (it != owners_.end() && it->second.key &&
                CRYPTO_memcmp(it->second.key->data(), presented.data(), presented.size()) == 0) {
                return claim{found->second, it->second.key, true};
            }
        }
    }
    return std::nullopt;
}

std::string owner_registry::player_of(std::uint32_t owner) const {
    const auto it = owners_.find(owner);
    return it == owners_.end() ? std::string{} : it->second.player;
}

owner_registry::claim owner_registry::claim_by_key(std::span<const std::uint8_t> presented) {
    if (auto found = find_by_key(presented)) {
        return *found;
    }
    const std::uint32_t id = allocate();
    record r;
    r.key = fresh_key();
    by_key_digest_.emplace(digest_of(*r.key), id);
    const auto key = r.key;
    owners_.emplace(id, std::move(r));
    return claim{id, key, false};
}

owner_registry::claim owner_registry::claim_by_player(const std::string& player) {
    if (const auto found = by_player_.find(player); found != by_player_.end()) {
        const auto it = owners_.find(found->second);
        return claim{found->second, it == owners_.end() ? std::nullopt : it->second.key, true};
    }
    const std::uint32_t id = allocate();
    record r;
    r.player = player;
    r.key = fresh_key();
    by_key_digest_.emplace(digest_of(*r.key), id);
    const auto key = r.key;
    owners_.emplace(id, std::move(r));
    by_player_.emplace(player, id);
    return claim{id, key, false};
}

void owner_registry::connected(std::uint32_t owner) {
    const auto it = owners_.find(owner);
    if (it != owners_.end()) {
        ++it->second.connections;
    }
}

std::size_t owner_registry::disconnected(std::uint32_t owner) {
    const auto it = owners_.find(owner);
    if (it == owners_.end() || it->second.connections == 0) {
        return 0;
    }
    return --it->second.connections;
}

std::size_t owner_registry::connections(std::uint32_t owner) const noexcept {
    const auto it = owners_.find(owner);
    return it == owners_.end() ? 0 : it->second.connections;
}

bool owner_registry::forget_if_idle(std::uint32_t owner) {
    const auto it = owners_.find(owner);
    if (it == owners_.end() || it->second.connections > 0 || owns_entities_(owner)) {
        return false;
    }
    forget(it);
    return true;
}

void owner_registry::forget(std::unordered_map<std::uint32_t, record>::iterator it) {
    if (it->second.key) {
        by_key_digest_.erase(digest_of(*it->second.key));
    }
    if (!it->second.player.empty()) {
        by_player_.erase(it->second.player);
    }
    owners_.erase(it);
}

}  // namespace ecsnet::server
