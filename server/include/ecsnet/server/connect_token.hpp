#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

// Connect tokens: a trusted backend vouches for a player. In the spirit of netcode.io's
// connect tokens: who (player id), where (world id), until when (expiry), and an
// HMAC-SHA256 over them with a secret shared by the backend and the server. The exact bytes
// are in docs/PROTOCOL.md ("Identity") so a backend in any language can issue them.
namespace ecsnet::server {

inline constexpr std::uint8_t connect_token_version = 1;
inline constexpr std::size_t min_token_secret_bytes = 16;

struct connect_token_claims {
    std::string player;  // 1..64 bytes of UTF-8
    std::string world;   // 0..64 bytes of UTF-8
    std::chrono::system_clock::time_point expires;
    friend bool operator==(const connect_token_claims&, const connect_token_claims&) = default;
};

// The text form of a token: base64url without padding of the body and its MAC. Throws
// std::invalid_argument for a player or world id out of bounds, or a secret that is too short.
[[nodiscard]] std::string issue_connect_token(const connect_token_claims& claims,
                                              std::string_view secret);

// The claims, or why the token is refused ("connect token expired ...", "... signature does
// not match ...", "... for world 'x', this server is 'y'"). The MAC is checked, in constant
// time, before anything the token says is believed.
[[nodiscard]] std::variant<connect_token_claims, std::string> verify_connect_token(
    std::string_view token, std::string_view secret, std::string_view world,
    std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

// "90", "90s", "15m", "1h", "7d" -> seconds; throws std::invalid_argument.
[[nodiscard]] std::chrono::seconds parse_ttl(std::string_view text);

}  // namespace ecsnet::server
