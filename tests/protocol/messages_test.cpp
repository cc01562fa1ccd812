#include "ecsnet/protocol/messages.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "printers.hpp"
#include "test_types.hpp"

namespace messages_test {

namespace proto = ecsnet::protocol;
namespace wire = ecsnet::wire;
namespace demo = ecsnet::demo;
namespace ids = ecsnet::testing::ids;

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using bytes = std::vector<std::uint8_t>;
using ecsnet::ecs::Entity;
using ecsnet::testing::Mixed;
using ecsnet::testing::Spot;
using ecsnet::testing::Tag;

constexpr float nan = std::numeric_limits<float>::quiet_NaN();
constexpr float inf = std::numeric_limits<float>::infinity();

// The server's schema the commands are encoded and decoded against: the demo's types and the
// test-only ones.
const proto::schema& types() {
    static const proto::component_registry registry = ecsnet::testing::test_types();
    return registry.types();
}

proto::decoded_client decode_frame(std::span<const std::uint8_t> f) {
    return proto::decode_client_frame(f, types());
}

proto::decoded_client decode(const proto::client_message& message) {
    const proto::frame f = proto::encode(message, types());
    return decode_frame(*f);
}

// Encodes, decodes and returns what came back; fails the test when decoding failed.
proto::client_message round_trip(const proto::client_message& message) {
    const proto::decoded_client decoded = decode(message);
    if (!decoded.message) {
        ADD_FAILURE() << "decode failed: " << decoded.error.message;
        return proto::ping{};
    }
    return *decoded.message;
}

std::optional<proto::server_control> round_trip(const proto::server_control& message,
                                                std::string* why = nullptr) {
    const proto::frame f = proto::encode(message);
    const wire::ServerMessage* root = proto::verify_server_frame(*f);
    if (root == nullptr) {
        ADD_FAILURE() << "an encoded server frame does not verify";
        return std::nullopt;
    }
    return proto::decode_server_control(*root, why);
}

bytes finish(flatbuffers::FlatBufferBuilder& fbb, wire::ClientBody type,
             flatbuffers::Offset<void> body) {
    return *proto::finish_frame(fbb, wire::CreateClientMessage(fbb, type, body));
}

std::optional<proto::server_control> decode_server(flatbuffers::FlatBufferBuilder& fbb,
                                                   wire::ServerBody type,
                                                   flatbuffers::Offset<void> body,
                                                   std::string* why = nullptr) {
    const bytes f = *proto::finish_frame(fbb, wire::CreateServerMessage(fbb, type, body));
    const wire::ServerMessage* root = proto::verify_server_frame(f);
    if (root == nullptr) {
        ADD_FAILURE() << "the test built a server frame that does not verify";
        return std::nullopt;
    }
    return proto::decode_server_control(*root, why);
}

// A column of `type` with the given value bytes (none: no values vector).
flatbuffers::Offset<wire::Column> value_column(flatbuffers::FlatBufferBuilder& fbb,
                                               std::uint16_t type,
                                               const std::vector<std::uint8_t>& values,
                                               flatbuffers::Offset<wire::IndexSet> at = 0) {
    return wire::CreateColumn(fbb, type, at, fbb.CreateVector(values));
}

template <typename T>
std::vector<std::uint8_t> packed(const T& value) {
    const auto b = proto::pack(value);
    std::vector<std::uint8_t> out;
    for (const std::byte x : b) {
        out.push_back(std::to_integer<std::uint8_t>(x));
    }
    return out;
}

// A command rejected on its own: answered with that code, the connection stays open.
void expect_command_error(const proto::decoded_client& decoded, wire::ErrorCode code,
                          std::uint32_t request_id) {
    ASSERT_FALSE(decoded.message.has_value());
    EXPECT_EQ(decoded.error.code, code)
        << proto::to_string(decoded.error.code) << ": " << decoded.error.message;
    EXPECT_FALSE(decoded.error.fatal) << decoded.error.message;
    EXPECT_EQ(decoded.error.request_id, request_id);
    EXPECT_FALSE(decoded.error.message.empty());
}

void expect_fatal(const proto::decoded_client& decoded) {
    ASSERT_FALSE(decoded.message.has_value());
    EXPECT_TRUE(decoded.error.fatal) << decoded.error.message;
    EXPECT_EQ(decoded.error.code, wire::ErrorCode::Malformed);
    EXPECT_FALSE(decoded.error.request_id.has_value());
}

// Every type a client may write: the demo's and the test-only ones (Mixed is server-only).
proto::component_set all_client_components() {
    proto::component_set set;
    set.set(demo::Position{1.5F, -2.25F})
        .set(demo::Velocity{-0.5F, 100.0F})
        .set(demo::Health{-17})
        .set(demo::Lifetime{600})
        .set(demo::Name{"r\xC3\xB6ver \xF0\x9F\x9A\x80"})
        .set(Spot{4095.984375F, 0.015625F})
        .set(Tag{"sixteen bytes!!!"});
    return set;
}

// ---- component_set ------------------------------------------------------------------------

TEST(ComponentSet, HoldsOneValuePerNameInTheOrderSet) {
    proto::component_set set;
    EXPECT_TRUE(set.empty());
    EXPECT_EQ(set.get<demo::Velocity>(), std::nullopt);
    set.set(demo::Velocity{1.0F, 2.0F}).set(demo::Name{"x"});
    EXPECT_FALSE(set.empty());
    ASSERT_EQ(set.size(), 2U);
    EXPECT_EQ(set.values()[0].name, "velocity");
    EXPECT_EQ(set.values()[1].name, "name");
    EXPECT_EQ(set.values()[1].text, "x");

    // The same name again replaces the value, in place.
    set.set(demo::Velocity{3.0F, 4.0F});
    ASSERT_EQ(set.size(), 2U);
    EXPECT_EQ(set.values()[0].name, "velocity");
    EXPECT_EQ(set.get<demo::Velocity>(), (demo::Velocity{3.0F, 4.0F}));
    EXPECT_EQ(set.get<demo::Name>(), demo::Name{"x"});
    EXPECT_EQ(set.get<demo::Health>(), std::nullopt);
    ASSERT_NE(set.find("velocity"), nullptr);
    EXPECT_EQ(set.find("health"), nullptr);
}

TEST(ComponentSet, HoldsCanonicalBytes) {
    proto::component_set set;
    set.set(demo::Health{0x01020304}).set(Spot{1.0F, 2.0F});
    const proto::component_value* health = set.find("health");
    ASSERT_NE(health, nullptr);
    EXPECT_THAT(health->bytes,
                ElementsAre(std::byte{4}, std::byte{3}, std::byte{2}, std::byte{1}));
    // x = 64 steps, y = 128 steps, 19 bits each: 5 bytes.
    const proto::component_value* spot = set.find("spot");
    ASSERT_NE(spot, nullptr);
    EXPECT_THAT(spot->bytes, ElementsAre(std::byte{0x40}, std::byte{0x00}, std::byte{0x00},
                                         std::byte{0x04}, std::byte{0x00}));
    EXPECT_EQ(set.get<Spot>(), (Spot{1.0F, 2.0F}));
}

// ---- client round trips -------------------------------------------------------------------

TEST(ClientMessages, HelloRoundTrips) {
    const proto::hello h{7, "player \xE2\x98\x83", std::string(proto::max_token_bytes, 't')};
    EXPECT_EQ(round_trip(h), proto::client_message{h});
    const proto::hello minimal{};
    EXPECT_EQ(round_trip(minimal), proto::client_message{minimal});
    const proto::hello longest{1, std::string(proto::max_client_name_bytes, 'n'), "secret"};
    EXPECT_EQ(round_trip(longest), proto::client_message{longest});
}

TEST(ClientMessages, SpawnRoundTripsEveryClientComponent) {
    const proto::spawn s{0xC0FFEEU, all_client_components()};
    EXPECT_EQ(round_trip(s), proto::client_message{s});

    proto::spawn partial{3, {}};
    partial.components.set(demo::Position{0.0F, 0.0F}).set(demo::Name{""}).set(Tag{""});
    EXPECT_EQ(round_trip(partial), proto::client_message{partial});

    const proto::spawn empty{4, {}};
    EXPECT_EQ(round_trip(empty), proto::client_message{empty});
}

TEST(ClientMessages, DestroyRoundTrips) {
    const proto::destroy d{99, Entity{123456, 7}};
    EXPECT_EQ(round_trip(d), proto::client_message{d});
    const proto::destroy extreme{std::numeric_limits<std::uint32_t>::max(),
                                 Entity{0xFFFFFFFEU, 0xFFFFFFFFU}};
    EXPECT_EQ(round_trip(extreme), proto::client_message{extreme});
}

TEST(ClientMessages, SetComponentsRoundTrips) {
    const proto::set_components s{5, Entity{42, 3}, all_client_components()};
    EXPECT_EQ(round_trip(s), proto::client_message{s});
    proto::set_components one{6, Entity{0, 1}, {}};
    one.components.set(demo::Health{250});
    EXPECT_EQ(round_trip(one), proto::client_message{one});
}

TEST(ClientMessages, RemoveComponentsRoundTripsTheNames) {
    const proto::remove_components r{8, Entity{77, 2}, {"position", "lifetime", "name", "tag"}};
    EXPECT_EQ(round_trip(r), proto::client_message{r});
    const proto::remove_components one{9, Entity{1, 1}, {"velocity"}};
    EXPECT_EQ(round_trip(one), proto::client_message{one});
}

TEST(ClientMessages, PingRoundTrips) {
    const proto::ping p{0xFEDCBA9876543210ULL};
    EXPECT_EQ(round_trip(p), proto::client_message{p});
}

TEST(ClientMessages, ResyncRequestRoundTrips) {
    const proto::resync_request r{"checksum mismatch at tick 1234"};
    EXPECT_EQ(round_trip(r), proto::client_message{r});
    const proto::resync_request empty{};
    EXPECT_EQ(round_trip(empty), proto::client_message{empty});
}

TEST(ClientMessages, FocusRoundTrips) {
    for (const proto::focus f : {proto::focus{12.5F, -7.25F}, proto::focus{},
                                 proto::focus{std::numeric_limits<float>::max(),
                                              std::numeric_limits<float>::lowest()},
                                 proto::focus{std::numeric_limits<float>::denorm_min(), -0.0F}}) {
        EXPECT_EQ(round_trip(f), proto::client_message{f}) << f.x << ", " << f.y;
    }
}

// Names resolve to wire ids against the server's schema: what it lacks cannot be sent.
TEST(ClientMessages, EncodeRefusesWhatTheSchemaLacks) {
    proto::spawn s{1, {}};
    s.components.set(Spot{});
    EXPECT_THROW((void)proto::encode(s, ecsnet::testing::demo_types().types()),
                 std::invalid_argument);
    const proto::remove_components r{2, Entity{1, 1}, {"shield"}};
    EXPECT_THROW((void)proto::encode(r, types()), std::invalid_argument);
    // A value longer than the server's type.
    proto::set_components set{3, Entity{1, 1}, {}};
    set.components.set(proto::component_value{"health", std::vector<std::byte>(5), ""});
    EXPECT_THROW((void)proto::encode(set, types()), std::invalid_argument);
}

// ---- client rejections --------------------------------------------------------------------

TEST(ClientRejections, NonFiniteNumbersAreInvalidValues) {
    for (const float bad : {nan, inf, -inf}) {
        proto::spawn position{11, {}};
        position.components.set(demo::Position{bad, 0.0F});
        expect_command_error(decode(position), wire::ErrorCode::InvalidValue, 11);

        proto::spawn velocity{12, {}};
        velocity.components.set(demo::Position{1.0F, 1.0F}).set(demo::Velocity{0.0F, bad});
        expect_command_error(decode(velocity), wire::ErrorCode::InvalidValue, 12);

        proto::set_components set{13, Entity{1, 1}, {}};
        set.components.set(demo::Velocity{bad, bad});
        expect_command_error(decode(set), wire::ErrorCode::InvalidValue, 13);
    }
}

TEST(ClientRejections, OverlongStringIsAnInvalidValue) {
    proto::spawn s{21, {}};
    s.components.set(demo::Name{std::string(demo::max_name_bytes + 1, 'a')});
    expect_command_error(decode(s), wire::ErrorCode::InvalidValue, 21);

    proto::set_components set{22, Entity{3, 1}, {}};
    set.components.set(demo::Name{std::string(1000, 'a')});
    expect_command_error(decode(set), wire::ErrorCode::InvalidValue, 22);

    // A test-only string type with its own limit.
    proto::spawn tag{24, {}};
    tag.components.set(Tag{std::string(ecsnet::testing::max_tag_bytes + 1, 't')});
    const auto decoded = decode(tag);
    expect_command_error(decoded, wire::ErrorCode::InvalidValue, 24);
    EXPECT_THAT(decoded.error.message, HasSubstr("16"));
}

TEST(ClientRejections, InvalidUtf8NameIsAnInvalidValue) {
    for (const std::string bad : {"\xC0\xAF", "abc\xFF", "\xED\xA0\x80", "tail\xE2\x82"}) {
        proto::spawn s{23, {}};
        s.components.set(demo::Name{bad});
        expect_command_error(decode(s), wire::ErrorCode::InvalidValue, 23);
    }
}

TEST(ClientRejections, ServerOnlyTypesAreRefused) {
    proto::spawn s{31, {}};
    s.components.set(demo::Position{}).set(proto::Owner{1});
    const auto spawned = decode(s);
    expect_command_error(spawned, wire::ErrorCode::InvalidValue, 31);
    EXPECT_THAT(spawned.error.message, HasSubstr("owner"));

    proto::set_components set{32, Entity{5, 2}, {}};
    set.components.set(proto::Owner{2});
    expect_command_error(decode(set), wire::ErrorCode::InvalidValue, 32);

    const proto::remove_components remove{33, Entity{5, 2}, {"owner"}};
    expect_command_error(decode(remove), wire::ErrorCode::InvalidValue, 33);

    // A test-only type registered with writer::server.
    proto::set_components mixed{34, Entity{5, 2}, {}};
    mixed.components.set(Mixed{true, -1, 2, 3, 4.0});
    const auto refused = decode(mixed);
    expect_command_error(refused, wire::ErrorCode::InvalidValue, 34);
    EXPECT_THAT(refused.error.message, HasSubstr("mixed"));
    expect_command_error(decode(proto::remove_components{35, Entity{5, 2}, {"mixed"}}),
                         wire::ErrorCode::InvalidValue, 35);
}

TEST(ClientRejections, ValueColumnWithTwoValuesIsMalformed) {
    flatbuffers::FlatBufferBuilder fbb;
    std::vector<std::uint8_t> two = packed(demo::Position{1.0F, 2.0F});
    const auto second = packed(demo::Position{3.0F, 4.0F});
    two.insert(two.end(), second.begin(), second.end());
    const auto column = value_column(fbb, ids::position, two);
    const auto body = wire::CreateSpawn(fbb, 41, fbb.CreateVector(&column, 1));
    const auto decoded = decode_frame(finish(fbb, wire::ClientBody::Spawn, body.Union()));
    expect_command_error(decoded, wire::ErrorCode::Malformed, 41);
}

// Bit-packed values: a 5-byte Spot column with a byte missing or one too many.
TEST(ClientRejections, ValueColumnOfTheWrongSizeIsMalformed) {
    for (const std::size_t size : {std::size_t{0}, std::size_t{4}, std::size_t{6}}) {
        flatbuffers::FlatBufferBuilder fbb;
        const auto column = value_column(fbb, ids::spot, std::vector<std::uint8_t>(size, 1));
        const auto body = wire::CreateSpawn(fbb, 44, fbb.CreateVector(&column, 1));
        const auto decoded = decode_frame(finish(fbb, wire::ClientBody::Spawn, body.Union()));
        expect_command_error(decoded, wire::ErrorCode::Malformed, 44);
        EXPECT_THAT(decoded.error.message, HasSubstr("5 bytes")) << size;
    }
}

// Issue 24.9: the unused high bits of a bit-packed value's last byte (Spot: 2 x 19 bits in 5
// bytes, 2 spare) are accepted and ignored: the value is read from its fields' bits alone.
TEST(ClientMessages, NonZeroPaddingBitsOfAValueAreIgnored) {
    std::vector<std::uint8_t> value = packed(Spot{1.0F, 2.0F});
    ASSERT_EQ(value.size(), 5U);
    ASSERT_EQ(value[4] & 0xC0U, 0U) << "the canonical bytes pad with zero bits";
    value[4] |= 0xC0U;
    flatbuffers::FlatBufferBuilder fbb;
    const auto column = value_column(fbb, ids::spot, value);
    const auto body = wire::CreateSpawn(fbb, 46, fbb.CreateVector(&column, 1));
    const auto decoded = decode_frame(finish(fbb, wire::ClientBody::Spawn, body.Union()));
    ASSERT_TRUE(decoded.message.has_value()) << decoded.error.message;
    const auto* spawn = std::get_if<proto::spawn>(&*decoded.message);
    ASSERT_NE(spawn, nullptr);
    EXPECT_EQ(spawn->components.get<Spot>(), (Spot{1.0F, 2.0F}));
    // What the server stores and replicates is re-packed from the fields: zero padding again.
    EXPECT_EQ(packed(spawn->components.get<Spot>().value())[4] & 0xC0U, 0U);
}

TEST(ClientRejections, EmptyValueColumnIsMalformed) {
    flatbuffers::FlatBufferBuilder fbb;
    const auto names = fbb.CreateVectorOfStrings(std::vector<std::string>{});
    const auto column = wire::CreateColumn(fbb, ids::name, 0, 0, names);
    const wire::EntityRef ref{1, 1};
    const auto body = wire::CreateSetComponent(fbb, 42, &ref, fbb.CreateVector(&column, 1));
    const auto decoded = decode_frame(finish(fbb, wire::ClientBody::SetComponent, body.Union()));
    expect_command_error(decoded, wire::ErrorCode::Malformed, 42);

    // A fixed-size column with no values vector at all.
    flatbuffers::FlatBufferBuilder none;
    const auto bare = wire::CreateColumn(none, ids::health);
    const auto spawn = wire::CreateSpawn(none, 45, none.CreateVector(&bare, 1));
    expect_command_error(decode_frame(finish(none, wire::ClientBody::Spawn, spawn.Union())),
                         wire::ErrorCode::Malformed, 45);
}

TEST(ClientRejections, EntitySetInASpawnIsMalformed) {
    flatbuffers::FlatBufferBuilder fbb;
    const std::uint32_t index = 3;
    const auto at = wire::CreateIndexSet(fbb, 0, fbb.CreateVector(&index, 1));
    const auto column = value_column(fbb, ids::health, packed(demo::Health{10}), at);
    const auto body = wire::CreateSpawn(fbb, 43, fbb.CreateVector(&column, 1));
    const auto decoded = decode_frame(finish(fbb, wire::ClientBody::Spawn, body.Union()));
    expect_command_error(decoded, wire::ErrorCode::Malformed, 43);
    EXPECT_THAT(decoded.error.message, HasSubstr("health"));
    EXPECT_THAT(decoded.error.message, HasSubstr("names entities"));
}

TEST(ClientRejections, UnknownOrRepeatedColumnTypeIsMalformed) {
    {
        flatbuffers::FlatBufferBuilder fbb;
        const auto column = value_column(fbb, 9, {1, 2, 3, 4});
        const auto body = wire::CreateSpawn(fbb, 46, fbb.CreateVector(&column, 1));
        const auto decoded = decode_frame(finish(fbb, wire::ClientBody::Spawn, body.Union()));
        expect_command_error(decoded, wire::ErrorCode::Malformed, 46);
        EXPECT_THAT(decoded.error.message, HasSubstr("unknown component type 9"));
    }
    {
        flatbuffers::FlatBufferBuilder fbb;
        const std::vector<flatbuffers::Offset<wire::Column>> columns{
            value_column(fbb, ids::health, packed(demo::Health{1})),
            value_column(fbb, ids::health, packed(demo::Health{2}))};
        const auto body = wire::CreateSpawn(fbb, 47, fbb.CreateVector(columns));
        const auto decoded = decode_frame(finish(fbb, wire::ClientBody::Spawn, body.Union()));
        expect_command_error(decoded, wire::ErrorCode::Malformed, 47);
        EXPECT_THAT(decoded.error.message, HasSubstr("twice"));
    }
}

TEST(ClientRejections, SetComponentWithoutComponentsIsMalformed) {
    const proto::set_components empty{51, Entity{2, 1}, {}};
    expect_command_error(decode(empty), wire::ErrorCode::Malformed, 51);

    // No columns vector at all.
    flatbuffers::FlatBufferBuilder fbb;
    const wire::EntityRef ref{2, 1};
    const auto body = wire::CreateSetComponent(fbb, 52, &ref, 0);
    expect_command_error(decode_frame(finish(fbb, wire::ClientBody::SetComponent, body.Union())),
                         wire::ErrorCode::Malformed, 52);
}

TEST(ClientRejections, RemoveComponentNamingNothingIsMalformed) {
    const proto::remove_components nothing{61, Entity{2, 1}, {}};
    expect_command_error(decode(nothing), wire::ErrorCode::Malformed, 61);

    // No types vector at all.
    flatbuffers::FlatBufferBuilder fbb;
    const wire::EntityRef ref{2, 1};
    const auto body = wire::CreateRemoveComponent(fbb, 62, &ref, 0);
    expect_command_error(
        decode_frame(finish(fbb, wire::ClientBody::RemoveComponent, body.Union())),
        wire::ErrorCode::Malformed, 62);
}

// RemoveComponent names types by wire id: an id past the schema, or one named twice, is
// refused (docs/PROTOCOL.md, "Columns").
TEST(ClientRejections, RemoveComponentWithUnknownOrRepeatedTypeIsMalformed) {
    for (const std::vector<std::uint16_t>& bad :
         {std::vector<std::uint16_t>{ids::position, 9}, std::vector<std::uint16_t>{65535},
          std::vector<std::uint16_t>{ids::tag, ids::velocity, ids::tag}}) {
        flatbuffers::FlatBufferBuilder fbb;
        const wire::EntityRef ref{4, 1};
        const auto body = wire::CreateRemoveComponent(fbb, 63, &ref, fbb.CreateVector(bad));
        expect_command_error(
            decode_frame(finish(fbb, wire::ClientBody::RemoveComponent, body.Union())),
            wire::ErrorCode::Malformed, 63);
    }
}

TEST(ClientMessages, RemoveComponentNamesTypesByWireId) {
    flatbuffers::FlatBufferBuilder fbb;
    const std::vector<std::uint16_t> wire_ids{ids::velocity, ids::position, ids::tag};
    const wire::EntityRef ref{4, 2};
    const auto body = wire::CreateRemoveComponent(fbb, 64, &ref, fbb.CreateVector(wire_ids));
    const auto decoded =
        decode_frame(finish(fbb, wire::ClientBody::RemoveComponent, body.Union()));
    ASSERT_TRUE(decoded.message.has_value()) << decoded.error.message;
    const auto& remove = std::get<proto::remove_components>(*decoded.message);
    EXPECT_EQ(remove.entity, (Entity{4, 2}));
    EXPECT_THAT(remove.types, ElementsAre("velocity", "position", "tag"));
}

// A Spawn may carry no column at all: the entity then holds only its Owner.
TEST(ClientMessages, SpawnWithoutComponentsIsAccepted) {
    flatbuffers::FlatBufferBuilder fbb;
    const auto body = wire::CreateSpawn(fbb, 65, 0);
    const auto decoded = decode_frame(finish(fbb, wire::ClientBody::Spawn, body.Union()));
    ASSERT_TRUE(decoded.message.has_value()) << decoded.error.message;
    EXPECT_TRUE(std::get<proto::spawn>(*decoded.message).components.empty());
}

// The same over-long string is a command error in a command and fatal in Hello.
TEST(ClientRejections, OverlongStringIsACommandErrorInCommandsButFatalInHello) {
    const std::string long_name(demo::max_name_bytes + 1, 'x');
    proto::spawn s{66, {}};
    s.components.set(demo::Name{long_name});
    expect_command_error(decode(s), wire::ErrorCode::InvalidValue, 66);
    expect_fatal(decode(proto::hello{1, long_name, ""}));
    EXPECT_EQ(demo::max_name_bytes, proto::max_client_name_bytes);
}

TEST(ClientRejections, MissingEntityOrVersionZeroIsMalformed) {
    expect_command_error(decode(proto::destroy{71, Entity{5, 0}}), wire::ErrorCode::Malformed, 71);

    flatbuffers::FlatBufferBuilder fbb;
    const auto body = wire::CreateDestroy(fbb, 72, nullptr);
    expect_command_error(decode_frame(finish(fbb, wire::ClientBody::Destroy, body.Union())),
                         wire::ErrorCode::Malformed, 72);

    proto::set_components set{73, Entity{5, 0}, {}};
    set.components.set(demo::Health{1});
    expect_command_error(decode(set), wire::ErrorCode::Malformed, 73);

    const proto::remove_components remove{74, Entity{5, 0}, {"position"}};
    expect_command_error(decode(remove), wire::ErrorCode::Malformed, 74);
}

TEST(ClientRejections, BadHelloIsFatal) {
    expect_fatal(decode(proto::hello{1, std::string(proto::max_client_name_bytes + 1, 'n'), ""}));
    expect_fatal(decode(proto::hello{1, "bad\xC3", ""}));
    expect_fatal(decode(proto::hello{1, "ok", std::string(proto::max_token_bytes + 1, 't')}));
}

// Issue 24.9: a resume key is absent or exactly 32 bytes; any other length, an empty vector
// included, is fatal (Disconnect with this reason), whatever else the Hello says.
TEST(ClientRejections, AResumeKeyOfTheWrongLengthIsFatal) {
    for (const std::size_t size : {std::size_t{1}, std::size_t{31}, std::size_t{33}, std::size_t{64}}) {
        const auto decoded =
            decode(proto::hello{proto::protocol_version, "ok", "", std::vector<std::uint8_t>(size, 7)});
        expect_fatal(decoded);
        EXPECT_EQ(decoded.error.message, "resume key must be 32 bytes, not " + std::to_string(size));
    }
    // Present but empty: not the same as absent.
    flatbuffers::FlatBufferBuilder fbb;
    const auto key = fbb.CreateVector(std::vector<std::uint8_t>{});
    const auto body = wire::CreateHello(fbb, proto::protocol_version, 0, 0, key);
    const auto decoded = decode_frame(finish(fbb, wire::ClientBody::Hello, body.Union()));
    expect_fatal(decoded);
    EXPECT_EQ(decoded.error.message, "resume key must be 32 bytes, not 0");
    // Exactly 32: decoded (an unknown key is the server's business, not an error).
    const auto ok = decode(proto::hello{proto::protocol_version, "ok", "",
                                        std::vector<std::uint8_t>(proto::resume_key_bytes, 7)});
    ASSERT_TRUE(ok.message.has_value()) << ok.error.message;
}

TEST(ClientRejections, BadResyncReasonIsFatal) {
    expect_fatal(decode(proto::resync_request{std::string(proto::max_reason_bytes + 1, 'r')}));
    expect_fatal(decode(proto::resync_request{"\xF8\x88\x80\x80\x80"}));
}

// A focus is not a command (no request id to answer): a bad one closes the connection.
TEST(ClientRejections, NonFiniteFocusIsFatal) {
    for (const float bad : {nan, inf, -inf}) {
        for (const proto::focus f : {proto::focus{bad, 0.0F}, proto::focus{0.0F, bad}}) {
            const auto decoded = decode(f);
            expect_fatal(decoded);
            EXPECT_THAT(decoded.error.message, HasSubstr("finite"));
        }
    }
}

TEST(ClientRejections, UnknownUnionTagIsFatal) {
    flatbuffers::FlatBufferBuilder fbb;
    const auto body = wire::CreatePing(fbb, 1);
    const auto start = fbb.StartTable();
    fbb.AddElement<std::uint8_t>(wire::ClientMessage::VT_BODY_TYPE, 200, 0);
    fbb.AddOffset(wire::ClientMessage::VT_BODY, body.Union());
    const flatbuffers::Offset<wire::ClientMessage> root{fbb.EndTable(start)};
    fbb.FinishSizePrefixed(root, wire::ClientMessageIdentifier());
    const bytes f(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
    ASSERT_NE(proto::verify_client_frame(f), nullptr) << "the verifier lets it through";
    const auto decoded = decode_frame(f);
    expect_fatal(decoded);
    EXPECT_THAT(decoded.error.message, HasSubstr("200"));
}

TEST(ClientRejections, MessageWithoutBodyIsFatal) {
    flatbuffers::FlatBufferBuilder fbb;
    expect_fatal(decode_frame(finish(fbb, wire::ClientBody::NONE, 0)));
}

TEST(ClientRejections, UnverifiableFrameIsFatal) {
    const proto::frame good = proto::encode(proto::ping{1}, types());
    bytes truncated(good->begin(), good->end() - 1);
    expect_fatal(decode_frame(truncated));
    expect_fatal(decode_frame({}));
    // A server frame is not a client frame.
    expect_fatal(decode_frame(*proto::encode(proto::pong{1, 2})));
}

// ---- server round trips -------------------------------------------------------------------

TEST(ServerMessages, WelcomeRoundTrips) {
    const proto::welcome w{42, proto::protocol_version, 29.97F, 0x1234567890ULL, 60};
    EXPECT_EQ(round_trip(w), proto::server_control{w});
    // With the schema: every type, fields, quantization and string limits come back equal.
    const proto::welcome described{7, proto::protocol_version, 30.0F, 5, 60, {}, "", types()};
    EXPECT_EQ(round_trip(described), proto::server_control{described});
}

TEST(ServerMessages, WelcomeRoundTripsInterestRadiusAndBudget) {
    proto::welcome w{3, proto::protocol_version, 30.0F, 9, 30, {}, "", types()};
    w.interest_radius = 256.5F;
    w.client_budget = 65'536;
    EXPECT_EQ(round_trip(w), proto::server_control{w});
    w.interest_radius = 0.0F;  // the whole world
    w.client_budget = std::numeric_limits<std::uint32_t>::max();
    EXPECT_EQ(round_trip(w), proto::server_control{w});
    // The defaults (a server without interest management) survive as they are.
    const auto plain = round_trip(proto::welcome{4, proto::protocol_version, 30.0F, 9, 30});
    ASSERT_TRUE(plain.has_value());
    const auto& decoded = std::get<proto::welcome>(*plain);
    EXPECT_EQ(decoded.interest_radius, 0.0F);
    EXPECT_EQ(decoded.client_budget, 0U);
}

TEST(ServerRejections, NegativeOrNonFiniteInterestRadiusIsRefused) {
    for (const float radius : {-1.0F, -0.5F, nan, inf, -inf}) {
        proto::welcome w{1, proto::protocol_version, 30.0F, 0, 10};
        w.interest_radius = radius;
        std::string why;
        EXPECT_FALSE(round_trip(w, &why).has_value()) << radius;
        EXPECT_THAT(why, HasSubstr("interest radius")) << radius;
    }
}

TEST(ServerMessages, CommandResultRoundTrips) {
    const proto::command_result ok{17, true, wire::ErrorCode::None, "", Entity{900, 4}};
    EXPECT_EQ(round_trip(ok), proto::server_control{ok});

    const proto::command_result error{18, false, wire::ErrorCode::StaleVersion,
                                      "entity 900:3 is stale", Entity{900, 3}};
    EXPECT_EQ(round_trip(error), proto::server_control{error});

    const proto::command_result no_entity{19, false, wire::ErrorCode::NotJoined, "say hello", {}};
    EXPECT_EQ(round_trip(no_entity), proto::server_control{no_entity});
}

TEST(ServerMessages, PongRoundTrips) {
    const proto::pong p{0xFEDCBA9876543210ULL, 77};
    EXPECT_EQ(round_trip(p), proto::server_control{p});
}

TEST(ServerMessages, ChecksumReportRoundTrips) {
    const proto::checksum_report c{1000, 0xDEADBEEFCAFEBABEULL, 12345};
    EXPECT_EQ(round_trip(c), proto::server_control{c});
    const proto::checksum_report slice{1001, 42, 7, 65'536, 131'072};
    EXPECT_EQ(round_trip(slice), proto::server_control{slice});
}

TEST(ServerMessages, ChecksumReportRoundTripsTheExcludedIndices) {
    proto::checksum_report c{1002, 0x0123456789ABCDEFULL, 40};
    c.excluded = {3, 17, 4'000'000, std::numeric_limits<std::uint32_t>::max() - 1};
    EXPECT_EQ(round_trip(c), proto::server_control{c});
    proto::checksum_report slice{1003, 7, 2, 100, 200};
    slice.excluded = {150};
    EXPECT_EQ(round_trip(slice), proto::server_control{slice});
    // An empty list is the same as none: nothing excluded.
    const auto none = round_trip(proto::checksum_report{1004, 8, 1});
    ASSERT_TRUE(none.has_value());
    EXPECT_TRUE(std::get<proto::checksum_report>(*none).excluded.empty());
}

TEST(ServerRejections, ChecksumOfAnEmptyIndexRangeIsRefused) {
    for (const auto& [first, end] : {std::pair{5U, 5U}, std::pair{9U, 2U}}) {
        std::string why;
        EXPECT_FALSE(round_trip(proto::checksum_report{1, 2, 3, first, end}, &why).has_value());
        EXPECT_THAT(why, HasSubstr("empty index range"));
    }
}

TEST(ServerMessages, DisconnectRoundTrips) {
    const proto::disconnect d{"server shutting down"};
    EXPECT_EQ(round_trip(d), proto::server_control{d});
    const proto::disconnect empty{};
    EXPECT_EQ(round_trip(empty), proto::server_control{empty});
}

// ---- server rejections --------------------------------------------------------------------

// Codes are appended as the server learns new refusals (GameFailed came in issue 24): a code
// this client does not know is a failed command, never a malformed frame.
TEST(ServerMessages, AnErrorCodeNewerThanTheClientIsKeptAsAFailedCommand) {
    flatbuffers::FlatBufferBuilder fbb;
    const auto body =
        wire::CreateCommandResult(fbb, 1, false, static_cast<wire::ErrorCode>(999), 0, nullptr);
    std::string why;
    const auto decoded = decode_server(fbb, wire::ServerBody::CommandResult, body.Union(), &why);
    ASSERT_TRUE(decoded) << why;
    const auto& result = std::get<proto::command_result>(*decoded);
    EXPECT_FALSE(result.ok);
    EXPECT_EQ(static_cast<unsigned>(result.code), 999U);
    EXPECT_STREQ(proto::to_string(result.code), "unknown error");
    EXPECT_STREQ(proto::to_string(wire::ErrorCode::GameFailed), "GameFailed");
}

TEST(ServerRejections, BadTickRateIsRefused) {
    for (const float rate : {nan, inf, -inf, 0.0F, -30.0F}) {
        const proto::welcome w{1, proto::protocol_version, rate, 0, 10};
        std::string why;
        EXPECT_FALSE(round_trip(w, &why).has_value()) << rate;
        EXPECT_THAT(why, HasSubstr("tick rate"));
    }
}

TEST(ServerRejections, BadStringsAreRefused) {
    EXPECT_FALSE(round_trip(proto::disconnect{std::string(proto::max_reason_bytes + 1, 'r')}));
    EXPECT_FALSE(round_trip(proto::disconnect{"\xC1\xBF"}));
    EXPECT_FALSE(round_trip(
        proto::command_result{1, false, wire::ErrorCode::Malformed, std::string(4097, 'm'), {}}));
}

TEST(ServerRejections, SnapshotDeltaAndNoneAreNotControlMessages) {
    {
        flatbuffers::FlatBufferBuilder fbb;
        const auto body = wire::CreateSnapshot(fbb, 1, 0, 1, 0);
        EXPECT_FALSE(decode_server(fbb, wire::ServerBody::Snapshot, body.Union()));
    }
    {
        flatbuffers::FlatBufferBuilder fbb;
        const auto body = wire::CreateDelta(fbb, 1);
        EXPECT_FALSE(decode_server(fbb, wire::ServerBody::Delta, body.Union()));
    }
    {
        flatbuffers::FlatBufferBuilder fbb;
        EXPECT_FALSE(decode_server(fbb, wire::ServerBody::NONE, 0));
    }
}

TEST(ErrorCodes, ToStringNamesKnownCodes) {
    EXPECT_STREQ(proto::to_string(wire::ErrorCode::StaleVersion), "StaleVersion");
    EXPECT_STREQ(proto::to_string(wire::ErrorCode::None), "None");
    EXPECT_STREQ(proto::to_string(static_cast<wire::ErrorCode>(999)), "unknown error");
}

// ---- UTF-8 --------------------------------------------------------------------------------

TEST(ValidUtf8, AcceptsWellFormedText) {
    EXPECT_TRUE(proto::valid_utf8(""));
    EXPECT_TRUE(proto::valid_utf8("plain ascii"));
    EXPECT_TRUE(proto::valid_utf8(std::string{"nul\0ok", 6}));
    EXPECT_TRUE(proto::valid_utf8("\xC2\x80"));           // U+0080, smallest 2-byte
    EXPECT_TRUE(proto::valid_utf8("\xC3\xA9t\xC3\xA9"));  // été
    EXPECT_TRUE(proto::valid_utf8("\xE0\xA0\x80"));       // U+0800, smallest 3-byte
    EXPECT_TRUE(proto::valid_utf8("\xED\x9F\xBF"));       // U+D7FF, just below the surrogates
    EXPECT_TRUE(proto::valid_utf8("\xEE\x80\x80"));       // U+E000, just above them
    EXPECT_TRUE(proto::valid_utf8("\xEF\xBF\xBF"));       // U+FFFF
    EXPECT_TRUE(proto::valid_utf8("\xF0\x9F\x98\x80"));   // U+1F600 emoji, 4 bytes
    EXPECT_TRUE(proto::valid_utf8("\xF4\x8F\xBF\xBF"));   // U+10FFFF, the largest
}

TEST(ValidUtf8, RejectsOverlongForms) {
    EXPECT_FALSE(proto::valid_utf8("\xC0\x80"));          // NUL in 2 bytes
    EXPECT_FALSE(proto::valid_utf8("\xC1\xBF"));          // U+007F in 2 bytes
    EXPECT_FALSE(proto::valid_utf8("\xE0\x80\xAF"));      // '/' in 3 bytes
    EXPECT_FALSE(proto::valid_utf8("\xE0\x9F\xBF"));      // U+07FF in 3 bytes
    EXPECT_FALSE(proto::valid_utf8("\xF0\x8F\xBF\xBF"));  // U+FFFF in 4 bytes
}

TEST(ValidUtf8, RejectsSurrogates) {
    EXPECT_FALSE(proto::valid_utf8("\xED\xA0\x80"));              // U+D800
    EXPECT_FALSE(proto::valid_utf8("\xED\xBF\xBF"));              // U+DFFF
    EXPECT_FALSE(proto::valid_utf8("\xED\xA0\xBD\xED\xB8\x80"));  // CESU-8 pair
}

TEST(ValidUtf8, RejectsTruncatedSequences) {
    EXPECT_FALSE(proto::valid_utf8("\xC3"));
    EXPECT_FALSE(proto::valid_utf8("ab\xE2\x82"));
    EXPECT_FALSE(proto::valid_utf8("\xF0\x9F\x98"));
    EXPECT_FALSE(proto::valid_utf8("\xF0\x9F\x98 "));  // a non-continuation byte in its place
    EXPECT_FALSE(proto::valid_utf8("\xE2\x82z"));
}

TEST(ValidUtf8, RejectsCodePointsPastTheLast) {
    EXPECT_FALSE(proto::valid_utf8("\xF4\x90\x80\x80"));  // U+110000
    EXPECT_FALSE(proto::valid_utf8("\xF7\xBF\xBF\xBF"));
    EXPECT_FALSE(proto::valid_utf8("\xF8\x88\x80\x80\x80"));  // old 5-byte form
    EXPECT_FALSE(proto::valid_utf8("\xFE"));
    EXPECT_FALSE(proto::valid_utf8("\xFF"));
}

TEST(ValidUtf8, RejectsStrayContinuationBytes) {
    EXPECT_FALSE(proto::valid_utf8("\x80"));
    EXPECT_FALSE(
        proto::valid_utf8("a\xBF"
                          "b"));
    EXPECT_FALSE(proto::valid_utf8("\xC3\xA9\xA9"));
}

}  // namespace messages_test
