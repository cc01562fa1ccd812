// Interest management on the client side: per-client view deltas from
// replication_encoder::encode_view_delta over a real world, applied to a mirror that joined
// with an empty snapshot. Entries and leaves are not spawns and destroys, and the per-client
// checksum leaves out what the server excluded and nothing else.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ecsnet/ecs/world.hpp"
#include "ecsnet/protocol/checksum.hpp"
#include "ecsnet/protocol/columns.hpp"
#include "ecsnet/protocol/components.hpp"
#include "ecsnet/protocol/frame.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/protocol/mirror.hpp"
#include "ecsnet/protocol/replication.hpp"
#include "printers.hpp"
#include "test_types.hpp"

namespace view_mirror_test {

namespace proto = ecsnet::protocol;
namespace wire = ecsnet::wire;
using ecsnet::ecs::Entity;
using ecsnet::ecs::World;
using ecsnet::ecs::world_options;
using ecsnet::testing::Gauge;
using ecsnet::testing::Mixed;
using ecsnet::testing::Secret;
using ecsnet::testing::Spot;
using ecsnet::testing::Tag;
using proto::Owner;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;
using view_changes = proto::replication_encoder::view_changes;
using due_list = std::vector<std::pair<Entity, std::uint64_t>>;

// model_types(): owner 0, spot 1, mixed 2, secret 3 (owner-only), gauge 4, tag 5.
namespace id {
constexpr std::uint16_t spot = 1;
constexpr std::uint16_t secret = 3;
constexpr std::uint16_t gauge = 4;
constexpr std::uint16_t tag = 5;
}  // namespace id

constexpr std::uint64_t bit(std::uint16_t wire_id) {
    return std::uint64_t{1} << wire_id;
}

constexpr std::uint32_t viewer = 1;
constexpr std::uint32_t other = 2;

bool feed(proto::mirror& mirror, const proto::frame& frame) {
    std::string why;
    const wire::ServerMessage* message = proto::verify_server_frame(*frame, &why);
    EXPECT_NE(message, nullptr) << "frame does not verify: " << why;
    return message != nullptr && mirror.apply(*message);
}

// The world's values as the viewer must hold them (owner-only ones of its own entities only),
// in wire id order.
proto::component_set seen_in(const World& world, const proto::component_registry& types, Entity e) {
    const Owner* owner = world.try_get<Owner>(e);
    const bool own = owner != nullptr && owner->client == viewer;
    proto::component_set set;
    for (std::uint16_t i = 0; i < types.size(); ++i) {
        if (types.ops(i).contains(world, e) && (own || !types.info(i).owner_only)) {
            set.set(types.value(world, i, e));
        }
    }
    return set;
}

// What the mirror holds for e, in wire id order.
proto::component_set held_by(const proto::mirror& mirror, Entity e) {
    proto::component_set set;
    for (const proto::component_info& info : mirror.types().types()) {
        if (!mirror.has(e, info.id)) {
            continue;
        }
        proto::component_value v{info.name, {}, {}};
        if (info.is_string) {
            const std::string* text = mirror.text(e, info.id);
            v.text = text == nullptr ? "" : *text;
        } else {
            const auto bytes = mirror.value(e, info.id);
            v.bytes.assign(bytes.begin(), bytes.end());
        }
        set.set(std::move(v));
    }
    return set;
}

// The mirror holds exactly `expected`, each with the values the viewer sees in the world.
::testing::AssertionResult holds(const proto::mirror& mirror, const World& world,
                                 const proto::component_registry& types,
                                 const std::vector<Entity>& expected) {
    if (mirror.size() != expected.size()) {
        return ::testing::AssertionFailure()
               << "mirror holds " << mirror.size() << " entities, expected " << expected.size();
    }
    for (const Entity e : expected) {
        if (!mirror.contains(e)) {
            return ::testing::AssertionFailure()
                   << "mirror lacks " << ecsnet::ecs::to_string(e) << " (has "
                   << ecsnet::ecs::to_string(mirror.find(e.index())) << ")";
        }
        if (held_by(mirror, e) != seen_in(world, types, e)) {
            return ::testing::AssertionFailure()
                   << ecsnet::ecs::to_string(e) << ": mirror "
                   << ::testing::PrintToString(held_by(mirror, e)) << ", world "
                   << ::testing::PrintToString(seen_in(world, types, e));
        }
    }
    return ::testing::AssertionSuccess();
}

// Every callback as one line, in the order fired.
struct event_log {
    std::vector<std::string> lines;

