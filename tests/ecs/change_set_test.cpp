#include "ecsnet/ecs/change_set.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ecsnet/ecs/type_info.hpp"
#include "ecsnet/ecs/world.hpp"

namespace change_set_test {

using ecsnet::ecs::Entity;
using ecsnet::ecs::type_hash_v;
using ecsnet::ecs::World;
using ecsnet::ecs::world_options;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

using ChangeSet = World::change_set_type;

struct Position {
    int x;
    int y;
};
struct Velocity {
    int dx;
    int dy;
};
struct Health {
    int hp;
};

std::shared_ptr<World> make_reusing_world() {
    world_options options;
    options.entities.min_free_indices = 0;
    return World::make(options);
}

// The changes of T in a change set; an empty list when T has no entry.
template <typename T>
ecsnet::ecs::basic_component_changes<Entity> changes_of(const ChangeSet& cs) {
    const auto* found = cs.find<T>();
    return found == nullptr ? ecsnet::ecs::basic_component_changes<Entity>{} : *found;
}

// An entity that existed before the tick being tested, with a Position and a Velocity.
class ChangeSetFixture : public ::testing::Test {
protected:
    void SetUp() override {
        (void)w_->create();
        e_ = w_->create();
        w_->emplace<Position>(e_, 1, 1);
        w_->emplace<Velocity>(e_, 2, 2);
        w_->register_component<Health>();
        const ChangeSet first = w_->take_changes();
        ASSERT_EQ(first.created.size(), 2U);
    }

    // Exactly one entry, for T, holding e_ in the given list only.
    template <typename T>
    void expect_only(const ChangeSet& cs, const char* list) const {
        EXPECT_THAT(cs.created, IsEmpty());
        EXPECT_THAT(cs.destroyed, IsEmpty());
        ASSERT_EQ(cs.components.size(), 1U);
        const auto& c = cs.components[0];
        EXPECT_EQ(c.type_hash, type_hash_v<T>);
        EXPECT_EQ(c.id, *w_->component_of<T>());
        const std::string which{list};
        EXPECT_EQ(c.added, which == "added" ? std::vector<Entity>{e_} : std::vector<Entity>{});
        EXPECT_EQ(c.updated, which == "updated" ? std::vector<Entity>{e_} : std::vector<Entity>{});
        EXPECT_EQ(c.removed, which == "removed" ? std::vector<Entity>{e_} : std::vector<Entity>{});
    }

