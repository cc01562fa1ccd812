#include "ecsnet/server/persistence/world_image.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "ecsnet/demo/components.hpp"
#include "ecsnet/protocol/components.hpp"
#include "ecsnet/protocol/registry.hpp"
#include "kept_types.hpp"
#include "state_image.hpp"

namespace world_image_test {

using ecsnet::demo::Health;
using ecsnet::demo::Name;
using ecsnet::demo::Position;
using ecsnet::demo::Velocity;
using ecsnet::ecs::Entity;
using ecsnet::ecs::World;
using ecsnet::protocol::component_registry;
using ecsnet::protocol::field_value;
using ecsnet::protocol::Owner;
using ecsnet::protocol::stored_type;
using ecsnet::server::capture;
using ecsnet::server::content_hash;
using ecsnet::server::restore;
using ecsnet::server::restore_error;
using ecsnet::server::world_image;
using ecsnet::test::Hunger;
using ecsnet::test::HungerV2;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

void add_game_types(component_registry& types) {
    types.add<Position>();
    types.add<Velocity>();
    types.add<Health>();
    types.add<Name>();
}

// The game as it was when the checkpoint was written.
component_registry game_v1() {
    component_registry types;
    add_game_types(types);
    types.persist<Hunger>();
    return types;
}

ecsnet::ecs::world_options immediate_reuse() {
    ecsnet::ecs::world_options options;
    options.entities.min_free_indices = 0;
    return options;
}

// A world with a history: recycled slots, a non-sorted free queue, values of every kind.
std::shared_ptr<World> sample_world() {
    auto w = World::make(immediate_reuse());
    std::vector<Entity> e;
    for (int i = 0; i < 12; ++i) {
        e.push_back(w->create());
    }
    for (const int i : {9, 2, 5, 7}) {
        w->destroy(e[static_cast<std::size_t>(i)]);
    }
    e[9] = w->create();  // index 9 at version 2; free: 2, 5, 7
    for (const Entity x : e) {
        if (!w->valid(x)) {
            continue;
        }
        const auto i = static_cast<float>(x.index());
        w->emplace<Position>(x, Position{i * 1.1F, -i / 3.0F});
        if (x.index() % 2 == 0) {
            w->emplace<Velocity>(x, Velocity{0.01F, i});
        }
        if (x.index() % 3 == 0) {
            w->emplace<Name>(x, Name{"n" + std::to_string(x.index())});
        }
        if (x.index() % 4 == 1) {
            w->emplace<Hunger>(x, Hunger{i / 7.0F, x.index() * 100});
        }
        w->emplace<Owner>(x, Owner{x.index() % 3});
    }
    w->emplace<Health>(e[11], Health{-42});
    (void)w->take_changes();
    return w;
}

std::vector<Entity> entities_of(const World& w) {
    std::vector<Entity> out;
    w.each([&](Entity e) { out.push_back(e); });
    return out;
}

template <typename T>
std::map<Entity, T> values_of(const World& w) {
    std::map<Entity, T> out;
    w.each([&](Entity e) {
        if (const T* v = w.try_get<T>(e)) {
            out.emplace(e, *v);
        }
    });
    return out;
}

void expect_untouched(const World& w) {
    EXPECT_EQ(w.alive(), 0U);
    EXPECT_EQ(w.entities().slots(), 0U) << "the world got entities before the refusal";
}

template <typename Fn>
std::string restore_error_of(Fn&& fn) {
    try {
        fn();
    } catch (const restore_error& e) {
        return e.what();
    } catch (const std::exception& e) {
        return std::string{"<not a restore_error: "} + e.what() + ">";
    }
    return "<no exception>";
}

std::size_t column_of(const world_image& image, std::string_view name) {
    for (std::size_t i = 0; i < image.columns.size(); ++i) {
        if (image.columns[i].type.name == name) {
            return i;
        }
    }
    throw std::logic_error("no column " + std::string{name});
}

TEST(WorldImage, CaptureCopiesEntitiesAndEveryKeptType) {
    const component_registry types = game_v1();
    const auto w = sample_world();
    const world_image image = capture(*w, types);
    EXPECT_EQ(image.tick, w->tick());
    EXPECT_EQ(image.alive(), w->alive());
    EXPECT_EQ(image.entities.free, (std::vector<std::uint32_t>{2, 5, 7}));
    std::vector<std::string> names;
    for (const auto& c : image.columns) {
        names.push_back(c.type.name);
    }
    EXPECT_THAT(names, ElementsAre("owner", "position", "velocity", "health", "name", "hunger"));
    const auto& hunger = image.columns[column_of(image, "hunger")];
    EXPECT_THAT(hunger.indices, ElementsAre(1U, 9U));  // 5 is free
    EXPECT_EQ(hunger.values.size(), 2 * 8U);
    EXPECT_THAT(image.columns[column_of(image, "name")].texts, ElementsAre("n0", "n3", "n6", "n9"));
}

// A checkpoint copies into the previous one's image: what that image held (a bigger world,
// other texts, values of types this world lacks) must not show through.
TEST(WorldImage, CaptureIntoAUsedImageGivesWhatAFreshOneGives) {
    const component_registry types = game_v1();
    auto bigger = World::make(immediate_reuse());
    for (std::uint32_t i = 0; i < 40; ++i) {
        const Entity x = bigger->create();
        bigger->emplace<Position>(x, Position{1.0F, 2.0F});
        bigger->emplace<Hunger>(x, Hunger{3.0F, i});
        bigger->emplace<Name>(
            x, Name{"a name longer than any small-string buffer, " + std::to_string(i)});
    }
    world_image used = capture(*bigger, types);

    const auto w = sample_world();
    capture(*w, types, used);
    const world_image fresh = capture(*w, types);
    ecsnet::test::expect_same(used, fresh);
    EXPECT_EQ(content_hash(used), content_hash(fresh));
}

TEST(WorldImage, RestoreGivesTheSameWorld) {
    const component_registry types = game_v1();
    const auto original = sample_world();
    const world_image image = capture(*original, types);

    auto restored = World::make(immediate_reuse());
    const auto report = restore(image, *restored, types);
    EXPECT_EQ(report.entities, original->alive());
    EXPECT_TRUE(report.migrated.empty());
    EXPECT_TRUE(report.dropped.empty());
    std::size_t values = 0;
    for (const auto& c : image.columns) {
        values += c.indices.size();
    }
    EXPECT_EQ(report.values, values);

    EXPECT_EQ(entities_of(*restored), entities_of(*original));
    EXPECT_EQ(values_of<Position>(*restored), values_of<Position>(*original));
    EXPECT_EQ(values_of<Velocity>(*restored), values_of<Velocity>(*original));
    EXPECT_EQ(values_of<Health>(*restored), values_of<Health>(*original));
    EXPECT_EQ(values_of<Name>(*restored), values_of<Name>(*original));
    EXPECT_EQ(values_of<Hunger>(*restored), values_of<Hunger>(*original));
    EXPECT_EQ(values_of<Owner>(*restored), values_of<Owner>(*original));
    EXPECT_EQ(content_hash(capture(*restored, types)), content_hash(image));
    EXPECT_TRUE(restored->valid({9, 2}));
    EXPECT_FALSE(restored->valid({9, 1})) << "stale stays stale";
    EXPECT_FALSE(restored->valid({2, 1}));
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(restored->create(), original->create()) << "create #" << i;
    }
}

