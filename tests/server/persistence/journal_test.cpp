#include "ecsnet/server/persistence/journal.hpp"

#include <flatbuffers/flatbuffers.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "ecsnet/demo/components.hpp"
#include "ecsnet/protocol/components.hpp"
#include "ecsnet/protocol/registry.hpp"
#include "ecsnet/server/persistence/world_image.hpp"
#include "ecsnet/wire/state_generated.h"
#include "kept_types.hpp"
#include "state_image.hpp"

namespace journal_test {

using ecsnet::demo::Health;
using ecsnet::demo::Name;
using ecsnet::demo::Position;
using ecsnet::demo::Velocity;
using ecsnet::ecs::Entity;
using ecsnet::ecs::World;
using ecsnet::protocol::component_registry;
using ecsnet::protocol::Owner;
using ecsnet::server::capture;
using ecsnet::server::content_hash;
using ecsnet::server::journal_writer;
using ecsnet::server::owner_registry;
using ecsnet::server::replay_journal;
using ecsnet::server::replay_report;
using ecsnet::server::stored_owner;
using ecsnet::server::world_image;
using ecsnet::test::read_bytes;
using ecsnet::test::temp_dir;
using ecsnet::test::write_bytes;
using ecsnet::test::Hunger;
using ecsnet::test::HungerV2;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

component_registry game_types() {
    component_registry types;
    types.add<Position>();
    types.add<Velocity>();
    types.add<Health>();
    types.add<Name>();
    types.persist<Hunger>();
    return types;
}

ecsnet::ecs::world_options immediate_reuse() {
    ecsnet::ecs::world_options options;
    options.entities.min_free_indices = 0;
    return options;
}

std::string segment_name(std::uint64_t tick) {
    char name[64];
    std::snprintf(name, sizeof name, "journal-%020llu.log", static_cast<unsigned long long>(tick));
    return name;
}

stored_owner owner_with_key(std::uint32_t id, std::uint8_t seed) {
    stored_owner o{id, "", {}, true};
    for (std::size_t i = 0; i < o.key_digest.size(); ++i) {
        o.key_digest[i] = static_cast<std::uint8_t>(seed + i);
    }
    return o;
}

bool same_owner(const stored_owner& a, const stored_owner& b) {
    return a.id == b.id && a.player == b.player && a.has_key == b.has_key &&
           (!a.has_key || a.key_digest == b.key_digest);
}

owner_registry empty_owners() {
    return owner_registry{[](std::uint32_t) { return false; }};
}

// The world a checkpoint of tick 100 kept: entities 0..5 with values, 2 freed (free: 2).
std::shared_ptr<World> starting_world() {
    auto w = World::make(immediate_reuse());
    std::vector<Entity> e;
    for (int i = 0; i < 6; ++i) {
        e.push_back(w->create());
        w->emplace<Position>(e.back(), Position{static_cast<float>(i), 0.5F});
        w->emplace<Owner>(e.back(), Owner{1});
    }
    w->emplace<Hunger>(e[1], Hunger{0.25F, 4});
    w->emplace<Name>(e[3], Name{"three"});
    w->destroy(e[2]);
    (void)w->take_changes();
    return w;
}

world_image starting_image(const component_registry& types) {
    world_image image = capture(*starting_world(), types);
    image.tick = 100;
    return image;
}

std::shared_ptr<World> restored_world(const world_image& image, const component_registry& types) {
    auto w = World::make(immediate_reuse());
    (void)ecsnet::server::restore(image, *w, types);
    return w;
}

std::uint64_t hash_of(const World& w, const component_registry& types) {
    return content_hash(capture(w, types));
}

// A server's ticks in small: commands change the live world and are journaled; the test keeps
// the world's hash after each tick and the file's size after each durable batch.
class JournalTest : public ::testing::Test {
protected:
    JournalTest()
        : types_{game_types()},
          image_{starting_image(types_)},
          live_{restored_world(image_, types_)},
          path_{dir_.path() / segment_name(image_.tick)} {}

    // Before the members its callbacks use.
    ~JournalTest() override { journal_.reset(); }

    void open() {
        journal_ = std::make_unique<journal_writer>(path_, image_.tick, "journal-test", types_);
    }

