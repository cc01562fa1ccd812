// Checkpoint files (encode/decode, every check of the reader) and the state dir (atomic
// writes, listing, fallback to an older checkpoint, pruning, the lock).
#include "ecsnet/server/persistence/state_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <xxhash.h>

#include <fstream>
#include <optional>
#include <string>

#include "state_image.hpp"

namespace state_dir_test {

namespace fs = std::filesystem;
using ecsnet::server::checkpoint_error;
using ecsnet::server::checkpoint_header_bytes;
using ecsnet::server::decode_checkpoint;
using ecsnet::server::encode_checkpoint;
using ecsnet::server::state_dir;
using ecsnet::server::world_image;
using ecsnet::test::sample_image;
using testing::HasSubstr;

// decode_checkpoint's message for `bytes`, or "" when it reads.
std::string rejection(const std::vector<std::uint8_t>& bytes) {
    try {
        (void)decode_checkpoint(bytes);
    } catch (const checkpoint_error& e) {
        return e.what();
    }
    return {};
}

TEST(Checkpoint, RoundTripKeepsEveryField) {
    const world_image image = sample_image(42);
    const auto bytes = encode_checkpoint(image);
    ASSERT_GT(bytes.size(), checkpoint_header_bytes);
    EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + 8), "ECSNCKPT");
    const world_image back = decode_checkpoint(bytes);
    ecsnet::test::expect_same(image, back);

    // Encoding is deterministic: the same image, the same bytes.
    EXPECT_EQ(encode_checkpoint(back), bytes);
}

TEST(Checkpoint, EmptyWorldRoundTrips) {
    world_image empty;
    empty.tick = 1;
    const world_image back = decode_checkpoint(encode_checkpoint(empty));
    ecsnet::test::expect_same(empty, back);
}

TEST(Checkpoint, DecodesFromAnUnalignedBuffer) {
    const auto bytes = encode_checkpoint(sample_image());
    std::vector<std::uint8_t> shifted(bytes.size() + 1);
    std::copy(bytes.begin(), bytes.end(), shifted.begin() + 1);
    ecsnet::test::expect_same(sample_image(),
                              decode_checkpoint(std::span{shifted}.subspan(1)));
}

TEST(Checkpoint, EveryTruncationIsRejected) {
    const auto bytes = encode_checkpoint(sample_image());
    for (std::size_t k = 0; k < 16; ++k) {
        const std::size_t size = k * bytes.size() / 16;
        SCOPED_TRACE("truncated to " + std::to_string(size) + " of " + std::to_string(bytes.size()));
        const std::string why = rejection({bytes.begin(), bytes.begin() + static_cast<long>(size)});
        EXPECT_THAT(why, HasSubstr("truncated"));
        if (size > checkpoint_header_bytes) {
            EXPECT_THAT(why, HasSubstr(std::to_string(size - checkpoint_header_bytes) + " of " +
                                       std::to_string(bytes.size() - checkpoint_header_bytes) +
                                       " payload bytes"));
        }
    }
}

TEST(Checkpoint, FlippedBytesAreRejectedWithTheirCheck) {
    const auto good = encode_checkpoint(sample_image());
    const auto flipped = [&](std::size_t at) {
        auto bytes = good;
        bytes[at] ^= 0x40;
        return rejection(bytes);
    };
    EXPECT_THAT(flipped(0), HasSubstr("magic"));
    EXPECT_THAT(flipped(8), HasSubstr("format 65 is newer than this server's 1"));
    EXPECT_THAT(flipped(13), HasSubstr("reserved"));
    EXPECT_THAT(flipped(19), HasSubstr("truncated"));  // the size grows by 1 GiB
    EXPECT_THAT(flipped(24), HasSubstr("checksum mismatch (file torn or corrupt)"));
    EXPECT_THAT(flipped(31), HasSubstr("checksum mismatch"));
    EXPECT_THAT(flipped(checkpoint_header_bytes), HasSubstr("checksum mismatch"));
    EXPECT_THAT(flipped(good.size() / 2), HasSubstr("checksum mismatch"));
    EXPECT_THAT(flipped(good.size() - 1), HasSubstr("checksum mismatch"));

    auto longer = good;
    longer.push_back(0);
    EXPECT_THAT(rejection(longer), HasSubstr("1 bytes past the payload"));
}

