// Player input types (replicate_options::input) on the wire: the schema flags, the Input message
// a client sends (encoded and checked against the server's schema), InputAck and InputRejected,
// and that an input type replicates to nobody: no Snapshot, Delta or Checksum carries it, and a
// mirror refuses a column of it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "ecsnet/protocol/checksum.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/protocol/mirror.hpp"
#include "ecsnet/protocol/replication.hpp"
#include "test_types.hpp"

// Stick as an ordinary component (a server that would replicate it).
namespace ecsnet::testing {
struct LeakyStick {
    float x{};
    float y{};
    std::uint8_t buttons{};
};
}  // namespace ecsnet::testing
template <>
struct ecsnet::protocol::replicated<ecsnet::testing::LeakyStick>
    : replicate<ecsnet::testing::wire::Stick, "stick",
                replicate_options{.quantized = {.min = -1.0,
                                                .max = 1.0,
                                                .step = ecsnet::testing::stick_step}}> {};

namespace input_test {

namespace proto = ecsnet::protocol;
namespace wire = ecsnet::wire;
namespace ecs = ecsnet::ecs;
using ::testing::HasSubstr;
using ::testing::Not;
using ecsnet::testing::LeakyStick;
using ecsnet::testing::Spot;
using ecsnet::testing::Stick;

const proto::component_registry& registry() {
    static const proto::component_registry types = ecsnet::testing::input_types();
    return types;
}
const proto::schema& types() { return registry().types(); }

proto::input stick_input(ecs::Entity e, std::uint64_t first_tick, std::vector<Stick> sticks) {
    proto::input in{e, first_tick, {}};
    for (const Stick& s : sticks) {
        in.ticks.push_back(proto::component_set{}.set(s));
    }
    return in;
}

proto::decoded_client decode(const proto::client_message& message) {
    const proto::frame f = proto::encode(message, types());
    return proto::decode_client_frame(*f, types());
}

// An Input built by hand, for the shapes encode() refuses to make.
proto::frame raw_input(std::uint64_t first_tick, std::uint16_t tick_count,
                       std::vector<std::uint8_t> values, std::uint16_t type) {
    flatbuffers::FlatBufferBuilder fbb;
    const auto bytes = fbb.CreateVector(values);
    const auto column = wire::CreateColumn(fbb, type, 0, bytes);
    const auto columns = fbb.CreateVector(&column, 1);
    const wire::EntityRef ref{3, 1};
    const auto body = wire::CreateInput(fbb, &ref, first_tick, tick_count, columns);
    return proto::finish_frame(
        fbb, wire::CreateClientMessage(fbb, wire::ClientBody::Input, body.Union()));
}

TEST(InputSchema, TheSchemaCarriesTheInputAndReplicationFlags) {
    const proto::component_info* stick = types().find("stick");
    ASSERT_NE(stick, nullptr);
    EXPECT_TRUE(stick->input);
    EXPECT_FALSE(stick->replicated);
    EXPECT_FALSE(stick->interpolated);
    const proto::component_info* spot = types().find("spot");
    ASSERT_NE(spot, nullptr);
    EXPECT_FALSE(spot->input);
    EXPECT_TRUE(spot->replicated);

    // Through Welcome and back.
    proto::welcome w{1, proto::protocol_version, 30.0F, 5, 30, {}, {}, types()};
    const proto::frame f = proto::encode(proto::server_control{w});
    const auto* root = proto::verify_server_frame(*f);
    ASSERT_NE(root, nullptr);
    std::string why;
    const auto back = proto::decode_server_control(*root, &why);
    ASSERT_TRUE(back.has_value()) << why;
    EXPECT_EQ(std::get<proto::welcome>(*back).components.find("stick")->input, true);
    EXPECT_EQ(std::get<proto::welcome>(*back).components, types());
}

TEST(InputSchema, ASchemaThatBreaksTheInputRulesIsRefused) {
    const auto all = types().types();
    const std::vector<proto::component_info> base(all.begin(), all.end());
    std::string why;
    auto server_written = base;
    server_written.back().written_by = proto::writer::server;
    EXPECT_FALSE(proto::schema::make(server_written, &why));
    EXPECT_THAT(why, HasSubstr("input type not written by its owner"));

    auto hidden = base;
    hidden[1].replicated = false;  // position, not an input
    EXPECT_FALSE(proto::schema::make(hidden, &why));
    EXPECT_THAT(why, HasSubstr("not replicated but is not an input type"));

    auto string_input = base;
    string_input[5].input = true;  // name, a string
    string_input[5].replicated = false;
    EXPECT_FALSE(proto::schema::make(string_input, &why));
    EXPECT_THAT(why, HasSubstr("string type marked input"));
}

TEST(InputMessage, RoundTripsSeveralTicksOfPackedValues) {
    const ecs::Entity e{3, 1};
    const proto::input in =
        stick_input(e, 41, {Stick{0.5F, -1.0F, 1}, Stick{1.0F, 0.0F, 3}, Stick{-0.25F, 0.75F, 15}});
    const proto::decoded_client decoded = decode(in);
    ASSERT_TRUE(decoded.message.has_value()) << decoded.error.message;
    const auto& back = std::get<proto::input>(*decoded.message);
    EXPECT_EQ(back.entity, e);
    EXPECT_EQ(back.first_tick, 41U);
    ASSERT_EQ(back.ticks.size(), 3U);
    EXPECT_EQ(back.ticks[0].get<Stick>(), (Stick{0.5F, -1.0F, 1}));
    EXPECT_EQ(back.ticks[1].get<Stick>(), (Stick{1.0F, 0.0F, 3}));
    EXPECT_EQ(back.ticks[2].get<Stick>(), (Stick{-0.25F, 0.75F, 15}));
    EXPECT_STREQ(proto::message_name(in), "Input");
}

TEST(InputMessage, Protocol5CarriesTheRenderTickAndRefusesAnImpossibleOne) {
    const ecs::Entity e{3, 1};
    proto::input in = stick_input(e, 41, {Stick{}, Stick{}});
    in.render_tick = 37;
    in.render_fraction = 0.25F;
    const proto::decoded_client decoded = decode(in);
    ASSERT_TRUE(decoded.message.has_value()) << decoded.error.message;
    const auto& back = std::get<proto::input>(*decoded.message);
    EXPECT_EQ(back.render_tick, 37U);
    EXPECT_EQ(back.render_fraction, 0.25F);

    const proto::decoded_client older = decode(stick_input(e, 41, {Stick{}}));
    ASSERT_TRUE(older.message.has_value());
    EXPECT_EQ(std::get<proto::input>(*older.message).render_tick, 0U) << "a version 4 client: not given";

    const auto refused = [&](std::uint64_t tick, float fraction) {
        proto::input bad = stick_input(e, 41, {Stick{}, Stick{}});
        bad.render_tick = tick;
        bad.render_fraction = fraction;
        return decode(bad);
    };
    for (const float fraction : {1.0F, -0.5F, std::numeric_limits<float>::quiet_NaN()}) {
        const proto::decoded_client d = refused(37, fraction);
        ASSERT_FALSE(d.message.has_value()) << fraction;
        EXPECT_EQ(d.error.code, wire::ErrorCode::Malformed);
        EXPECT_FALSE(d.error.fatal);
        EXPECT_THAT(d.error.message, HasSubstr("render_fraction"));
    }
    const proto::decoded_client future = refused(43, 0.0F);
    ASSERT_FALSE(future.message.has_value());
    EXPECT_THAT(future.error.message, HasSubstr("render tick 43 is after its last tick 42"));
    EXPECT_TRUE(refused(42, 0.5F).message.has_value()) << "showing its last tick: possible";
}

TEST(InputMessage, OneTickOfInputIsASmallFrame) {
    // 26 bits of Stick: 4 bytes of values; the rest is the FlatBuffers frame around them.
    const proto::frame f = proto::encode(stick_input({3, 1}, 7, {Stick{0.5F, 0.5F, 1}}), types());
    EXPECT_LE(f->size(), 112U);
}

TEST(InputMessage, EncodingRefusesWhatTheServerWouldRefuse) {
    const ecs::Entity e{3, 1};
    EXPECT_THROW((void)proto::encode(proto::input{e, 5, {}}, types()), std::invalid_argument);
    EXPECT_THROW((void)proto::encode(stick_input(e, 5, std::vector<Stick>(17)), types()),
                 std::invalid_argument);
    proto::input not_input{e, 5, {proto::component_set{}.set(Spot{1.0F, 1.0F})}};
    EXPECT_THROW((void)proto::encode(not_input, types()), std::invalid_argument);
    proto::input uneven = stick_input(e, 5, {Stick{}, Stick{}});
    uneven.ticks[1] = proto::component_set{};
    EXPECT_THROW((void)proto::encode(uneven, types()), std::invalid_argument);
}

TEST(InputMessage, BadInputsAreRefusedWithoutEndingTheConnection) {
    const std::uint16_t stick = *registry().id_of<Stick>();
    const std::uint16_t spot = *registry().id_of<Spot>();
    const auto refused = [](const proto::frame& f) {
        return proto::decode_client_frame(*f, types());
    };
    struct expectation {
        proto::frame frame;
        wire::ErrorCode code;
        const char* says;
    };
    const std::vector<expectation> cases{
        {raw_input(0, 1, {0, 0, 0, 0}, stick), wire::ErrorCode::Malformed, "ticks start at 1"},
        {raw_input(5, 0, {}, stick), wire::ErrorCode::Malformed, "1 to 16 ticks"},
        {raw_input(5, 17, std::vector<std::uint8_t>(56), stick), wire::ErrorCode::Malformed,
         "1 to 16 ticks"},
        {raw_input(5, 2, {0, 0, 0, 0}, stick), wire::ErrorCode::Malformed,
         "exactly 2 packed values"},
        {raw_input(5, 1, {0, 0, 0, 0, 0, 0, 0, 0}, spot), wire::ErrorCode::InvalidValue,
         "spot is not an input type"},
        {raw_input(5, 1, {0, 0, 0, 0}, 60), wire::ErrorCode::Malformed, "unknown component type"},
        // x = 511 steps: past the 257 of [-1, 1] by 1/128.
        {raw_input(5, 1, {0xFF, 0x01, 0, 0}, stick), wire::ErrorCode::InvalidValue,
         "invalid stick value for tick 5"},
        {raw_input(std::numeric_limits<std::uint64_t>::max(), 1, {0, 0, 0, 0}, stick),
         wire::ErrorCode::Malformed, "past the largest tick"},
    };
    for (const expectation& c : cases) {
        const proto::decoded_client d = refused(c.frame);
        ASSERT_FALSE(d.message.has_value()) << c.says;
        EXPECT_FALSE(d.error.fatal) << c.says;
        EXPECT_EQ(d.error.code, c.code) << d.error.message;
        EXPECT_THAT(d.error.message, HasSubstr(c.says));
        ASSERT_TRUE(d.error.input_tick.has_value()) << c.says;
    }
}

TEST(InputMessage, CommandsCannotWriteAnInputType) {
    const ecs::Entity e{3, 1};
    for (const proto::client_message& command :
         {proto::client_message{proto::spawn{1, proto::component_set{}.set(Stick{})}},
          proto::client_message{proto::set_components{2, e, proto::component_set{}.set(Stick{})}},
          proto::client_message{proto::remove_components{3, e, {"stick"}}}}) {
        const proto::decoded_client d = decode(command);
        ASSERT_FALSE(d.message.has_value());
        EXPECT_FALSE(d.error.fatal);
        EXPECT_EQ(d.error.code, wire::ErrorCode::InvalidValue);
        EXPECT_THAT(d.error.message, HasSubstr("stick is an input type"));
        EXPECT_FALSE(d.error.input_tick.has_value());
    }
}

TEST(InputMessage, AckAndRejectionRoundTrip) {
    for (const proto::server_control& message :
         {proto::server_control{proto::input_ack{90, 89, -2, 3, 4}},
          proto::server_control{
              proto::input_rejected{12, wire::ErrorCode::InputTooEarly, "too far ahead", 7}}}) {
        const proto::frame f = proto::encode(message);
        const auto* root = proto::verify_server_frame(*f);
        ASSERT_NE(root, nullptr);
        std::string why;
        const auto back = proto::decode_server_control(*root, &why);
        ASSERT_TRUE(back.has_value()) << why;
        EXPECT_EQ(*back, message);
    }
    // An ack of a tick the server has not run is a lie.
    const proto::frame bad = proto::encode(proto::server_control{proto::input_ack{5, 6, 0, 0, 0}});
    std::string why;
    EXPECT_FALSE(proto::decode_server_control(*proto::verify_server_frame(*bad), &why));
    EXPECT_THAT(why, HasSubstr("has not run"));
}

TEST(CompactInputAck, RoundTripsEveryRangeEdge) {
    constexpr std::uint32_t u32 = std::numeric_limits<std::uint32_t>::max();
    constexpr std::uint64_t u64 = std::numeric_limits<std::uint64_t>::max();
    for (const proto::input_ack& ack :
         {proto::input_ack{90, 89, -2, 3, 4}, proto::input_ack{7, 0, 0, 0, 0},
          proto::input_ack{u64, u64, std::numeric_limits<std::int32_t>::min(), u32, u32},
          proto::input_ack{u64, 0, std::numeric_limits<std::int32_t>::max(), 0, 1}}) {
        const proto::frame f = proto::encode_compact_input_ack(ack);
        std::string why;
        const auto back = proto::decode_compact_server_frame(*f, &why);
        ASSERT_TRUE(back.has_value()) << why;
        EXPECT_EQ(std::get<proto::input_ack>(*back), ack);
    }
}

TEST(CompactInputAck, TheBytesAreAsDocumented) {
    // Tick 300 (ac 02), applied 298 (2 back), lead -2 (zigzag 3), late 0, repeated 5.
    const proto::frame f = proto::encode_compact_input_ack({300, 298, -2, 0, 5});
    EXPECT_EQ(*f, (std::vector<std::uint8_t>{0x06, 0x00, 0x00, 0x81, 0xAC, 0x02, 0x02, 0x03, 0x00, 0x05}));
    EXPECT_EQ(proto::encode_compact_input_ack({300, 300, 2, 0, 0})->size(), 10U);
    EXPECT_LE(proto::encode_compact_input_ack({(1U << 21U) - 1, (1U << 21U) - 3, 2, 127, 127})->size(), 11U);
    EXPECT_GE(proto::encode(proto::server_control{proto::input_ack{300, 298, -2, 0, 5}})->size(), 64U)
        << "the full form it replaces";
}

TEST(CompactInputAck, WhatIsNotExactlyFiveNumbersIsRefused) {
    const auto refused = [](std::vector<std::uint8_t> body, std::uint8_t kind = 1) {
        const std::uint32_t word = proto::compact_prefix_word(kind, static_cast<std::uint32_t>(body.size()));
        body.insert(body.begin(), 4, std::uint8_t{0});
        for (std::size_t i = 0; i < 4; ++i) {
            body[i] = static_cast<std::uint8_t>(word >> (8U * i));
        }
        std::string why;
        EXPECT_FALSE(proto::decode_compact_server_frame(body, &why).has_value());
        return why;
    };
    EXPECT_THAT(refused({0x05, 0x00, 0x00, 0x00, 0x00}, 2), HasSubstr("unknown compact frame kind 2"));
    EXPECT_THAT(refused({0x05, 0x00, 0x00, 0x00}), HasSubstr("LEB128"));
    EXPECT_THAT(refused({0x05, 0x00, 0x00, 0x00, 0x80}), HasSubstr("LEB128"));
    EXPECT_THAT(refused({0x05, 0x00, 0x00, 0x00, 0x00, 0x00}), HasSubstr("1 bytes after"));
    EXPECT_THAT(refused({0x05, 0x06, 0x00, 0x00, 0x00}), HasSubstr("before tick 0"));
    EXPECT_THAT(refused({0x05, 0x00, 0x80, 0x80, 0x80, 0x80, 0x10, 0x00, 0x00}), HasSubstr("past 32 bits"));
    EXPECT_THAT(refused({0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x00, 0x00, 0x00, 0x00}),
                HasSubstr("LEB128"));
    const proto::frame good = proto::encode_compact_input_ack({5, 5, 0, 0, 0});
    std::vector<std::uint8_t> shorter(good->begin(), good->end() - 1);
    std::string why;
    EXPECT_FALSE(proto::decode_compact_server_frame(shorter, &why).has_value());
    EXPECT_THAT(why, HasSubstr("prefix does not match"));
}

TEST(CompactInputAck, AProtocol6ReaderCutsCompactFramesAndAnOlderOneRefusesThem) {
    const proto::frame ack = proto::encode_compact_input_ack({300, 298, -2, 0, 5});
    const proto::frame full = proto::encode(proto::server_control{proto::input_ack{301, 300, 1, 0, 5}});
    std::vector<std::uint8_t> stream(full->begin(), full->end());
    stream.insert(stream.end(), ack->begin(), ack->end());
    stream.insert(stream.end(), full->begin(), full->end());
    proto::frame_reader reader{proto::default_max_server_frame, true};
    std::vector<std::size_t> sizes;
    for (std::size_t i = 0; i < stream.size(); i += 3) {  // fed 3 bytes at a time
        reader.feed(std::span<const std::uint8_t>{stream}.subspan(i, std::min<std::size_t>(3, stream.size() - i)));
        std::span<const std::uint8_t> frame;
        while (reader.next(frame) == proto::frame_reader::status::frame) {
            sizes.push_back(frame.size());
        }
    }
    EXPECT_EQ(sizes, (std::vector<std::size_t>{full->size(), ack->size(), full->size()}));
    proto::frame_reader older{proto::default_max_server_frame};
    older.feed(*ack);
    std::span<const std::uint8_t> frame;
    EXPECT_EQ(older.next(frame), proto::frame_reader::status::oversize);
}

// ---- replication ---------------------------------------------------------------------------

bool apply_frame(proto::mirror& m, const proto::frame& f) {
    const auto* root = proto::verify_server_frame(*f);
    EXPECT_NE(root, nullptr);
    return root != nullptr && m.apply(*root);
}

TEST(InputReplication, AnInputTypeIsInNoSnapshotDeltaOrChecksum) {
    auto world = ecs::World::make();
    proto::replication_encoder encoder{registry()};
    const ecs::Entity ship = world->create();
    world->emplace<proto::Owner>(ship, 1U);
    world->emplace<Spot>(ship, 1.0F, 2.0F);
    world->emplace<Stick>(ship, 0.5F, 0.5F, std::uint8_t{1});
    world->discard_changes();

    proto::mirror m{types()};
    for (const auto& f : encoder.encode_snapshot(*world, 1)) {
        ASSERT_TRUE(apply_frame(m, f)) << m.error();
    }
    EXPECT_EQ(m.size(), 1U);
    EXPECT_FALSE(m.get<Stick>(ship).has_value());
    EXPECT_EQ(m.checksum(), proto::checksum::of_world(*world, registry()));

    // Changing only the input sends nothing about it; the checksums still agree.
    world->patch<Stick>(ship, [](Stick& s) { s.x = -0.5F; });
    world->patch<Spot>(ship, [](Spot& s) { s.x = 3.0F; });
    auto changes = world->take_changes();
    const proto::frame delta = encoder.encode_delta(*world, changes, 2);
    ASSERT_TRUE(apply_frame(m, delta)) << m.error();
    EXPECT_FALSE(m.get<Stick>(ship).has_value());
    EXPECT_EQ(m.get<Spot>(ship), (Spot{3.0F, 2.0F}));
    EXPECT_EQ(m.checksum(), proto::checksum::of_world(*world, registry()));
    EXPECT_EQ(proto::checksum::of_entity(*world, registry(), ship, 1),
              proto::checksum::of_entity(*world, registry(), ship, 2));

    world->erase<Stick>(ship);
    changes = world->take_changes();
    const proto::frame removal = encoder.encode_delta(*world, changes, 3);
    ASSERT_TRUE(apply_frame(m, removal)) << m.error();
    EXPECT_EQ(m.checksum(), proto::checksum::of_world(*world, registry()));
}

TEST(InputReplication, AMirrorRefusesAColumnOfAnInputType) {
    // A server that sends one anyway: its "stick" (same wire id and layout) is ordinary.
    proto::component_registry leaking = ecsnet::testing::test_types();
    leaking.add<LeakyStick>();
    auto world = ecs::World::make();
    const ecs::Entity ship = world->create();
    world->emplace<LeakyStick>(ship, 0.5F, 0.5F, std::uint8_t{1});
    proto::replication_encoder encoder{leaking};

    proto::mirror m{types()};
    bool applied = true;
    for (const auto& f : encoder.encode_snapshot(*world, 1)) {
        applied = applied && apply_frame(m, f);
    }
    EXPECT_FALSE(applied);
    EXPECT_THAT(m.error(), HasSubstr("stick, which the schema says is not replicated"));
}

// ---- protocol 6: the compact Input ----------------------------------------------------------

std::span<const std::uint8_t> body_of(const proto::frame& f) {
    return std::span<const std::uint8_t>{*f}.subspan(proto::frame_prefix_bytes);
}

proto::decode_error refused_compact(std::vector<std::uint8_t> body, const proto::input_reference* ref) {
    proto::input out;
    const auto error = proto::decode_compact_input(body, types(), ref, out);
    EXPECT_TRUE(error.has_value());
    return error.value_or(proto::decode_error{});
}

TEST(CompactInput, DecodesToTheFullInputItStandsFor) {
    const ecs::Entity e{3, 1};
    proto::input in = stick_input(e, 41, {Stick{0.5F, -1.0F, 1}, Stick{1.0F, 0.0F, 3}, Stick{-0.25F, 0.75F, 15}});
    in.render_tick = 40;
    in.render_fraction = 0.75F;
    const proto::input_reference ref = proto::reference_of(in, types());
    EXPECT_EQ(ref.entity, e);
    EXPECT_EQ(ref.types, std::vector<std::uint32_t>{*registry().id_of<Stick>()});
    const proto::frame f = proto::encode_compact_input(in, types(), ref);
    const std::uint32_t word = proto::read_prefix(std::span<const std::uint8_t>{*f}.first<4>());
    ASSERT_TRUE(proto::is_compact(word));
    EXPECT_EQ(proto::compact_of(word).kind, static_cast<std::uint8_t>(proto::compact_kind::input));
    EXPECT_EQ(proto::compact_of(word).length, f->size() - proto::frame_prefix_bytes);
    proto::input back;
    const auto error = proto::decode_compact_input(body_of(f), types(), &ref, back);
    ASSERT_FALSE(error.has_value()) << error->message;
    const proto::decoded_client full = decode(in);
    ASSERT_TRUE(full.message.has_value());
    EXPECT_EQ(back, std::get<proto::input>(*full.message)) << "0.75 is a whole number of 256ths";
}

TEST(CompactInput, TheBytesAreAsDocumented) {
    // Tick 300 (LEB128 ac 02), one tick, render tick 298 and half a tick: 2 back, fraction 128;
    // the Stick's 26 bits in 4 bytes.
    proto::input in = stick_input({3, 1}, 300, {Stick{0.0F, 0.0F, 0}});
    in.render_tick = 298;
    in.render_fraction = 0.5F;
    const proto::frame f = proto::encode_compact_input(in, types(), proto::reference_of(in, types()));
    const proto::frame values = proto::encode_compact_input(
        stick_input({3, 1}, 300, {Stick{0.0F, 0.0F, 0}}), types(), proto::reference_of(in, types()));
    ASSERT_EQ(f->size(), 13U);
    const std::vector<std::uint8_t> head{0x09, 0x00, 0x00, 0x81, 0x10, 0xAC, 0x02, 0x02, 0x80};
    EXPECT_EQ(std::vector<std::uint8_t>(f->begin(), f->begin() + 9), head);
    ASSERT_EQ(values->size(), 11U) << "no render tick: flags 0, no render bytes";
    EXPECT_EQ((*values)[4], 0x00);
    EXPECT_EQ(std::vector<std::uint8_t>(f->begin() + 9, f->end()),
              std::vector<std::uint8_t>(values->begin() + 7, values->end()));
}

TEST(CompactInput, OneTickIsAtMost16BytesUntilTick2To28) {
    for (const std::uint64_t tick : {std::uint64_t{1}, std::uint64_t{1} << 21U, (std::uint64_t{1} << 28U) - 1}) {
        proto::input in = stick_input({70000, 3}, tick, {Stick{0.5F, 0.5F, 1}});
        in.render_tick = tick > 3 ? tick - 3 : 0;
        in.render_fraction = 0.999F;
        EXPECT_LE(proto::encode_compact_input(in, types(), proto::reference_of(in, types()))->size(), 16U)
            << tick;
    }
    proto::input sixteen = stick_input({3, 1}, 5, std::vector<Stick>(16));
    const proto::frame f = proto::encode_compact_input(sixteen, types(), proto::reference_of(sixteen, types()));
    EXPECT_EQ((*f)[4], 0x0F) << "16 ticks: flags 15";
}

TEST(CompactInput, WhatItCannotSayIsMalformedAndNeverFatal) {
    const proto::input in = stick_input({3, 1}, 300, {Stick{}});
    const proto::input_reference ref = proto::reference_of(in, types());
    const proto::frame compact = proto::encode_compact_input(in, types(), ref);
    const std::vector<std::uint8_t> value(body_of(compact).begin() + 3, body_of(compact).end());
    ASSERT_EQ(value.size(), 4U);
    const auto with = [&](std::vector<std::uint8_t> head) {
        head.insert(head.end(), value.begin(), value.end());
        return head;
    };
    const auto check = [&](const std::vector<std::uint8_t>& body, const char* why, const proto::input_reference* r) {
        const proto::decode_error e = refused_compact(body, r);
        EXPECT_EQ(e.code, wire::ErrorCode::Malformed) << why;
        EXPECT_FALSE(e.fatal) << why;
        EXPECT_THAT(e.message, HasSubstr(why));
    };
    check(with({0x00, 0xAC, 0x02}), "before any full Input", nullptr);
    check({}, "no flags", &ref);
    check(with({0x20, 0xAC, 0x02}), "bits 5 to 7", &ref);
    check(with({0x00, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}), "LEB128", &ref);
    check(with({0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02}), "LEB128", &ref);
    check({0x00, 0xAC}, "LEB128", &ref);
    check(with({0x00, 0x00}), "ticks start at 1", &ref);
    check(with({0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}), "past the largest tick", &ref);
    check(with({0x10, 0xAC, 0x02, 0xAC, 0x02, 0x00}), "before tick 1", &ref);
    check(with({0x10, 0xAC, 0x02, 0x01}), "ends inside the values", &ref);
    check({0x00, 0xAC, 0x02, 0x00}, "ends inside the values", &ref);
    std::vector<std::uint8_t> longer = with({0x00, 0xAC, 0x02});
    longer.push_back(0);
    check(longer, "1 bytes after the values", &ref);
    // The largest LEB128 there is decodes (then refused as past the largest tick, not as LEB128).
    const proto::decode_error top = refused_compact(
        with({0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}), &ref);
    EXPECT_THAT(top.message, Not(HasSubstr("LEB128")));
}

TEST(CompactInput, AValueOutOfTheTypesRangeIsInvalidAsInTheFullForm) {
    const proto::input in = stick_input({3, 1}, 300, {Stick{}});
    const proto::input_reference ref = proto::reference_of(in, types());
    // x = 511 steps: past the 257 of [-1, 1] by 1/128 (the full form's case above).
    const proto::decode_error e = refused_compact({0x00, 0xAC, 0x02, 0xFF, 0x01, 0x00, 0x00}, &ref);
    EXPECT_EQ(e.code, wire::ErrorCode::InvalidValue);
    EXPECT_FALSE(e.fatal);
    EXPECT_EQ(e.input_tick, 300U);
    EXPECT_THAT(e.message, HasSubstr("invalid stick value for tick 300"));
}

TEST(CompactInput, EncodeInputGoesCompactOnlyWhileTheServerHoldsTheSameReference) {
    std::optional<proto::input_reference> ref;
    const auto sent = [&](const proto::input& in) {
        return proto::is_compact(proto::read_prefix(std::span<const std::uint8_t>{*proto::encode_input(in, types(), ref)}.first<4>()));
    };
    EXPECT_FALSE(sent(stick_input({3, 1}, 10, {Stick{}}))) << "the first of a connection is full";
    ASSERT_TRUE(ref.has_value());
    EXPECT_TRUE(sent(stick_input({3, 1}, 11, {Stick{}})));
    EXPECT_TRUE(sent(stick_input({3, 1}, 12, {Stick{}, Stick{}})));
    EXPECT_FALSE(sent(stick_input({4, 1}, 14, {Stick{}}))) << "another entity";
    EXPECT_EQ(ref->entity, (ecs::Entity{4, 1}));
    EXPECT_TRUE(sent(stick_input({4, 1}, 15, {Stick{}})));
    proto::input late = stick_input({4, 1}, 16, {Stick{}});
    late.render_tick = 17;  // after its last tick: the server refuses it, and forgets
    EXPECT_FALSE(sent(late));
    EXPECT_FALSE(ref.has_value());
    EXPECT_FALSE(sent(stick_input({4, 1}, 18, {Stick{}})));
    EXPECT_TRUE(sent(stick_input({4, 1}, 19, {Stick{}})));
    EXPECT_FALSE(sent(stick_input({4, 1}, 0, {Stick{}}))) << "tick 0: full, and refused";
    EXPECT_FALSE(ref.has_value());
}

}  // namespace input_test
