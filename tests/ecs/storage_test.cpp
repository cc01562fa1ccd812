#include "ecsnet/ecs/storage.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace storage_test {

using ecsnet::ecs::basic_storage;
using ecsnet::ecs::Entity;

struct Position {
    float x;
    float y;
};

// Not an aggregate: constructed through its constructor.
class Named {
public:
    Named(std::string name, int rank) : name_{std::move(name)}, rank_{rank} {}
    [[nodiscard]] const std::string& name() const { return name_; }
    [[nodiscard]] int rank() const { return rank_; }

private:
    std::string name_;
    int rank_;
};
static_assert(!std::is_aggregate_v<Named>);

// Counts live instances, to check that erase and clear destroy what they remove.
struct Counted {
    static inline int live = 0;
    int value = 0;
    explicit Counted(int v) : value{v} { ++live; }
    Counted(const Counted& other) : value{other.value} { ++live; }
    Counted(Counted&& other) noexcept : value{other.value} { ++live; }
    Counted& operator=(const Counted&) = default;
    Counted& operator=(Counted&&) noexcept = default;
    ~Counted() { --live; }
};

template <typename T>
std::vector<T> to_vector(std::span<const T> span) {
    return {span.begin(), span.end()};
}

TEST(Storage, EmplaceAndGet) {
    basic_storage<Entity, int> storage;
    int& stored = storage.emplace(Entity{3, 1}, 30);
    EXPECT_EQ(stored, 30);
    storage.emplace(Entity{8, 2}, 80);

    EXPECT_EQ(storage.size(), 2U);
    EXPECT_EQ(storage.get(Entity{3, 1}), 30);
    EXPECT_EQ(storage.get(Entity{8, 2}), 80);

    storage.get(Entity{3, 1}) = 31;
    const auto& view = storage;
    EXPECT_EQ(view.get(Entity{3, 1}), 31);
    EXPECT_THAT(to_vector(view.values()), ::testing::ElementsAre(31, 80));
    EXPECT_THAT(to_vector(view.entities()), ::testing::ElementsAre(Entity{3, 1}, Entity{8, 2}));
}

TEST(Storage, EmplaceBuildsAggregatesFromTheirMembers) {
    basic_storage<Entity, Position> storage;
    const Position& p = storage.emplace(Entity{0, 1}, 1.5F, -2.0F);
    EXPECT_EQ(p.x, 1.5F);
    EXPECT_EQ(p.y, -2.0F);

    const Position& zero = storage.emplace(Entity{1, 1});
    EXPECT_EQ(zero.x, 0.0F) << "no arguments: value-initialised";
    EXPECT_EQ(zero.y, 0.0F);

    const Position& copy = storage.emplace(Entity{2, 1}, Position{4.0F, 5.0F});
    EXPECT_EQ(copy.x, 4.0F);
    EXPECT_EQ(copy.y, 5.0F);
}

TEST(Storage, EmplaceCallsConstructorsOfNonAggregates) {
    basic_storage<Entity, Named> storage;
    storage.emplace(Entity{0, 1}, "alice", 3);
    storage.emplace(Entity{1, 1}, std::string(40, 'b'), 4);
    EXPECT_EQ(storage.get(Entity{0, 1}).name(), "alice");
    EXPECT_EQ(storage.get(Entity{0, 1}).rank(), 3);
    storage.erase(Entity{0, 1});
    EXPECT_EQ(storage.get(Entity{1, 1}).name(), std::string(40, 'b'));
    EXPECT_EQ(storage.get(Entity{1, 1}).rank(), 4);
}

