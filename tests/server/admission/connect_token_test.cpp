#include "ecsnet/server/admission/connect_token.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <array>
#include <fstream>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

namespace connect_token_test {

using ecsnet::server::connect_token_claims;
using ecsnet::server::es256_verifier;
using ecsnet::server::hs256_verifier;
using ecsnet::server::issue_connect_token;
using ecsnet::server::parse_ttl;
using ecsnet::server::read_key_file;
using ecsnet::server::token_algorithm;
using ecsnet::server::token_verifier;
using ecsnet::server::verify_connect_token;
using testing::HasSubstr;
using namespace std::chrono_literals;
using sys_clock = std::chrono::system_clock;

constexpr std::string_view secret = "0123456789abcdef0123456789abcdef";
const sys_clock::time_point new_year_2026{1'767'225'600s};  // 2026-01-01T00:00:00Z
const sys_clock::time_point new_year_2030{1'893'456'000s};  // 2030-01-01T00:00:00Z
const sys_clock::time_point before = new_year_2030 - 1h;

// The known answers docs/PROTOCOL.md prints ("Identity"), made by Python's standard hmac and
// `cryptography` (not by the code under test): header {"alg":...,"typ":"JWT"}, claims
// {"aud":"eu-1","exp":1893456000,"jti":"kat-1","nbf":1767225600,"sub":"alice"}.
constexpr std::string_view known_hs256 =
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJhdWQiOiJldS0xIiwiZXhwIjoxODkzNDU2MDAwLCJqdGkiOiJrYXQtMSIsIm5iZiI6MTc2NzIyNTYwMCwic3ViIjoiYW"
    "xpY2UifQ.rGGqKPTmWZuH1hlgrssTTj7xwgZrwgUvUJ5bTt3yC00";
constexpr std::string_view known_es256 =
    "eyJhbGciOiJFUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJhdWQiOiJldS0xIiwiZXhwIjoxODkzNDU2MDAwLCJqdGkiOiJrYXQtMSIsIm5iZiI6MTc2NzIyNTYwMCwic3ViIjoiYW"
    "xpY2UifQ.nOD0Quq61IR2pvL4W3hC4QgfoWuP_RKDYycaDfQFW1KHLzVzrkRhkpijEZ1g82vU0D7ymUzemtXIHGwsmKJ1Nw";

std::string data_file(const std::string& name) {
    return read_key_file(std::string{ECSNET_JWT_TEST_DIR} + "/" + name);
}

token_verifier hs() { return hs256_verifier(std::string{secret}); }
token_verifier es() { return es256_verifier(data_file("es256-public.pem")); }

connect_token_claims alice(std::string jti = "n-1") {
    return connect_token_claims{"alice", "eu-1", std::move(jti), new_year_2030, std::nullopt};
}

std::string refusal(const std::variant<connect_token_claims, std::string>& result) {
    return std::holds_alternative<std::string>(result) ? std::get<std::string>(result)
                                                       : std::string{"(accepted)"};
}

std::string b64url(std::string_view data) {
    std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');
    const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                  reinterpret_cast<const unsigned char*>(data.data()),
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

// A token with any header and payload text, HS256-signed with `key` (or unsigned).
std::string crafted(std::string_view header, std::string_view payload, std::string_view key,
                    bool sign = true) {
    const std::string input = b64url(header) + "." + b64url(payload);
    if (!sign) {
        return input + ".";
    }
    std::array<unsigned char, 32> mac{};
    unsigned int length = 0;
    HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
         reinterpret_cast<const unsigned char*>(input.data()), input.size(), mac.data(), &length);
    return input + "." + b64url({reinterpret_cast<const char*>(mac.data()), length});
}

constexpr std::string_view hs_header = R"({"alg":"HS256","typ":"JWT"})";
constexpr std::string_view good_claims =
    R"({"aud":"eu-1","exp":1893456000,"jti":"n-1","sub":"alice"})";

TEST(ConnectToken, IssuedTokensVerifyWithBothAlgorithms) {
    const auto by_secret = verify_connect_token(
        issue_connect_token(alice(), token_algorithm::hs256, secret), hs(), "eu-1", before);
    ASSERT_TRUE(std::holds_alternative<connect_token_claims>(by_secret)) << refusal(by_secret);
    EXPECT_EQ(std::get<connect_token_claims>(by_secret), alice());

    const std::string signed_es = issue_connect_token(alice(), token_algorithm::es256,
                                                      data_file("es256-private.pem"));
    const auto by_key = verify_connect_token(signed_es, es(), "eu-1", before);
    ASSERT_TRUE(std::holds_alternative<connect_token_claims>(by_key)) << refusal(by_key);
    EXPECT_EQ(std::get<connect_token_claims>(by_key), alice());
}

TEST(ConnectToken, KnownAnswersFromAnotherLanguageVerifyAndAreTheDocumentedOnes) {
    connect_token_claims expected = alice("kat-1");
    expected.not_before = new_year_2026;
    for (const auto& [token, verifier] :
         {std::pair{known_hs256, hs()}, std::pair{known_es256, es()}}) {
        const auto verified = verify_connect_token(token, verifier, "eu-1", before);
        ASSERT_TRUE(std::holds_alternative<connect_token_claims>(verified)) << refusal(verified);
        EXPECT_EQ(std::get<connect_token_claims>(verified), expected);
    }
    // HS256 is deterministic: the server's issuer writes the very same bytes.
    EXPECT_EQ(issue_connect_token(expected, token_algorithm::hs256, secret), known_hs256);

    std::ifstream doc{ECSNET_PROTOCOL_DOC};
    std::stringstream text;
    text << doc.rdbuf();
    const std::string protocol_md = text.str();
    ASSERT_FALSE(protocol_md.empty());
    EXPECT_NE(protocol_md.find(known_hs256), std::string::npos) << "PROTOCOL.md's HS256 answer";
    EXPECT_NE(protocol_md.find(known_es256), std::string::npos) << "PROTOCOL.md's ES256 answer";
    EXPECT_NE(protocol_md.find(data_file("es256-public.pem")), std::string::npos)
        << "PROTOCOL.md prints the ES256 test public key";
}

TEST(ConnectToken, AlgorithmNoneIsRefused) {
    for (const char* alg : {"none", "NONE", "None", ""}) {
        const std::string header = std::string{R"({"alg":")"} + alg + R"("})";
        const std::string token = crafted(header, good_claims, "", false);
        EXPECT_THAT(refusal(verify_connect_token(token, hs(), "eu-1", before)),
                    HasSubstr("unsigned (alg \"none\")"))
            << alg;
        EXPECT_THAT(refusal(verify_connect_token(token, es(), "eu-1", before)),
                    HasSubstr("unsigned (alg \"none\")"))
            << alg;
    }
}

TEST(ConnectToken, AlgorithmConfusionIsRefused) {
    // The classic attack: HS256 "signed" with the server's public key, which is public.
    const std::string public_pem = data_file("es256-public.pem");
    const std::string confused = crafted(hs_header, good_claims, public_pem);
    EXPECT_EQ(refusal(verify_connect_token(confused, es(), "eu-1", before)),
              "connect token is signed with HS256, this server accepts ES256 only");
    // And the other way, and algorithms this server never accepts, and case games.
    const std::string es_token = issue_connect_token(alice(), token_algorithm::es256,
                                                     data_file("es256-private.pem"));
    EXPECT_EQ(refusal(verify_connect_token(es_token, hs(), "eu-1", before)),
              "connect token is signed with ES256, this server accepts HS256 only");
    for (const char* alg : {"hs256", "HS384", "HS512", "RS256", "EdDSA", "PS256"}) {
        const std::string header = std::string{R"({"alg":")"} + alg + R"(","typ":"JWT"})";
        EXPECT_THAT(refusal(verify_connect_token(crafted(header, good_claims, secret), hs(),
                                                 "eu-1", before)),
                    HasSubstr(std::string{"signed with "} + alg + ", this server accepts HS256"));
    }
}

TEST(ConnectToken, BadSignaturesAreRefused) {
    const std::string why = "connect token signature does not match (forged, altered, or signed "
                            "with another key)";
    EXPECT_EQ(refusal(verify_connect_token(
                  issue_connect_token(alice(), token_algorithm::hs256, "another secret, 32 bytes..."),
                  hs(), "eu-1", before)),
              why);
    EXPECT_EQ(refusal(verify_connect_token(known_es256,
                                           es256_verifier(data_file("other-public.pem")), "eu-1",
                                           before)),
              why);
    // Mallory's valid token with alice's claims pasted in.
    const std::string hers = crafted(
        hs_header, R"({"aud":"eu-1","exp":1893456000,"jti":"n-1","sub":"malle"})", secret);
    const std::string pasted =
        b64url(hs_header) + "." + b64url(good_claims) + hers.substr(hers.rfind('.'));
    EXPECT_EQ(refusal(verify_connect_token(pasted, hs(), "eu-1", before)), why);
}

// Issue 37: cpp-jwt compared the base64 text of the MACs with an early exit, so the time to
// refuse leaked how much of a forged signature was right. The comparison is now over the raw
// 32 bytes with CRYPTO_memcmp; what can be checked here is that it decides exactly: the right
// MAC matches, and a MAC wrong in any one byte (first, middle, last), cut short, grown or
// empty does not, whatever its text.
TEST(ConnectToken, HS256SignaturesAreComparedAsWholeRawMacs) {
    using ecsnet::server::detail::hs256_signature_matches;
    const std::string input = b64url(hs_header) + "." + b64url(good_claims);
    std::array<unsigned char, 32> mac{};
    unsigned int length = 0;
    HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
         reinterpret_cast<const unsigned char*>(input.data()), input.size(), mac.data(), &length);
    ASSERT_EQ(length, 32U);
    const std::string raw{reinterpret_cast<const char*>(mac.data()), mac.size()};
    EXPECT_TRUE(hs256_signature_matches(secret, input, b64url(raw)));
    for (const std::size_t at : {std::size_t{0}, std::size_t{15}, std::size_t{31}}) {
        std::string wrong = raw;
        wrong[at] = static_cast<char>(wrong[at] ^ 0x01);
        EXPECT_FALSE(hs256_signature_matches(secret, input, b64url(wrong))) << "byte " << at;
    }
    EXPECT_FALSE(hs256_signature_matches(secret, input, b64url(raw.substr(0, 31))));
    EXPECT_FALSE(hs256_signature_matches(secret, input, b64url(raw + "x")));
    EXPECT_FALSE(hs256_signature_matches(secret, input, ""));
    EXPECT_FALSE(hs256_signature_matches("another secret", input, b64url(raw)));
    EXPECT_FALSE(hs256_signature_matches(secret, input + "x", b64url(raw)));
}

TEST(ConnectToken, EveryAlteredCharacterIsRefused) {
    for (const auto& [token, verifier] :
         {std::pair{std::string{known_hs256}, hs()}, std::pair{std::string{known_es256}, es()}}) {
        for (std::size_t i = 0; i < token.size(); ++i) {
            std::string forged = token;
            forged[i] = forged[i] == 'A' ? 'B' : 'A';
            EXPECT_NE(refusal(verify_connect_token(forged, verifier, "eu-1", before)),
                      "(accepted)")
                << "character " << i;
        }
    }
}

TEST(ConnectToken, TimeAndPlaceAreChecked) {
    const std::string token = issue_connect_token(alice(), token_algorithm::hs256, secret);
    EXPECT_EQ(refusal(verify_connect_token(token, hs(), "eu-1", new_year_2030 + 5s)),
              "connect token expired at 2030-01-01T00:00:00Z (now 2030-01-01T00:00:05Z)");
    EXPECT_THAT(refusal(verify_connect_token(token, hs(), "eu-1", new_year_2030)),
                HasSubstr("expired"));
    EXPECT_EQ(refusal(verify_connect_token(token, hs(), "us-2", before)),
              "connect token is for world 'eu-1', this server is world 'us-2'");

    auto later = alice();
    later.not_before = before + 1h - 1s;
    const std::string early = issue_connect_token(later, token_algorithm::hs256, secret);
    EXPECT_EQ(refusal(verify_connect_token(early, hs(), "eu-1", before)),
              "connect token is not valid before 2029-12-31T23:59:59Z (now 2029-12-31T23:00:00Z)");
    // Within the leeway (a backend's clock a little ahead): accepted.
    EXPECT_EQ(refusal(verify_connect_token(early, hs(), "eu-1",
                                           *later.not_before - ecsnet::server::not_before_leeway)),
              "(accepted)");
}

TEST(ConnectToken, RequiredClaimsMustBeThereAndTyped) {
    const std::vector<std::pair<std::string, std::string>> cases{
        {R"({"aud":"eu-1","exp":1893456000,"jti":"n-1"})", "no valid \"sub\""},
        {R"({"aud":"eu-1","exp":1893456000,"jti":"n-1","sub":""})", "no valid \"sub\""},
        {R"({"aud":"eu-1","exp":1893456000,"jti":"n-1","sub":7})", "no valid \"sub\""},
        {R"({"exp":1893456000,"jti":"n-1","sub":"alice"})", "no \"aud\""},
        {R"({"aud":["eu-1","us-2"],"exp":1893456000,"jti":"n-1","sub":"alice"})",
         "\"aud\" must be one world id"},
        {R"({"aud":"eu-1","exp":1893456000,"sub":"alice"})", "no valid \"jti\""},
        {R"({"aud":"eu-1","exp":1893456000,"jti":"","sub":"alice"})", "no valid \"jti\""},
        {R"({"aud":"eu-1","jti":"n-1","sub":"alice"})", "no valid \"exp\""},
        {R"({"aud":"eu-1","exp":"1893456000","jti":"n-1","sub":"alice"})", "no valid \"exp\""},
        {R"({"aud":"eu-1","exp":1893456000,"jti":"n-1","nbf":"x","sub":"alice"})",
         "\"nbf\" is not a Unix time"},
    };
    for (const auto& [claims, why] : cases) {
        EXPECT_THAT(refusal(verify_connect_token(crafted(hs_header, claims, secret), hs(), "eu-1",
                                                 before)),
                    HasSubstr(why))
            << claims;
    }
    // RFC 7519 allows "aud" as a list; one world in it is that world. A fractional exp is cut.
    EXPECT_EQ(refusal(verify_connect_token(
                  crafted(hs_header,
                          R"({"aud":["eu-1"],"exp":1893456000.9,"jti":"n-1","sub":"alice"})",
                          secret),
                  hs(), "eu-1", before)),
              "(accepted)");
}

TEST(ConnectToken, MalformedTextIsRefused) {
    const std::vector<std::string> bad{
        "",
        "not a token",
        "a.b",
        "a.b.c.d",
        std::string(3000, 'A'),
        crafted(hs_header, "[1,2]", secret),
        crafted(hs_header, "not json", secret),
        crafted(R"({"alg":5})", good_claims, secret),
        crafted(R"({"typ":"JWT"})", good_claims, secret),
        crafted(R"({"alg":"HS256","alg":"HS256"})", good_claims, secret),
        // Non-canonical base64url: padding, the standard alphabet, unused bits set.
        b64url(hs_header) + "=." + b64url(good_claims) + ".AAAA",
        b64url(hs_header) + "+." + b64url(good_claims) + ".AAAA",
        std::string{known_hs256.substr(0, known_hs256.size() - 1)} + "1",
    };
    for (const std::string& token : bad) {
        EXPECT_THAT(refusal(verify_connect_token(token, hs(), "eu-1", before)),
                    HasSubstr("malformed"))
            << "'" << token.substr(0, 80) << "'";
    }
}

// docs/PROTOCOL.md "Identity": `typ` may be absent; present, it is "JWT" without case, checked
// after the algorithm (3.4, 3.5) and before the signature.
TEST(ConnectToken, TheTypHeaderIsJwtWithoutCaseOrAbsent) {
    const auto verdict = [](std::string_view header) {
        return refusal(verify_connect_token(crafted(header, good_claims, secret), hs(), "eu-1", before));
    };
    EXPECT_EQ(verdict(R"({"alg":"HS256"})"), "(accepted)");
    EXPECT_EQ(verdict(R"({"alg":"HS256","typ":"jwt"})"), "(accepted)");
    EXPECT_EQ(verdict(R"({"alg":"HS256","typ":"at+jwt"})"), "connect token is malformed (type mismatch)");
    EXPECT_THAT(verdict(R"({"alg":"HS256","typ":5})"), testing::StartsWith("connect token is malformed ("));
    EXPECT_EQ(verdict(R"({"alg":"RS256","typ":"at+jwt"})"),
              "connect token is signed with RS256, this server accepts HS256 only");
}

TEST(ConnectToken, KeysAreCheckedWhenConfigured) {
    EXPECT_THROW((void)hs256_verifier("short"), std::invalid_argument);
    EXPECT_THROW((void)es256_verifier("not a key"), std::invalid_argument);
    EXPECT_THROW((void)es256_verifier(data_file("es256-private.pem")), std::invalid_argument)
        << "a private key must not be deployed to verifying servers";
    EXPECT_THROW((void)read_key_file("/nonexistent/key.pem"), std::invalid_argument);
    EXPECT_NO_THROW((void)es());
}

TEST(ConnectToken, IssuingChecksItsInputs) {
    const auto with = [](std::string player, std::string world, std::string jti) {
        return connect_token_claims{std::move(player), std::move(world), std::move(jti),
                                    new_year_2030, std::nullopt};
    };
    const auto hs256 = token_algorithm::hs256;
    EXPECT_THROW((void)issue_connect_token(alice(), hs256, "short"), std::invalid_argument);
    EXPECT_THROW((void)issue_connect_token(with("", "w", "j"), hs256, secret),
                 std::invalid_argument);
    EXPECT_THROW((void)issue_connect_token(with(std::string(65, 'p'), "w", "j"), hs256, secret),
                 std::invalid_argument);
    EXPECT_THROW((void)issue_connect_token(with("bad\xC3", "w", "j"), hs256, secret),
                 std::invalid_argument);
    EXPECT_THROW((void)issue_connect_token(with("alice", "w", ""), hs256, secret),
                 std::invalid_argument);
    EXPECT_THROW((void)issue_connect_token(alice(), token_algorithm::es256, "not a key"),
                 std::invalid_argument);
    EXPECT_NO_THROW((void)issue_connect_token(
        with(std::string(64, 'p'), std::string(64, 'w'), std::string(128, 'j')), hs256, secret));
}

TEST(ConnectToken, RandomTokenIdsDiffer) {
    const std::string a = ecsnet::server::random_jti();
    EXPECT_EQ(a.size(), 32U);
    EXPECT_NE(a, ecsnet::server::random_jti());
}

TEST(ConnectToken, TtlText) {
    EXPECT_EQ(parse_ttl("90"), 90s);
    EXPECT_EQ(parse_ttl("90s"), 90s);
    EXPECT_EQ(parse_ttl("15m"), 15min);
    EXPECT_EQ(parse_ttl("1h"), 1h);
    EXPECT_EQ(parse_ttl("7d"), 7 * 24h);
    for (const char* bad : {"", "0", "h", "1x", "-5m", "1h30m", "99999999999d"}) {
        EXPECT_THROW((void)parse_ttl(bad), std::invalid_argument) << bad;
    }
}

}  // namespace connect_token_test