    // Commits this tick's records, waits until they are durable, notes the file's size.
    void commit(std::uint64_t tick) {
        journal_->commit(tick, [this, tick](const std::string& error) {
            const std::lock_guard lock{mutex_};
            durable_.push_back(tick);
            errors_.push_back(error);
        });
        journal_->flush();
        sizes_.push_back(fs::file_size(path_));
        hashes_.push_back(hash_of(*live_, types_));
    }

    // Ticks 101..104: spawns, sets, removes, a destroy and owners, journaled as a server does.
    void run_four_ticks() {
        open();
        // 101: spawn two (index 2 comes back at version 2, then a fresh one), an owner.
        const Entity a = live_->create();
        live_->emplace<Position>(a, Position{10.0F, 11.0F});
        live_->emplace<Owner>(a, Owner{7});
        const Entity b = live_->create();
        live_->emplace<Position>(b, Position{20.0F, 21.0F});
        live_->emplace<Velocity>(b, Velocity{1.0F, -1.0F});
        live_->emplace<Hunger>(b, Hunger{0.75F, 1});
        live_->emplace<Owner>(b, Owner{7});
        journal_->owner(owner_with_key(7, 3));
        journal_->row(*live_, a);
        journal_->row(*live_, b);
        EXPECT_EQ(journal_->pending_records(), 3U);
        commit(101);
        EXPECT_EQ(journal_->pending_records(), 0U);
        // 102: a set and a removal on restored entities, a name.
        live_->patch<Position>(Entity{0, 1}, [](Position& p) { p.x = -3.5F; });
        journal_->row(*live_, Entity{0, 1});
        live_->remove<Hunger>(Entity{1, 1});
        live_->emplace<Name>(Entity{1, 1}, Name{"one"});
        journal_->row(*live_, Entity{1, 1});
        commit(102);
        // 103: a destroy, a player owner.
        live_->destroy(Entity{3, 1});
        journal_->destroyed(Entity{3, 1});
        journal_->owner(stored_owner{8, "player-8", {}, false});
        commit(103);
        // 104: destroy then spawn in one tick (index 3 comes back), change b.
        live_->destroy(a);
        journal_->destroyed(a);
        const Entity c = live_->create();
        live_->emplace<Position>(c, Position{30.0F, 31.0F});
        live_->emplace<Name>(c, Name{"c"});
        journal_->row(*live_, c);
        live_->replace<Hunger>(b, Hunger{0.5F, 2});
        live_->remove<Velocity>(b);
        journal_->row(*live_, b);
        commit(104);
    }

    replay_report replay_into(World& w, owner_registry& owners, const fs::path& path,
                              std::uint64_t after_tick) {
        replay_report report;
        replay_journal(path, after_tick, w, types_, owners, report);
        return report;
    }