// A header with a correct checksum around `payload`.
std::vector<std::uint8_t> with_header(const std::vector<std::uint8_t>& payload) {
    auto bytes = encode_checkpoint(world_image{});
    bytes.resize(checkpoint_header_bytes);
    bytes.insert(bytes.end(), payload.begin(), payload.end());
    const std::uint64_t size = payload.size();
    const std::uint64_t hash = XXH3_64bits(payload.data(), payload.size());
    std::memcpy(bytes.data() + 16, &size, 8);
    std::memcpy(bytes.data() + 24, &hash, 8);
    return bytes;
}

TEST(Checkpoint, PayloadsThatPassTheChecksumAreStillVerified) {
    EXPECT_THAT(rejection(with_header(std::vector<std::uint8_t>(64, 0xAB))),
                HasSubstr("FlatBuffers verification failed"));

    // A valid FlatBuffer, not a checkpoint's identifier.
    auto payload = encode_checkpoint(sample_image());
    payload.erase(payload.begin(), payload.begin() + checkpoint_header_bytes);
    payload[4] = 'X';
    EXPECT_THAT(rejection(with_header(payload)), HasSubstr("identifier is not ECSK"));
}

TEST(Checkpoint, InconsistentContentIsRejected) {
    auto dead_index = sample_image();
    dead_index.columns[0].indices[0] = 2;  // slot 2 is free
    EXPECT_THAT(rejection(encode_checkpoint(dead_index)), HasSubstr("position: index 2 is not alive"));

    auto past = sample_image();
    past.columns[3].indices[1] = 9;
    EXPECT_THAT(rejection(encode_checkpoint(past)), HasSubstr("name: index 9 is past the 5 slots"));

    auto twice = sample_image();
    twice.columns[2].indices = {0, 0, 3};
    EXPECT_THAT(rejection(encode_checkpoint(twice)), HasSubstr("index 0 is listed twice"));

    auto flags = sample_image();
    flags.entities.alive.pop_back();
    EXPECT_THAT(rejection(encode_checkpoint(flags)), HasSubstr("4 alive flags for 5 slots"));

    auto free = sample_image();
    free.entities.free.push_back(5);
    EXPECT_THAT(rejection(encode_checkpoint(free)), HasSubstr("free index 5 is past"));

    // The encoder refuses columns whose sizes disagree with their type.
    auto short_values = sample_image();
    short_values.columns[0].values.pop_back();
    EXPECT_THROW((void)encode_checkpoint(short_values), std::invalid_argument);
}

// Past FlatBuffers' default verifier limit of a million tables (each owner is one).
TEST(Checkpoint, MillionsOfRowsVerify) {
    world_image big;
    big.tick = 3;
    constexpr std::size_t entities = 1'000'000;
    big.entities.versions.assign(entities, 1);
    big.entities.alive.assign(entities, 1);
    ecsnet::protocol::stored_type hp{"hp", true, false, {{"v", ecsnet::protocol::field_type::int32}}};
    ecsnet::server::image_column column{hp, {}, {}, {}};
    column.indices.resize(entities);
    for (std::uint32_t i = 0; i < entities; ++i) {
        column.indices[i] = i;
    }
    column.values.assign(entities * 4, std::byte{7});
    big.columns.push_back(std::move(column));
    big.owners.resize(1'100'000);
    for (std::size_t i = 0; i < big.owners.size(); ++i) {
        big.owners[i].id = static_cast<std::uint32_t>(i + 1);
    }
    const world_image back = decode_checkpoint(encode_checkpoint(big));
    EXPECT_EQ(back.entities.versions.size(), entities);
    ASSERT_EQ(back.columns.size(), 1U);
    EXPECT_EQ(back.columns[0].indices, big.columns[0].indices);
    EXPECT_EQ(back.columns[0].values, big.columns[0].values);
    ASSERT_EQ(back.owners.size(), big.owners.size());
    EXPECT_EQ(back.owners.back().id, 1'100'000U);
}

class StateDir : public testing::Test {
protected:
    ecsnet::test::temp_dir tmp;
    fs::path dir() const { return tmp.path() / "state"; }