TEST(Storage, MoveOnlyComponents) {
    basic_storage<Entity, std::unique_ptr<int>> storage;
    for (std::uint32_t i = 0; i < 4; ++i) {
        storage.emplace(Entity{i, 1}, std::make_unique<int>(static_cast<int>(i) * 100));
    }
    const int* last = storage.get(Entity{3, 1}).get();
    storage.erase(Entity{1, 1});
    ASSERT_EQ(storage.size(), 3U);
    EXPECT_EQ(storage.get(Entity{3, 1}).get(), last) << "the pointer moved, not the pointee";
    EXPECT_EQ(*storage.get(Entity{0, 1}), 0);
    EXPECT_EQ(*storage.get(Entity{2, 1}), 200);
    EXPECT_EQ(*storage.get(Entity{3, 1}), 300);
    EXPECT_EQ(storage.try_get(Entity{1, 1}), nullptr);
}

TEST(Storage, TryGet) {
    basic_storage<Entity, int> storage;
    storage.emplace(Entity{5, 2}, 50);
    int* found = storage.try_get(Entity{5, 2});
    ASSERT_NE(found, nullptr);
    EXPECT_EQ(*found, 50);
    *found = 51;
    const auto& view = storage;
    ASSERT_NE(view.try_get(Entity{5, 2}), nullptr);
    EXPECT_EQ(*view.try_get(Entity{5, 2}), 51);

    EXPECT_EQ(storage.try_get(Entity{5, 1}), nullptr) << "stale version";
    EXPECT_EQ(storage.try_get(Entity{5, 3}), nullptr) << "newer version";
    EXPECT_EQ(storage.try_get(Entity{4, 2}), nullptr);
    EXPECT_EQ(view.try_get(Entity{}), nullptr);
}

TEST(Storage, EraseKeepsTheOtherValuesWithTheirEntities) {
    basic_storage<Entity, int> storage;
    for (std::uint32_t i = 0; i < 6; ++i) {
        storage.emplace(Entity{i, 1}, static_cast<int>(i) * 11);
    }
    storage.erase(Entity{1, 1});  // middle: last one moves in
    storage.erase(Entity{5, 1});  // now the last
    storage.erase(Entity{0, 1});  // first

    EXPECT_EQ(storage.size(), 3U);
    EXPECT_FALSE(storage.contains(Entity{0, 1}));
    EXPECT_FALSE(storage.contains(Entity{1, 1}));
    EXPECT_FALSE(storage.contains(Entity{5, 1}));
    EXPECT_EQ(storage.get(Entity{2, 1}), 22);
    EXPECT_EQ(storage.get(Entity{3, 1}), 33);
    EXPECT_EQ(storage.get(Entity{4, 1}), 44);
    for (std::size_t i = 0; i < storage.size(); ++i) {
        EXPECT_EQ(storage.values()[i], static_cast<int>(storage.entities()[i].index()) * 11);
    }
}

TEST(Storage, ContainsComparesTheVersion) {
    basic_storage<Entity, int> storage;
    storage.emplace(Entity{9, 1}, 1);
    storage.erase(Entity{9, 1});
    storage.emplace(Entity{9, 2}, 2);
    EXPECT_TRUE(storage.contains(Entity{9, 2}));
    EXPECT_FALSE(storage.contains(Entity{9, 1}));
    EXPECT_EQ(storage.find_index(9), (Entity{9, 2}));
    EXPECT_TRUE(storage.find_index(8).is_null());
    EXPECT_EQ(storage.get(Entity{9, 2}), 2);
}

TEST(Storage, HugeEntityIndex) {
    basic_storage<Entity, int> storage;
    const Entity far{10'000'000, 1};
    storage.emplace(far, 42);
    storage.emplace(Entity{1, 1}, 1);
    EXPECT_EQ(storage.get(far), 42);
    EXPECT_EQ(storage.find_index(10'000'000), far);
    storage.erase(far);
    EXPECT_FALSE(storage.contains(far));
    EXPECT_EQ(storage.get(Entity{1, 1}), 1);
}

