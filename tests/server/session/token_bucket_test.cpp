// token_bucket: the per-client command rate limit, on an explicit clock.
#include "ecsnet/server/session/token_bucket.hpp"

#include <gtest/gtest.h>

namespace token_bucket_test {

using ecsnet::server::token_bucket;
using namespace std::chrono_literals;

const token_bucket::clock::time_point t0 = token_bucket::clock::time_point{} + 1h;

int take_all(token_bucket& bucket, token_bucket::clock::time_point now, int at_most = 1000) {
    int taken = 0;
    while (taken < at_most && bucket.try_take(now)) {
        ++taken;
    }
    return taken;
}

TEST(TokenBucket, StartsFullAndEmptiesAfterTheBurst) {
    token_bucket bucket{10.0, 5.0, t0};
    EXPECT_DOUBLE_EQ(bucket.tokens(), 5.0);
    EXPECT_EQ(take_all(bucket, t0), 5);
    EXPECT_FALSE(bucket.try_take(t0));
}

TEST(TokenBucket, RefillsAtTheRate) {
    token_bucket bucket{10.0, 5.0, t0};
    ASSERT_EQ(take_all(bucket, t0), 5);
    EXPECT_FALSE(bucket.try_take(t0 + 50ms)) << "half a token is not a token";
    EXPECT_TRUE(bucket.try_take(t0 + 100ms));
    EXPECT_FALSE(bucket.try_take(t0 + 100ms));
    EXPECT_EQ(take_all(bucket, t0 + 400ms), 3);
}

TEST(TokenBucket, SavesAtMostTheBurst) {
    token_bucket bucket{10.0, 5.0, t0};
    ASSERT_EQ(take_all(bucket, t0), 5);
    EXPECT_EQ(take_all(bucket, t0 + 1h), 5);
}

TEST(TokenBucket, SustainedRateMatchesTheConfiguredRate) {
    token_bucket bucket{200.0, 400.0, t0};
    int taken = take_all(bucket, t0);
    for (int ms = 1; ms <= 10'000; ++ms) {  // 10 s of a client hammering every millisecond
        taken += take_all(bucket, t0 + std::chrono::milliseconds{ms});
    }
    EXPECT_NEAR(taken, 400 + 200 * 10, 2);
}

TEST(TokenBucket, ClockGoingBackwardsAddsNothing) {
    token_bucket bucket{10.0, 5.0, t0};
    ASSERT_EQ(take_all(bucket, t0), 5);
    EXPECT_FALSE(bucket.try_take(t0 - 10s));
    EXPECT_GE(bucket.tokens(), 0.0);
}

TEST(TokenBucket, FractionalBurstBelowOneAdmitsNothing) {
    token_bucket bucket{1.0, 0.5, t0};
    EXPECT_FALSE(bucket.try_take(t0));
    EXPECT_FALSE(bucket.try_take(t0 + 10s));
}

}  // namespace token_bucket_test
