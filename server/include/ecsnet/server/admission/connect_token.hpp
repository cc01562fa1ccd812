#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

// Connect tokens: a trusted backend vouches for a player with a standard JWT (RFC 7519), so it
// issues them with the JWT library it already has. Claims: `sub` the player, `aud` the world,
// `exp`, optional `nbf`, `jti` a nonce (the server admits each once; replay_cache.hpp). The
// algorithm is the server's choice, never the token's: HS256 with a secret shared by backend
// and server, or ES256 with a public key, so a fleet of servers can verify but not mint.
// docs/PROTOCOL.md ("Identity") has the exact rules and known-answer tokens. Verified with
// cpp-jwt (Debian's libcpp-jwt-dev, header-only over OpenSSL); docs/SERVER.md says why.
namespace ecsnet::server {

inline constexpr std::size_t min_token_secret_bytes = 16;
inline constexpr std::size_t max_player_id_bytes = 64;
inline constexpr std::size_t max_world_id_bytes = 64;
inline constexpr std::size_t max_jti_bytes = 128;
// A token is accepted this long before its `nbf`: a backend's clock a little ahead of ours.
inline constexpr std::chrono::seconds not_before_leeway{10};

enum class token_algorithm { hs256, es256 };
[[nodiscard]] std::string_view name_of(token_algorithm algorithm) noexcept;

struct connect_token_claims {
    std::string player;  // sub: 1..64 bytes of UTF-8
    std::string world;   // aud: 0..64 bytes of UTF-8 (the server's --world-id)
    std::string jti;     // 1..128 bytes of UTF-8
    std::chrono::system_clock::time_point expires;                   // exp
    std::optional<std::chrono::system_clock::time_point> not_before;  // nbf
    friend bool operator==(const connect_token_claims&, const connect_token_claims&) = default;
};

// What a server checks tokens with: the algorithm and its key, fixed by configuration.
struct token_verifier {
    token_algorithm algorithm{token_algorithm::hs256};
    std::string key;  // the HS256 secret, or the ES256 public key (PEM)
};

// Throw std::invalid_argument with the reason: a secret under 16 bytes, a PEM that is not an
// EC P-256 public key.
[[nodiscard]] token_verifier hs256_verifier(std::string secret);
[[nodiscard]] token_verifier es256_verifier(std::string public_key_pem);
// A key file's text; throws std::invalid_argument naming the file when it cannot be read.
[[nodiscard]] std::string read_key_file(const std::string& path);

// 128 random bits as 32 hex digits, for `jti`.
[[nodiscard]] std::string random_jti();

// The compact JWT. `signing_key` is the HS256 secret or the ES256 private key (PEM). Throws
// std::invalid_argument for claims out of bounds or an unusable key.
[[nodiscard]] std::string issue_connect_token(const connect_token_claims& claims,
                                              token_algorithm algorithm,
                                              std::string_view signing_key);

// The claims, or why the token is refused. Checked in this order, the first failure is the
// reason (docs/PROTOCOL.md lists the texts): malformed, algorithm (none, or not the
// configured one), signature, claims present and typed, expired, not yet valid, audience.
// The signature is checked before anything the token says is believed.
[[nodiscard]] std::variant<connect_token_claims, std::string> verify_connect_token(
    std::string_view token, const token_verifier& verifier, std::string_view world,
    std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

// "90", "90s", "15m", "1h", "7d" -> seconds; throws std::invalid_argument.
[[nodiscard]] std::chrono::seconds parse_ttl(std::string_view text);

namespace detail {
// Whether `signature` (base64url, no padding) is the HMAC-SHA256 of `signed_part` under `key`.
// The MACs are compared whole and in constant time (CRYPTO_memcmp): cpp-jwt compares their
// base64 text with an early exit, which leaks how many leading characters matched.
[[nodiscard]] bool hs256_signature_matches(std::string_view key, std::string_view signed_part,
                                           std::string_view signature);
}  // namespace detail

}  // namespace ecsnet::server