TEST(WorldImage, RestoredValuesAreExactNotQuantized) {
    const component_registry types = game_v1();
    auto w = World::make();
    const Entity e = w->create();
    w->emplace<Position>(e, Position{0.1F, 123456.789F});
    auto restored = World::make();
    (void)restore(capture(*w, types), *restored, types);
    EXPECT_EQ(restored->get<Position>(e), (Position{0.1F, 123456.789F}));
}

TEST(WorldImage, ContentHashIgnoresStorageOrderAndSeesEveryDifference) {
    const component_registry types = game_v1();
    const auto w = sample_world();
    const world_image image = capture(*w, types);
    world_image reordered = image;
    auto& hunger = reordered.columns[column_of(reordered, "hunger")];
    std::swap(hunger.indices[0], hunger.indices[1]);
    std::swap_ranges(hunger.values.begin(), hunger.values.begin() + 8, hunger.values.begin() + 8);
    reordered.tick += 5;  // not content
    EXPECT_EQ(content_hash(reordered), content_hash(image));

    world_image value_changed = image;
    value_changed.columns[column_of(image, "position")].values[0] ^= std::byte{1};
    EXPECT_NE(content_hash(value_changed), content_hash(image));
    world_image text_changed = image;
    text_changed.columns[column_of(image, "name")].texts[0] = "other";
    EXPECT_NE(content_hash(text_changed), content_hash(image));
    world_image version_changed = image;
    version_changed.entities.versions[0] += 1;
    EXPECT_NE(content_hash(version_changed), content_hash(image));
}