    temp_dir dir_;
    component_registry types_;
    world_image image_;
    std::shared_ptr<World> live_;
    fs::path path_;
    std::unique_ptr<journal_writer> journal_;
    std::mutex mutex_;
    std::vector<std::uint64_t> durable_;
    std::vector<std::string> errors_;
    std::vector<std::uintmax_t> sizes_;
    std::vector<std::uint64_t> hashes_;
};

TEST_F(JournalTest, CommitsAreDurableInOrderWithoutError) {
    run_four_ticks();
    EXPECT_THAT(durable_, ElementsAre(101U, 102U, 103U, 104U));
    EXPECT_THAT(errors_, ElementsAre("", "", "", ""));
    for (std::size_t i = 1; i < sizes_.size(); ++i) {
        EXPECT_GT(sizes_[i], sizes_[i - 1]) << "batch " << i << " added nothing to the file";
    }
}

TEST_F(JournalTest, ACommitWithoutRecordsWritesNothingButStillAnswers) {
    open();
    journal_->flush();
    const auto before = fs::file_size(path_);
    commit(101);
    EXPECT_EQ(fs::file_size(path_), before);
    EXPECT_THAT(durable_, ElementsAre(101U));
    EXPECT_THAT(errors_, ElementsAre(""));
}

TEST_F(JournalTest, CallbacksRunInCommitOrderWithoutWaiting) {
    open();
    for (std::uint64_t tick = 101; tick <= 140; ++tick) {
        const Entity e = live_->create();
        live_->emplace<Position>(e, Position{static_cast<float>(tick), 0.0F});
        journal_->row(*live_, e);
        journal_->commit(tick, [this, tick](const std::string& error) {
            const std::lock_guard lock{mutex_};
            durable_.push_back(tick);
            errors_.push_back(error);
        });
    }
    journal_->flush();
    ASSERT_EQ(durable_.size(), 40U);
    for (std::size_t i = 0; i < durable_.size(); ++i) {
        EXPECT_EQ(durable_[i], 101 + i);
        EXPECT_EQ(errors_[i], "");
    }
    auto w = restored_world(image_, types_);
    auto owners = empty_owners();
    const auto report = replay_into(*w, owners, path_, image_.tick);
    EXPECT_EQ(report.batches, 40U);
    EXPECT_EQ(hash_of(*w, types_), hash_of(*live_, types_));
}

TEST_F(JournalTest, ReplayGivesTheSameEntitiesValuesAndOwners) {
    run_four_ticks();
    journal_.reset();  // the destructor writes what is left and stops

    auto w = restored_world(image_, types_);
    auto owners = empty_owners();
    const auto report = replay_into(*w, owners, path_, image_.tick);
    EXPECT_EQ(report.segments, 1U);
    EXPECT_EQ(report.batches, 4U);
    EXPECT_EQ(report.records, 3U + 2U + 2U + 3U);
    EXPECT_EQ(report.skipped, 0U);
    EXPECT_EQ(report.last_tick, 104U);
    EXPECT_TRUE(report.torn.empty()) << report.torn.front();

    EXPECT_EQ(hash_of(*w, types_), hash_of(*live_, types_));
    std::vector<Entity> a;
    std::vector<Entity> b;
    live_->each([&](Entity e) { a.push_back(e); });
    w->each([&](Entity e) { b.push_back(e); });
    EXPECT_EQ(b, a);
    EXPECT_EQ(w->get<Position>(Entity{0, 1}).x, -3.5F);
    EXPECT_EQ(w->try_get<Hunger>(Entity{1, 1}), nullptr) << "a removal is replayed";
    EXPECT_EQ(w->get<Name>(Entity{1, 1}).value, "one");
    EXPECT_EQ(w->get<Hunger>(Entity{6, 1}), (Hunger{0.5F, 2}));
    EXPECT_EQ(w->try_get<Velocity>(Entity{6, 1}), nullptr);
    EXPECT_FALSE(w->valid(Entity{2, 2})) << "destroyed in 104";
    EXPECT_TRUE(w->valid(Entity{3, 2})) << "spawned in 104 at the recycled index";
    EXPECT_EQ(w->get<Name>(Entity{3, 2}).value, "c");
    // The next ids match too: the free list came back in the same order.
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(w->create(), live_->create());
    }

    ASSERT_EQ(owners.size(), 2U);
    EXPECT_TRUE(same_owner(owners.save(7), owner_with_key(7, 3)));
    EXPECT_TRUE(same_owner(owners.save(8), stored_owner{8, "player-8", {}, false}));
}

TEST_F(JournalTest, BatchesAtOrBeforeAfterTickAreSkipped) {
    run_four_ticks();
    journal_.reset();
    // A checkpoint of tick 102 exists: the world as it was then, replaying the rest.
    // Rebuild the world of tick 102 by replaying up to it, capture it, replay the rest.
    auto upto = restored_world(image_, types_);
    auto owners = empty_owners();
    fs::path first_two = dir_.path() / "first-two.log";
    {
        auto bytes = read_bytes(path_);
        bytes.resize(static_cast<std::size_t>(sizes_[1]));
        write_bytes(first_two, bytes);
    }
    (void)replay_into(*upto, owners, first_two, image_.tick);
    ASSERT_EQ(hash_of(*upto, types_), hashes_[1]);
    world_image at_102 = capture(*upto, types_);

    auto w = restored_world(at_102, types_);
    auto owners2 = empty_owners();
    const auto report = replay_into(*w, owners2, path_, 102);
    EXPECT_EQ(report.batches, 2U);
    EXPECT_EQ(report.last_tick, 104U);
    EXPECT_EQ(hash_of(*w, types_), hashes_[3]);
    EXPECT_FALSE(owners2.contains(7)) << "the owner of batch 101 was skipped";
    EXPECT_TRUE(owners2.contains(8));

    // Past the end: nothing is applied.
    auto untouched = restored_world(image_, types_);
    auto owners3 = empty_owners();
    const auto none = replay_into(*untouched, owners3, path_, 104);
    EXPECT_EQ(none.batches, 0U);
    EXPECT_EQ(none.records, 0U);
    EXPECT_EQ(hash_of(*untouched, types_), content_hash(image_));
}

