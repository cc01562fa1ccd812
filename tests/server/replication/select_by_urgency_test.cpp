// select_by_urgency: a tick's budget, chosen without sorting every candidate. Checked against
// what it replaces: sort them all by urgency and walk them, each going if it fits.
#include "ecsnet/server/replication/select_by_urgency.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace select_by_urgency_test {

struct candidate {
    std::uint32_t id;
    std::uint32_t cost;
    float accumulated;
};

struct choice {
    std::vector<std::uint32_t> picked;  // sorted ids
    std::vector<std::uint32_t> deferred;
};

choice select(std::vector<candidate> candidates, double room) {
    std::size_t total = 0;
    for (const candidate& c : candidates) {
        total += c.cost;
    }
    choice out;
    ecsnet::server::select_by_urgency(
        std::span<candidate>(candidates), room, total,
        [&](const candidate& c) { out.picked.push_back(c.id); },
        [&](const candidate& c) { out.deferred.push_back(c.id); });
    std::sort(out.picked.begin(), out.picked.end());
    std::sort(out.deferred.begin(), out.deferred.end());
    return out;
}

choice sort_and_walk(std::vector<candidate> candidates, double room) {
    std::sort(candidates.begin(), candidates.end(),
              [](const candidate& a, const candidate& b) { return a.accumulated > b.accumulated; });
    choice out;
    bool any = false;
    for (const candidate& c : candidates) {
        if (static_cast<double>(c.cost) <= room || (!any && room > 0.0)) {
            room -= static_cast<double>(c.cost);
            any = true;
            out.picked.push_back(c.id);
        } else {
            out.deferred.push_back(c.id);
        }
    }
    std::sort(out.picked.begin(), out.picked.end());
    std::sort(out.deferred.begin(), out.deferred.end());
    return out;
}

// Distinct urgencies (a tie may go either way in both), costs drawn from [low, high].
std::vector<candidate> draw(std::mt19937& rng, std::size_t n, std::uint32_t low,
                            std::uint32_t high) {
    std::vector<float> urgency(n);
    std::iota(urgency.begin(), urgency.end(), 1.0F);
    std::shuffle(urgency.begin(), urgency.end(), rng);
    std::uniform_int_distribution<std::uint32_t> cost(low, high);
    std::vector<candidate> out;
    for (std::size_t i = 0; i < n; ++i) {
        out.push_back({static_cast<std::uint32_t>(i), cost(rng), urgency[i] * 0.25F});
    }
    return out;
}

TEST(SelectByUrgency, ChoosesWhatSortingThemAllAndWalkingWouldChoose) {
    std::mt19937 rng(42);
    // How often each way through it was tried: the most urgent `fit` (estimated from the
    // average cost) fit in the room and the others wait, or they do not fit after all.
    std::size_t head_fits = 0;
    std::size_t head_over_room = 0;
    for (int round = 0; round < 4000; ++round) {
        const std::size_t n = std::uniform_int_distribution<std::size_t>(1, 200)(rng);
        // Alike sizes (the usual updates), then sizes far apart (spawns among updates), zeros.
        const std::uint32_t low = round % 3 == 0 ? 10 : round % 3 == 1 ? 1 : 0;
        const std::uint32_t high = round % 3 == 0 ? 16 : round % 3 == 1 ? 400 : 20;
        const auto candidates = draw(rng, n, low, high);
        std::size_t total = 0;
        for (const candidate& c : candidates) {
            total += c.cost;
        }
        // Around the total (the budget that binds a little, as at K = 1,000), then anywhere.
        const double share = round % 2 == 0
                                 ? std::uniform_real_distribution<double>(0.85, 1.05)(rng)
                                 : std::uniform_real_distribution<double>(-0.1, 1.2)(rng);
        const double room = share * static_cast<double>(total);
        const choice got = select(candidates, room);
        const choice want = sort_and_walk(candidates, room);
        ASSERT_EQ(got.picked, want.picked)
            << "round " << round << ", " << n << " candidates, room " << room << " of " << total;
        ASSERT_EQ(got.deferred, want.deferred) << "round " << round;
        const double average = static_cast<double>(total) / static_cast<double>(n);
        const auto fit = std::min<std::size_t>(
            n, static_cast<std::size_t>(std::max(room, 0.0) / std::max(average, 1.0)));
        auto sorted = candidates;
        std::sort(sorted.begin(), sorted.end(), [](const candidate& a, const candidate& b) {
            return a.accumulated > b.accumulated;
        });
        std::size_t head = 0;
        for (std::size_t i = 0; i < fit; ++i) {
            head += sorted[i].cost;
        }
        head_over_room += static_cast<double>(head) > room ? 1 : 0;
        head_fits += static_cast<double>(head) <= room && fit < n ? 1 : 0;
    }
    EXPECT_GT(head_fits, 500U);
    EXPECT_GT(head_over_room, 500U);
}

