#include "ecsnet/server/admission/admission.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace admission_test {

using ecsnet::server::admission;
namespace protocol = ecsnet::protocol;
using namespace std::chrono_literals;

admission without_tokens(std::string auth_token = {}) {
    admission::settings s;
    s.world_id = "test";
    s.max_remembered_tokens = 16;
    s.auth_token = std::move(auth_token);
    return admission{s, [](std::uint32_t) { return false; }};
}

TEST(Admission, RefusesTheProtocolVersionsItDoesNotSpeak) {
    EXPECT_FALSE(admission::refuse_version(protocol::protocol_version).has_value());
    EXPECT_FALSE(admission::refuse_version(protocol::oldest_protocol_version).has_value());
    const auto too_new = admission::refuse_version(protocol::protocol_version + 1);
    ASSERT_TRUE(too_new.has_value());
    EXPECT_NE(too_new->find("not supported"), std::string::npos) << *too_new;
}

TEST(Admission, TheSharedSecretMustMatchWhenOneIsSet) {
    const admission open = without_tokens();
    EXPECT_TRUE(open.secret_accepted(""));
    EXPECT_TRUE(open.secret_accepted("anything"));
    const admission closed = without_tokens("s3cret");
    EXPECT_TRUE(closed.secret_accepted("s3cret"));
    EXPECT_FALSE(closed.secret_accepted("s3cre"));
    EXPECT_FALSE(closed.secret_accepted("s3cret "));
    EXPECT_FALSE(closed.secret_accepted(""));
}

TEST(Admission, ASecretAndAPublicKeyTogetherAreRefused) {
    admission::settings s;
    s.token_secret = "secret";
    s.token_public_key = "/nonexistent.pem";
    EXPECT_THROW((admission{s, [](std::uint32_t) { return false; }}), std::invalid_argument);
}

TEST(Admission, AResumeKeyNamesItsOwnerAndOnlyANewOwnerIsToldOf) {
    admission gate = without_tokens();
    std::vector<std::uint32_t> told;
    gate.on_new_owner = [&](const ecsnet::server::stored_owner& owner) { told.push_back(owner.id); };

    protocol::welcome first;
    std::optional<ecsnet::server::connect_token_claims> token;
    ASSERT_FALSE(gate.identify(protocol::hello{protocol::protocol_version, "a", ""}, first, token));
    EXPECT_NE(first.client_id, 0U);
    EXPECT_EQ(first.resume_key.size(), 32U);
    EXPECT_FALSE(token.has_value()) << "no token: no claims to remember";
    EXPECT_EQ(told, std::vector<std::uint32_t>{first.client_id});

    protocol::welcome again;
    ASSERT_FALSE(gate.identify(protocol::hello{protocol::protocol_version, "a", "", first.resume_key},
                               again, token));
    EXPECT_EQ(again.client_id, first.client_id);
    EXPECT_EQ(again.resume_key, first.resume_key);
    EXPECT_EQ(told.size(), 1U) << "a resumed owner is in the journal already";
}

TEST(Admission, WithTokensAHelloWithoutACredentialIsRefused) {
    admission::settings s;
    s.world_id = "test";
    s.token_secret = "a secret long enough for HS256 keys";
    s.max_remembered_tokens = 16;
    admission gate{s, [](std::uint32_t) { return false; }};
    EXPECT_TRUE(gate.uses_tokens());
    const protocol::hello bare{protocol::protocol_version, "a", ""};
    EXPECT_FALSE(gate.has_credential(bare));
    protocol::welcome welcome;
    std::optional<ecsnet::server::connect_token_claims> token;
    const auto refused = gate.identify(bare, welcome, token);
    ASSERT_TRUE(refused.has_value());
    EXPECT_NE(refused->find("connect token required"), std::string::npos) << *refused;
    EXPECT_EQ(gate.owners().size(), 0U) << "a refusal creates no owner";
}

TEST(Admission, PendingConnectionsAreCountedPerAddressOldestFirst) {
    admission gate = without_tokens();
    gate.pending_started(7, "10.0.0.1");
    gate.pending_started(8, "10.0.0.1");
    gate.pending_started(9, "10.0.0.2");
    EXPECT_EQ(gate.pending(), 3U);
    EXPECT_EQ(gate.pending_from("10.0.0.1"), 2U);
    EXPECT_EQ(gate.pending_from("10.0.0.3"), 0U);
    EXPECT_EQ(gate.oldest_pending(), 7U);
    gate.pending_ended(7, "10.0.0.1");
    EXPECT_EQ(gate.oldest_pending(), 8U);
    EXPECT_EQ(gate.pending_from("10.0.0.1"), 1U);
    gate.pending_ended(8, "10.0.0.1");
    gate.pending_ended(9, "10.0.0.2");
    EXPECT_EQ(gate.pending(), 0U);
}

// Two owners known to the registry, neither connected.
std::vector<std::uint32_t> two_owners(admission& gate) {
    std::vector<std::uint32_t> ids;
    for (int i = 0; i < 2; ++i) {
        protocol::welcome w;
        std::optional<ecsnet::server::connect_token_claims> token;
        EXPECT_FALSE(gate.identify(protocol::hello{protocol::protocol_version, "p", ""}, w, token));
        ids.push_back(w.client_id);
    }
    return ids;
}

TEST(Admission, TheGraceEndsForOwnersThatDidNotComeBack) {
    admission gate = without_tokens();
    const auto owners = two_owners(gate);
    const auto t0 = admission::clock::now();
    gate.left(owners[0], t0 + 1s);
    gate.left(owners[1], t0 + 1s);
    gate.returned(owners[1]);
    EXPECT_TRUE(gate.take_departed(t0).empty()) << "the grace has not ended";
    EXPECT_EQ(gate.take_departed(t0 + 2s), std::vector<std::uint32_t>{owners[0]});
    EXPECT_TRUE(gate.take_departed(t0 + 3s).empty()) << "each departure ends once";
}

TEST(Admission, LeavingAgainRestartsTheGraceAndAConnectedOwnerStays) {
    admission gate = without_tokens();
    const auto owners = two_owners(gate);
    const auto t0 = admission::clock::now();
    gate.left(owners[0], t0 + 1s);
    gate.returned(owners[0]);
    gate.left(owners[0], t0 + 5s);
    EXPECT_TRUE(gate.take_departed(t0 + 2s).empty()) << "the first grace was cancelled";
    EXPECT_EQ(gate.take_departed(t0 + 6s), std::vector<std::uint32_t>{owners[0]});

    gate.left(owners[1], t0 + 1s);
    gate.owners().connected(owners[1]);  // connected again without its Hello returning it yet
    EXPECT_TRUE(gate.take_departed(t0 + 2s).empty()) << "an owner with a connection keeps its entities";
}

}  // namespace admission_test
