// Fuzzing in the normal test suite (any compiler, no libFuzzer): every input under
// tests/fuzz/corpus/<target>/ (the seeds and the inputs of past findings, regression-*) replays
// through exactly the code of the fuzz targets (fuzz_targets.cpp), and each bug a fuzzer found
// has its own test below with the input that found it.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "ecsnet/demo/game.hpp"
#include "ecsnet/protocol/frame.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/protocol/mirror.hpp"
#include "ecsnet/protocol/registry.hpp"
#include "fuzz_targets.hpp"

namespace {

namespace fs = std::filesystem;
namespace proto = ecsnet::protocol;
using one_input = void (*)(const std::uint8_t*, std::size_t);

std::vector<std::uint8_t> read_file(const fs::path& path) {
    std::ifstream in{path, std::ios::binary};
    return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

// Runs one input; a failed check becomes a test failure with its message.
void run(one_input target, const std::vector<std::uint8_t>& input) {
    ecsnet::fuzz::set_failure_handler(&ecsnet::fuzz::throwing_failure_handler);
    try {
        target(input.data(), input.size());
    } catch (const ecsnet::fuzz::check_failure& failure) {
        ADD_FAILURE() << failure.what();
    }
}

void replay_corpus(const std::string& name, one_input target) {
    const fs::path dir = fs::path{ECSNET_FUZZ_CORPUS_DIR} / name;
    ASSERT_TRUE(fs::is_directory(dir)) << dir;
    std::size_t files = 0;
    for (const auto& entry : fs::directory_iterator{dir}) {
        if (entry.is_regular_file()) {
            SCOPED_TRACE(entry.path().string());
            run(target, read_file(entry.path()));
            ++files;
        }
    }
    EXPECT_GT(files, 0U) << "no corpus in " << dir;
}

TEST(FuzzCorpus, ClientFrame) {
    replay_corpus("client_frame", &ecsnet::fuzz::fuzz_client_frame_one);
}

TEST(FuzzCorpus, Commands) {
    replay_corpus("commands", &ecsnet::fuzz::fuzz_commands_one);
}

TEST(FuzzCorpus, Mirror) {
    replay_corpus("mirror", &ecsnet::fuzz::fuzz_mirror_one);
}

TEST(FuzzCorpus, Schema) {
    replay_corpus("schema", &ecsnet::fuzz::fuzz_schema_one);
}

// The real server over TCP (session_target.cpp): one server for the whole test program,
// stopped once the tests have run, before exit() destroys what its threads use.
class session_servers_stop : public ::testing::Environment {
public:
    void TearDown() override { ecsnet::fuzz::fuzz_session_stop(); }
};
[[maybe_unused]] ::testing::Environment* const session_servers =
    ::testing::AddGlobalTestEnvironment(new session_servers_stop);

TEST(FuzzCorpus, Session) {
    replay_corpus("session", &ecsnet::fuzz::fuzz_session_one);
}

TEST(FuzzCorpus, EmptyAndTinyInputs) {
    for (const one_input target :
         {&ecsnet::fuzz::fuzz_client_frame_one, &ecsnet::fuzz::fuzz_commands_one,
          &ecsnet::fuzz::fuzz_mirror_one, &ecsnet::fuzz::fuzz_schema_one,
          &ecsnet::fuzz::fuzz_session_one}) {
        run(target, {});
        run(target, {0});
        run(target, {0xFF, 0xFF, 0xFF, 0xFF, 0xFF});
    }
}

// ---- findings -------------------------------------------------------------------------------

// fuzz_client_frame, UBSan "load of misaligned address ... for type 'flatbuffers::uoffset_t'" in
// GetSizePrefixedClientMessage: frame_reader handed out frames wherever they began in its
// buffer, so the frame after one of odd length started misaligned and FlatBuffers, which reads
// scalars in place, loaded from misaligned addresses. The verifier cannot catch it: it checks
// alignment relative to the frame's start. A frame of odd length verifies (FlatBuffers allows
// trailing bytes inside the announced length), so a peer can cause this without sending anything
// invalid. Input: corpus/client_frame/regression-misaligned-frame.
TEST(FuzzFinding, FrameAfterAnOddLengthFrameIsAligned) {
    const proto::schema no_types;  // a Ping names no component
    const proto::frame ping = proto::encode(proto::client_message{proto::ping{7}}, no_types);
    // The same Ping with one trailing byte inside its length: 57 bytes, and still valid.
    std::vector<std::uint8_t> stream(ping->begin(), ping->end());
    stream.push_back(0);
    stream[0] = static_cast<std::uint8_t>(stream.size() - proto::frame_prefix_bytes);
    stream.insert(stream.end(), ping->begin(), ping->end());

    proto::frame_reader reader{proto::default_max_client_frame};
    reader.feed(stream);
    for (const std::size_t expected_size : {ping->size() + 1, ping->size()}) {
        std::span<const std::uint8_t> frame;
        ASSERT_EQ(reader.next(frame), proto::frame_reader::status::frame);
        EXPECT_EQ(frame.size(), expected_size);
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(frame.data()) % 8, 0U)
            << "frame of " << frame.size() << " bytes handed out misaligned";
        const proto::decoded_client decoded = proto::decode_client_frame(frame, no_types);
        ASSERT_TRUE(decoded.message.has_value()) << decoded.error.message;
        EXPECT_EQ(*decoded.message, proto::client_message{proto::ping{7}});
    }
    std::span<const std::uint8_t> none;
    EXPECT_EQ(reader.next(none), proto::frame_reader::status::need_more);
}

// fuzz_schema, UBSan "member call on null pointer of type 'flatbuffers::Vector<unsigned char>'"
// in mirror::apply_group: a snapshot group of no entity with a Position column that has no
// values vector passed check_column (0 bytes expected, 0 present) and the mirror then read
// values()->data(). check_column now refuses a fixed-size column without its values.
// Input: corpus/schema/regression-column-without-values.
TEST(FuzzFinding, ColumnWithoutValuesIsRefused) {
    proto::component_registry types;
    ecsnet::demo::register_components(types);
    const auto position = *types.id_of<ecsnet::demo::Position>();
    flatbuffers::FlatBufferBuilder fbb;
    const auto empty = std::vector<std::uint32_t>{};
    const auto column = ecsnet::wire::CreateColumn(
        fbb, position, ecsnet::wire::CreateIndexSet(fbb, 0, fbb.CreateVector(empty)));
    const auto group = ecsnet::wire::CreateEntityGroup(
        fbb, ecsnet::wire::CreateIndexSet(fbb, 0, fbb.CreateVector(empty)), fbb.CreateVector(empty),
        fbb.CreateVector(std::vector{column}));
    const auto snapshot =
        ecsnet::wire::CreateSnapshot(fbb, 1, 0, 1, 0, fbb.CreateVector(std::vector{group}));
    const proto::frame frame = proto::finish_frame(
        fbb, ecsnet::wire::CreateServerMessage(fbb, ecsnet::wire::ServerBody::Snapshot,
                                               snapshot.Union()));
    const auto* message = proto::verify_server_frame(*frame);
    ASSERT_NE(message, nullptr);
    proto::mirror mirror{types.types()};
    EXPECT_FALSE(mirror.apply(*message));
    EXPECT_NE(mirror.error().find("bytes of values"), std::string::npos) << mirror.error();
    EXPECT_EQ(mirror.size(), 0U);
}

}  // namespace
