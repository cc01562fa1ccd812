#include "ecsnet/server/admission/admission.hpp"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <array>
#include <stdexcept>
#include <utility>

#include "ecsnet/server/operations/logging.hpp"

namespace ecsnet::server {

admission::admission(const settings& s, std::function<bool(std::uint32_t)> owns_entities)
    : world_id_{s.world_id},
      auth_token_{s.auth_token},
      owners_{std::move(owns_entities)},
      admitted_tokens_{s.max_remembered_tokens} {
    if (!s.token_secret.empty() && !s.token_public_key.empty()) {
        throw std::invalid_argument("give --token-secret or --token-public-key, not both");
    }
    if (!s.token_secret.empty()) {
        tokens_ = hs256_verifier(s.token_secret);
    } else if (!s.token_public_key.empty()) {
        tokens_ = es256_verifier(read_key_file(s.token_public_key));
    }
}

std::optional<std::string> admission::refuse_version(std::uint32_t version) {
    if (version < protocol::oldest_protocol_version || version > protocol::protocol_version) {
        return "protocol version " + std::to_string(version) + " not supported (server speaks " +
               std::to_string(protocol::oldest_protocol_version) + " to " +
               std::to_string(protocol::protocol_version) + ")";
    }
    return std::nullopt;
}

bool admission::secret_accepted(const std::string& presented) const {
    if (auth_token_.empty()) {
        return true;
    }
    // Constant time in the content: do not leak how much of the secret matched. Comparing
    // digests also hides the length.
    std::array<unsigned char, SHA256_DIGEST_LENGTH> x{};
    std::array<unsigned char, SHA256_DIGEST_LENGTH> y{};
    SHA256(reinterpret_cast<const unsigned char*>(presented.data()), presented.size(), x.data());
    SHA256(reinterpret_cast<const unsigned char*>(auth_token_.data()), auth_token_.size(), y.data());
    return CRYPTO_memcmp(x.data(), y.data(), x.size()) == 0;
}

bool admission::has_credential(const protocol::hello& hello) const {
    return !tokens_ || !hello.connect_token.empty() || owners_.find_by_key(hello.resume_key).has_value();
}

std::optional<std::string> admission::identify(const protocol::hello& hello,
                                               protocol::welcome& welcome,
                                               std::optional<connect_token_claims>& token) {
    // Ownership follows a credential, never the name (display only): the resume key this
    // server gave the owner at an earlier Welcome, or a verified connect token's player.
    owner_registry::claim claim;
    if (!tokens_) {
        claim = owners_.claim_by_key(hello.resume_key);
    } else if (auto resumed = owners_.find_by_key(hello.resume_key)) {
        claim = *resumed;  // a reconnect: no new token needed, a used one is not looked at
    } else if (hello.connect_token.empty()) {
        return std::string{hello.resume_key.empty()
                               ? "connect token required (this server issues identities "
                                 "through its game backend)"
                               : "resume key unknown (its owner is gone) and no connect token: "
                                 "get a new token from the game's backend"};
    } else {
        auto verified = verify_connect_token(hello.connect_token, *tokens_, world_id_);
        if (auto* why = std::get_if<std::string>(&verified)) {
            return std::move(*why);
        }
        auto& claims = std::get<connect_token_claims>(verified);
        switch (admitted_tokens_.check(claims.player, claims.jti,
                                       std::chrono::system_clock::now())) {
        case replay_cache::verdict::replayed:
            return "connect token already used (jti " + printable(claims.jti) +
                   "): reconnect with Welcome's resume key, or get a new token";
        case replay_cache::verdict::full:
            return "connect token refused: " + std::to_string(admitted_tokens_.capacity()) +
                   " admitted tokens are remembered until they expire "
                   "(--max-remembered-tokens); try again later";
        case replay_cache::verdict::fresh:
            break;
        }
        claim = owners_.claim_by_player(claims.player);
        token = std::move(claims);
    }
    if (claim.new_key && on_new_owner) {
        on_new_owner(owners_.save(claim.owner));
    }
    welcome.player_id = owners_.player_of(claim.owner);
    welcome.resume_key.assign(claim.key->begin(), claim.key->end());
    welcome.client_id = claim.owner;
    return std::nullopt;
}

void admission::remember(const connect_token_claims& token) {
    admitted_tokens_.remember(token.player, token.jti, token.expires);
    if (on_token_admitted) {
        on_token_admitted(replay_cache::entry{token.player, token.jti, token.expires});
    }
}

void admission::pending_started(std::uint64_t session, const std::string& address) {
    pending_.insert(session);
    ++pending_per_address_[address];
}

void admission::pending_ended(std::uint64_t session, const std::string& address) {
    pending_.erase(session);
    const auto it = pending_per_address_.find(address);
    if (it != pending_per_address_.end() && --it->second == 0) {
        pending_per_address_.erase(it);
    }
}

std::size_t admission::pending_from(const std::string& address) const {
    const auto it = pending_per_address_.find(address);
    return it == pending_per_address_.end() ? 0 : it->second;
}

void admission::left(std::uint32_t owner, clock::time_point despawn_at) {
    departed_[owner] = despawn_at;
    departures_.push_back(departure{despawn_at, owner});
}

std::vector<std::uint32_t> admission::take_departed(clock::time_point now) {
    std::vector<std::uint32_t> gone;
    while (!departures_.empty() && departures_.front().despawn_at <= now) {
        const departure d = departures_.front();
        departures_.pop_front();
        const auto it = departed_.find(d.owner);
        if (it == departed_.end() || it->second != d.despawn_at) {
            continue;  // came back (or left again later: a later entry stands for it)
        }
        departed_.erase(it);
        if (owners_.connections(d.owner) == 0) {
            gone.push_back(d.owner);
        }
    }
    return gone;
}

}  // namespace ecsnet::server
