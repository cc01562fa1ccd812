#include "ecsnet/server/admission/replay_cache.hpp"

#include <gtest/gtest.h>

namespace replay_cache_test {

using ecsnet::server::replay_cache;
using verdict = replay_cache::verdict;
using namespace std::chrono_literals;
const replay_cache::time_point t0{1'893'456'000s};

TEST(ReplayCache, ATokenIsFreshOnceThenReplayedUntilItExpires) {
    replay_cache cache{8};
    EXPECT_EQ(cache.check("alice", "n-1", t0), verdict::fresh);
    cache.remember("alice", "n-1", t0 + 60s);
    EXPECT_EQ(cache.check("alice", "n-1", t0 + 1s), verdict::replayed);
    EXPECT_EQ(cache.check("alice", "n-1", t0 + 59s), verdict::replayed);
    // Expired: the token itself is refused as expired from then on, the entry goes.
    EXPECT_EQ(cache.check("alice", "n-1", t0 + 60s), verdict::fresh);
    EXPECT_EQ(cache.size(), 0U);
}

TEST(ReplayCache, KeyedByPlayerAndTokenId) {
    replay_cache cache{8};
    cache.remember("alice", "n-1", t0 + 60s);
    EXPECT_EQ(cache.check("bob", "n-1", t0), verdict::fresh);
    EXPECT_EQ(cache.check("alice", "n-2", t0), verdict::fresh);
    // No concatenation ambiguity: ("ab", "c") is not ("a", "bc").
    cache.remember("ab", "c", t0 + 60s);
    EXPECT_EQ(cache.check("a", "bc", t0), verdict::fresh);
}

TEST(ReplayCache, FullRefusesNewTokensInsteadOfForgettingUnexpiredOnes) {
    replay_cache cache{2};
    cache.remember("a", "1", t0 + 10s);
    cache.remember("b", "1", t0 + 20s);
    EXPECT_EQ(cache.check("c", "1", t0), verdict::full);
    EXPECT_EQ(cache.check("a", "1", t0), verdict::replayed) << "a replay is still named a replay";
    EXPECT_EQ(cache.check("c", "1", t0 + 10s), verdict::fresh) << "room once one expired";
    EXPECT_EQ(cache.size(), 1U);
}

}  // namespace replay_cache_test
