#include "ecsnet/server/connect_token.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <array>
#include <climits>
#include <cstdint>
#include <charconv>
#include <ctime>
#include <optional>
#include <stdexcept>
#include <vector>

#include "ecsnet/protocol/messages.hpp"

namespace ecsnet::server {

namespace {

constexpr std::size_t mac_bytes = 32;  // SHA-256
constexpr std::size_t max_id_bytes = 64;

using bytes = std::vector<std::uint8_t>;

std::array<std::uint8_t, mac_bytes> mac_of(const bytes& body, std::string_view secret) {
    std::array<std::uint8_t, mac_bytes> mac{};
    unsigned int length = 0;
    if (HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), body.data(), body.size(),
             mac.data(), &length) == nullptr ||
        length != mac_bytes) {
        throw std::runtime_error("HMAC-SHA256 failed (OpenSSL)");
    }
    return mac;
}

// RFC 4648 section 5, without padding: tokens travel in URLs, headers and shell arguments.
std::string base64url(const bytes& data) {
    std::string out(4 * ((data.size() + 2) / 3), '\0');
    const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data.data(),
                                  static_cast<int>(data.size()));
    out.resize(static_cast<std::size_t>(n));
    while (!out.empty() && out.back() == '=') {
        out.pop_back();
    }
    for (char& c : out) {
        c = c == '+' ? '-' : c == '/' ? '_' : c;
    }
    return out;
}

std::optional<bytes> from_base64url(std::string_view text) {
    std::string standard{text};
    for (char& c : standard) {
        if (c == '-') {
            c = '+';
        } else if (c == '_') {
            c = '/';
        } else if (c == '+' || c == '/' || c == '=') {
            return std::nullopt;  // only the URL alphabet, no padding
        }
    }
    const std::size_t pad = (4 - standard.size() % 4) % 4;
    if (pad == 3) {
        return std::nullopt;
    }
    standard.append(pad, '=');
    bytes out(standard.size() / 4 * 3);
    const int n = EVP_DecodeBlock(out.data(), reinterpret_cast<const unsigned char*>(standard.data()),
                                  static_cast<int>(standard.size()));
    if (n < 0) {
        return std::nullopt;
    }
    out.resize(static_cast<std::size_t>(n) - pad);  // EVP_DecodeBlock counts padding as zeros
    return out;
}

void check_id(std::string_view what, std::string_view id, std::size_t min) {
    if (id.size() < min || id.size() > max_id_bytes || !protocol::valid_utf8(id)) {
        throw std::invalid_argument(std::string{what} + " must be UTF-8 of " + std::to_string(min) +
                                    " to " + std::to_string(max_id_bytes) + " bytes");
    }
}

void check_secret(std::string_view secret) {
    if (secret.size() < min_token_secret_bytes) {
        throw std::invalid_argument("the token secret must be at least " +
                                    std::to_string(min_token_secret_bytes) +
                                    " bytes (for example: openssl rand -hex 32)");
    }
}

std::string utc_text(std::chrono::system_clock::time_point t) {
    const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    std::array<char, 32> text{};
    const std::size_t n = std::strftime(text.data(), text.size(), "%Y-%m-%dT%H:%M:%SZ", &utc);
    return std::string(text.data(), n);
}

}  // namespace

std::string issue_connect_token(const connect_token_claims& claims, std::string_view secret) {
    check_secret(secret);
    check_id("the player id", claims.player, 1);
    check_id("the world id", claims.world, 0);
    const auto expires = std::chrono::duration_cast<std::chrono::seconds>(
                             claims.expires.time_since_epoch())
                             .count();
    if (expires < 0) {
        throw std::invalid_argument("the expiry must be after 1970");
    }
    bytes body;
    body.push_back(connect_token_version);
    for (int i = 0; i < 8; ++i) {
        body.push_back(static_cast<std::uint8_t>(static_cast<std::uint64_t>(expires) >> (8 * i)));
    }
    body.push_back(static_cast<std::uint8_t>(claims.player.size()));
    body.insert(body.end(), claims.player.begin(), claims.player.end());
    body.push_back(static_cast<std::uint8_t>(claims.world.size()));
    body.insert(body.end(), claims.world.begin(), claims.world.end());
    const auto mac = mac_of(body, secret);
    body.insert(body.end(), mac.begin(), mac.end());
    return base64url(body);
}

std::variant<connect_token_claims, std::string> verify_connect_token(
    std::string_view token, std::string_view secret, std::string_view world,
    std::chrono::system_clock::time_point now) {
    const auto raw = from_base64url(token);
    // version, expiry, two lengths, at least a 1-byte player, the MAC
    constexpr std::size_t smallest = 1 + 8 + 1 + 1 + 1 + mac_bytes;
    if (!raw || raw->size() < smallest) {
        return std::string{"connect token is malformed (not the base64url text of a token)"};
    }
    if ((*raw)[0] != connect_token_version) {
        return "connect token version " + std::to_string((*raw)[0]) + " is not supported (" +
               std::to_string(connect_token_version) + " is)";
    }
    const bytes body(raw->begin(), raw->end() - mac_bytes);
    const auto expected = mac_of(body, secret);
    if (CRYPTO_memcmp(expected.data(), raw->data() + body.size(), mac_bytes) != 0) {
        return std::string{"connect token signature does not match (forged, altered, or signed "
                           "with another secret)"};
    }
    // Signed by our backend from here on; the layout is still checked, not trusted.
    std::uint64_t expires = 0;
    for (int i = 0; i < 8; ++i) {
        expires |= static_cast<std::uint64_t>(body[1 + static_cast<std::size_t>(i)]) << (8 * i);
    }
    std::size_t at = 9;
    const auto read_id = [&](std::string& out) {
        if (at >= body.size() || body[at] > max_id_bytes || at + 1 + body[at] > body.size()) {
            return false;
        }
        out.assign(reinterpret_cast<const char*>(body.data() + at + 1), body[at]);
        at += 1 + body[at];
        return protocol::valid_utf8(out);
    };
    connect_token_claims claims;
    if (!read_id(claims.player) || claims.player.empty() || !read_id(claims.world) ||
        at != body.size() || expires > static_cast<std::uint64_t>(INT64_MAX / 1'000'000'000)) {
        return std::string{"connect token is malformed (bad field lengths)"};
    }
    claims.expires = std::chrono::system_clock::time_point{
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::seconds{static_cast<std::int64_t>(expires)})};
    if (claims.expires <= now) {
        return "connect token expired at " + utc_text(claims.expires) + " (now " + utc_text(now) +
               ")";
    }
    if (claims.world != world) {
        return "connect token is for world '" + claims.world + "', this server is world '" +
               std::string{world} + "'";
    }
    return claims;
}

std::chrono::seconds parse_ttl(std::string_view text) {
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    const std::string_view unit{end, static_cast<std::size_t>(text.data() + text.size() - end)};
    std::uint64_t scale = 0;
    if (unit.empty() || unit == "s") {
        scale = 1;
    } else if (unit == "m") {
        scale = 60;
    } else if (unit == "h") {
        scale = 3600;
    } else if (unit == "d") {
        scale = 86'400;
    }
    constexpr std::uint64_t ten_years = 10ULL * 366 * 86'400;
    if (ec != std::errc{} || end == text.data() || scale == 0 || value == 0 ||
        value > ten_years / scale) {
        throw std::invalid_argument("'" + std::string{text} +
                                    "' is not a duration such as 90s, 15m, 1h or 7d (at most "
                                    "10 years)");
    }
    return std::chrono::seconds{static_cast<std::int64_t>(value * scale)};
}

}  // namespace ecsnet::server
