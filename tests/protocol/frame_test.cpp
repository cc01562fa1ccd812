#include "ecsnet/protocol/frame.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "ecsnet/protocol/messages.hpp"
#include "test_types.hpp"

namespace frame_test {

namespace proto = ecsnet::protocol;
namespace wire = ecsnet::wire;

using bytes = std::vector<std::uint8_t>;

bytes client_ping(std::uint64_t nonce) {
    flatbuffers::FlatBufferBuilder fbb;
    const auto ping = wire::CreatePing(fbb, nonce);
    return *proto::finish_frame(
        fbb, wire::CreateClientMessage(fbb, wire::ClientBody::Ping, ping.Union()));
}

// A client frame with strings, structs and a nested table: more for the verifier to check.
bytes client_set_component() {
    flatbuffers::FlatBufferBuilder fbb;
    const auto position = proto::pack(ecsnet::demo::Position{1.0F, 2.0F});
    const auto values = fbb.CreateVector(reinterpret_cast<const std::uint8_t*>(position.data()),
                                         position.size());
    const auto names = fbb.CreateVectorOfStrings({"a reasonably long name"});
    const std::vector<flatbuffers::Offset<wire::Column>> column_list{
        wire::CreateColumn(fbb, ecsnet::testing::ids::position, 0, values),
        wire::CreateColumn(fbb, ecsnet::testing::ids::name, 0, 0, names)};
    const auto columns = fbb.CreateVector(column_list);
    const wire::EntityRef ref{12, 3};
    const auto set = wire::CreateSetComponent(fbb, 77, &ref, columns);
    return *proto::finish_frame(
        fbb, wire::CreateClientMessage(fbb, wire::ClientBody::SetComponent, set.Union()));
}

bytes server_pong(std::uint64_t nonce, std::uint64_t tick) {
    flatbuffers::FlatBufferBuilder fbb;
    const auto pong = wire::CreatePong(fbb, nonce, tick);
    return *proto::finish_frame(
        fbb, wire::CreateServerMessage(fbb, wire::ServerBody::Pong, pong.Union()));
}

bytes server_disconnect(const std::string& reason) {
    flatbuffers::FlatBufferBuilder fbb;
    const auto text = fbb.CreateString(reason);
    const auto body = wire::CreateDisconnect(fbb, text);
    return *proto::finish_frame(
        fbb, wire::CreateServerMessage(fbb, wire::ServerBody::Disconnect, body.Union()));
}

void write_prefix(bytes& frame, std::uint32_t length) {
    for (std::size_t i = 0; i < proto::frame_prefix_bytes; ++i) {
        frame[i] = static_cast<std::uint8_t>(length >> (8U * i));
    }
}

// The schema client frames are decoded against.
const proto::schema& types() {
    static const proto::component_registry registry = ecsnet::testing::test_types();
    return registry.types();
}

bool client_ok(std::span<const std::uint8_t> b) {
    return proto::verify_client_frame(b) != nullptr;
}
bool server_ok(std::span<const std::uint8_t> b) {
    return proto::verify_server_frame(b) != nullptr;
}

std::vector<bytes> client_frames() {
    return {client_ping(0x0123456789ABCDEFULL), client_set_component()};
}
std::vector<bytes> server_frames() {
    return {server_pong(5, 6), server_disconnect("bye for now")};
}

// ---- finish_frame and read_prefix ---------------------------------------------------------

TEST(FinishFrame, IsLittleEndianLengthThenBody) {
    flatbuffers::FlatBufferBuilder fbb;
    const auto ping = wire::CreatePing(fbb, 99);
    const proto::frame f = proto::finish_frame(
        fbb, wire::CreateClientMessage(fbb, wire::ClientBody::Ping, ping.Union()));
    ASSERT_NE(f, nullptr);
    ASSERT_GE(f->size(), 12U);
    const std::size_t body = f->size() - proto::frame_prefix_bytes;
    EXPECT_EQ((*f)[0], body & 0xFFU);
    EXPECT_EQ((*f)[1], (body >> 8U) & 0xFFU);
    EXPECT_EQ((*f)[2], 0U);
    EXPECT_EQ((*f)[3], 0U);
    // The frame is the builder's size-prefixed buffer, copied out.
    EXPECT_EQ(*f, bytes(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()));
}

TEST(FinishFrame, CarriesTheDirectionIdentifier) {
    const bytes client = client_ping(1);
    const bytes server = server_pong(1, 2);
    // prefix (4), root offset (4), identifier (4)
    EXPECT_EQ(std::string(client.begin() + 8, client.begin() + 12), "ECSC");
    EXPECT_EQ(std::string(server.begin() + 8, server.begin() + 12), "ECSS");
}

TEST(ReadPrefix, IsLittleEndian) {
    const std::array<std::uint8_t, 4> prefix{0x01, 0x02, 0x03, 0x04};
    EXPECT_EQ(proto::read_prefix(prefix), 0x04030201U);
    const std::array<std::uint8_t, 4> max{0xFF, 0xFF, 0xFF, 0xFF};
    EXPECT_EQ(proto::read_prefix(max), 0xFFFFFFFFU);
    const std::array<std::uint8_t, 4> zero{};
    EXPECT_EQ(proto::read_prefix(zero), 0U);
}

// ---- verification -------------------------------------------------------------------------

TEST(VerifyFrame, AcceptsGoodFrames) {
    for (const bytes& f : client_frames()) {
        std::string why;
        const wire::ClientMessage* root = proto::verify_client_frame(f, &why);
        ASSERT_NE(root, nullptr) << why;
    }
    for (const bytes& f : server_frames()) {
        std::string why;
        ASSERT_NE(proto::verify_server_frame(f, &why), nullptr) << why;
    }
    const bytes ping = client_ping(0xABCDEF);
    const wire::ClientMessage* root = proto::verify_client_frame(ping);
    ASSERT_NE(root, nullptr);
    ASSERT_EQ(root->body_type(), wire::ClientBody::Ping);
    EXPECT_EQ(root->body_as_Ping()->nonce(), 0xABCDEFU);
}

TEST(VerifyFrame, RejectsEveryTruncation) {
    for (const bytes& f : client_frames()) {
        for (std::size_t n = 0; n < f.size(); ++n) {
            EXPECT_FALSE(client_ok(std::span{f}.first(n))) << "prefix of " << n << " bytes";
        }
    }
    for (const bytes& f : server_frames()) {
        for (std::size_t n = 0; n < f.size(); ++n) {
            EXPECT_FALSE(server_ok(std::span{f}.first(n))) << "prefix of " << n << " bytes";
        }
    }
}

TEST(VerifyFrame, RejectsEveryTruncationEvenWithAMatchingPrefix) {
    // The length prefix rewritten to fit: the FlatBuffers verifier itself must catch it.
    for (const bytes& f : client_frames()) {
        for (std::size_t n = proto::frame_prefix_bytes; n < f.size(); ++n) {
            bytes cut(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(n));
            write_prefix(cut, static_cast<std::uint32_t>(n - proto::frame_prefix_bytes));
            EXPECT_FALSE(client_ok(cut)) << "truncated to " << n << " bytes";
        }
    }
    for (const bytes& f : server_frames()) {
        for (std::size_t n = proto::frame_prefix_bytes; n < f.size(); ++n) {
            bytes cut(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(n));
            write_prefix(cut, static_cast<std::uint32_t>(n - proto::frame_prefix_bytes));
            EXPECT_FALSE(server_ok(cut)) << "truncated to " << n << " bytes";
        }
    }
}

TEST(VerifyFrame, RejectsTrailingBytes) {
    for (const bytes& f : client_frames()) {
        for (std::size_t extra = 1; extra <= 16; ++extra) {
            bytes longer = f;
            longer.resize(f.size() + extra, 0);
            std::string why;
            EXPECT_EQ(proto::verify_client_frame(longer, &why), nullptr) << extra;
            EXPECT_THAT(why, ::testing::HasSubstr("length prefix"));
        }
    }
    for (const bytes& f : server_frames()) {
        bytes longer = f;
        longer.push_back(0);
        EXPECT_FALSE(server_ok(longer));
    }
}

// "Trailing bytes fail" means bytes past 4 + length. Bytes inside the declared length that no
// offset reaches are not checked by anyone: such a frame verifies and decodes as if they were
// not there (docs/PROTOCOL.md, "Edge cases").
TEST(VerifyFrame, JunkInsideTheDeclaredLengthIsNotDetected) {
    for (const bytes& f : client_frames()) {
        bytes padded = f;
        for (std::uint8_t junk = 0; junk < 16; ++junk) {
            padded.push_back(static_cast<std::uint8_t>(0xA5U ^ junk));
        }
        write_prefix(padded, static_cast<std::uint32_t>(padded.size() - proto::frame_prefix_bytes));
        EXPECT_TRUE(client_ok(padded));
    }
    const proto::frame ping = proto::encode(proto::ping{99}, types());
    bytes padded = *ping;
    padded.resize(padded.size() + 8, 0xEE);
    write_prefix(padded, static_cast<std::uint32_t>(padded.size() - proto::frame_prefix_bytes));
    const proto::decoded_client decoded = proto::decode_client_frame(padded, types());
    ASSERT_TRUE(decoded.message.has_value()) << decoded.error.message;
    EXPECT_EQ(std::get<proto::ping>(*decoded.message).nonce, 99U);

    bytes server = server_pong(5, 6);
    server.resize(server.size() + 8, 0xEE);
    write_prefix(server, static_cast<std::uint32_t>(server.size() - proto::frame_prefix_bytes));
    EXPECT_TRUE(server_ok(server));
}

TEST(VerifyFrame, RejectsTheOtherDirection) {
    for (const bytes& f : server_frames()) {
        std::string why;
        EXPECT_EQ(proto::verify_client_frame(f, &why), nullptr);
        EXPECT_THAT(why, ::testing::HasSubstr("identifier"));
    }
    for (const bytes& f : client_frames()) {
        EXPECT_FALSE(server_ok(f));
    }
}

TEST(VerifyFrame, RejectsAnyFlippedIdentifierByte) {
    for (std::size_t i = 8; i < 12; ++i) {
        for (const std::uint8_t mask : {0x01, 0x20, 0x80}) {
            bytes client = client_ping(3);
            client[i] ^= mask;
            EXPECT_FALSE(client_ok(client)) << "byte " << i;
            bytes server = server_pong(3, 4);
            server[i] ^= mask;
            EXPECT_FALSE(server_ok(server)) << "byte " << i;
        }
    }
}

TEST(VerifyFrame, RejectsAMismatchedLengthPrefix) {
    const bytes good = client_ping(8);
    const auto body = static_cast<std::uint32_t>(good.size() - proto::frame_prefix_bytes);
    for (const std::uint32_t length : {body - 1, body + 1, body - 4, body + 4, 0U, 0xFFFFFFFFU,
                                       static_cast<std::uint32_t>(good.size())}) {
        bytes f = good;
        write_prefix(f, length);
        std::string why;
        EXPECT_EQ(proto::verify_client_frame(f, &why), nullptr) << length;
        EXPECT_THAT(why, ::testing::HasSubstr("length prefix")) << length;
    }
    bytes s = server_pong(1, 1);
    write_prefix(s, static_cast<std::uint32_t>(s.size()));
    EXPECT_FALSE(server_ok(s));
}

TEST(VerifyFrame, RejectsEmptyAndShortInput) {
    EXPECT_FALSE(client_ok({}));
    EXPECT_FALSE(server_ok({}));
    for (std::size_t n = 1; n <= 12; ++n) {
        // The prefix matches and the identifier is there when it fits: still too short.
        bytes f(n, 0);
        if (n >= 4) {
            write_prefix(f, static_cast<std::uint32_t>(n - 4));
        }
        if (n >= 12) {
            std::memcpy(f.data() + 8, "ECSC", 4);
        }
        EXPECT_FALSE(client_ok(f)) << n;
        EXPECT_FALSE(server_ok(f)) << n;
    }
}

TEST(VerifyFrame, RejectsRandomBuffers) {
    std::mt19937_64 rng{20240611};
    std::uniform_int_distribution<std::size_t> size_of(0, 300);
    std::uniform_int_distribution<unsigned> byte(0, 255);
    int accepted = 0;
    bytes buf;
    for (int i = 0; i < 200'000; ++i) {
        buf.resize(size_of(rng));
        for (auto& b : buf) {
            b = static_cast<std::uint8_t>(byte(rng));
        }
        // Random prefix and identifier: 2^-64 to pass by chance, and the seed is fixed.
        const bool ok = i % 2 == 0 ? client_ok(buf) : server_ok(buf);
        accepted += ok ? 1 : 0;
    }
    EXPECT_EQ(accepted, 0);
}

TEST(VerifyFrame, SurvivesRandomBodiesBehindAValidEnvelope) {
    // Prefix and identifier made right, so every buffer reaches the FlatBuffers verifier. Random
    // bytes may verify in theory; what is checked is that nothing crashes (ASan/UBSan) and
    // that a frame that passed can be decoded safely.
    std::mt19937_64 rng{7};
    std::uniform_int_distribution<std::size_t> size_of(12, 300);
    std::uniform_int_distribution<unsigned> byte(0, 255);
    int accepted = 0;
    bytes buf;
    for (int i = 0; i < 200'000; ++i) {
        buf.resize(size_of(rng));
        for (auto& b : buf) {
            b = static_cast<std::uint8_t>(byte(rng));
        }
        write_prefix(buf, static_cast<std::uint32_t>(buf.size() - 4));
        const bool client = i % 2 == 0;
        std::memcpy(buf.data() + 8, client ? "ECSC" : "ECSS", 4);
        if (client) {
            if (client_ok(buf)) {
                ++accepted;
                (void)proto::decode_client_frame(buf, types());
            }
        } else if (const wire::ServerMessage* root = proto::verify_server_frame(buf)) {
            ++accepted;
            (void)proto::decode_server_control(*root);
        }
    }
    // Almost all fail on the root offset or the vtable; a few acceptances are not a bug.
    EXPECT_LT(accepted, 200'000 / 100);
}

TEST(VerifyFrame, SurvivesMutatedValidFrames) {
    std::mt19937_64 rng{99};
    const std::vector<bytes> clients = client_frames();
    const std::vector<bytes> servers = server_frames();
    for (int i = 0; i < 20'000; ++i) {
        const bool client = i % 2 == 0;
        bytes f = client ? clients[rng() % clients.size()] : servers[rng() % servers.size()];
        // Flip a few bytes past the prefix and identifier.
        const int flips = 1 + static_cast<int>(rng() % 4);
        for (int k = 0; k < flips; ++k) {
            const std::size_t at = 12 + rng() % (f.size() - 12);
            f[at] = static_cast<std::uint8_t>(rng());
        }
        if (client) {
            (void)proto::decode_client_frame(f, types());
        } else if (const wire::ServerMessage* root = proto::verify_server_frame(f)) {
            (void)proto::decode_server_control(*root);
        }
    }
}

// A ClientMessage with any body_type byte, built by hand: the generated builder only takes
// the schema's tags. The body is a Ping table, or absent.
bytes client_with_union_tag(std::uint8_t tag, bool with_body = true) {
    flatbuffers::FlatBufferBuilder fbb;
    const auto body = wire::CreatePing(fbb, 1);
    const auto start = fbb.StartTable();
    fbb.AddElement<std::uint8_t>(wire::ClientMessage::VT_BODY_TYPE, tag, 0);
    if (with_body) {
        fbb.AddOffset(wire::ClientMessage::VT_BODY, body.Union());
    }
    const flatbuffers::Offset<wire::ClientMessage> root{fbb.EndTable(start)};
    fbb.FinishSizePrefixed(root, wire::ClientMessageIdentifier());
    return bytes(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

bytes server_with_union_tag(std::uint8_t tag, bool with_body = true) {
    flatbuffers::FlatBufferBuilder fbb;
    const auto body = wire::CreatePong(fbb, 1, 2);
    const auto start = fbb.StartTable();
    fbb.AddElement<std::uint8_t>(wire::ServerMessage::VT_BODY_TYPE, tag, 0);
    if (with_body) {
        fbb.AddOffset(wire::ServerMessage::VT_BODY, body.Union());
    }
    const flatbuffers::Offset<wire::ServerMessage> root{fbb.EndTable(start)};
    fbb.FinishSizePrefixed(root, wire::ServerMessageIdentifier());
    return bytes(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

// The FlatBuffers verifier alone, without our envelope and body checks.
bool flatbuffers_accepts_client(const bytes& f) {
    flatbuffers::Verifier verifier(f.data(), f.size());
    return wire::VerifySizePrefixedClientMessageBuffer(verifier);
}
bool flatbuffers_accepts_server(const bytes& f) {
    flatbuffers::Verifier verifier(f.data(), f.size());
    return wire::VerifySizePrefixedServerMessageBuffer(verifier);
}

TEST(VerifyFrame, UnknownUnionTagPassesTheVerifierButNotTheDecoder) {
    const bytes f = client_with_union_tag(200);
    const wire::ClientMessage* root = proto::verify_client_frame(f);
    ASSERT_NE(root, nullptr) << "FlatBuffers passes unknown union tags on purpose";
    EXPECT_EQ(static_cast<unsigned>(root->body_type()), 200U);

    const proto::decoded_client decoded = proto::decode_client_frame(f, types());
    EXPECT_FALSE(decoded.message.has_value());
    EXPECT_TRUE(decoded.error.fatal);
    EXPECT_EQ(decoded.error.code, wire::ErrorCode::Malformed);
    EXPECT_FALSE(decoded.error.request_id.has_value());

    const bytes s = server_with_union_tag(200);
    const wire::ServerMessage* server_root = proto::verify_server_frame(s);
    ASSERT_NE(server_root, nullptr);
    std::string why;
    EXPECT_FALSE(proto::decode_server_control(*server_root, &why).has_value());
    EXPECT_THAT(why, ::testing::HasSubstr("unknown"));
}

TEST(VerifyFrame, RejectsAKnownTypeWithoutItsBody) {
    // FlatBuffers verifies a union tag whose table is absent; every reader would then
    // dereference a null body. Found by SurvivesRandomBodiesBehindAValidEnvelope.
    for (const auto tag :
         {wire::ClientBody::Hello, wire::ClientBody::Ping, wire::ClientBody::ResyncRequest}) {
        const bytes f = client_with_union_tag(static_cast<std::uint8_t>(tag), false);
        ASSERT_TRUE(flatbuffers_accepts_client(f));
        std::string why;
        EXPECT_EQ(proto::verify_client_frame(f, &why), nullptr);
        EXPECT_THAT(why, ::testing::HasSubstr("body"));
        const proto::decoded_client decoded = proto::decode_client_frame(f, types());
        EXPECT_FALSE(decoded.message.has_value());
        EXPECT_TRUE(decoded.error.fatal);
    }
    for (const auto tag : {wire::ServerBody::Welcome, wire::ServerBody::Snapshot,
                           wire::ServerBody::Pong, wire::ServerBody::Disconnect}) {
        const bytes f = server_with_union_tag(static_cast<std::uint8_t>(tag), false);
        ASSERT_TRUE(flatbuffers_accepts_server(f));
        EXPECT_FALSE(server_ok(f));
    }
}

TEST(VerifyFrame, MessageWithoutTypeOrBodyVerifiesButDoesNotDecode) {
    const bytes f = client_with_union_tag(0, false);
    ASSERT_NE(proto::verify_client_frame(f), nullptr);
    const proto::decoded_client decoded = proto::decode_client_frame(f, types());
    EXPECT_FALSE(decoded.message.has_value());
    EXPECT_TRUE(decoded.error.fatal);

    const bytes s = server_with_union_tag(0, false);
    const wire::ServerMessage* root = proto::verify_server_frame(s);
    ASSERT_NE(root, nullptr);
    EXPECT_FALSE(proto::decode_server_control(*root).has_value());
}

// ---- frame_reader -------------------------------------------------------------------------

TEST(FrameReader, NeedsMoreWhenEmpty) {
    proto::frame_reader reader{1024};
    std::span<const std::uint8_t> out;
    EXPECT_EQ(reader.next(out), proto::frame_reader::status::need_more);
    EXPECT_EQ(reader.buffered(), 0U);
    EXPECT_EQ(reader.max_frame_bytes(), 1024U);
}

TEST(FrameReader, ReassemblesFramesFedByteByByte) {
    const std::vector<bytes> frames{client_ping(1), client_set_component(), client_ping(2)};
    bytes stream;
    for (const bytes& f : frames) {
        stream.insert(stream.end(), f.begin(), f.end());
    }
    proto::frame_reader reader{proto::default_max_client_frame};
    std::vector<bytes> got;
    for (const std::uint8_t b : stream) {
        reader.feed(std::span{&b, 1});
        std::span<const std::uint8_t> out;
        while (true) {
            const auto st = reader.next(out);
            if (st != proto::frame_reader::status::frame) {
                ASSERT_EQ(st, proto::frame_reader::status::need_more);
                break;
            }
            got.emplace_back(out.begin(), out.end());
        }
    }
    EXPECT_EQ(got, frames);
    EXPECT_EQ(reader.buffered(), 0U);
    for (const bytes& f : got) {
        EXPECT_TRUE(client_ok(f));
    }
}

TEST(FrameReader, ReassemblesFramesFedInUnevenChunks) {
    std::vector<bytes> frames;
    bytes stream;
    for (std::uint64_t i = 0; i < 50; ++i) {
        frames.push_back(i % 3 == 0 ? client_set_component() : client_ping(i));
        stream.insert(stream.end(), frames.back().begin(), frames.back().end());
    }
    proto::frame_reader reader{proto::default_max_client_frame};
    std::vector<bytes> got;
    std::size_t at = 0;
    std::size_t chunk = 1;
    while (at < stream.size()) {
        const std::size_t n = std::min(chunk, stream.size() - at);
        reader.feed(std::span{stream}.subspan(at, n));
        at += n;
        chunk = chunk * 7 % 97 + 1;
        std::span<const std::uint8_t> out;
        while (reader.next(out) == proto::frame_reader::status::frame) {
            got.emplace_back(out.begin(), out.end());
        }
    }
    EXPECT_EQ(got, frames);
    EXPECT_EQ(reader.buffered(), 0U);
}

TEST(FrameReader, SeveralFramesInOneFeed) {
    const bytes a = client_ping(10);
    const bytes b = client_set_component();
    const bytes c = client_ping(11);
    bytes stream = a;
    stream.insert(stream.end(), b.begin(), b.end());
    stream.insert(stream.end(), c.begin(), c.end());
    stream.insert(stream.end(), {0x01, 0x02});  // the start of a fourth prefix

    proto::frame_reader reader{proto::default_max_client_frame};
    reader.feed(stream);
    EXPECT_EQ(reader.buffered(), stream.size());

    std::span<const std::uint8_t> out;
    ASSERT_EQ(reader.next(out), proto::frame_reader::status::frame);
    EXPECT_EQ(bytes(out.begin(), out.end()), a);
    EXPECT_EQ(reader.buffered(), stream.size() - a.size());
    ASSERT_EQ(reader.next(out), proto::frame_reader::status::frame);
    EXPECT_EQ(bytes(out.begin(), out.end()), b);
    ASSERT_EQ(reader.next(out), proto::frame_reader::status::frame);
    EXPECT_EQ(bytes(out.begin(), out.end()), c);
    EXPECT_EQ(reader.next(out), proto::frame_reader::status::need_more);
    EXPECT_EQ(reader.buffered(), 2U);
}

// A consumer that reads on while it still uses a frame (client::connection, when a callback
// reads more) detaches the frame's storage first: every frame stays intact while the reader
// is fed and read behind it, and later frames are aligned as before.
TEST(FrameReader, DetachedFramesOutliveLaterFeedsAndReads) {
    std::vector<bytes> frames;
    bytes stream;
    for (std::uint64_t i = 0; i < 60; ++i) {
        frames.push_back(i % 3 == 0 ? client_set_component() : client_ping(i));
        stream.insert(stream.end(), frames.back().begin(), frames.back().end());
    }
    proto::frame_reader reader{proto::default_max_client_frame};
    std::vector<std::vector<bytes>> storage;
    std::vector<std::span<const std::uint8_t>> held;
    std::size_t at = 0;
    std::span<const std::uint8_t> out;
    while (at < stream.size() || reader.buffered() > 0) {
        const std::size_t n = std::min<std::size_t>(29, stream.size() - at);
        reader.feed(std::span{stream}.subspan(at, n));
        at += n;
        while (reader.next(out) == proto::frame_reader::status::frame) {
            EXPECT_EQ(reinterpret_cast<std::uintptr_t>(out.data()) % 8, 0U);
            held.push_back(out);
            storage.push_back(reader.detach());
        }
        if (n == 0) {
            break;
        }
    }
    ASSERT_EQ(held.size(), frames.size());
    for (std::size_t i = 0; i < frames.size(); ++i) {
        EXPECT_EQ(bytes(held[i].begin(), held[i].end()), frames[i]) << "frame " << i;
    }
    EXPECT_EQ(reader.buffered(), 0U);
}

TEST(FrameReader, BufferedCountsBytesNotYetHandedOut) {
    const bytes a = client_ping(1);
    const bytes b = client_set_component();
    proto::frame_reader reader{proto::default_max_client_frame};
    std::span<const std::uint8_t> out;

    reader.feed(std::span{a}.first(3));
    EXPECT_EQ(reader.buffered(), 3U);
    EXPECT_EQ(reader.next(out), proto::frame_reader::status::need_more);
    EXPECT_EQ(reader.buffered(), 3U) << "need_more consumes nothing";

    reader.feed(std::span{a}.subspan(3));
    reader.feed(std::span{b}.first(10));
    EXPECT_EQ(reader.buffered(), a.size() + 10);
    ASSERT_EQ(reader.next(out), proto::frame_reader::status::frame);
    EXPECT_EQ(reader.buffered(), 10U);
    EXPECT_EQ(reader.next(out), proto::frame_reader::status::need_more);

    // Feeding after a frame was handed out compacts the buffer but keeps the pending bytes.
    reader.feed(std::span{b}.subspan(10));
    EXPECT_EQ(reader.buffered(), b.size());
    ASSERT_EQ(reader.next(out), proto::frame_reader::status::frame);
    EXPECT_EQ(bytes(out.begin(), out.end()), b);
    EXPECT_EQ(reader.buffered(), 0U);

    reader.feed({});
    EXPECT_EQ(reader.buffered(), 0U);
}

TEST(FrameReader, OversizeIsReportedFromThePrefixAlone) {
    proto::frame_reader reader{64 * 1024};
    bytes prefix(4);
    write_prefix(prefix, 10U * 1024U * 1024U);
    reader.feed(prefix);
    std::span<const std::uint8_t> out;
    EXPECT_EQ(reader.next(out), proto::frame_reader::status::oversize);
    EXPECT_EQ(reader.buffered(), 4U);
}

TEST(FrameReader, OversizeBoundaryIsTheBodyLength) {
    std::span<const std::uint8_t> out;
    bytes prefix(4);

    proto::frame_reader at_limit{100};
    write_prefix(prefix, 100);
    at_limit.feed(prefix);
    EXPECT_EQ(at_limit.next(out), proto::frame_reader::status::need_more);
    const bytes body(100, 0xAB);
    at_limit.feed(body);
    ASSERT_EQ(at_limit.next(out), proto::frame_reader::status::frame);
    EXPECT_EQ(out.size(), 104U);

    proto::frame_reader over{100};
    write_prefix(prefix, 101);
    over.feed(prefix);
    EXPECT_EQ(over.next(out), proto::frame_reader::status::oversize);

    proto::frame_reader huge{proto::default_max_server_frame};
    write_prefix(prefix, 0xFFFFFFFFU);
    huge.feed(prefix);
    EXPECT_EQ(huge.next(out), proto::frame_reader::status::oversize);
}

TEST(FrameReader, OversizeAfterGoodFrames) {
    const bytes good = client_ping(4);
    bytes stream = good;
    bytes prefix(4);
    write_prefix(prefix, 1U << 20U);
    stream.insert(stream.end(), prefix.begin(), prefix.end());

    proto::frame_reader reader{proto::default_max_client_frame};
    reader.feed(stream);
    std::span<const std::uint8_t> out;
    ASSERT_EQ(reader.next(out), proto::frame_reader::status::frame);
    EXPECT_EQ(bytes(out.begin(), out.end()), good);
    EXPECT_EQ(reader.next(out), proto::frame_reader::status::oversize);
}

TEST(FrameReader, EmptyBodyIsAFrameThatDoesNotVerify) {
    proto::frame_reader reader{1024};
    const bytes zero(4, 0);
    reader.feed(zero);
    std::span<const std::uint8_t> out;
    ASSERT_EQ(reader.next(out), proto::frame_reader::status::frame);
    EXPECT_EQ(out.size(), 4U);
    EXPECT_FALSE(client_ok(out));
}

}  // namespace frame_test