    explicit event_log(proto::mirror& mirror) {
        auto& ev = mirror.events();
        ev.on_spawn = [this](Entity e) { lines.push_back("spawn " + ecsnet::ecs::to_string(e)); };
        ev.on_enter = [this](Entity e) { lines.push_back("enter " + ecsnet::ecs::to_string(e)); };
        ev.on_leave = [this](Entity e) { lines.push_back("leave " + ecsnet::ecs::to_string(e)); };
        ev.on_destroy = [this](Entity e) {
            lines.push_back("destroy " + ecsnet::ecs::to_string(e));
        };
        ev.on_update = [this](Entity e, std::uint32_t type) {
            lines.push_back("update " + ecsnet::ecs::to_string(e) + " " + std::to_string(type));
        };
        ev.on_remove = [this](Entity e, std::uint32_t type) {
            lines.push_back("remove " + ecsnet::ecs::to_string(e) + " " + std::to_string(type));
        };
    }
};

std::string str(Entity e) {
    return ecsnet::ecs::to_string(e);
}

// A server world and one client's mirror that joined it under interest management.
class ViewMirror : public ::testing::Test {
protected:
    ViewMirror() {
        mine_ = world_->create();
        world_->emplace<Owner>(mine_, viewer);
        world_->emplace<Spot>(mine_, 10.0F, 20.0F);
        world_->emplace<Secret>(mine_, 111U);
        theirs_ = world_->create();
        world_->emplace<Owner>(theirs_, other);
        world_->emplace<Spot>(theirs_, 30.0F, 40.0F);
        world_->emplace<Secret>(theirs_, 222U);
        world_->emplace<Tag>(theirs_, "rival");
        rock_ = world_->create();
        world_->emplace<Spot>(rock_, 50.0F, 60.0F);
        world_->emplace<Mixed>(rock_, true, std::int8_t{-3}, std::uint16_t{7}, std::int64_t{-9},
                               0.5);
        world_->emplace<Gauge>(rock_, 2.5F);
        vault_ = world_->create();
        world_->emplace<Secret>(vault_, 333U);  // nobody's: nobody sees the secret
        world_->emplace<Tag>(vault_, "vault");
        world_->discard_changes();
        EXPECT_TRUE(feed(mirror_, encoder_.encode_empty_snapshot(tick_))) << mirror_.error();
    }

    // The next tick's view delta, applied; false when the mirror refused it.
    bool apply(const view_changes& changes) {
        changes_ = changes;
        changes_.viewer = viewer;
        return feed(mirror_, encoder_.encode_view_delta(*world_, changes_, ++tick_));
    }

    bool enter(std::vector<Entity> entities) {
        view_changes c;
        c.entered = entities;
        return apply(c);
    }

    // The checksum the server sends this client: its held entities' terms but the excluded.
    proto::checksum_report report(const std::vector<Entity>& held,
                                  const std::vector<Entity>& excluded) const {
        proto::checksum_report r{tick_, 0, 0};
        for (const Entity e : held) {
            if (std::find(excluded.begin(), excluded.end(), e) != excluded.end()) {
                r.excluded.push_back(e.index());
                continue;
            }
            r.hash += proto::checksum::of_entity(*world_, types_, e, viewer);
            ++r.entity_count;
        }
        return r;
    }

