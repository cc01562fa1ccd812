#pragma once

// Who may join, and as whom: the owners and their credentials (the resume keys this server
// hands out, connect tokens and the cache of admitted ones), the connections still waiting for
// their Hello, and the reconnect grace of owners whose last connection left. The server asks
// it on every connection, Hello and disconnect; the sessions and their seats stay with the
// server (docs/SERVER.md, "Identity").

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/server/admission/connect_token.hpp"
#include "ecsnet/server/admission/owners.hpp"
#include "ecsnet/server/admission/replay_cache.hpp"

namespace ecsnet::server {

class admission {
public:
    using clock = std::chrono::steady_clock;

    struct settings {
        std::string world_id;          // what a connect token's audience must name
        std::string token_secret;      // HS256 tokens; or
        std::string token_public_key;  // a PEM file: ES256 tokens; neither: resume keys only
        std::size_t max_remembered_tokens{0};
        std::string auth_token;  // a shared secret every player's Hello brings; empty: none
    };
    // `owns_entities(owner)`: whether the owner still owns an entity (an owner without
    // connections nor entities is forgotten). Throws std::invalid_argument (both a secret and
    // a key) or std::runtime_error (the key file cannot be read).
    admission(const settings& s, std::function<bool(std::uint32_t)> owns_entities);

    // What a restart must not lose, for the journal: an owner that just got its key (before
    // any command of it), an admitted token.
    std::function<void(const stored_owner&)> on_new_owner;
    std::function<void(const replay_cache::entry&)> on_token_admitted;

    // Why a Hello of this protocol version is refused; nothing when it is spoken here.
    [[nodiscard]] static std::optional<std::string> refuse_version(std::uint32_t version);
    // The shared secret (--auth-token) matches, or none is set. Constant time in the content.
    [[nodiscard]] bool secret_accepted(const std::string& presented) const;
    // Identity by connect tokens (else by resume keys only).
    [[nodiscard]] bool uses_tokens() const noexcept { return tokens_.has_value(); }
    // The Hello could name an owner: a token, a known resume key, or no tokens required.
    [[nodiscard]] bool has_credential(const protocol::hello& hello) const;
    // The owner the Hello's credential names, written into `welcome` (client id, player id,
    // resume key), or why it is refused. A verified, fresh token's claims go to `token`:
    // remember() them once the connection is admitted. A refusal leaves nothing behind but an
    // idle owner (forget_if_idle).
    [[nodiscard]] std::optional<std::string> identify(const protocol::hello& hello,
                                                      protocol::welcome& welcome,
                                                      std::optional<connect_token_claims>& token);
    // An admitted token: refused from now on (after a restart too, through on_token_admitted).
    void remember(const connect_token_claims& token);

    // Connections that have not sent Hello, by session id and address (--max-pending,
    // --max-pending-per-address).
    void pending_started(std::uint64_t session, const std::string& address);
    void pending_ended(std::uint64_t session, const std::string& address);
    [[nodiscard]] std::size_t pending() const noexcept { return pending_.size(); }
    [[nodiscard]] std::size_t pending_from(const std::string& address) const;
    // The session that has waited longest; only when pending() > 0.
    [[nodiscard]] std::uint64_t oldest_pending() const { return *pending_.begin(); }

    // The reconnect grace: an owner whose last connection left at `now` keeps its entities
    // until `despawn_at`, unless it comes back (returned()) before.
    void left(std::uint32_t owner, clock::time_point despawn_at);
    void returned(std::uint32_t owner) { departed_.erase(owner); }
    // The owners whose grace has ended by `now` and that have no connection: their entities go.
    [[nodiscard]] std::vector<std::uint32_t> take_departed(clock::time_point now);

    [[nodiscard]] owner_registry& owners() noexcept { return owners_; }
    [[nodiscard]] const owner_registry& owners() const noexcept { return owners_; }
    [[nodiscard]] replay_cache& admitted_tokens() noexcept { return admitted_tokens_; }

private:
    std::string world_id_;
    std::string auth_token_;
    std::optional<token_verifier> tokens_;
    owner_registry owners_;
    replay_cache admitted_tokens_;
    std::set<std::uint64_t> pending_;  // session ids, oldest first
    std::unordered_map<std::string, std::size_t> pending_per_address_;
    // In the order their grace ends (it is one length for all); an entry is stale when its
    // owner came back, or left again since (a later entry stands for it).
    struct departure {
        clock::time_point despawn_at;
        std::uint32_t owner;
    };
    std::deque<departure> departures_;
    std::unordered_map<std::uint32_t, clock::time_point> departed_;  // owner -> its despawn_at
};

}  // namespace ecsnet::server