TEST(Storage, StructuralVersionChangesOnInsertEraseAndClear) {
    basic_storage<Entity, int> storage;
    auto version = storage.structural_version();
    storage.emplace(Entity{1, 1}, 1);
    EXPECT_GT(storage.structural_version(), version);
    version = storage.structural_version();

    storage.get(Entity{1, 1}) = 5;  // writing a value is not a structural change
    (void)storage.try_get(Entity{1, 1});
    EXPECT_EQ(storage.structural_version(), version);

    storage.emplace(Entity{2, 1}, 2);
    EXPECT_GT(storage.structural_version(), version);
    version = storage.structural_version();

    storage.erase(Entity{1, 1});
    EXPECT_GT(storage.structural_version(), version);
    version = storage.structural_version();

    storage.clear();
    EXPECT_GT(storage.structural_version(), version);
}

TEST(Storage, EraseAndClearDestroyComponents) {
    ASSERT_EQ(Counted::live, 0);
    {
        basic_storage<Entity, Counted> storage;
        storage.reserve(8);
        for (std::uint32_t i = 0; i < 5; ++i) {
            storage.emplace(Entity{i, 1}, static_cast<int>(i));
        }
        EXPECT_EQ(Counted::live, 5);
        storage.erase(Entity{1, 1});
        EXPECT_EQ(Counted::live, 4);
        EXPECT_EQ(storage.get(Entity{4, 1}).value, 4);
        storage.clear();
        EXPECT_EQ(Counted::live, 0);
        EXPECT_TRUE(storage.empty());
        EXPECT_TRUE(storage.values().empty());
        EXPECT_FALSE(storage.contains(Entity{4, 1}));

        storage.emplace(Entity{4, 2}, 7);
        EXPECT_EQ(storage.get(Entity{4, 2}).value, 7);
        EXPECT_EQ(Counted::live, 1);
    }
    EXPECT_EQ(Counted::live, 0);
}

// --- property test -----------------------------------------------------------------------
//
// Random emplace/erase/get/contains on a storage, with indices coming back at new versions,
// against a map from index to (version, value).

class StorageModel {
public:
    using Storage = basic_storage<Entity, int>;

    // Full equivalence: size, every modelled entity's value, and every packed slot.
    [[nodiscard]] ::testing::AssertionResult matches(const Storage& storage) const {
        if (storage.size() != model_.size() || storage.values().size() != model_.size() ||
            storage.entities().size() != model_.size()) {
            return ::testing::AssertionFailure()
                   << "size " << storage.size() << " values " << storage.values().size()
                   << " entities " << storage.entities().size() << ", model " << model_.size();
        }
        for (const auto& [index, entry] : model_) {
            const Entity e{index, entry.first};
            if (!storage.contains(e)) {
                return ::testing::AssertionFailure() << to_string(e) << " missing";
            }
            if (storage.get(e) != entry.second) {
                return ::testing::AssertionFailure()
                       << to_string(e) << " holds " << storage.get(e) << ", model " << entry.second;
            }
            if (storage.contains(Entity{index, entry.first - 1})) {
                return ::testing::AssertionFailure() << "stale version of " << to_string(e);
            }
        }
        for (std::size_t i = 0; i < storage.size(); ++i) {
            const Entity e = storage.entities()[i];
            const auto it = model_.find(e.index());
            if (it == model_.end() || it->second.first != e.version()) {
                return ::testing::AssertionFailure()
                       << "packed entity " << i << " is " << to_string(e) << ", not in model";
            }
            if (storage.values()[i] != it->second.second) {
                return ::testing::AssertionFailure()
                       << "packed value " << i << " of " << to_string(e) << " is "
                       << storage.values()[i] << ", model " << it->second.second;
            }
            if (storage.index_of(e) != i) {
                return ::testing::AssertionFailure() << "index_of(" << to_string(e) << ") is "
                                                     << storage.index_of(e) << ", not " << i;
            }
        }
        return ::testing::AssertionSuccess();
    }