TEST(SelectByUrgency, TheMostUrgentGoesAloneWhenItExceedsTheRoom) {
    const std::vector<candidate> candidates{{0, 500, 1.0F}, {1, 600, 3.0F}, {2, 5, 2.0F}};
    const choice got = select(candidates, 100.0);
    EXPECT_EQ(got.picked, (std::vector<std::uint32_t>{1}));  // then no room is left for 2
    EXPECT_EQ(got.deferred, (std::vector<std::uint32_t>{0, 2}));
}

TEST(SelectByUrgency, NothingGoesWithoutRoomAndEverythingWithEnough) {
    const std::vector<candidate> candidates{{0, 5, 1.0F}, {1, 7, 3.0F}, {2, 9, 2.0F}};
    EXPECT_EQ(select(candidates, 0.0).deferred, (std::vector<std::uint32_t>{0, 1, 2}));
    EXPECT_EQ(select(candidates, -10.0).deferred, (std::vector<std::uint32_t>{0, 1, 2}));
    EXPECT_EQ(select(candidates, 21.0).picked, (std::vector<std::uint32_t>{0, 1, 2}));
    // 20 bytes: 1 (7) and 2 (9) go by urgency, 0 (5) no longer fits.
    EXPECT_EQ(select(candidates, 20.0).picked, (std::vector<std::uint32_t>{1, 2}));
}

TEST(SelectByUrgency, TheMostUrgentComeFirstWithManyEqualUrgencies) {
    std::mt19937 rng(7);
    for (std::size_t n = 0; n <= 300; ++n) {
        for (const int kinds : {1, 2, 5, 1000}) {  // all equal, two values, ..., mostly distinct
            std::vector<candidate> candidates;
            std::uniform_int_distribution<int> urgency(1, kinds);
            for (std::size_t i = 0; i < n; ++i) {
                candidates.push_back(
                    {static_cast<std::uint32_t>(i), 1, static_cast<float>(urgency(rng))});
            }
            for (const std::size_t k : {std::size_t{0}, n / 3, n / 2, n == 0 ? 0 : n - 1, n}) {
                auto reordered = candidates;
                ecsnet::server::detail::most_urgent_first(
                    reordered.begin(), reordered.begin() + static_cast<std::ptrdiff_t>(k),
                    reordered.end());
                float least_before = std::numeric_limits<float>::infinity();
                for (std::size_t i = 0; i < k; ++i) {
                    least_before = std::min(least_before, reordered[i].accumulated);
                }
                for (std::size_t i = k; i < n; ++i) {
                    ASSERT_LE(reordered[i].accumulated, least_before)
                        << n << " candidates, " << kinds << " urgencies, k " << k << ", at " << i;
                }
                std::vector<std::uint32_t> ids;
                for (const candidate& c : reordered) {
                    ids.push_back(c.id);
                }
                std::sort(ids.begin(), ids.end());
                for (std::size_t i = 0; i < n; ++i) {
                    ASSERT_EQ(ids[i], i) << "not a permutation: " << n << ", k " << k;
                }
            }
        }
    }
}

}  // namespace select_by_urgency_test
