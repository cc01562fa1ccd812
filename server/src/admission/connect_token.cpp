#include "ecsnet/server/admission/connect_token.hpp"

// cpp-jwt defines non-inline functions in its headers: this is the only file that includes it.
#include <jwt/jwt.hpp>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rand.h>

#include <array>
#include <charconv>
#include <cmath>
#include <ctime>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>

#include "ecsnet/protocol/messages.hpp"

namespace ecsnet::server {

namespace {

using sys_clock = std::chrono::system_clock;

void check_id(std::string_view what, std::string_view id, std::size_t min, std::size_t max) {
    if (id.size() < min || id.size() > max || !protocol::valid_utf8(id)) {
        throw std::invalid_argument(std::string{what} + " must be UTF-8 of " + std::to_string(min) +
                                    " to " + std::to_string(max) + " bytes");
    }
}

std::string utc_text(sys_clock::time_point t) {
    const std::time_t seconds = sys_clock::to_time_t(t);
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    std::array<char, 32> text{};
    const std::size_t n = std::strftime(text.data(), text.size(), "%Y-%m-%dT%H:%M:%SZ", &utc);
    return std::string(text.data(), n);
}

std::int64_t unix_seconds(sys_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

// RFC 7515 section 2: base64url without padding. Canonical only (unused low bits zero), so a
// token has one spelling: a changed character is a changed token.
bool canonical_base64url(std::string_view part) {
    const auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '-') return 62;
        if (c == '_') return 63;
        return -1;
    };
    for (const char c : part) {
        if (value(c) < 0) {
            return false;
        }
    }
    switch (part.size() % 4) {
    case 1: return false;
    case 2: return (value(part.back()) & 0x0F) == 0;
    case 3: return (value(part.back()) & 0x03) == 0;
    default: return true;
    }
}

// A NumericDate (RFC 7519 section 2): a JSON number of seconds; a fraction is cut off.
std::optional<sys_clock::time_point> numeric_date(const nlohmann::json& v) {
    double seconds = 0;
    if (v.is_number_unsigned()) {
        seconds = static_cast<double>(v.get<std::uint64_t>());
    } else if (v.is_number_integer()) {
        seconds = static_cast<double>(v.get<std::int64_t>());
    } else if (v.is_number_float()) {
        seconds = std::floor(v.get<double>());
    } else {
        return std::nullopt;
    }
    // Within the range a time_point of nanoseconds holds (years 1678 to 2262).
    if (!std::isfinite(seconds) || seconds < -9.0e9 || seconds > 9.0e9) {
        return std::nullopt;
    }
    return sys_clock::time_point{std::chrono::duration_cast<sys_clock::duration>(
        std::chrono::seconds{static_cast<std::int64_t>(seconds)})};
}

bool string_claim(const nlohmann::json& payload, const char* name, std::size_t min,
                  std::size_t max, std::string& out) {
    const auto it = payload.find(name);
    if (it == payload.end() || !it->is_string()) {
        return false;
    }
    out = it->get<std::string>();
    return out.size() >= min && out.size() <= max && protocol::valid_utf8(out);
}

// A base64url JSON object whose top-level names are unique (RFC 7515 section 4: a duplicate
// is refused, not resolved, so no two parsers read one token differently).
bool json_object_of(std::string_view part, nlohmann::json& out) {
    try {
        std::set<std::string> names;
        bool duplicate = false;
        const nlohmann::json::parser_callback_t unique_names =
            [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
                if (depth == 1 && event == nlohmann::json::parse_event_t::key &&
                    !names.insert(parsed.get<std::string>()).second) {
                    duplicate = true;
                }
                return true;
            };
        out = nlohmann::json::parse(jwt::base64_uri_decode(part.data(), part.size()),
                                    unique_names);
        return out.is_object() && !duplicate;
    } catch (const std::exception&) {
        return false;
    }
}

struct pkey_deleter {
    void operator()(EVP_PKEY* key) const noexcept { EVP_PKEY_free(key); }
};

}  // namespace

std::string_view name_of(token_algorithm algorithm) noexcept {
    return algorithm == token_algorithm::es256 ? "ES256" : "HS256";
}

token_verifier hs256_verifier(std::string secret) {
    if (secret.size() < min_token_secret_bytes) {
        throw std::invalid_argument("the token secret must be at least " +
                                    std::to_string(min_token_secret_bytes) +
                                    " bytes (for example: openssl rand -hex 32)");
    }
    return token_verifier{token_algorithm::hs256, std::move(secret)};
}