    bool check(const proto::checksum_report& r) { return feed(mirror_, proto::encode(r)); }

    proto::component_registry types_ = ecsnet::testing::model_types();
    // Indices are reused at once, so that a destroy and a spawn can share one in a delta.
    std::shared_ptr<World> world_ = World::make(world_options{.entities = {.min_free_indices = 0}});
    proto::replication_encoder encoder_{types_};
    proto::mirror mirror_{types_.types()};
    std::uint64_t tick_ = 1;
    view_changes changes_;
    Entity mine_;
    Entity theirs_;
    Entity rock_;
    Entity vault_;
};

// ---- entries and leaves -------------------------------------------------------------------

TEST_F(ViewMirror, EnteredEntitiesArriveWithAllTheirComponentsAndFireOnEnterNotOnSpawn) {
    ASSERT_TRUE(mirror_.ready());
    EXPECT_EQ(mirror_.size(), 0U);
    event_log log{mirror_};
    ASSERT_TRUE(enter({mine_, theirs_, rock_, vault_})) << mirror_.error();
    EXPECT_THAT(log.lines, UnorderedElementsAre("enter " + str(mine_), "enter " + str(theirs_),
                                                "enter " + str(rock_), "enter " + str(vault_)));
    EXPECT_TRUE(holds(mirror_, *world_, types_, {mine_, theirs_, rock_, vault_}));
    EXPECT_EQ(mirror_.get<Mixed>(rock_),
              (Mixed{true, std::int8_t{-3}, std::uint16_t{7}, std::int64_t{-9}, 0.5}));
    EXPECT_EQ(mirror_.get<Tag>(theirs_), Tag{"rival"});
    EXPECT_EQ(mirror_.statistics().entered, 4U);
    EXPECT_EQ(mirror_.statistics().left, 0U);
    EXPECT_EQ(mirror_.statistics().inconsistencies, 0U);
}

TEST_F(ViewMirror, OnEnterSeesTheEntityWithItsComponents) {
    std::optional<Spot> seen;
    mirror_.events().on_enter = [&](Entity e) { seen = mirror_.get<Spot>(e); };
    ASSERT_TRUE(enter({rock_})) << mirror_.error();
    EXPECT_EQ(seen, (Spot{50.0F, 60.0F}));
}

TEST_F(ViewMirror, LeftEntitiesFireOnLeaveNotOnDestroyAndAreForgotten) {
    ASSERT_TRUE(enter({mine_, theirs_, rock_})) << mirror_.error();
    std::optional<Spot> readable;
    event_log log{mirror_};
    mirror_.events().on_leave = [&](Entity e) {
        log.lines.push_back("leave " + str(e));
        readable = mirror_.get<Spot>(e);  // still held while it is reported
    };
    view_changes c;
    const std::vector<Entity> left{theirs_};
    c.left = left;
    ASSERT_TRUE(apply(c)) << mirror_.error();
    EXPECT_THAT(log.lines, ElementsAre("leave " + str(theirs_)));
    EXPECT_EQ(readable, (Spot{30.0F, 40.0F}));
    EXPECT_FALSE(mirror_.contains(theirs_));
    EXPECT_TRUE(mirror_.find(theirs_.index()).is_null());
    for (std::uint16_t i = 0; i < types_.size(); ++i) {
        EXPECT_FALSE(mirror_.has(theirs_, i)) << "value " << i << " of a left entity kept";
    }
    EXPECT_TRUE(holds(mirror_, *world_, types_, {mine_, rock_}));
    EXPECT_EQ(mirror_.statistics().left, 1U);

    // It lives on at the server and comes back with the values it has by then.
    world_->replace<Spot>(theirs_, 31.0F, 41.0F);
    world_->erase<Tag>(theirs_);
    world_->discard_changes();
    log.lines.clear();
    ASSERT_TRUE(enter({theirs_})) << mirror_.error();
    EXPECT_THAT(log.lines, ElementsAre("enter " + str(theirs_)));
    EXPECT_TRUE(holds(mirror_, *world_, types_, {mine_, theirs_, rock_}));
    EXPECT_EQ(mirror_.get<Tag>(theirs_), std::nullopt);
}

TEST_F(ViewMirror, ADestroyIsStillADestroy) {
    ASSERT_TRUE(enter({mine_, rock_})) << mirror_.error();
    event_log log{mirror_};
    world_->destroy(rock_);
    view_changes c;
    const std::vector<Entity> destroyed{rock_};
    c.destroyed = destroyed;
    ASSERT_TRUE(apply(c)) << mirror_.error();
    EXPECT_THAT(log.lines, ElementsAre("destroy " + str(rock_)));
    EXPECT_FALSE(mirror_.contains(rock_));
    EXPECT_EQ(mirror_.statistics().left, 0U);
}

TEST_F(ViewMirror, SpawnedAndEnteredAreDistinct) {
    ASSERT_TRUE(enter({mine_})) << mirror_.error();
    const Entity fresh = world_->create();
    world_->emplace<Spot>(fresh, 1.0F, 2.0F);
    world_->discard_changes();
    event_log log{mirror_};
    view_changes c;
    const std::vector<Entity> spawned{fresh};
    const std::vector<Entity> entered{rock_};
    c.spawned = spawned;
    c.entered = entered;
    ASSERT_TRUE(apply(c)) << mirror_.error();
    EXPECT_THAT(log.lines, ElementsAre("spawn " + str(fresh), "enter " + str(rock_)));
    EXPECT_EQ(mirror_.statistics().entered, 2U);  // mine_ and rock_; the spawn is no entry
    EXPECT_TRUE(holds(mirror_, *world_, types_, {mine_, rock_, fresh}));
}

// docs/PROTOCOL.md: destroyed -> left -> spawned -> entered -> updated -> removed.
TEST_F(ViewMirror, CallbacksComeInTheOrderOfApplication) {
    ASSERT_TRUE(enter({mine_, theirs_, rock_})) << mirror_.error();
    world_->destroy(rock_);
    const Entity reused = world_->create();  // rock_'s index, spawned in the same delta
    ASSERT_EQ(reused.index(), rock_.index());
    world_->emplace<Spot>(reused, 5.0F, 5.0F);
    world_->replace<Spot>(mine_, 11.0F, 21.0F);
    world_->erase<Tag>(theirs_);
    world_->discard_changes();
    event_log log{mirror_};
    view_changes c;
    const std::vector<Entity> destroyed{rock_};
    const std::vector<Entity> left{theirs_};
    const std::vector<Entity> spawned{reused};
    const std::vector<Entity> entered{vault_};
    // theirs_'s Tag removal is due but it left: a leave supersedes its updates.
    const due_list updated{{mine_, bit(id::spot)}};
    c.destroyed = destroyed;
    c.left = left;
    c.spawned = spawned;
    c.entered = entered;
    c.updated = updated;
    ASSERT_TRUE(apply(c)) << mirror_.error();
    EXPECT_THAT(log.lines, ElementsAre("destroy " + str(rock_), "leave " + str(theirs_),
                                       "spawn " + str(reused), "enter " + str(vault_),
                                       "update " + str(mine_) + " " + std::to_string(id::spot)));
    EXPECT_TRUE(holds(mirror_, *world_, types_, {mine_, reused, vault_}));

    // A removal comes after the updates of the same delta.
    world_->replace<Spot>(mine_, 12.0F, 22.0F);
    world_->erase<Tag>(vault_);
    world_->discard_changes();
    log.lines.clear();
    view_changes more;
    const due_list both{{vault_, bit(id::tag)}, {mine_, bit(id::spot)}};
    more.updated = both;
    ASSERT_TRUE(apply(more)) << mirror_.error();
    EXPECT_THAT(log.lines, ElementsAre("update " + str(mine_) + " " + std::to_string(id::spot),
                                       "remove " + str(vault_) + " " + std::to_string(id::tag)));
    EXPECT_TRUE(holds(mirror_, *world_, types_, {mine_, reused, vault_}));
}

// ---- inconsistencies ----------------------------------------------------------------------

TEST_F(ViewMirror, ALeaveOfAnEntityTheMirrorDoesNotHoldIsAnInconsistency) {
    ASSERT_TRUE(enter({mine_})) << mirror_.error();
    view_changes c;
    const std::vector<Entity> left{rock_};  // never entered
    c.left = left;
    event_log log{mirror_};
    EXPECT_FALSE(apply(c));
    EXPECT_THAT(mirror_.error(), HasSubstr("leave of " + std::to_string(rock_.index())));
    EXPECT_THAT(log.lines, IsEmpty());
    EXPECT_EQ(mirror_.statistics().inconsistencies, 1U);
    EXPECT_FALSE(mirror_.ready());
    EXPECT_TRUE(mirror_.take_resync_reason().has_value());
}

TEST_F(ViewMirror, ALeaveWithTheWrongVersionIsAnInconsistency) {
    ASSERT_TRUE(enter({mine_, rock_})) << mirror_.error();
    view_changes c;
    const std::vector<Entity> left{Entity{rock_.index(), rock_.version() + 1}};
    c.left = left;
    EXPECT_FALSE(apply(c));
    EXPECT_THAT(mirror_.error(), HasSubstr("but the mirror has " + str(rock_)));
    EXPECT_EQ(mirror_.statistics().inconsistencies, 1U);
    EXPECT_EQ(mirror_.statistics().left, 0U);
    EXPECT_TRUE(mirror_.take_resync_reason().has_value());
}

TEST_F(ViewMirror, AnEntryOverALiveIndexIsAnInconsistency) {
    ASSERT_TRUE(enter({mine_, rock_})) << mirror_.error();
    event_log log{mirror_};
    EXPECT_FALSE(enter({rock_}));
    EXPECT_THAT(mirror_.error(), HasSubstr("over live entity " + str(rock_)));
    EXPECT_THAT(log.lines, IsEmpty());
    EXPECT_EQ(mirror_.statistics().inconsistencies, 1U);
    EXPECT_TRUE(mirror_.take_resync_reason().has_value());

    // Recovery: the resync's empty snapshot, then everything enters again.
    ASSERT_TRUE(feed(mirror_, encoder_.encode_empty_snapshot(++tick_))) << mirror_.error();
    EXPECT_EQ(mirror_.size(), 0U);
    ASSERT_TRUE(enter({mine_, rock_})) << mirror_.error();
    EXPECT_TRUE(holds(mirror_, *world_, types_, {mine_, rock_}));
}

// ---- owner-only types -----------------------------------------------------------------------

// The entity indices of every column of `type` in the Delta: in groups (entered, spawned) and
// in updates.
std::vector<std::uint32_t> indices_of_type(const proto::frame& frame, std::uint16_t type) {
    const wire::ServerMessage* message = proto::verify_server_frame(*frame);
    EXPECT_NE(message, nullptr);
    std::vector<std::uint32_t> out;
    if (message == nullptr || message->body_as_Delta() == nullptr) {
        return out;
    }
    const wire::Delta& delta = *message->body_as_Delta();
    std::vector<std::uint32_t> indices;
    for (const auto* groups : {delta.entered(), delta.spawned()}) {
        if (groups == nullptr) {
            continue;
        }
        for (const wire::EntityGroup* group : *groups) {
            if (group->columns() == nullptr) {
                continue;
            }
            for (const wire::Column* column : *group->columns()) {
                if (column->type() == type) {
                    EXPECT_TRUE(proto::expand_index_set(group->at(), 1024, indices));
                    out.insert(out.end(), indices.begin(), indices.end());
                }
            }
        }
    }
    if (delta.updated() != nullptr) {
        for (const wire::Column* column : *delta.updated()) {
            if (column->type() == type) {
                EXPECT_TRUE(proto::expand_index_set(column->at(), 1024, indices));
                out.insert(out.end(), indices.begin(), indices.end());
            }
        }
    }
    return out;
}

TEST_F(ViewMirror, OwnerOnlyTypesGoToTheViewersOwnEntitiesOnly) {
    view_changes c;
    const std::vector<Entity> entered{mine_, theirs_, vault_};
    c.entered = entered;
    c.viewer = viewer;
    const proto::frame entry = encoder_.encode_view_delta(*world_, c, ++tick_);
    EXPECT_THAT(indices_of_type(entry, id::secret), ElementsAre(mine_.index()));
    ASSERT_TRUE(feed(mirror_, entry)) << mirror_.error();
    EXPECT_EQ(mirror_.get<Secret>(mine_), Secret{111});
    EXPECT_EQ(mirror_.get<Secret>(theirs_), std::nullopt);
    EXPECT_EQ(mirror_.get<Secret>(vault_), std::nullopt);
    EXPECT_TRUE(holds(mirror_, *world_, types_, {mine_, theirs_, vault_}));

    // Updates: a secret due on every entity reaches the viewer for its own alone.
    world_->replace<Secret>(mine_, 112U);
    world_->replace<Secret>(theirs_, 223U);
    world_->replace<Secret>(vault_, 334U);
    world_->erase<Secret>(theirs_);
    world_->discard_changes();
    const due_list updated{{mine_, bit(id::secret)},
                           {theirs_, bit(id::secret) | bit(id::spot)},
                           {vault_, bit(id::secret)}};
    view_changes u;
    u.updated = updated;
    u.viewer = viewer;
    const proto::frame update = encoder_.encode_view_delta(*world_, u, ++tick_);
    EXPECT_THAT(indices_of_type(update, id::secret), ElementsAre(mine_.index()));
    const wire::ServerMessage* message = proto::verify_server_frame(*update);
    ASSERT_NE(message, nullptr);
    // theirs_'s secret went away, but it never had one for this viewer: no removal either.
    EXPECT_EQ(message->body_as_Delta()->removed(), nullptr);
    ASSERT_TRUE(feed(mirror_, update)) << mirror_.error();
    EXPECT_EQ(mirror_.get<Secret>(mine_), Secret{112});
    EXPECT_TRUE(holds(mirror_, *world_, types_, {mine_, theirs_, vault_}));

    // Another viewer owns theirs_ (its secret is gone now) and nothing else: no secret at all.
    world_->emplace<Secret>(theirs_, 224U);
    world_->discard_changes();
    view_changes for_other;
    for_other.entered = entered;
    for_other.viewer = other;
    EXPECT_THAT(indices_of_type(encoder_.encode_view_delta(*world_, for_other, 1), id::secret),
                ElementsAre(theirs_.index()));
    view_changes for_nobody;
    for_nobody.entered = entered;
    for_nobody.updated = updated;
    for_nobody.viewer = 3;
    EXPECT_THAT(indices_of_type(encoder_.encode_view_delta(*world_, for_nobody, 1), id::secret),
                IsEmpty());
}

// A caller that knows which of the due types each entity has (client_view) passes them in
// `present`: the frame is the one the world's answers give; what it says decides set against
// removed; a list of another length than `updated` is not used.
TEST_F(ViewMirror, UpdatesFollowTheCallersPresenceWhenGiven) {
    ASSERT_TRUE(enter({rock_, mine_}));
    world_->replace<Spot>(rock_, 1.0F, 2.0F);
    world_->remove<Gauge>(rock_);
    world_->replace<Spot>(mine_, 3.0F, 4.0F);
    world_->discard_changes();
    const due_list updated{{rock_, bit(id::spot) | bit(id::gauge)}, {mine_, bit(id::spot)}};
    view_changes asked;
    asked.updated = updated;
    asked.viewer = viewer;
    const proto::frame from_world = encoder_.encode_view_delta(*world_, asked, tick_ + 1);
    const std::vector<std::uint64_t> truth{bit(id::spot), bit(id::spot)};
    view_changes told = asked;
    told.present = truth;
    const proto::frame from_caller = encoder_.encode_view_delta(*world_, told, tick_ + 1);
    EXPECT_EQ(std::vector<std::uint8_t>(from_world->begin(), from_world->end()),
              std::vector<std::uint8_t>(from_caller->begin(), from_caller->end()));

    // Told that mine_ lost its Spot (it did not): a removal, so the list was used.
    const std::vector<std::uint64_t> lie{bit(id::spot), 0};
    told.present = lie;
    const proto::frame lied = encoder_.encode_view_delta(*world_, told, tick_ + 1);
    const wire::ServerMessage* message = proto::verify_server_frame(*lied);
    ASSERT_NE(message, nullptr);
    ASSERT_NE(message->body_as_Delta()->removed(), nullptr);
    std::vector<std::uint16_t> removed_types;
    for (const wire::Column* column : *message->body_as_Delta()->removed()) {
        removed_types.push_back(column->type());
    }
    EXPECT_THAT(removed_types, ElementsAre(id::spot, id::gauge));

    const std::vector<std::uint64_t> short_list{bit(id::spot)};
    told.present = short_list;
    const proto::frame ignored = encoder_.encode_view_delta(*world_, told, tick_ + 1);
    EXPECT_EQ(std::vector<std::uint8_t>(from_world->begin(), from_world->end()),
              std::vector<std::uint8_t>(ignored->begin(), ignored->end()));
    EXPECT_TRUE(apply(asked)) << mirror_.error();
    EXPECT_TRUE(holds(mirror_, *world_, types_, {rock_, mine_}));
}

// The encoder keeps its working lists (groups by mask, index sets, column offsets) from one
// frame to the next for their memory: a frame must not depend on what was encoded before it.
TEST_F(ViewMirror, AFrameIsTheSameFromAnEncoderThatEncodedOthersBefore) {
    const auto bytes = [](const proto::frame& f) {
        return std::vector<std::uint8_t>(f->begin(), f->end());
    };
    // Four groups by mask, then one, then two, then none: spare groups stay behind.
    const std::vector<Entity> four_masks{mine_, theirs_, rock_, vault_};
    view_changes many;
    many.entered = four_masks;
    many.viewer = viewer;
    const std::vector<Entity> rocks{rock_};
    view_changes one;
    one.entered = rocks;
    one.viewer = viewer;
    const std::vector<Entity> two_masks{theirs_, rock_};
    const due_list updated{{rock_, bit(id::spot) | bit(id::gauge)}, {theirs_, bit(id::tag)}};
    view_changes mixed;
    mixed.spawned = two_masks;
    mixed.updated = updated;
    mixed.viewer = viewer;
    view_changes none;
    for (const view_changes* c : {&one, &mixed, &none, &many}) {
        proto::replication_encoder fresh{types_};
        const auto expected = bytes(fresh.encode_view_delta(*world_, *c, 7));
        for (const view_changes* before : {&many, &mixed, &one}) {
            (void)encoder_.encode_view_delta(*world_, *before, 6);
            EXPECT_EQ(bytes(encoder_.encode_view_delta(*world_, *c, 7)), expected);
        }
    }
}

// ---- checksums with exclusions ------------------------------------------------------------

TEST_F(ViewMirror, OfEntitySumsAgreeWithTheMirrorsChecksum) {
    const std::vector<Entity> held{mine_, theirs_, rock_, vault_};
    ASSERT_TRUE(enter(held)) << mirror_.error();
    std::uint64_t sum = 0;
    for (const Entity e : held) {
        sum += proto::checksum::of_entity(*world_, types_, e, viewer);
    }
    EXPECT_EQ(sum, mirror_.checksum());
    // Owner-only values count for the viewer's own entity only: as another viewer the sum
    // differs by mine_'s secret and theirs_'s.
    std::uint64_t as_other = 0;
    for (const Entity e : held) {
        as_other += proto::checksum::of_entity(*world_, types_, e, other);
    }
    EXPECT_NE(as_other, sum);
    ASSERT_TRUE(check(report(held, {}))) << mirror_.error();
    EXPECT_EQ(mirror_.statistics().checksums_matched, 1U);
}

TEST_F(ViewMirror, StaleValuesOfExcludedEntitiesStillMatch) {
    const std::vector<Entity> held{mine_, theirs_, rock_, vault_};
    ASSERT_TRUE(enter(held)) << mirror_.error();
    // Changes the server has not sent yet (waiting for bandwidth), one of them owner-only.
    world_->replace<Spot>(theirs_, 99.0F, 99.0F);
    world_->erase<Gauge>(rock_);
    world_->replace<Secret>(mine_, 7U);
    world_->discard_changes();
    ASSERT_TRUE(apply({})) << mirror_.error();  // a tick with nothing due

    std::vector<bool> matched;
    mirror_.events().on_checksum = [&](std::uint64_t, bool ok) { matched.push_back(ok); };
    const proto::checksum_report r = report(held, {theirs_, rock_, mine_});
    EXPECT_EQ(r.entity_count, 1U);
    ASSERT_TRUE(check(r)) << mirror_.error();
    EXPECT_THAT(matched, ElementsAre(true));
    EXPECT_EQ(mirror_.statistics().checksums_mismatched, 0U);

    // Without the exclusions the stale values do not match: the exclusion is what makes it.
    EXPECT_FALSE(check(report(held, {})));
    EXPECT_THAT(matched, ElementsAre(true, false));
    EXPECT_EQ(mirror_.statistics().checksums_mismatched, 1U);
    EXPECT_THAT(mirror_.error(), HasSubstr("checksum mismatch"));
}

TEST_F(ViewMirror, ExcludedIndicesTheMirrorDoesNotHoldAreIgnored) {
    ASSERT_TRUE(enter({mine_, rock_})) << mirror_.error();
    proto::checksum_report r = report({mine_, rock_}, {});
    r.excluded = {theirs_.index(), 5000};
    ASSERT_TRUE(check(r)) << mirror_.error();
    EXPECT_EQ(mirror_.statistics().checksums_matched, 1U);
}

TEST_F(ViewMirror, ACorruptedValueOnANonExcludedEntityIsCaught) {
    const std::vector<Entity> held{mine_, theirs_, rock_, vault_};
    ASSERT_TRUE(enter(held)) << mirror_.error();
    // The mirror is sent a value the world does not hold (a corrupted update) ...
    world_->replace<Spot>(rock_, 1.0F, 1.0F);
    world_->discard_changes();
    view_changes c;
    const due_list updated{{rock_, bit(id::spot)}};
    c.updated = updated;
    ASSERT_TRUE(apply(c)) << mirror_.error();
    world_->replace<Spot>(rock_, 50.0F, 60.0F);
    // ... and theirs_ waits for bandwidth with a change the mirror lacks.
    world_->replace<Spot>(theirs_, 0.0F, 0.0F);
    world_->discard_changes();

    std::vector<bool> matched;
    mirror_.events().on_checksum = [&](std::uint64_t, bool ok) { matched.push_back(ok); };
    EXPECT_FALSE(check(report(held, {theirs_})));
    EXPECT_THAT(matched, ElementsAre(false));
    EXPECT_EQ(mirror_.statistics().checksums_mismatched, 1U);
    EXPECT_TRUE(mirror_.take_resync_reason().has_value());
}

}  // namespace view_mirror_test