    static void write(state_dir& d, std::uint64_t tick) {
        d.write_checkpoint(tick, encode_checkpoint(sample_image(tick)));
    }
    static void touch(const fs::path& p) { std::ofstream{p} << "x"; }
};

TEST_F(StateDir, CreatesTheDirectoryAndWritesAtomically) {
    state_dir d{dir() / "nested"};
    EXPECT_TRUE(fs::is_directory(dir() / "nested"));
    const auto bytes = encode_checkpoint(sample_image(7));
    const fs::path written = d.write_checkpoint(7, bytes);
    EXPECT_EQ(written, dir() / "nested" / "checkpoint-00000000000000000007.ckpt");
    EXPECT_EQ(ecsnet::test::read_bytes(written), bytes);
    EXPECT_EQ(d.journal_path(7), dir() / "nested" / "journal-00000000000000000007.log");
    // Nothing else is left behind: no temporary, no write check.
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator{dir() / "nested"}) {
        names.push_back(e.path().filename().string());
    }
    EXPECT_THAT(names, testing::UnorderedElementsAre("checkpoint-00000000000000000007.ckpt", "lock"));
    ecsnet::test::expect_same(d.load(7), sample_image(7));
    EXPECT_THROW((void)d.load(8), std::runtime_error);
}

TEST_F(StateDir, ListsByNameAndIgnoresOtherFiles) {
    state_dir d{dir()};
    write(d, 20);
    write(d, 10);
    write(d, 30);
    touch(d.journal_path(30));
    touch(d.journal_path(10));
    for (const char* other : {"checkpoint-12.ckpt", "checkpoint-0000000000000000004x.ckpt",
                              "notes.txt", ".checkpoint-00000000000000000040.ckpt.tmp",
                              "journal-00000000000000000010.log.bak",
                              "checkpoint-99999999999999999999.ckpt"}) {
        touch(dir() / other);
    }
    fs::create_directory(dir() / "checkpoint-00000000000000000050.ckpt");
    std::vector<std::uint64_t> ticks;
    for (const auto& f : d.checkpoints()) {
        ticks.push_back(f.tick);
        EXPECT_EQ(f.bytes, fs::file_size(f.path));
    }
    EXPECT_EQ(ticks, (std::vector<std::uint64_t>{30, 20, 10}));
    ticks.clear();
    for (const auto& f : d.journals()) {
        ticks.push_back(f.tick);
    }
    EXPECT_EQ(ticks, (std::vector<std::uint64_t>{10, 30}));
}

TEST_F(StateDir, LoadNewestFallsBackPastATruncatedOrCorruptCheckpoint) {
    state_dir d{dir()};
    EXPECT_FALSE(d.load_newest()) << "a new world";
    write(d, 10);
    write(d, 20);
    write(d, 30);
    ASSERT_EQ(d.load_newest()->from.tick, 30U);

    const fs::path newest = d.checkpoint_path(30);
    const auto good = ecsnet::test::read_bytes(newest);
    ecsnet::test::write_bytes(newest, {good.begin(), good.begin() + static_cast<long>(good.size() / 2)});
    auto loaded = d.load_newest();
    ASSERT_TRUE(loaded);
    EXPECT_EQ(loaded->from.tick, 20U);
    EXPECT_EQ(loaded->from.path, d.checkpoint_path(20));
    ecsnet::test::expect_same(loaded->image, sample_image(20));
    ASSERT_EQ(loaded->skipped.size(), 1U);
    EXPECT_EQ(loaded->skipped[0].first.path, newest);
    EXPECT_THAT(loaded->skipped[0].second, HasSubstr("truncated"));

    auto corrupt = good;
    corrupt[good.size() - 10] ^= 1;
    ecsnet::test::write_bytes(newest, corrupt);
    loaded = d.load_newest();
    ASSERT_TRUE(loaded);
    EXPECT_EQ(loaded->from.tick, 20U);
    ASSERT_EQ(loaded->skipped.size(), 1U);
    EXPECT_THAT(loaded->skipped[0].second, HasSubstr("checksum mismatch"));
    EXPECT_THAT([&] {
        try {
            (void)d.load(30);
        } catch (const checkpoint_error& e) {
            return std::string{e.what()};
        }
        return std::string{};
    }(), HasSubstr("checkpoint-00000000000000000030.ckpt: checksum mismatch"));

    // A file whose name and content disagree (renamed by hand) is not trusted either.
    fs::rename(d.checkpoint_path(20), d.checkpoint_path(25));
    loaded = d.load_newest();
    ASSERT_TRUE(loaded);
    EXPECT_EQ(loaded->from.tick, 10U);
    ASSERT_EQ(loaded->skipped.size(), 2U);
    EXPECT_EQ(loaded->skipped[0].first.tick, 30U);
    EXPECT_EQ(loaded->skipped[1].first.tick, 25U);
    EXPECT_THAT(loaded->skipped[1].second, HasSubstr("holds tick 20, not 25"));

    fs::resize_file(d.checkpoint_path(10), 0);
    loaded = d.load_newest();
    EXPECT_FALSE(loaded) << "nothing valid left";
}

