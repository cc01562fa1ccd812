// inspect-state over a state dir written by the checkpoint encoder and a journal framed by hand:
// the summary, the JSON export, a torn journal tail, exit codes.
#include "ecsnet/server/persistence/inspect_state.hpp"

#include <xxhash.h>

#include <flatbuffers/flatbuffers.h>
#include <nlohmann/json.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "ecsnet/server/persistence/state_dir.hpp"
#include "ecsnet/wire/state_generated.h"
#include "state_image.hpp"

namespace inspect_state_test {

namespace fs = std::filesystem;
namespace state = ecsnet::state;
using ecsnet::server::encode_checkpoint;
using ecsnet::server::inspect_state;
using ecsnet::server::inspect_state_request;
using ecsnet::server::state_dir;
using ecsnet::test::sample_image;
using testing::HasSubstr;
using testing::Not;

struct result {
    int code{0};
    std::string out;
    std::string err;
};

// Runs inspect_state with both streams in memory.
result run(const inspect_state_request& request) {
    char* out_text = nullptr;
    char* err_text = nullptr;
    std::size_t out_size = 0;
    std::size_t err_size = 0;
    std::FILE* out = ::open_memstream(&out_text, &out_size);
    std::FILE* err = ::open_memstream(&err_text, &err_size);
    result r;
    r.code = inspect_state(request, out, err);
    std::fclose(out);
    std::fclose(err);
    r.out.assign(out_text, out_size);
    r.err.assign(err_text, err_size);
    std::free(out_text);
    std::free(err_text);
    return r;
}

void append_frame(std::vector<std::uint8_t>& file, const flatbuffers::FlatBufferBuilder& fbb) {
    const auto size = static_cast<std::uint32_t>(fbb.GetSize());
    const std::uint64_t hash = XXH3_64bits(fbb.GetBufferPointer(), size);
    const auto* s = reinterpret_cast<const std::uint8_t*>(&size);
    const auto* h = reinterpret_cast<const std::uint8_t*>(&hash);
    file.insert(file.end(), s, s + 4);
    file.insert(file.end(), h, h + 8);
    file.insert(file.end(), fbb.GetBufferPointer(), fbb.GetBufferPointer() + size);
}

// A segment after checkpoint `base`: its header, then batches of `records[i]` records at ticks
// base + 1, base + 2, ...
std::vector<std::uint8_t> journal(std::uint64_t base, const std::vector<std::size_t>& records) {
    std::vector<std::uint8_t> file{'E', 'C', 'S', 'N', 'J', 'R', 'N', 'L'};
    flatbuffers::FlatBufferBuilder header;
    header.Finish(state::CreateJournalHeader(header, 1, base, header.CreateString("sample")));
    append_frame(file, header);
    std::uint64_t tick = base;
    for (const std::size_t n : records) {
        flatbuffers::FlatBufferBuilder batch;
        std::vector<flatbuffers::Offset<state::Record>> rs;
        for (std::size_t i = 0; i < n; ++i) {
            rs.push_back(state::CreateRecord(batch, i % 2 == 0 ? state::RecordKind::Row
                                                               : state::RecordKind::Destroy,
                                             static_cast<std::uint32_t>(i), 1));
        }
        batch.Finish(state::CreateJournalBatch(batch, ++tick, batch.CreateVector(rs)));
        append_frame(file, batch);
    }
    return file;
}

class InspectState : public testing::Test {
protected:
    ecsnet::test::temp_dir tmp;
    fs::path dir() const { return tmp.path() / "state"; }

