#include "ecsnet/server/admission/owners.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <vector>

namespace owners_test {

using ecsnet::server::owner_registry;

owner_registry no_entities(std::uint32_t first = 1) {
    return owner_registry{[](std::uint32_t) { return false; }, first};
}

TEST(OwnerRegistry, WithoutAKeyEveryClaimIsANewOwnerWithItsOwnKey) {
    auto owners = no_entities();
    const auto a = owners.claim_by_key({});
    const auto b = owners.claim_by_key({});
    EXPECT_NE(a.owner, b.owner);
    EXPECT_NE(a.owner, 0U);
    ASSERT_TRUE(a.key && b.key);
    EXPECT_NE(*a.key, *b.key);
    EXPECT_FALSE(a.resumed);
}

TEST(OwnerRegistry, TheKeyIsTheIdentity) {
    auto owners = no_entities();
    const auto a = owners.claim_by_key({});
    owners.connected(a.owner);
    const auto again = owners.claim_by_key(*a.key);
    EXPECT_EQ(again.owner, a.owner);
    EXPECT_TRUE(again.resumed);

    auto guessed = *a.key;
    guessed[31] ^= 1;
    const auto other = owners.claim_by_key(guessed);
    EXPECT_NE(other.owner, a.owner) << "a key one bit off is a stranger";
    EXPECT_FALSE(other.resumed);
}

TEST(OwnerRegistry, TheSamePlayerIsOneOwner) {
    auto owners = no_entities();
    const auto a = owners.claim_by_player("alice");
    const auto a2 = owners.claim_by_player("alice");
    const auto b = owners.claim_by_player("bob");
    EXPECT_EQ(a.owner, a2.owner);
    EXPECT_NE(a.owner, b.owner);
    ASSERT_TRUE(a.key.has_value()) << "token owners reconnect by resume key too";
    EXPECT_EQ(a2.key, a.key) << "one player, one key";
    EXPECT_NE(b.key, a.key);
    EXPECT_EQ(owners.player_of(a.owner), "alice");
    EXPECT_EQ(owners.player_of(12345), "");
}

TEST(OwnerRegistry, FindByKeyResumesWithoutCreating) {
    auto owners = no_entities();
    const auto a = owners.claim_by_player("alice");
    const auto found = owners.find_by_key(*a.key);
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(found->owner, a.owner);
    EXPECT_TRUE(found->resumed);
    auto guessed = *a.key;
    guessed[31] ^= 1;
    EXPECT_FALSE(owners.find_by_key(guessed).has_value());
    EXPECT_FALSE(owners.find_by_key({}).has_value());
    EXPECT_EQ(owners.size(), 1U) << "a lookup creates no owner";
    // Forgotten with the owner: the key no longer resumes.
    EXPECT_TRUE(owners.forget_if_idle(a.owner));
    EXPECT_FALSE(owners.find_by_key(*a.key).has_value());
}

TEST(OwnerRegistry, AnIdleOwnerIsForgotten) {
    std::set<std::uint32_t> owning;
    owner_registry owners{[&](std::uint32_t id) { return owning.contains(id); }};
    const auto a = owners.claim_by_key({});
    owners.connected(a.owner);
    EXPECT_FALSE(owners.forget_if_idle(a.owner)) << "connected";
    owning.insert(a.owner);
    EXPECT_EQ(owners.disconnected(a.owner), 0U);
    EXPECT_FALSE(owners.forget_if_idle(a.owner)) << "still owns entities";
    EXPECT_EQ(owners.claim_by_key(*a.key).owner, a.owner) << "and can come back";
    owning.clear();
    EXPECT_TRUE(owners.forget_if_idle(a.owner));
    EXPECT_EQ(owners.size(), 0U);
    EXPECT_NE(owners.claim_by_key(*a.key).owner, a.owner) << "a forgotten key is no identity";
}

TEST(OwnerRegistry, StateIsBoundedByLiveOwners) {
    auto owners = no_entities();
    for (int i = 0; i < 10'000; ++i) {
        const auto c = owners.claim_by_player("player-" + std::to_string(i));
        owners.connected(c.owner);
        owners.disconnected(c.owner);
        owners.forget_if_idle(c.owner);
    }
    EXPECT_EQ(owners.size(), 0U);
}

TEST(OwnerRegistry, IdsSkipZeroWhenTheyWrap) {
    auto owners = no_entities(UINT32_MAX - 1);
    std::vector<std::uint32_t> ids;
    for (int i = 0; i < 4; ++i) {
        const auto c = owners.claim_by_key({});
        owners.connected(c.owner);
        ids.push_back(c.owner);
    }
    EXPECT_EQ(ids, (std::vector<std::uint32_t>{UINT32_MAX - 1, UINT32_MAX, 1, 2}));
}

TEST(OwnerRegistry, IdsNeverCollideWithALiveOwnerOrAnEntityOwner) {
    // After a wrap: owner 1 is still known (connected), owners 3 and 4 left but their
    // entities live on. None of these ids is handed out again.
    const std::set<std::uint32_t> owning{3, 4};
    owner_registry owners{[&](std::uint32_t id) { return owning.contains(id); }, 1};
    const auto one = owners.claim_by_player("one");
    owners.connected(one.owner);
    ASSERT_EQ(one.owner, 1U);
    std::vector<std::uint32_t> ids;
    for (int i = 0; i < 3; ++i) {
        ids.push_back(owners.claim_by_player("p" + std::to_string(i)).owner);
    }
    EXPECT_EQ(ids, (std::vector<std::uint32_t>{2, 5, 6}));
}

}  // namespace owners_test
