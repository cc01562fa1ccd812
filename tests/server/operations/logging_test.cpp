// printable() for client-supplied text in log lines, and the log_limiter.
#include "ecsnet/server/operations/logging.hpp"

#include <gtest/gtest.h>

#include <string>

namespace logging_test {

using ecsnet::server::log_limiter;
using ecsnet::server::printable;
using namespace std::chrono_literals;
using namespace std::string_literals;

TEST(Printable, PlainTextIsUnchanged) {
    EXPECT_EQ(printable("player one"), "player one");
    EXPECT_EQ(printable(""), "");
}

TEST(Printable, EscapesQuotesAndBackslashes) {
    EXPECT_EQ(printable(R"(say "hi")"), R"(say \"hi\")");
    EXPECT_EQ(printable(R"(a\b)"), R"(a\\b)");
}

TEST(Printable, EscapesNewlinesAndControlCharacters) {
    EXPECT_EQ(printable("line1\nline2"), R"(line1\x0aline2)");
    EXPECT_EQ(printable("a\rb\tc"), R"(a\x0db\x09c)");
    EXPECT_EQ(printable("\x1b[31mred"), R"(\x1b[31mred)");
    EXPECT_EQ(printable("del\x7f"), R"(del\x7f)");
    EXPECT_EQ(printable("nul\0byte"s), R"(nul\x00byte)");
}

TEST(Printable, ForgedLogLineStaysOnOneLine) {
    const std::string forged = "bob\n2024-01-01 00:00:00.000 info  client 1 (admin) joined";
    const std::string out = printable(forged, 200);
    EXPECT_EQ(out.find('\n'), std::string::npos);
    EXPECT_EQ(out.find('\r'), std::string::npos);
}

TEST(Printable, Utf8PassesThrough) {
    EXPECT_EQ(printable("joueur \xc3\xa9t\xc3\xa9"), "joueur \xc3\xa9t\xc3\xa9");
}

TEST(Printable, CutsLongTextAtTheLimit) {
    const std::string long_text(200, 'a');
    EXPECT_EQ(printable(long_text), std::string(80, 'a') + "...");
    EXPECT_EQ(printable(long_text, 10), std::string(10, 'a') + "...");
    EXPECT_EQ(printable(std::string(80, 'a')), std::string(80, 'a')) << "exactly at the limit";
}

TEST(Printable, EscapedOutputStaysBounded) {
    const std::string newlines(1000, '\n');
    const std::string out = printable(newlines, 80);
    EXPECT_LE(out.size(), 80U + 4U + 3U) << "one escape may cross the limit, then it stops";
    EXPECT_EQ(out.substr(out.size() - 3), "...");
}

const log_limiter::clock::time_point t0 = log_limiter::clock::time_point{} + 1h;

TEST(LogLimiter, LetsTheBurstThroughThenCounts) {
    log_limiter limiter{3, 10s};
    std::size_t suppressed = 99;
    for (int i = 0; i < 3; ++i) {
        EXPECT_TRUE(limiter.allow(suppressed, t0 + std::chrono::milliseconds{i}));
        EXPECT_EQ(suppressed, 0U);
    }
    EXPECT_FALSE(limiter.allow(suppressed, t0 + 1s));
    EXPECT_FALSE(limiter.allow(suppressed, t0 + 2s));
    EXPECT_FALSE(limiter.allow(suppressed, t0 + 9s));
}

TEST(LogLimiter, NextWindowReportsHowManyWereSuppressed) {
    log_limiter limiter{2, 10s};
    std::size_t suppressed = 0;
    ASSERT_TRUE(limiter.allow(suppressed, t0));
    ASSERT_TRUE(limiter.allow(suppressed, t0));
    for (int i = 0; i < 5; ++i) {
        EXPECT_FALSE(limiter.allow(suppressed, t0 + 1s));
    }
    EXPECT_TRUE(limiter.allow(suppressed, t0 + 10s));
    EXPECT_EQ(suppressed, 5U);
    EXPECT_TRUE(limiter.allow(suppressed, t0 + 11s));
    EXPECT_EQ(suppressed, 0U) << "reported once";
    EXPECT_FALSE(limiter.allow(suppressed, t0 + 12s));
}

TEST(LogLimiter, FloodIsCappedPerWindow) {
    log_limiter limiter{10, 10s};
    std::size_t suppressed = 0;
    int allowed = 0;
    for (int ms = 0; ms < 60'000; ms += 1) {  // one message per millisecond for a minute
        allowed += limiter.allow(suppressed, t0 + std::chrono::milliseconds{ms}) ? 1 : 0;
    }
    EXPECT_EQ(allowed, 60);
}

// The connection lines' form: no count handed to the next line; a summary takes it.
TEST(LogLimiter, CountsForASummaryLineWhenNoLineCarriesTheCount) {
    log_limiter limiter{2, 10s};
    EXPECT_TRUE(limiter.allow(t0));
    EXPECT_TRUE(limiter.allow(t0 + 1ms));
    for (int i = 0; i < 5; ++i) {
        EXPECT_FALSE(limiter.allow(t0 + 2s));
    }
    EXPECT_TRUE(limiter.allow(t0 + 11s)) << "a new window";
    EXPECT_EQ(limiter.take_suppressed(), 5U) << "kept for the summary, not handed to a line";
    EXPECT_EQ(limiter.take_suppressed(), 0U);
}

// Issue 24.7: one limiter per kind of noise, so a client's flood cannot hide a game failure.
TEST(LogLimiter, SeparateLimitersDoNotShareTheirBudget) {
    log_limiter clients{10, 10s};
    log_limiter game{10, 10s};
    std::size_t suppressed = 0;
    for (int i = 0; i < 1000; ++i) {
        (void)clients.allow(suppressed, t0);
    }
    EXPECT_TRUE(game.allow(suppressed, t0));
    EXPECT_EQ(suppressed, 0U);
}

}  // namespace logging_test