    std::shared_ptr<World> w_ = make_reusing_world();
    Entity e_;
};

// ---- one write path at a time ---------------------------------------------------------------

TEST_F(ChangeSetFixture, NothingWrittenGivesAnEmptySet) {
    (void)w_->get<Position>(e_);
    (void)w_->try_get<Velocity>(e_);
    EXPECT_TRUE(w_->take_changes().empty());
}

TEST_F(ChangeSetFixture, EmplaceOnAnExistingEntityIsAdded) {
    w_->emplace<Health>(e_, 5);
    expect_only<Health>(w_->take_changes(), "added");
}

TEST_F(ChangeSetFixture, EmplaceOrReplaceOfAMissingComponentIsAdded) {
    w_->emplace_or_replace<Health>(e_, 5);
    expect_only<Health>(w_->take_changes(), "added");
}

TEST_F(ChangeSetFixture, ReplaceIsUpdated) {
    w_->replace<Position>(e_, 3, 3);
    expect_only<Position>(w_->take_changes(), "updated");
}

TEST_F(ChangeSetFixture, EmplaceOrReplaceOfAnExistingComponentIsUpdated) {
    w_->emplace_or_replace<Position>(e_, 3, 3);
    expect_only<Position>(w_->take_changes(), "updated");
}

TEST_F(ChangeSetFixture, PatchIsUpdated) {
    w_->patch<Velocity>(e_, [](Velocity& v) { ++v.dx; });
    expect_only<Velocity>(w_->take_changes(), "updated");
}

TEST_F(ChangeSetFixture, AWritingViewIsUpdated) {
    for (auto [e, p, v] : w_->view<Position, const Velocity>()) {
        p.x += v.dx + static_cast<int>(e.index());
    }
    expect_only<Position>(w_->take_changes(), "updated");
    w_->view<Velocity>().each([](Velocity& v) { ++v.dx; });
    expect_only<Velocity>(w_->take_changes(), "updated");
}

// Issue 12.9: a write through any mutable reference the world hands out reaches the change set.
TEST_F(ChangeSetFixture, WritesThroughEveryReturnedReferenceAreRecorded) {
    w_->emplace<Health>(e_, 1).hp = 10;
    expect_only<Health>(w_->take_changes(), "added");
    w_->patch<Health>(e_).hp = 11;
    expect_only<Health>(w_->take_changes(), "updated");
    w_->replace<Health>(e_, 0).hp = 12;
    expect_only<Health>(w_->take_changes(), "updated");
    w_->emplace_or_replace<Health>(e_, 0).hp = 13;
    expect_only<Health>(w_->take_changes(), "updated");
    EXPECT_EQ(w_->get<Health>(e_).hp, 13);
}

TEST_F(ChangeSetFixture, WritesThroughEveryWritingViewAccessorAreRecorded) {
    {
        auto view = w_->view<Position>();
        std::get<1>(*view.begin()).x = 5;  // iterator
    }
    expect_only<Position>(w_->take_changes(), "updated");
    w_->view<Position>().each([](Position& p) { p.x = 6; });  // single-type each
    expect_only<Position>(w_->take_changes(), "updated");
    // multi-type each
    w_->view<Position, const Velocity>().each([](Position& p, const Velocity&) { p.x = 7; });
    expect_only<Position>(w_->take_changes(), "updated");
    w_->view<Position, const Velocity>().get<Position>(e_).x = 8;  // get
    expect_only<Position>(w_->take_changes(), "updated");
    EXPECT_EQ(w_->get<Position>(e_).x, 8);

    // And none through the read-only ones.
    (void)w_->view<const Position>().get<Position>(e_);
    w_->view<const Position, const Velocity>().each([](const Position&, const Velocity&) {});
    (void)w_->view<Position, const Velocity>().get<const Position>(e_);
    EXPECT_TRUE(w_->take_changes().empty());
}

TEST_F(ChangeSetFixture, RemoveIsRemoved) {
    w_->erase<Velocity>(e_);
    expect_only<Velocity>(w_->take_changes(), "removed");
}

TEST_F(ChangeSetFixture, RemoveIfPresentAndClearAreRemoved) {
    EXPECT_EQ((w_->remove<Velocity, Health>(e_)), 1U);
    expect_only<Velocity>(w_->take_changes(), "removed");
    w_->clear(e_);
    expect_only<Position>(w_->take_changes(), "removed");
}

TEST_F(ChangeSetFixture, AddThenRemoveInTheSameTickIsNothing) {
    w_->emplace<Health>(e_, 1);
    w_->patch<Health>(e_, [](Health& h) { ++h.hp; });
    w_->erase<Health>(e_);
    EXPECT_TRUE(w_->take_changes().empty());
}

TEST_F(ChangeSetFixture, RemoveThenAddInTheSameTickIsUpdated) {
    w_->erase<Position>(e_);
    w_->emplace<Position>(e_, 1, 1);  // even with the same value
    expect_only<Position>(w_->take_changes(), "updated");
}

TEST_F(ChangeSetFixture, UpdateThenRemoveIsRemoved) {
    w_->patch<Position>(e_, [](Position& p) { ++p.x; });
    w_->erase<Position>(e_);
    expect_only<Position>(w_->take_changes(), "removed");
}

TEST_F(ChangeSetFixture, AddThenWriteIsStillAdded) {
    w_->emplace<Health>(e_, 1);
    w_->patch<Health>(e_, [](Health& h) { ++h.hp; });
    w_->view<Health>().each([](Health& h) { ++h.hp; });
    expect_only<Health>(w_->take_changes(), "added");
}

// ---- entities -------------------------------------------------------------------------------

TEST_F(ChangeSetFixture, ACreatedEntityIsListedOnlyInCreated) {
    const Entity fresh = w_->create();
    w_->emplace<Position>(fresh, 0, 0);
    w_->emplace<Health>(fresh, 0);
    w_->patch<Position>(fresh, [](Position& p) { ++p.x; });
    w_->erase<Health>(fresh);
    w_->view<Position>().each([](Entity, Position&) {});  // also writes e_'s Position

    const ChangeSet cs = w_->take_changes();
    EXPECT_THAT(cs.created, ElementsAre(fresh));
    EXPECT_THAT(cs.destroyed, IsEmpty());
    EXPECT_THAT(changes_of<Position>(cs).updated, ElementsAre(e_));
    EXPECT_THAT(changes_of<Position>(cs).added, IsEmpty());
    EXPECT_EQ(cs.find<Health>(), nullptr);
}

// The log keeps creations as runs of consecutive indices at one version: the order of creation
// must survive whatever mix of fresh and recycled indices, and of destroys, a tick has.
TEST(ChangeSetCreated, ListsCreationsInOrderAcrossFreshRecycledAndDestroyed) {
    const auto w = World::make(world_options{.entities = {.min_free_indices = 0}});
    std::vector<Entity> old;
    for (int i = 0; i < 4; ++i) {
        old.push_back(w->create());
    }
    w->destroy(old[2]);
    w->destroy(old[1]);
    (void)w->take_changes();

    const Entity a = w->create();  // recycles index 2
    const Entity b = w->create();  // recycles index 1
    const Entity c = w->create();  // fresh 4
    const Entity d = w->create();  // fresh 5
    const Entity gone = w->create();  // fresh 6, destroyed below
    const Entity f = w->create();  // fresh 7
    w->destroy(gone);
    const Entity g = w->create();  // recycles index 6 at the next version
    ASSERT_EQ(a.index(), 2U);
    ASSERT_EQ(b.index(), 1U);
    ASSERT_EQ(g.index(), gone.index());

    const ChangeSet cs = w->take_changes();
    EXPECT_THAT(cs.created, ElementsAre(a, b, c, d, f, g));
    EXPECT_THAT(cs.destroyed, IsEmpty());
    EXPECT_THAT(w->take_changes().created, IsEmpty());
}

TEST_F(ChangeSetFixture, CreatedAndDestroyedInTheSameTickAppearsNowhere) {
    const Entity brief = w_->create();
    w_->emplace<Health>(brief, 1);
    w_->destroy(brief);
    EXPECT_TRUE(w_->take_changes().empty());
}

TEST_F(ChangeSetFixture, ADestroyedEntityIsListedWithItsVersionAndNoComponentRemovals) {
    w_->patch<Position>(e_, [](Position& p) { ++p.x; });
    w_->erase<Velocity>(e_);
    w_->destroy(e_);
    const ChangeSet cs = w_->take_changes();
    EXPECT_THAT(cs.destroyed, ElementsAre(e_));
    EXPECT_EQ(cs.destroyed[0].version(), e_.version());
    EXPECT_THAT(cs.created, IsEmpty());
    EXPECT_THAT(cs.components, IsEmpty());
}

TEST_F(ChangeSetFixture, DestroyAndIndexReuseInTheSameTick) {
    w_->patch<Position>(e_, [](Position& p) { ++p.x; });
    w_->destroy(e_);
    const Entity reused = w_->create();
    ASSERT_EQ(reused.index(), e_.index());
    ASSERT_EQ(reused.version(), e_.version() + 1);
    w_->emplace<Position>(reused, 9, 9);
    w_->patch<Position>(reused, [](Position& p) { ++p.x; });

    const ChangeSet cs = w_->take_changes();
    EXPECT_THAT(cs.destroyed, ElementsAre(e_));
    EXPECT_THAT(cs.created, ElementsAre(reused));
    EXPECT_THAT(cs.components, IsEmpty());

    // Next tick the new entity is an ordinary one.
    w_->patch<Position>(reused, [](Position& p) { ++p.x; });
    const ChangeSet next = w_->take_changes();
    EXPECT_THAT(changes_of<Position>(next).updated, ElementsAre(reused));
}

TEST_F(ChangeSetFixture, EachEntityIsListedAtMostOncePerList) {
    const Entity other = w_->create();
    w_->emplace<Position>(other, 0, 0);
    (void)w_->take_changes();

    for (int i = 0; i < 3; ++i) {
        w_->patch<Position>(e_, [](Position& p) { ++p.x; });
        w_->replace<Position>(e_, i, i);
        w_->emplace_or_replace<Position>(other, i, i);
        w_->view<Position>().each([](Position& p) { ++p.y; });
        for (auto [e, p] : w_->view<Position>()) {
            p.x += static_cast<int>(e.index());
        }
        w_->erase<Velocity>(e_);
        w_->emplace<Velocity>(e_, i, i);
        w_->emplace_or_replace<Health>(other, i);
        w_->erase<Health>(other);
        w_->emplace<Health>(other, i);
    }
    const ChangeSet cs = w_->take_changes();
    EXPECT_THAT(changes_of<Position>(cs).updated, UnorderedElementsAre(e_, other));
    EXPECT_THAT(changes_of<Velocity>(cs).updated, ElementsAre(e_));
    EXPECT_THAT(changes_of<Health>(cs).added, ElementsAre(other));
    EXPECT_THAT(changes_of<Health>(cs).updated, IsEmpty());
}

TEST_F(ChangeSetFixture, ComponentEntriesAreSortedByIdAndNamed) {
    w_->register_component<Velocity>("velocity");
    w_->emplace<Health>(e_, 1);
    w_->erase<Velocity>(e_);
    w_->patch<Position>(e_, [](Position&) {});
    const ChangeSet cs = w_->take_changes();
    ASSERT_EQ(cs.components.size(), 3U);
    EXPECT_EQ(cs.components[0].id, 0U);
    EXPECT_EQ(cs.components[1].id, 1U);
    EXPECT_EQ(cs.components[2].id, 2U);
    EXPECT_EQ(cs.components[1].name, "velocity");
    EXPECT_EQ(cs.components[1].type_hash, type_hash_v<Velocity>);
    EXPECT_EQ(cs.find(type_hash_v<Health>), &cs.components[2]);
}

// ---- ticks ----------------------------------------------------------------------------------

TEST(ChangeSetTicks, TakeChangesClearsAndCountsTicks) {
    const auto w = World::make();
    EXPECT_EQ(w->tick(), 0U);
    const Entity e = w->create();
    w->emplace<Health>(e, 1);

    const ChangeSet first = w->take_changes();
    EXPECT_EQ(first.tick, 0U);
    EXPECT_THAT(first.created, ElementsAre(e));
    EXPECT_EQ(w->tick(), 1U);

    const ChangeSet second = w->take_changes();
    EXPECT_EQ(second.tick, 1U);
    EXPECT_TRUE(second.empty());

    w->patch<Health>(e, [](Health& h) { ++h.hp; });
    const ChangeSet third = w->take_changes();
    EXPECT_EQ(third.tick, 2U);
    EXPECT_THAT(changes_of<Health>(third).updated, ElementsAre(e));
    EXPECT_TRUE(w->take_changes().empty());
}

TEST(ChangeSetTicks, TakeChangesIntoASetReplacesItsContentAndReusesItsLists) {
    const auto w = make_reusing_world();
    std::vector<Entity> entities(100);
    for (auto& e : entities) {
        e = w->create();
        w->emplace<Position>(e, 1, 1);
    }
    ChangeSet kept;
    w->take_changes(kept);
    EXPECT_EQ(kept.created.size(), 100U);
    EXPECT_THAT(kept.components, IsEmpty());  // created entities carry their components

    for (const Entity e : entities) {
        w->patch<Position>(e, [](Position& p) { ++p.x; });
    }
    w->take_changes(kept);
    EXPECT_THAT(kept.created, IsEmpty());
    ASSERT_EQ(kept.components.size(), 1U);
    EXPECT_EQ(kept.components[0].updated.size(), 100U);
    const auto* updated_storage = kept.components[0].updated.data();

    for (const Entity e : entities) {
        w->destroy(e);
    }
    w->take_changes(kept);
    EXPECT_EQ(kept.destroyed, entities);
    EXPECT_THAT(kept.components, IsEmpty());  // removals of destroyed entities are implied

    // The next tick's destroyed list is the one the set gave back, and the Position list
    // waited in the world: nothing of the earlier ticks shows through.
    const Entity again = w->create();
    w->take_changes(kept);
    EXPECT_THAT(kept.created, ElementsAre(again));
    EXPECT_THAT(kept.destroyed, IsEmpty());
    w->emplace<Position>(again, 2, 2);
    w->take_changes(kept);
    ASSERT_EQ(kept.components.size(), 1U);
    EXPECT_THAT(kept.components[0].added, ElementsAre(again));
    EXPECT_THAT(kept.components[0].updated, IsEmpty());
    EXPECT_EQ(kept.components[0].updated.data(), updated_storage) << "the list was not reused";
}

TEST(ChangeSetTicks, DiscardChangesDropsThePendingChanges) {
    const auto w = World::make();
    const Entity e = w->create();
    w->emplace<Health>(e, 1);
    w->discard_changes();
    EXPECT_EQ(w->tick(), 1U);

    const ChangeSet cs = w->take_changes();
    EXPECT_EQ(cs.tick, 1U);
    EXPECT_TRUE(cs.empty());

    // Writes after a discard are recorded as usual.
    w->erase<Health>(e);
    w->discard_changes();
    w->emplace<Health>(e, 2);
    EXPECT_THAT(changes_of<Health>(w->take_changes()).added, ElementsAre(e));
}

// A component added in its entity's creation tick records nothing then, but its write mark's
// page must exist for the writes of later ticks (they read the mark without testing the page).
// Index 5,000 is on a page of marks no earlier write reached.
TEST(ChangeSetTicks, WritesInLaterTicksToComponentsAddedAtCreationAreRecorded) {
    const auto w = World::make();
    std::vector<Entity> entities;
    for (int i = 0; i < 5001; ++i) {
        entities.push_back(w->create());
    }
    const Entity far = entities.back();
    w->emplace<Position>(far, 1, 1);
    w->emplace<Health>(far, 1);
    w->emplace<Velocity>(far, 1, 1);
    const ChangeSet created = w->take_changes();
    EXPECT_EQ(created.created.size(), 5001U);
    EXPECT_TRUE(created.components.empty());

    w->patch<Position>(far, [](Position& p) { ++p.x; });
    w->write<Health>(far).hp = 7;
    w->view<Velocity>().each([](Velocity& v) { ++v.dx; });
    const ChangeSet next = w->take_changes();
    EXPECT_THAT(changes_of<Position>(next).updated, ElementsAre(far));
    EXPECT_THAT(changes_of<Health>(next).updated, ElementsAre(far));
    EXPECT_THAT(changes_of<Velocity>(next).updated, ElementsAre(far));

    w->erase<Health>(far);
    EXPECT_THAT(changes_of<Health>(w->take_changes()).removed, ElementsAre(far));
}

TEST(ChangeSetTicks, TrackChangesOffRecordsNothing) {
    const auto w = World::make(world_options{.track_changes = false});
    EXPECT_FALSE(w->tracks_changes());
    const Entity kept = w->create();
    const Entity gone = w->create();
    w->emplace<Health>(kept, 1);
    w->emplace<Position>(gone, 1, 1);
    (void)w->take_changes();

    w->patch<Health>(kept, [](Health& h) { ++h.hp; });
    w->emplace<Position>(kept, 2, 2);
    w->view<Health>().each([](Health& h) { ++h.hp; });
    w->destroy(gone);
    (void)w->create();

    const ChangeSet cs = w->take_changes();
    EXPECT_TRUE(cs.empty());
    EXPECT_EQ(cs.tick, 1U);
    EXPECT_EQ(w->tick(), 2U);
    EXPECT_EQ(w->get<Health>(kept).hp, 3);  // the world itself still works
}

// ---- property test: the change set is the net difference of two snapshots -------------------

struct PropA {
    int v;
};
struct PropB {
    int v;
};
struct PropC {
    int v;
};

constexpr std::size_t kTypes = 3;
using Components = std::array<std::optional<int>, kTypes>;
using Snapshot = std::map<Entity, Components>;

template <typename Fn>
void with_type(std::size_t k, Fn&& fn) {
    switch (k) {
        case 0:
            fn(std::type_identity<PropA>{});
            break;
        case 1:
            fn(std::type_identity<PropB>{});
            break;
        default:
            fn(std::type_identity<PropC>{});
            break;
    }
}

class ChangeSetProperty : public ::testing::Test {
protected:
    static constexpr std::uint64_t kSeed = 20240611;
    static constexpr int kTicks = 2'000;