TEST_F(JournalTest, ATruncatedLastFrameReplaysEveryEarlierBatchAndReportsATornTail) {
    run_four_ticks();
    journal_.reset();
    const auto whole = read_bytes(path_);
    ASSERT_EQ(whole.size(), sizes_[3]);
    const auto last_start = static_cast<std::size_t>(sizes_[2]);
    const fs::path cut = dir_.path() / "cut.log";
    for (std::size_t length = last_start + 1; length < whole.size(); ++length) {
        SCOPED_TRACE("cut at " + std::to_string(length) + " of " + std::to_string(whole.size()));
        write_bytes(cut, {whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(length)});
        auto w = restored_world(image_, types_);
        auto owners = empty_owners();
        const auto report = replay_into(*w, owners, cut, image_.tick);
        ASSERT_EQ(report.batches, 3U);
        ASSERT_EQ(report.last_tick, 103U);
        ASSERT_EQ(report.torn.size(), 1U);
        EXPECT_THAT(report.torn[0], HasSubstr("torn tail at byte " + std::to_string(last_start)));
        ASSERT_EQ(hash_of(*w, types_), hashes_[2]);
    }
    // Cut exactly between frames: a clean end.
    write_bytes(cut, {whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(last_start)});
    auto w = restored_world(image_, types_);
    auto owners = empty_owners();
    const auto report = replay_into(*w, owners, cut, image_.tick);
    EXPECT_EQ(report.batches, 3U);
    EXPECT_TRUE(report.torn.empty());
}

TEST_F(JournalTest, AFlippedByteInTheLastBatchIsATornTail) {
    run_four_ticks();
    journal_.reset();
    const auto whole = read_bytes(path_);
    const auto last_start = static_cast<std::size_t>(sizes_[2]);
    const fs::path flipped = dir_.path() / "flipped.log";
    for (std::size_t at = last_start; at < whole.size(); ++at) {
        SCOPED_TRACE("byte " + std::to_string(at));
        auto bytes = whole;
        bytes[at] ^= 0x40U;
        write_bytes(flipped, bytes);
        auto w = restored_world(image_, types_);
        auto owners = empty_owners();
        const auto report = replay_into(*w, owners, flipped, image_.tick);
        ASSERT_EQ(report.batches, 3U);
        ASSERT_EQ(report.torn.size(), 1U);
        EXPECT_THAT(report.torn[0], HasSubstr("torn tail at byte " + std::to_string(last_start)));
        ASSERT_EQ(hash_of(*w, types_), hashes_[2]);
    }
}

TEST_F(JournalTest, AFileThatIsNotAJournalIsRefused) {
    run_four_ticks();
    journal_.reset();
    auto bytes = read_bytes(path_);
    bytes[0] = 'X';
    const fs::path bad = dir_.path() / "bad.log";
    write_bytes(bad, bytes);
    auto w = restored_world(image_, types_);
    auto owners = empty_owners();
    try {
        (void)replay_into(*w, owners, bad, image_.tick);
        ADD_FAILURE() << "replayed a file with a bad magic";
    } catch (const std::runtime_error& e) {
        EXPECT_THAT(e.what(), HasSubstr("not an ecsnet journal"));
    }
    // A segment cut inside its magic: started during a crash.
    write_bytes(bad, {bytes.begin(), bytes.begin() + 5});
    const auto report = replay_into(*w, owners, bad, image_.tick);
    EXPECT_EQ(report.batches, 0U);
    EXPECT_EQ(report.torn.size(), 1U);
}