TEST(WorldImage, AChangedLayoutWithoutMigrationIsRefusedNamingTheType) {
    const world_image image = capture(*sample_world(), game_v1());
    component_registry v2;
    add_game_types(v2);
    v2.persist<HungerV2>();
    auto w = World::make();
    EXPECT_THAT(
        restore_error_of([&] { (void)restore(image, *w, v2); }),
        AllOf(HasSubstr("'hunger'"), HasSubstr("2 fields stored, 3 now"), HasSubstr("migrate")));
    expect_untouched(*w);
}

TEST(WorldImage, ATypeTheGameDoesNotHaveIsRefused) {
    const world_image image = capture(*sample_world(), game_v1());
    component_registry without;
    add_game_types(without);
    auto w = World::make();
    EXPECT_THAT(restore_error_of([&] { (void)restore(image, *w, without); }),
                AllOf(HasSubstr("'hunger'"), HasSubstr("no such type"), HasSubstr("drop")));
    expect_untouched(*w);
}

TEST(WorldImage, DropDropsTheValuesOfATypeTheGameNoLongerHas) {
    const auto original = sample_world();
    const world_image image = capture(*original, game_v1());
    component_registry without;
    add_game_types(without);
    without.drop("hunger");
    auto w = World::make();
    const auto report = restore(image, *w, without);
    EXPECT_THAT(report.dropped, ElementsAre("hunger"));
    EXPECT_EQ(entities_of(*w), entities_of(*original));
    EXPECT_EQ(values_of<Position>(*w), values_of<Position>(*original));
    EXPECT_TRUE(values_of<Hunger>(*w).empty());
}

TEST(WorldImage, AMigrationConvertsAChangedLayout) {
    const auto original = sample_world();
    const world_image image = capture(*original, game_v1());
    component_registry v2;
    add_game_types(v2);
    v2.persist<HungerV2>();
    std::vector<std::string> seen_layouts;
    v2.migrate("hunger", [&](const stored_type& saved, std::span<const field_value> old) {
        seen_layouts.push_back(ecsnet::protocol::describe(saved));
        std::vector<field_value> now(old.begin(), old.end());
        now.emplace_back(std::get<std::uint64_t>(old[1]) == 100 ? std::int64_t{-1}
                                                                : std::int64_t{1});
        return now;
    });
    auto w = World::make();
    const auto report = restore(image, *w, v2);
    EXPECT_THAT(report.migrated, ElementsAre("hunger"));
    EXPECT_THAT(seen_layouts,
                ElementsAre("hunger {f0: float, f1: uint32}", "hunger {f0: float, f1: uint32}"));
    std::map<Entity, HungerV2> expected;
    for (const auto& [e, h] : values_of<Hunger>(*original)) {
        expected.emplace(e, HungerV2{h.level, h.meals, h.meals == 100 ? -1 : 1});
    }
    ASSERT_EQ(expected.size(), 2U);
    EXPECT_EQ(values_of<HungerV2>(*w), expected);
}

TEST(WorldImage, AThrowingMigrationRefusesAndLeavesTheWorldUntouched) {
    // stored_migration: "Throw to refuse"; restore(): "Checks everything before touching the
    // world: throws restore_error (and leaves the world untouched)".
    const world_image image = capture(*sample_world(), game_v1());
    component_registry v2;
    add_game_types(v2);
    v2.persist<HungerV2>();
    v2.migrate("hunger",
               [](const stored_type&, std::span<const field_value>) -> std::vector<field_value> {
                   throw std::runtime_error("cannot convert hunger");
               });
    auto w = World::make();
    EXPECT_THAT(restore_error_of([&] { (void)restore(image, *w, v2); }),
                AllOf(Not(HasSubstr("<not a restore_error")), HasSubstr("hunger"),
                      HasSubstr("cannot convert hunger")));
    expect_untouched(*w);
}