    std::shared_ptr<World> w_ = make_reusing_world();
    std::mt19937_64 rng_{kSeed};
    Snapshot model_;
    Snapshot before_;
    std::set<std::pair<Entity, std::size_t>> written_;  // (entity, type) written this tick

    std::size_t roll(std::size_t n) { return static_cast<std::size_t>(rng_() % n); }

    void step() {
        if (model_.empty() || roll(10) == 0) {
            model_.emplace(w_->create(), Components{});
            return;
        }
        auto it = model_.begin();
        std::advance(it, static_cast<std::ptrdiff_t>(roll(model_.size())));
        const Entity e = it->first;
        Components& m = it->second;
        const int value = static_cast<int>(roll(1000));
        const std::size_t op = roll(100);
        if (op < 8) {
            w_->destroy(e);
            model_.erase(it);
        } else if (op < 10) {
            w_->clear(e);
            for (std::size_t k = 0; k < kTypes; ++k) {
                if (m[k]) {
                    written_.emplace(e, k);
                }
                m[k].reset();
            }
        } else if (op < 12) {
            with_type(roll(kTypes), [&](auto type) { write_all_through_view(type); });
        } else if (op < 14) {
            with_type(roll(kTypes), [&](auto type) { read_all_through_view(type); });
        } else {
            const std::size_t k = roll(kTypes);
            with_type(k, [&](auto type) { write(type, op, e, m[k], value); });
            written_.emplace(e, k);
        }
    }

