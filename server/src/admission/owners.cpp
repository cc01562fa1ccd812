#include "ecsnet/server/admission/owners.hpp"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <algorithm>
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
        const std::string digest = digest_of(presented);
        const auto found = by_key_digest_.find(digest);
        if (found != by_key_digest_.end()) {
            const auto it = owners_.find(found->second);
            if (it == owners_.end()) {
                return std::nullopt;
            }
            const record& r = it->second;
            // A restored owner has only the digest: matching it is knowing the key.
            const bool match =
                r.key ? CRYPTO_memcmp(r.key->data(), presented.data(), presented.size()) == 0
                      : r.digest.size() == digest.size() &&
                            CRYPTO_memcmp(r.digest.data(), digest.data(), digest.size()) == 0;
            if (match) {
                resume_key key{};
                std::copy(presented.begin(), presented.end(), key.begin());
                return claim{found->second, key, true};
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
    r.digest = digest_of(*r.key);
    by_key_digest_.emplace(r.digest, id);
    const auto key = r.key;
    owners_.emplace(id, std::move(r));
    return claim{id, key, false, true};
}

owner_registry::claim owner_registry::claim_by_player(const std::string& player) {
    if (const auto found = by_player_.find(player); found != by_player_.end()) {
        const auto it = owners_.find(found->second);
        if (it == owners_.end()) {
            return claim{found->second, std::nullopt, true};
        }
        record& r = it->second;
        if (r.key) {
            return claim{found->second, r.key, true};
        }
        // Restored from disk: the key itself was never kept. The token proves the player;
        // it gets a new key (the old one stops working).
        if (!r.digest.empty()) {
            by_key_digest_.erase(r.digest);
        }
        r.key = fresh_key();
        r.digest = digest_of(*r.key);
        by_key_digest_.emplace(r.digest, found->second);
        return claim{found->second, r.key, true, true};
    }
    const std::uint32_t id = allocate();
    record r;
    r.player = player;
    r.key = fresh_key();
    r.digest = digest_of(*r.key);
    by_key_digest_.emplace(r.digest, id);
    const auto key = r.key;
    owners_.emplace(id, std::move(r));
    by_player_.emplace(player, id);
    return claim{id, key, false, true};
}

std::vector<stored_owner> owner_registry::save() const {
    std::vector<stored_owner> out;
    out.reserve(owners_.size());
    for (const auto& [id, r] : owners_) {
        out.push_back(save(id));
    }
    std::sort(out.begin(), out.end(),
              [](const stored_owner& a, const stored_owner& b) { return a.id < b.id; });
    return out;
}

stored_owner owner_registry::save(std::uint32_t owner) const {
    stored_owner out;
    out.id = owner;
    const auto it = owners_.find(owner);
    if (it == owners_.end()) {
        return out;
    }
    out.player = it->second.player;
    if (it->second.digest.size() == out.key_digest.size()) {
        std::copy(it->second.digest.begin(), it->second.digest.end(),
                  reinterpret_cast<char*>(out.key_digest.data()));
        out.has_key = true;
    }
    return out;
}

void owner_registry::restore(const stored_owner& owner) {
    if (owner.id == 0) {
        return;  // the server
    }
    if (const auto it = owners_.find(owner.id); it != owners_.end()) {
        forget(it);
    }
    record r;
    if (owner.has_key) {
        r.digest.assign(reinterpret_cast<const char*>(owner.key_digest.data()),
                        owner.key_digest.size());
        by_key_digest_[r.digest] = owner.id;
    }
    r.player = owner.player;
    if (!r.player.empty()) {
        by_player_[r.player] = owner.id;
    }
    owners_.emplace(owner.id, std::move(r));
}

std::vector<std::uint32_t> owner_registry::ids() const {
    std::vector<std::uint32_t> out;
    out.reserve(owners_.size());
    for (const auto& [id, r] : owners_) {
        out.push_back(id);
    }
    std::sort(out.begin(), out.end());
    return out;
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
    if (!it->second.digest.empty()) {
        by_key_digest_.erase(it->second.digest);
    }
    if (!it->second.player.empty()) {
        by_player_.erase(it->second.player);
    }
    owners_.erase(it);
}

}  // namespace ecsnet::server