token_verifier es256_verifier(std::string public_key_pem) {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio{
        BIO_new_mem_buf(public_key_pem.data(), static_cast<int>(public_key_pem.size())), &BIO_free};
    std::unique_ptr<EVP_PKEY, pkey_deleter> key{
        bio ? PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr) : nullptr};
    std::array<char, 64> group{};
    std::size_t group_length = 0;
    if (!key || EVP_PKEY_get_base_id(key.get()) != EVP_PKEY_EC ||
        EVP_PKEY_get_group_name(key.get(), group.data(), group.size(), &group_length) != 1 ||
        std::string_view{group.data(), group_length} != "prime256v1") {
        throw std::invalid_argument(
            "the token public key must be a PEM EC P-256 public key (\"-----BEGIN PUBLIC "
            "KEY-----\"; openssl ec -in private.pem -pubout), for ES256");
    }
    return token_verifier{token_algorithm::es256, std::move(public_key_pem)};
}

std::string read_key_file(const std::string& path) {
    std::ifstream in{path, std::ios::binary};
    std::ostringstream text;
    if (!in || !(text << in.rdbuf())) {
        throw std::invalid_argument("cannot read the key file '" + path + "'");
    }
    return std::move(text).str();
}

std::string random_jti() {
    std::array<unsigned char, 16> bytes{};
    if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
        throw std::runtime_error("cannot draw a token nonce: OpenSSL's RAND_bytes failed");
    }
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    for (const unsigned char b : bytes) {
        out += hex[b >> 4];
        out += hex[b & 15];
    }
    return out;
}

std::string issue_connect_token(const connect_token_claims& claims, token_algorithm algorithm,
                                std::string_view signing_key) {
    if (algorithm == token_algorithm::hs256) {
        (void)hs256_verifier(std::string{signing_key});  // the same bound as the server's
    }
    check_id("the player id", claims.player, 1, max_player_id_bytes);
    check_id("the world id", claims.world, 0, max_world_id_bytes);
    check_id("the token id (jti)", claims.jti, 1, max_jti_bytes);
    if (unix_seconds(claims.expires) <= 0) {
        throw std::invalid_argument("the expiry must be after 1970");
    }
    using namespace jwt::params;
    jwt::jwt_object token{jwt::params::algorithm(std::string{name_of(algorithm)}),
                          secret(std::string{signing_key})};
    token.add_claim("sub", claims.player);
    token.add_claim("aud", claims.world);
    token.add_claim("jti", claims.jti);
    token.add_claim("exp", unix_seconds(claims.expires));
    if (claims.not_before) {
        token.add_claim("nbf", unix_seconds(*claims.not_before));
    }
    std::error_code ec;
    std::string text;
    try {
        text = token.signature(ec);
    } catch (const std::exception& e) {
        throw std::invalid_argument(std::string{"cannot sign the token: "} + e.what());
    }
    if (ec) {
        throw std::invalid_argument("cannot sign the token with this " +
                                    std::string{name_of(algorithm)} + " key: " + ec.message());
    }
    return text;
}

namespace detail {

bool hs256_signature_matches(std::string_view key, std::string_view signed_part,
                             std::string_view signature) {
    std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
    unsigned int mac_bytes = 0;
    if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
             reinterpret_cast<const unsigned char*>(signed_part.data()), signed_part.size(),
             mac.data(), &mac_bytes) == nullptr ||
        mac_bytes != 32) {
        return false;
    }
    const std::string given = jwt::base64_uri_decode(signature.data(), signature.size());
    // The length is public (always 32 for HS256); only the bytes must not leak.
    return given.size() == mac_bytes && CRYPTO_memcmp(given.data(), mac.data(), mac_bytes) == 0;
}

}  // namespace detail