// The header frame of a segment: magic, u32 size, u64 XXH3, a JournalHeader.
void expect_header(const fs::path& path, std::uint64_t base_tick, const component_registry& types) {
    const auto bytes = read_bytes(path);
    ASSERT_GE(bytes.size(), 20U);
    EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + 8), "ECSNJRNL");
    std::uint32_t size = 0;
    std::uint64_t sum = 0;
    std::memcpy(&size, bytes.data() + 8, 4);
    std::memcpy(&sum, bytes.data() + 12, 8);
    ASSERT_LE(20U + size, bytes.size());
    const std::uint8_t* payload = bytes.data() + 20;
    EXPECT_EQ(XXH3_64bits(payload, size), sum);
    flatbuffers::Verifier verifier{payload, size};
    ASSERT_TRUE(verifier.VerifyBuffer<ecsnet::state::JournalHeader>(nullptr));
    const auto* header = flatbuffers::GetRoot<ecsnet::state::JournalHeader>(payload);
    EXPECT_EQ(header->format(), ecsnet::server::journal_format);
    EXPECT_EQ(header->base_tick(), base_tick);
    ASSERT_NE(header->game(), nullptr);
    EXPECT_EQ(header->game()->str(), "journal-test");
    ASSERT_NE(header->types(), nullptr);
    ASSERT_EQ(header->types()->size(), types.stored().size());
    for (std::size_t i = 0; i < types.stored().size(); ++i) {
        const auto* t = header->types()->Get(static_cast<flatbuffers::uoffset_t>(i));
        const auto& expected = types.stored()[i].type;
        EXPECT_EQ(t->name()->str(), expected.name);
        EXPECT_EQ(t->replicated(), expected.replicated);
        EXPECT_EQ(t->is_string(), expected.is_string);
        EXPECT_EQ(t->fields() == nullptr ? 0U : t->fields()->size(), expected.fields.size());
    }
}

TEST_F(JournalTest, TheFirstSegmentStartsWithItsHeader) {
    open();
    journal_->flush();
    expect_header(path_, image_.tick, types_);
}

TEST_F(JournalTest, RotateStartsANewSegmentForTheLaterBatches) {
    open();
    const Entity a = live_->create();
    live_->emplace<Position>(a, Position{1.0F, 2.0F});
    journal_->row(*live_, a);
    commit(101);
    // A checkpoint of tick 101 is captured here.
    const world_image at_101 = capture(*live_, types_);
    const fs::path second = dir_.path() / segment_name(101);
    journal_->rotate(second, 101);
    const Entity b = live_->create();
    live_->emplace<Position>(b, Position{3.0F, 4.0F});
    journal_->row(*live_, b);
    commit(102);
    journal_->destroyed(a);
    live_->destroy(a);
    commit(103);
    journal_.reset();

    expect_header(second, 101, types_);
    EXPECT_EQ(fs::file_size(path_), sizes_[0]) << "the old segment ends with batch 101";
    EXPECT_THAT(durable_, ElementsAre(101U, 102U, 103U));

    auto w = restored_world(at_101, types_);
    auto owners = empty_owners();
    const auto report = replay_into(*w, owners, second, 101);
    EXPECT_EQ(report.batches, 2U);
    EXPECT_EQ(hash_of(*w, types_), hash_of(*live_, types_));

    // Both segments in order from the first checkpoint give the same world.
    auto from_start = restored_world(image_, types_);
    auto owners2 = empty_owners();
    replay_report both;
    replay_journal(path_, image_.tick, *from_start, types_, owners2, both);
    replay_journal(second, 101, *from_start, types_, owners2, both);
    EXPECT_EQ(both.segments, 2U);
    EXPECT_EQ(both.batches, 3U);
    EXPECT_EQ(hash_of(*from_start, types_), hash_of(*live_, types_));
}

TEST_F(JournalTest, AJournaledIdAtAnIndexAliveAtALowerVersionReplacesIt) {
    open();
    // After the checkpoint a system (not journaled) ended 4:1; a command then spawned at
    // index 4 again, at version 2 (index 2 was reused first).
    const Entity at2 = live_->create();
    ASSERT_EQ(at2, (Entity{2, 2}));
    journal_->row(*live_, at2);
    live_->destroy(Entity{4, 1});
    const Entity spawned = live_->create();
    ASSERT_EQ(spawned, (Entity{4, 2}));
    live_->emplace<Position>(spawned, Position{44.0F, 45.0F});
    live_->emplace<Hunger>(spawned, Hunger{1.0F, 1});
    journal_->row(*live_, spawned);
    commit(101);
    journal_.reset();

    auto w = restored_world(image_, types_);
    ASSERT_TRUE(w->valid(Entity{4, 1}));
    auto owners = empty_owners();
    const auto report = replay_into(*w, owners, path_, image_.tick);
    EXPECT_EQ(report.skipped, 0U);
    EXPECT_FALSE(w->valid(Entity{4, 1}));
    EXPECT_TRUE(w->valid(Entity{4, 2}));
    EXPECT_EQ(w->get<Position>(Entity{4, 2}), (Position{44.0F, 45.0F}));
    EXPECT_EQ(w->get<Hunger>(Entity{4, 2}), (Hunger{1.0F, 1}));
    EXPECT_EQ(w->try_get<Owner>(Entity{4, 2}), nullptr) << "the row lists every kept value";
    EXPECT_EQ(hash_of(*w, types_), hash_of(*live_, types_));
}