TEST(WorldImage, AStringTypeCannotBeMigratedToFields) {
    world_image image = capture(*sample_world(), game_v1());
    component_registry game;
    add_game_types(game);
    game.persist<Hunger>();
    auto& hunger = image.columns[column_of(image, "hunger")];
    hunger.type = stored_type{"hunger", false, true, {}};
    hunger.texts.assign(hunger.indices.size(), "peckish");
    hunger.values.clear();
    game.migrate("hunger", [](const stored_type&, std::span<const field_value> old) {
        return std::vector<field_value>(old.begin(), old.end());
    });
    auto w = World::make();
    EXPECT_THAT(restore_error_of([&] { (void)restore(image, *w, game); }),
                AllOf(HasSubstr("'hunger'"), HasSubstr("string")));
    expect_untouched(*w);
}

TEST(WorldImage, InconsistentImagesAreRefused) {
    const component_registry types = game_v1();
    const world_image good = capture(*sample_world(), types);
    struct bad {
        const char* what;
        world_image image;
        const char* message;
    };
    std::vector<bad> cases;
    {
        world_image i = good;
        i.columns[column_of(i, "position")].indices[0] = 5;  // a free index
        cases.push_back({"a value for a dead index", i, "entity index 5, which is not alive"});
    }
    {
        world_image i = good;
        i.columns[column_of(i, "position")].indices[0] = 4000;
        cases.push_back({"a value for an index past the end", i, "entity index 4000"});
    }
    {
        world_image i = good;
        auto& c = i.columns[column_of(i, "position")];
        c.indices[1] = c.indices[0];
        cases.push_back({"two values for one entity", i, "two values for entity index"});
    }
    {
        world_image i = good;
        i.columns[column_of(i, "position")].values.pop_back();
        cases.push_back({"values of the wrong size", i, "value bytes"});
    }
    {
        world_image i = good;
        i.columns[column_of(i, "name")].texts.pop_back();
        cases.push_back({"a text missing", i, "texts"});
    }
    {
        world_image i = good;
        i.columns.push_back(i.columns[column_of(i, "hunger")]);
        cases.push_back({"a type stored twice", i, "'hunger' is stored twice"});
    }
    {
        world_image i = good;
        i.entities.alive.pop_back();
        cases.push_back({"alive flags missing", i, "alive flags"});
    }
    {
        world_image i = good;
        i.entities.free.push_back(0);  // alive
        cases.push_back({"an inconsistent free list", i, "free index 0"});
    }
    for (const bad& b : cases) {
        SCOPED_TRACE(b.what);
        auto w = World::make();
        EXPECT_THAT(restore_error_of([&] { (void)restore(b.image, *w, types); }),
                    HasSubstr(b.message));
        expect_untouched(*w);
    }
}

TEST(WorldImage, RestoreIntoAWorldThatHadAnEntityIsRefused) {
    const component_registry types = game_v1();
    const world_image image = capture(*sample_world(), types);
    auto w = World::make();
    const Entity e = w->create();
    EXPECT_THAT(restore_error_of([&] { (void)restore(image, *w, types); }),
                HasSubstr("never had an entity"));
    EXPECT_EQ(entities_of(*w), (std::vector<Entity>{e}));
}

TEST(WorldImage, ATypeTheImageLacksIsSimplyEmpty) {
    // A game that added a kept type since the checkpoint.
    component_registry old_game;
    add_game_types(old_game);
    const auto original = sample_world();
    const world_image image = capture(*original, old_game);
    auto w = World::make();
    const auto report = restore(image, *w, game_v1());
    EXPECT_TRUE(report.migrated.empty());
    EXPECT_EQ(entities_of(*w), entities_of(*original));
    EXPECT_TRUE(values_of<Hunger>(*w).empty());
}

}  // namespace world_image_test