    template <typename T>
    void write(std::type_identity<T>, std::size_t op, Entity e, std::optional<int>& slot,
               int value) {
        if (!slot) {
            w_->emplace<T>(e, value);
            slot = value;
        } else if (op < 40) {
            w_->replace<T>(e, value);
            slot = value;
        } else if (op < 60) {
            w_->patch<T>(e, [&](T& c) { c.v += value; });
            *slot += value;
        } else if (op < 70) {
            w_->emplace_or_replace<T>(e, value);
            slot = value;
        } else {
            w_->erase<T>(e);
            slot.reset();
        }
    }

    template <typename T>
    void write_all_through_view(std::type_identity<T>) {
        const std::size_t k = std::is_same_v<T, PropA> ? 0 : std::is_same_v<T, PropB> ? 1 : 2;
        w_->view<T>().each([&](Entity e, T& c) {
            ++c.v;
            ++*model_.at(e)[k];
            written_.emplace(e, k);
        });
    }

    template <typename T>
    void read_all_through_view(std::type_identity<T>) {
        std::size_t n = 0;
        for (auto [e, c] : w_->view<const T>()) {
            (void)e;
            (void)c;
            ++n;
        }
        ASSERT_LE(n, model_.size());
    }

    static std::set<Entity> as_set(const std::vector<Entity>& list, const char* what) {
        const std::set<Entity> out(list.begin(), list.end());
        EXPECT_EQ(out.size(), list.size()) << what << " lists an entity twice";
        return out;
    }