std::variant<connect_token_claims, std::string> verify_connect_token(
    std::string_view token, const token_verifier& verifier, std::string_view world,
    sys_clock::time_point now) {
    const std::string expected_alg{name_of(verifier.algorithm)};
    const auto malformed = [](std::string_view why) {
        return "connect token is malformed (" + std::string{why} + ")";
    };
    // 1. The form: three canonical base64url parts, JSON objects.
    const std::size_t first_dot = token.find('.');
    const std::size_t second_dot =
        first_dot == std::string_view::npos ? first_dot : token.find('.', first_dot + 1);
    if (token.size() > protocol::max_connect_token_bytes) {
        return malformed("longer than " + std::to_string(protocol::max_connect_token_bytes) + " bytes");
    }
    if (second_dot == std::string_view::npos || token.find('.', second_dot + 1) != token.npos) {
        return malformed("not a JWT: three base64url parts separated by dots");
    }
    const std::string_view parts[3] = {token.substr(0, first_dot),
                                       token.substr(first_dot + 1, second_dot - first_dot - 1),
                                       token.substr(second_dot + 1)};
    for (const auto part : parts) {
        if (!canonical_base64url(part)) {
            return malformed("a part is not canonical base64url without padding");
        }
    }
    nlohmann::json header;
    nlohmann::json payload;
    if (!json_object_of(parts[0], header) || !json_object_of(parts[1], payload)) {
        return malformed("header and payload must be JSON objects, each name once");
    }
    // 2. The algorithm is the server's: never `none`, never another (algorithm confusion:
    // an HS256 token "signed" with a public key, which anyone can read).
    const auto alg = header.find("alg");
    if (alg == header.end() || !alg->is_string()) {
        return malformed("no \"alg\" in the header");
    }
    const std::string alg_name = alg->get<std::string>();
    if (alg_name.empty() || alg_name == "none" || alg_name == "NONE" || alg_name == "None") {
        return std::string{"connect token is unsigned (alg \"none\"), this server accepts " +
                           expected_alg + " only"};
    }
    if (alg_name != expected_alg) {
        return "connect token is signed with " + alg_name + ", this server accepts " +
               expected_alg + " only";
    }
    jwt::jwt_header parsed_header;
    try {
        std::error_code ec;
        parsed_header.decode(jwt::string_view{parts[0].data(), parts[0].size()}, ec);
        if (ec) {
            return malformed(ec.message());
        }
    } catch (const std::exception& e) {
        return malformed(e.what());
    }
    // 3. The signature, before anything the token says is believed: HS256 here, in constant
    // time; ES256 by the library (a public key: nothing secret to leak).
    bool signed_right = false;
    if (verifier.algorithm == token_algorithm::hs256) {
        signed_right =
            detail::hs256_signature_matches(verifier.key, token.substr(0, second_dot), parts[2]);
    } else {
        try {
            jwt::jwt_signature signature{verifier.key};
            const auto [valid, ec] = signature.verify(
                parsed_header, jwt::string_view{token.data(), second_dot},
                jwt::string_view{parts[2].data(), parts[2].size()});
            signed_right = valid && !ec;
        } catch (const std::exception&) {
            signed_right = false;
        }
    }
    if (!signed_right) {
        return std::string{"connect token signature does not match (forged, altered, or signed "
                           "with another key)"};
    }
    // 4. The claims: present, typed, in bounds.
    connect_token_claims claims;
    if (!string_claim(payload, "sub", 1, max_player_id_bytes, claims.player)) {
        return std::string{"connect token has no valid \"sub\" (the player id: a string of 1 "
                           "to 64 bytes)"};
    }
    const auto aud = payload.find("aud");
    if (aud == payload.end()) {
        return std::string{"connect token has no \"aud\" (the world id)"};
    }
    if (aud->is_string()) {
        claims.world = aud->get<std::string>();
    } else if (aud->is_array() && aud->size() == 1 && (*aud)[0].is_string()) {
        claims.world = (*aud)[0].get<std::string>();  // RFC 7519 allows a list; one world
    } else {
        return std::string{"connect token's \"aud\" must be one world id (a string)"};
    }
    if (!string_claim(payload, "jti", 1, max_jti_bytes, claims.jti)) {
        return std::string{"connect token has no valid \"jti\" (a nonce: a string of 1 to 128 "
                           "bytes)"};
    }
    const auto exp = payload.find("exp");
    const auto expires = exp == payload.end() ? std::nullopt : numeric_date(*exp);
    if (!expires) {
        return std::string{"connect token has no valid \"exp\" (Unix time in seconds)"};
    }
    claims.expires = *expires;
    if (const auto nbf = payload.find("nbf"); nbf != payload.end()) {
        claims.not_before = numeric_date(*nbf);
        if (!claims.not_before) {
            return std::string{"connect token's \"nbf\" is not a Unix time in seconds"};
        }
    }
    // 5-7. Time, then place.
    if (claims.expires <= now) {
        return "connect token expired at " + utc_text(claims.expires) + " (now " + utc_text(now) +
               ")";
    }
    if (claims.not_before && *claims.not_before > now + not_before_leeway) {
        return "connect token is not valid before " + utc_text(*claims.not_before) + " (now " +
               utc_text(now) + ")";
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