TEST_F(JournalTest, ARowOlderThanItsSlotIsSkipped) {
    open();
    const Entity old = live_->create();  // 2:2
    live_->emplace<Position>(old, Position{1.0F, 1.0F});
    journal_->row(*live_, old);
    commit(101);
    journal_.reset();
    // The checkpoint the journal is replayed on already has index 2 at version 3 (free).
    world_image newer = image_;
    newer.entities.versions[2] = 3;
    auto w = restored_world(newer, types_);
    auto owners = empty_owners();
    const auto report = replay_into(*w, owners, path_, image_.tick);
    EXPECT_EQ(report.skipped, 1U);
    EXPECT_FALSE(w->valid(old));
    EXPECT_EQ(w->entities().version_at(2), 3U);
}

// The game's types without Hunger, or with Hunger changed.
component_registry types_without_hunger() {
    component_registry types;
    types.add<Position>();
    types.add<Velocity>();
    types.add<Health>();
    types.add<Name>();
    return types;
}

TEST_F(JournalTest, ATypeTheGameNoLongerHasIsRefusedUnlessDropped) {
    run_four_ticks();
    journal_.reset();
    component_registry without = types_without_hunger();
    auto w = World::make(immediate_reuse());
    auto owners = empty_owners();
    replay_report report;
    try {
        replay_journal(path_, image_.tick, *w, without, owners, report);
        ADD_FAILURE() << "replayed values of a type the game does not have";
    } catch (const ecsnet::server::restore_error& e) {
        EXPECT_THAT(e.what(), HasSubstr("'hunger'"));
    }
    EXPECT_EQ(w->entities().slots(), 0U) << "refused before any record";

    without.drop("hunger");
    auto dropped = restored_world(image_, without);
    auto owners2 = empty_owners();
    replay_report ok;
    replay_journal(path_, image_.tick, *dropped, without, owners2, ok);
    EXPECT_EQ(ok.batches, 4U);
    EXPECT_TRUE(dropped->valid(Entity{6, 1}));
    EXPECT_EQ(dropped->get<Position>(Entity{6, 1}), (Position{20.0F, 21.0F}));
}

TEST_F(JournalTest, AChangedTypeIsRefusedWithoutMigrationAndConvertedWithOne) {
    run_four_ticks();
    journal_.reset();
    component_registry v2 = types_without_hunger();
    v2.persist<HungerV2>();
    {
        auto w = World::make(immediate_reuse());
        auto owners = empty_owners();
        replay_report report;
        try {
            replay_journal(path_, image_.tick, *w, v2, owners, report);
            ADD_FAILURE() << "replayed a changed type without a migration";
        } catch (const ecsnet::server::restore_error& e) {
            EXPECT_THAT(e.what(), HasSubstr("'hunger'"));
            EXPECT_THAT(e.what(), HasSubstr("2 fields stored, 3 now"));
        }
    }
    v2.migrate("hunger", [](const ecsnet::protocol::stored_type&,
                            std::span<const ecsnet::protocol::field_value> old) {
        std::vector<ecsnet::protocol::field_value> now(old.begin(), old.end());
        now.emplace_back(std::int64_t{-9});
        return now;
    });
    auto w = restored_world(image_, v2);
    auto owners = empty_owners();
    replay_report report;
    replay_journal(path_, image_.tick, *w, v2, owners, report);
    EXPECT_EQ(report.batches, 4U);
    EXPECT_EQ(w->get<HungerV2>(Entity{6, 1}), (HungerV2{0.5F, 2, -9}));
    EXPECT_EQ(w->try_get<HungerV2>(Entity{1, 1}), nullptr);
}

}  // namespace journal_test