    void check(const ChangeSet& cs) {
        std::set<Entity> created;
        std::set<Entity> destroyed;
        std::array<std::set<Entity>, kTypes> added;
        std::array<std::set<Entity>, kTypes> updated;
        std::array<std::set<Entity>, kTypes> removed;
        for (const auto& [e, now] : model_) {
            const auto it = before_.find(e);
            if (it == before_.end()) {
                created.insert(e);
                continue;
            }
            for (std::size_t k = 0; k < kTypes; ++k) {
                const bool had = it->second[k].has_value();
                const bool has = now[k].has_value();
                if (!had && has) {
                    added[k].insert(e);
                } else if (had && !has) {
                    removed[k].insert(e);
                } else if (had && has && written_.contains({e, k})) {
                    updated[k].insert(e);
                }
            }
        }
        for (const auto& [e, then] : before_) {
            if (!model_.contains(e)) {
                destroyed.insert(e);
            }
        }
        EXPECT_EQ(as_set(cs.created, "created"), created);
        EXPECT_EQ(as_set(cs.destroyed, "destroyed"), destroyed);
        std::size_t entries = 0;
        for (std::size_t k = 0; k < kTypes; ++k) {
            with_type(k, [&](auto type) {
                const auto* c = cs.find<typename decltype(type)::type>();
                if (c == nullptr) {
                    EXPECT_TRUE(added[k].empty() && updated[k].empty() && removed[k].empty())
                        << "type " << k << " has changes but no entry";
                    return;
                }
                ++entries;
                EXPECT_EQ(as_set(c->added, "added"), added[k]) << "type " << k;
                EXPECT_EQ(as_set(c->updated, "updated"), updated[k]) << "type " << k;
                EXPECT_EQ(as_set(c->removed, "removed"), removed[k]) << "type " << k;
            });
        }
        EXPECT_EQ(cs.components.size(), entries);
    }
};

TEST_F(ChangeSetProperty, ChangeSetIsTheNetDifferenceBetweenTicks) {
    SCOPED_TRACE("seed " + std::to_string(kSeed));
    ChangeSet kept;  // take_changes(into) on every other tick: its lists are reused
    for (int tick = 0; tick < kTicks; ++tick) {
        const std::size_t ops = roll(40);
        for (std::size_t i = 0; i < ops; ++i) {
            step();
            ASSERT_FALSE(HasFatalFailure()) << "tick " << tick << ", operation " << i;
        }
        if (roll(10) == 0) {
            w_->discard_changes();
        } else if (tick % 2 == 0) {
            const ChangeSet cs = w_->take_changes();
            ASSERT_EQ(cs.tick, static_cast<std::uint64_t>(tick));
            check(cs);
            ASSERT_FALSE(HasFailure()) << "tick " << tick;
        } else {
            w_->take_changes(kept);
            ASSERT_EQ(kept.tick, static_cast<std::uint64_t>(tick));
            check(kept);
            ASSERT_FALSE(HasFailure()) << "tick " << tick;
        }
        before_ = model_;
        written_.clear();
    }
}

}  // namespace change_set_test