    std::map<std::uint32_t, std::pair<std::uint32_t, int>> model_;
    std::map<std::uint32_t, std::uint32_t> next_version_;  // absent: 1
};

TEST(Storage, PropertyRandomOperationsMatchAMapModel) {
    constexpr std::uint64_t seed = 0x5eed'ec5'0001ULL;
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng{seed};

    // Mostly dense small indices (several pages with a small page count), a few far ones.
    std::vector<std::uint32_t> indices;
    for (std::uint32_t i = 0; i < 300; ++i) {
        indices.push_back(i);
    }
    for (std::uint32_t i = 1; i <= 20; ++i) {
        indices.push_back(i * 100'003U);
    }
    std::uniform_int_distribution<std::size_t> pick_index{0, indices.size() - 1};
    std::uniform_int_distribution<int> pick_op{0, 99};
    std::uniform_int_distribution<int> pick_value{-1'000'000, 1'000'000};
    std::uniform_int_distribution<std::uint32_t> version_skip{1, 3};

    StorageModel m;
    StorageModel::Storage storage;
    constexpr int operations = 100'000;
    int emplaces = 0;
    int erases = 0;
    int reuses = 0;

    for (int op = 0; op < operations; ++op) {
        const std::uint32_t index = indices[pick_index(rng)];
        const auto found = m.model_.find(index);
        const bool present = found != m.model_.end();
        const int kind = pick_op(rng);

        if (kind < 40) {  // emplace
            if (present) {
                continue;
            }
            auto [version_it, first_use] = m.next_version_.try_emplace(index, 1U);
            const Entity e{index, version_it->second};
            reuses += first_use ? 0 : 1;
            const int value = pick_value(rng);
            const int& stored = storage.emplace(e, value);
            ASSERT_EQ(stored, value) << "op " << op << " emplace " << to_string(e);
            m.model_.emplace(index, std::pair{e.version(), value});
            ++emplaces;
        } else if (kind < 70) {  // erase; the index comes back later at a newer version
            if (!present) {
                continue;
            }
            const Entity e{index, found->second.first};
            storage.erase(e);
            m.model_.erase(found);
            m.next_version_[index] = e.version() + version_skip(rng);
            ASSERT_FALSE(storage.contains(e)) << "op " << op << " erase " << to_string(e);
            ++erases;
        } else if (kind < 85) {  // get, and write through the reference
            if (!present) {
                ASSERT_TRUE(storage.find_index(index).is_null()) << "op " << op;
                continue;
            }
            const Entity e{index, found->second.first};
            ASSERT_EQ(storage.get(e), found->second.second)
                << "op " << op << " get " << to_string(e);
            const int value = pick_value(rng);
            storage.get(e) = value;
            found->second.second = value;
        } else {  // contains / try_get at the current, an older or a newer version
            const auto next = m.next_version_.find(index);
            const std::uint32_t base = present                         ? found->second.first
                                       : next != m.next_version_.end() ? next->second
                                                                       : 1U;
            const std::uint32_t version = base - 1U + static_cast<std::uint32_t>(kind % 3);
            const Entity e{index, version};
            const bool expected = present && found->second.first == version;
            ASSERT_EQ(storage.contains(e), expected) << "op " << op << " " << to_string(e);
            const int* value = storage.try_get(e);
            ASSERT_EQ(value != nullptr, expected) << "op " << op << " " << to_string(e);
            if (expected) {
                ASSERT_EQ(*value, found->second.second) << "op " << op;
            }
        }

        if (op % 1000 == 999) {
            ASSERT_TRUE(m.matches(storage)) << "after op " << op;
        }
    }
    ASSERT_TRUE(m.matches(storage)) << "at the end";

    // The run must have exercised what it claims to.
    EXPECT_GT(emplaces, 10'000);
    EXPECT_GT(erases, 10'000);
    EXPECT_GT(reuses, 5'000);
}

}  // namespace storage_test