    // Checkpoints 10 (valid), 20 (a flipped payload byte); journal segments 10 (complete)
    // and 20 (two batches, then half of a third).
    void SetUp() override {
        state_dir d{dir()};
        d.write_checkpoint(10, encode_checkpoint(sample_image(10)));
        auto corrupt = encode_checkpoint(sample_image(20));
        corrupt[corrupt.size() / 2] ^= 1;
        d.write_checkpoint(20, corrupt);
        ecsnet::test::write_bytes(d.journal_path(10), journal(10, {3, 1}));
        auto torn = journal(20, {2, 2, 4});
        const auto whole = journal(20, {2, 2});
        torn_at = whole.size();
        torn.resize(whole.size() + (torn.size() - whole.size()) / 2);
        ecsnet::test::write_bytes(d.journal_path(20), torn);
    }
    std::size_t torn_at{0};
};

TEST_F(InspectState, SummaryListsCheckpointsAndJournals) {
    const result r = run({dir().string(), false, std::nullopt, ""});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    EXPECT_THAT(r.out, HasSubstr("checkpoints: 2\n"));
    EXPECT_THAT(r.out, HasSubstr("checkpoint-00000000000000000010.ckpt  tick 10  "
                                 "2025-11-26T14:00:00.123Z  game \"sample\"  entities 3 alive of "
                                 "5 slots  free 2  owners 2  " +
                                 std::to_string(fs::file_size(state_dir::open_read_only(dir())
                                                                  .checkpoint_path(10))) +
                                 " bytes  valid"));
    EXPECT_THAT(r.out, HasSubstr("values: position 2, stats 1, hunger 3 (persistent, not "
                                 "replicated), name 2, marker 0"));
    EXPECT_THAT(r.out, HasSubstr("checkpoint-00000000000000000020.ckpt  tick 20  "));
    EXPECT_THAT(r.out, HasSubstr("invalid: checksum mismatch (file torn or corrupt)"));
    // Newest first.
    EXPECT_LT(r.out.find("checkpoint-00000000000000000020"), r.out.find("checkpoint-00000000000000000010"));

    EXPECT_THAT(r.out, HasSubstr("journal segments: 2\n"));
    EXPECT_THAT(r.out, HasSubstr("journal-00000000000000000010.log  base tick 10  batches 2  "
                                 "records 4  last tick 12  "));
    EXPECT_THAT(r.out, HasSubstr(" bytes  complete\n"));
    EXPECT_THAT(r.out, HasSubstr("journal-00000000000000000020.log  base tick 20  batches 2  "
                                 "records 4  last tick 22  "));
    EXPECT_THAT(r.out, HasSubstr("torn tail at byte " + std::to_string(torn_at) + "\n"));
}

TEST_F(InspectState, AFailedChecksumInTheLastFrameIsATornTail) {
    auto bytes = journal(30, {1, 1});
    const std::size_t last_frame = journal(30, {1}).size();
    bytes.back() ^= 1;
    state_dir d{dir()};
    ecsnet::test::write_bytes(d.journal_path(30), bytes);
    // A flipped byte in a frame that is not the last is corruption, said as such.
    auto middle = journal(40, {1, 1});
    middle[journal(40, {}).size() + 20] ^= 1;
    ecsnet::test::write_bytes(d.journal_path(40), middle);
    ecsnet::test::write_bytes(d.journal_path(50), {'n', 'o', 'p', 'e', '!', '!', '!', '!'});

    const result r = run({dir().string(), false, std::nullopt, ""});
    EXPECT_THAT(r.out, HasSubstr("journal-00000000000000000030.log  base tick 30  batches 1  "
                                 "records 1  last tick 31  " + std::to_string(bytes.size()) +
                                 " bytes  torn tail at byte " + std::to_string(last_frame)));
    EXPECT_THAT(r.out, HasSubstr("journal-00000000000000000040.log  base tick 40  batches 0  "
                                 "records 0  last tick -  "));
    EXPECT_THAT(r.out, HasSubstr("checksum mismatch in the frame at byte " +
                                 std::to_string(journal(40, {}).size())));
    EXPECT_THAT(r.out, HasSubstr("not a journal (no ECSNJRNL magic)"));
}

TEST_F(InspectState, JsonExportsTheNewestValidCheckpoint) {
    const result r = run({dir().string(), true, std::nullopt, ""});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_THAT(r.err, HasSubstr("skipped checkpoint-00000000000000000020.ckpt: checksum mismatch"));
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["tick"], 10);
    EXPECT_EQ(j["game"], "sample");
    EXPECT_EQ(j["unix_ms"], 1'764'165'600'123);
    EXPECT_EQ(j["free"], nlohmann::json::array({4, 2}));
    EXPECT_EQ(j["next_owner"], 10);

    const auto& entities = j["entities"];
    ASSERT_EQ(entities.size(), 3U);
    EXPECT_EQ(entities[0]["index"], 0);
    EXPECT_EQ(entities[0]["version"], 0);
    EXPECT_EQ(entities[0]["components"]["position"]["x"], "nan");
    EXPECT_EQ(entities[0]["components"]["position"]["y"], "inf");
    EXPECT_EQ(entities[0]["components"]["hunger"]["f0"], 1);
    EXPECT_EQ(entities[0]["components"].size(), 2U);

