#include "ecsnet/server/connect_token.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

namespace {

using ecsnet::server::connect_token_claims;
using ecsnet::server::issue_connect_token;
using ecsnet::server::parse_ttl;
using ecsnet::server::verify_connect_token;
using testing::HasSubstr;
using namespace std::chrono_literals;
using sys_clock = std::chrono::system_clock;

constexpr std::string_view secret = "0123456789abcdef0123456789abcdef";
// 2030-01-01T00:00:00Z
const sys_clock::time_point new_year_2030 = sys_clock::time_point{1'893'456'000s};
const sys_clock::time_point before = new_year_2030 - 1h;

std::string refusal(const std::variant<connect_token_claims, std::string>& result) {
    return std::holds_alternative<std::string>(result) ? std::get<std::string>(result)
                                                       : std::string{"(accepted)"};
}

TEST(ConnectToken, IssuedTokenVerifies) {
    const connect_token_claims claims{"alice", "eu-1", new_year_2030};
    const std::string token = issue_connect_token(claims, secret);
    const auto verified = verify_connect_token(token, secret, "eu-1", before);
    ASSERT_TRUE(std::holds_alternative<connect_token_claims>(verified)) << refusal(verified);
    EXPECT_EQ(std::get<connect_token_claims>(verified), claims);
}

// The bytes docs/PROTOCOL.md specifies, as a backend in Python produces them:
//   body = bytes([1]) + struct.pack('<Q', 1893456000) + bytes([5]) + b"alice" + bytes([4]) + b"eu-1"
//   mac = hmac.new(secret, body, hashlib.sha256).digest()
//   base64.urlsafe_b64encode(body + mac).rstrip(b'=')
TEST(ConnectToken, KnownAnswerFromAnotherLanguage) {
    constexpr std::string_view from_python =
        "AYDY23AAAAAABWFsaWNlBGV1LTENwCdtMjdYEAfWdOn7uyYZatKP7dtjQIMx1N2dZQH22w";
    EXPECT_EQ(issue_connect_token({"alice", "eu-1", new_year_2030}, secret), from_python);
    const auto verified = verify_connect_token(from_python, secret, "eu-1", before);
    ASSERT_TRUE(std::holds_alternative<connect_token_claims>(verified)) << refusal(verified);
    EXPECT_EQ(std::get<connect_token_claims>(verified).player, "alice");
}

TEST(ConnectToken, EveryAlteredByteIsRefused) {
    const std::string token = issue_connect_token({"alice", "eu-1", new_year_2030}, secret);
    for (std::size_t i = 0; i < token.size(); ++i) {
        std::string forged = token;
        forged[i] = forged[i] == 'A' ? 'B' : 'A';
        const std::string why = refusal(verify_connect_token(forged, secret, "eu-1", before));
        EXPECT_NE(why, "(accepted)") << "byte " << i;
    }
}

TEST(ConnectToken, ForgedPlayerIsRefusedAsASignatureMismatch) {
    // Mallory takes her own valid token and swaps the player for "alice".
    const std::string hers = issue_connect_token({"malle", "eu-1", new_year_2030}, secret);
    const std::string alices_body_with_her_mac =
        issue_connect_token({"alice", "eu-1", new_year_2030}, secret).substr(0, 20) +
        hers.substr(20);
    EXPECT_THAT(refusal(verify_connect_token(alices_body_with_her_mac, secret, "eu-1", before)),
                HasSubstr("signature does not match"));
}

TEST(ConnectToken, AnotherSecretIsRefused) {
    const std::string token =
        issue_connect_token({"alice", "eu-1", new_year_2030}, "another secret of 32 bytes.....");
    EXPECT_THAT(refusal(verify_connect_token(token, secret, "eu-1", before)),
                HasSubstr("signature does not match"));
}

TEST(ConnectToken, ExpiredIsRefusedWithTheTime) {
    const std::string token = issue_connect_token({"alice", "eu-1", new_year_2030}, secret);
    EXPECT_EQ(refusal(verify_connect_token(token, secret, "eu-1", new_year_2030 + 5s)),
              "connect token expired at 2030-01-01T00:00:00Z (now 2030-01-01T00:00:05Z)");
    EXPECT_THAT(refusal(verify_connect_token(token, secret, "eu-1", new_year_2030)),
                HasSubstr("expired"));
}

TEST(ConnectToken, WrongWorldIsRefused) {
    const std::string token = issue_connect_token({"alice", "eu-1", new_year_2030}, secret);
    EXPECT_EQ(refusal(verify_connect_token(token, secret, "us-2", before)),
              "connect token is for world 'eu-1', this server is world 'us-2'");
}

TEST(ConnectToken, MalformedTextIsRefused) {
    for (const std::string& bad : std::vector<std::string>{"", "not a token", "AAAA", "A", "++++",
                                                           "AYDY23AAAAAA===", std::string(600, 'A')}) {
        EXPECT_THAT(refusal(verify_connect_token(bad, secret, "eu-1", before)),
                    testing::AnyOf(HasSubstr("malformed"), HasSubstr("version"),
                                   HasSubstr("signature")))
            << "'" << bad << "'";
    }
}

TEST(ConnectToken, IssuingChecksItsInputs) {
    EXPECT_THROW((void)issue_connect_token({"alice", "w", new_year_2030}, "short"),
                 std::invalid_argument);
    EXPECT_THROW((void)issue_connect_token({"", "w", new_year_2030}, secret), std::invalid_argument);
    EXPECT_THROW((void)issue_connect_token({std::string(65, 'p'), "w", new_year_2030}, secret),
                 std::invalid_argument);
    EXPECT_THROW((void)issue_connect_token({"bad\xC3", "w", new_year_2030}, secret),
                 std::invalid_argument);
    EXPECT_NO_THROW((void)issue_connect_token({std::string(64, 'p'), std::string(64, 'w'),
                                               new_year_2030},
                                              secret));
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

}  // namespace