TEST_F(StateDir, PruneKeepsTheNewestAndTheirJournals) {
    state_dir d{dir()};
    for (std::uint64_t tick : {10, 20, 30, 40, 50}) {
        write(d, tick);
        touch(d.journal_path(tick));
    }
    touch(d.journal_path(0));
    touch(dir() / ".checkpoint-00000000000000000060.ckpt.tmp");
    touch(dir() / "notes.txt");

    EXPECT_THROW(d.prune(0), std::invalid_argument);
    const auto removed = d.prune(2);
    EXPECT_EQ(removed.size(), 3U + 4U + 1U);
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator{dir()}) {
        names.push_back(e.path().filename().string());
    }
    EXPECT_THAT(names, testing::UnorderedElementsAre(
                           "checkpoint-00000000000000000040.ckpt",
                           "checkpoint-00000000000000000050.ckpt",
                           "journal-00000000000000000040.log", "journal-00000000000000000050.log",
                           "notes.txt", "lock"));
    EXPECT_TRUE(d.prune(2).empty()) << "nothing more to remove";
    EXPECT_EQ(d.prune(1).size(), 2U);  // checkpoint 40 and journal 40
}

TEST_F(StateDir, TheLockKeepsASecondServerOut) {
    std::optional<state_dir> first{std::in_place, dir()};
    try {
        state_dir second{dir()};
        FAIL() << "a second state_dir on the same directory";
    } catch (const std::runtime_error& e) {
        EXPECT_THAT(e.what(), HasSubstr("is in use by another server (lock held)"));
    }
    // A move keeps the lock; reading beside it is allowed.
    state_dir moved{std::move(*first)};
    first.reset();
    EXPECT_THROW(state_dir{dir()}, std::runtime_error);
    EXPECT_NO_THROW((void)state_dir::open_read_only(dir()));
    {
        state_dir gone{std::move(moved)};
    }
    EXPECT_NO_THROW(state_dir{dir()}) << "released with its owner";
}

TEST_F(StateDir, OpenReadOnlyNeedsAnExistingDirectory) {
    EXPECT_THROW((void)state_dir::open_read_only(dir()), std::runtime_error);
    touch(tmp.path() / "file");
    EXPECT_THROW((void)state_dir::open_read_only(tmp.path() / "file"), std::runtime_error);
    EXPECT_FALSE(fs::exists(dir())) << "creates nothing";
    EXPECT_THROW(state_dir{tmp.path() / "file" / "sub"}, std::runtime_error);
}

TEST_F(StateDir, ReadOnlyDirectoryIsAClearError) {
    if (::geteuid() == 0) {
        GTEST_SKIP() << "root writes into read-only directories";
    }
    const fs::path ro = tmp.path() / "ro";
    fs::create_directory(ro);
    fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
    try {
        state_dir d{ro};
        FAIL() << "opened a read-only directory";
    } catch (const std::runtime_error& e) {
        EXPECT_THAT(e.what(), HasSubstr("is not writable"));
    }
    try {
        state_dir d{ro / "sub"};
        FAIL() << "created a directory inside a read-only one";
    } catch (const std::runtime_error& e) {
        EXPECT_THAT(e.what(), HasSubstr("cannot create state dir"));
    }
}

}  // namespace state_dir_test