    EXPECT_EQ(entities[1]["index"], 1);
    EXPECT_EQ(entities[1]["version"], 3);
    const auto& stats = entities[1]["components"]["stats"];
    EXPECT_EQ(stats["hp"], -7);
    EXPECT_EQ(stats["flying"], true);
    EXPECT_EQ(stats["score"].get<std::uint64_t>(), 18'000'000'000'000'000'000ULL);
    EXPECT_EQ(stats["mass"], "-inf");
    EXPECT_EQ(stats["level"], -3);
    EXPECT_EQ(entities[1]["components"]["name"], "alice");
    EXPECT_EQ(entities[1]["components"]["hunger"]["f0"], 2);

    EXPECT_EQ(entities[2]["index"], 3);
    EXPECT_EQ(entities[2]["components"]["position"]["x"], 1.5);
    EXPECT_EQ(entities[2]["components"]["position"]["y"], -2.25);
    EXPECT_EQ(entities[2]["components"]["name"], "b\"ob\n");
    EXPECT_EQ(entities[2]["components"]["hunger"]["f0"], 65535);
    EXPECT_FALSE(entities[2]["components"].contains("marker"));

    ASSERT_EQ(j["owners"].size(), 2U);
    EXPECT_EQ(j["owners"][0]["id"], 7);
    EXPECT_EQ(j["owners"][0]["player"], "");
    std::string digest;
    for (int i = 0; i < 32; ++i) {
        char hex[3];
        std::snprintf(hex, sizeof(hex), "%02x", (i * 9) & 0xFF);
        digest += hex;
    }
    EXPECT_EQ(j["owners"][0]["key_digest"], digest);
    EXPECT_EQ(j["owners"][1]["player"], "player-9");
    EXPECT_TRUE(j["owners"][1]["key_digest"].is_null());
}

TEST_F(InspectState, JsonByTickToAFile) {
    const fs::path file = tmp.path() / "out.json";
    const result r = run({dir().string(), true, 10, file.string()});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, "");
    const auto j = nlohmann::json::parse(ecsnet::test::read_bytes(file));
    EXPECT_EQ(j["tick"], 10);
    EXPECT_EQ(j["entities"].size(), 3U);

    const result corrupt = run({dir().string(), true, 20, ""});
    EXPECT_EQ(corrupt.code, 1);
    EXPECT_EQ(corrupt.out, "");
    EXPECT_THAT(corrupt.err, HasSubstr("checkpoint-00000000000000000020.ckpt: checksum mismatch"));

    const result absent = run({dir().string(), true, 15, ""});
    EXPECT_EQ(absent.code, 1);
    EXPECT_THAT(absent.err, HasSubstr("no checkpoint of tick 15"));

    const result unwritable = run({dir().string(), true, 10, (tmp.path() / "no" / "x").string()});
    EXPECT_EQ(unwritable.code, 1);
    EXPECT_THAT(unwritable.err, HasSubstr("cannot write"));
}

TEST_F(InspectState, ExitCodes) {
    const result missing = run({(tmp.path() / "missing").string(), false, std::nullopt, ""});
    EXPECT_EQ(missing.code, 1);
    EXPECT_THAT(missing.err, HasSubstr("does not exist"));

    // Only invalid checkpoints: the summary says why, and exits 1; so does the export.
    fs::remove(state_dir::open_read_only(dir()).checkpoint_path(10));
    const result none = run({dir().string(), false, std::nullopt, ""});
    EXPECT_EQ(none.code, 1);
    EXPECT_THAT(none.out, HasSubstr("invalid: checksum mismatch"));
    EXPECT_THAT(none.err, HasSubstr("no valid checkpoint"));
    const result none_json = run({dir().string(), true, std::nullopt, ""});
    EXPECT_EQ(none_json.code, 1);
    EXPECT_EQ(none_json.out, "");
    EXPECT_THAT(none_json.err, HasSubstr("checkpoint-00000000000000000020.ckpt: checksum mismatch"));

    EXPECT_EQ(run({dir().string(), false, 10, ""}).code, 2) << "--tick without --json";
    EXPECT_EQ(run({"", false, std::nullopt, ""}).code, 2);
}

}  // namespace inspect_state_test
