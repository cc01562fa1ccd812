// Player input over real sockets (docs/PROTOCOL.md, "Input"): a game with an input type, a
// system that records what it sees each tick, and clients that send Input frames. Every wait is
// bounded in time; nothing here measures speed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ecsnet/client/connection.hpp"
#include "ecsnet/demo/components.hpp"
#include "ecsnet/protocol/registry.hpp"
#include "input_server_test_generated.h"
#include "client_polling.hpp"
#include "test_server.hpp"
#include "test_support.hpp"

namespace ecsnet::test {

// A ship's controls; valid() refuses reverse thrust.
struct Steer {
    float turn{};
    float thrust{};
    [[nodiscard]] bool valid() const noexcept { return thrust >= 0.0F; }
    friend bool operator==(const Steer&, const Steer&) = default;
};

}  // namespace ecsnet::test

template <>
struct ecsnet::protocol::replicated<ecsnet::test::Steer>
    : replicate<ecsnet::input_test::wire::Steer, "steer",
                replicate_options{.quantized = {.min = -1.0, .max = 1.0, .step = 1.0 / 64.0},
                                  .input = true}> {};

namespace input_server_test {

namespace protocol = ecsnet::protocol;
using ecsnet::client::connect_options;
using ecsnet::client::connection;
using ecsnet::ecs::Entity;
using ecsnet::server::server_config;
using ecsnet::test::join;
using ecsnet::test::raw_socket;
using ecsnet::test::Steer;
using ecsnet::test::test_server;
using ecsnet::wire::ErrorCode;
using testing::HasSubstr;
using namespace std::chrono_literals;

// What the game's system saw, tick by tick: each entity's Steer when the systems ran.
struct steering_log {
    std::map<std::uint64_t, std::map<Entity, Steer>> seen;
};

ecsnet::server::game steering_game(std::shared_ptr<steering_log> log) {
    ecsnet::server::game g;
    g.name = "steering";
    g.register_components = [](protocol::component_registry& types) {
        types.add<ecsnet::demo::Position>();
        types.add<Steer>();
    };
    g.setup = [log](ecsnet::server::server& s) {
        // The game's own rule, as a listener: full left turn is "broken" and throws.
        const auto check = [](ecsnet::ecs::World& w, Entity e) {
            if (w.get<Steer>(e).turn <= -1.0F) {
                throw std::runtime_error("the rudder broke");
            }
        };
        (void)s.world().on_construct<Steer>().connect(check);
        (void)s.world().on_update<Steer>().connect(check);
        s.scheduler().add("record", ecsnet::ecs::component_access{}.reads<Steer>(),
                          [log, &s](ecsnet::ecs::SystemContext& ctx) {
                              ctx.world.view<const Steer>().each([&](Entity e, const Steer& steer) {
                                  log->seen[s.tick()][e] = steer;
                              });
                          });
    };
    return g;
}

server_config input_config() {
    server_config c = ecsnet::test::local_server_config(30.0);
    c.reconnect_grace = 0ms;
    c.input_buffer_ticks = 16;
    return c;
}

Entity spawn_ship(connection& c) {
    const std::uint32_t id = c.next_request_id();
    const protocol::command_result r = c.request(
        protocol::spawn{id, protocol::component_set{}.set(ecsnet::demo::Position{1.0F, 2.0F})}, id);
    EXPECT_TRUE(r.ok) << r.message;
    return r.entity;
}

protocol::input steer(Entity e, std::uint64_t first_tick, std::vector<Steer> values) {
    protocol::input in{e, first_tick, {}};
    for (const Steer& s : values) {
        in.ticks.push_back(protocol::component_set{}.set(s));
    }
    return in;
}

class InputServer : public testing::Test {
protected:
    std::shared_ptr<steering_log> log_ = std::make_shared<steering_log>();
    test_server server_{input_config(), steering_game(log_)};

    std::map<std::uint64_t, std::map<Entity, Steer>> seen() {
        return server_.call([log = log_](ecsnet::server::server&) { return log->seen; });
    }
    // Waits until the server acknowledged input up to `tick` for this client.
    static bool acked(connection& c, std::uint64_t tick) {
        return c.poll_until(
            [&] { return c.last_input_ack() && c.last_input_ack()->applied_tick >= tick; }, 5s);
    }
};

TEST_F(InputServer, EachInputIsAppliedAtItsTickBeforeTheSystemsAndThenRepeats) {
    auto alice = join(server_.port(), "alice");
    const Entity ship = spawn_ship(*alice);
    const std::uint64_t now = server_.tick();
    const std::uint64_t first = now + 8;
    alice->send(steer(ship, first, {Steer{0.5F, 1.0F}, Steer{-0.5F, 0.25F}, Steer{0.0F, 0.0F}}));
    ASSERT_TRUE(acked(*alice, first + 2));
    ASSERT_TRUE(alice->poll_until([&] { return alice->mirror().tick() >= first + 4; }, 5s));

    const auto log = seen();
    ASSERT_TRUE(log.contains(first) && log.contains(first + 1) && log.contains(first + 2));
    EXPECT_EQ(log.at(first).at(ship), (Steer{0.5F, 1.0F}));
    EXPECT_EQ(log.at(first + 1).at(ship), (Steer{-0.5F, 0.25F}));
    EXPECT_EQ(log.at(first + 2).at(ship), (Steer{0.0F, 0.0F}));
    // No input for first + 3: the last one stays (and is counted as repeated).
    EXPECT_EQ(log.at(first + 3).at(ship), (Steer{0.0F, 0.0F}));
    EXPECT_FALSE(log.contains(first - 1) && log.at(first - 1).contains(ship));

    const auto ack = *alice->last_input_ack();
    EXPECT_EQ(ack.applied_tick, first + 2);
    EXPECT_GE(ack.repeated, 1U);
    EXPECT_EQ(ack.late, 0U);
    const auto stats = server_.stats();
    EXPECT_EQ(stats.inputs_applied, 3U);
    EXPECT_GE(stats.inputs_repeated, 1U);
    EXPECT_FALSE(alice->last_input_rejected().has_value());
}

TEST_F(InputServer, EveryTickEndsWithAnAckAndNoInputCostsACommandResult) {
    raw_socket raw{server_.port()};
    // Version 5: its acks are FlatBuffers frames, which this reader reads (6's are compact).
    raw.send(protocol::hello{5, "raw", ""});
    std::vector<std::uint8_t> bytes;
    std::optional<protocol::schema> types;
    std::optional<Entity> ship;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    std::uint64_t last_delta = 0;
    std::uint64_t first = 0;
    std::size_t acks = 0;
    std::size_t results = 0;
    while (std::chrono::steady_clock::now() < deadline && acks < 20) {
        if (raw.read_frame(bytes, 1s) != raw_socket::read_status::frame) {
            continue;
        }
        const auto* message = protocol::verify_server_frame(bytes);
        ASSERT_NE(message, nullptr);
        switch (message->body_type()) {
            case ecsnet::wire::ServerBody::Welcome: {
                types = std::get<protocol::welcome>(*protocol::decode_server_control(*message))
                            .components;
                raw.send(protocol::spawn{1, {}}, *types);
                break;
            }
            case ecsnet::wire::ServerBody::CommandResult: {
                ++results;
                const auto r = std::get<protocol::command_result>(
                    *protocol::decode_server_control(*message));
                ASSERT_TRUE(r.ok) << r.message;
                ship = r.entity;
                first = last_delta + 3;
                for (std::uint64_t t = first; t < first + 10; ++t) {
                    raw.send(steer(*ship, t, {Steer{0.25F, 0.5F}}), *types);
                }
                break;
            }
            case ecsnet::wire::ServerBody::Delta:
                last_delta = message->body_as_Delta()->tick();
                break;
            case ecsnet::wire::ServerBody::InputAck: {
                const auto ack =
                    std::get<protocol::input_ack>(*protocol::decode_server_control(*message));
                EXPECT_EQ(ack.tick, last_delta) << "an InputAck ends its tick's frames";
                if (ack.tick >= first && ack.tick < first + 10) {
                    EXPECT_EQ(ack.applied_tick, ack.tick);
                }
                ++acks;
                break;
            }
            default:
                break;
        }
    }
    EXPECT_EQ(acks, 20U);
    EXPECT_EQ(results, 1U) << "only the Spawn is answered";
}

TEST_F(InputServer, LateInputIsDroppedAndCountedAndTheLeadTurnsNegative) {
    auto alice = join(server_.port(), "alice");
    const Entity ship = spawn_ship(*alice);
    ASSERT_TRUE(alice->poll_until([&] { return alice->mirror().tick() >= 10; }, 5s));
    const std::uint64_t now = server_.tick();
    alice->send(steer(ship, now - 3, {Steer{1.0F, 1.0F}, Steer{1.0F, 1.0F}}));
    ASSERT_TRUE(alice->poll_until(
        [&] { return alice->last_input_ack() && alice->last_input_ack()->late == 2; }, 5s));
    EXPECT_LT(alice->last_input_ack()->lead, 0);
    EXPECT_EQ(alice->last_input_ack()->applied_tick, 0U);
    EXPECT_EQ(server_.stats().inputs_late, 2U);
    for (const auto& [tick, entities] : seen()) {
        EXPECT_FALSE(entities.contains(ship)) << "tick " << tick;
    }
}

TEST_F(InputServer, InputForAnotherClientsEntityIsRefusedAndChangesNothing) {
    auto alice = join(server_.port(), "alice");
    auto bob = join(server_.port(), "bob");
    const Entity ship = spawn_ship(*alice);
    bob->send(steer(ship, server_.tick() + 5, {Steer{1.0F, 1.0F}}));
    ASSERT_TRUE(bob->poll_until([&] { return bob->last_input_rejected().has_value(); }, 5s));
    EXPECT_EQ(bob->last_input_rejected()->code, ErrorCode::NotOwner);
    EXPECT_THAT(bob->last_input_rejected()->message, HasSubstr("belongs to another client"));
    EXPECT_TRUE(bob->is_open());
    bob->poll_for(300ms);
    for (const auto& [tick, entities] : seen()) {
        EXPECT_FALSE(entities.contains(ship)) << "tick " << tick;
    }
    EXPECT_EQ(server_.stats().inputs_refused, 1U);
}

TEST_F(InputServer, UnknownAndStaleEntitiesAreRefused) {
    auto alice = join(server_.port(), "alice");
    const Entity ship = spawn_ship(*alice);
    alice->send(steer(Entity{ship.index() + 100, 1}, server_.tick() + 5, {Steer{}}));
    ASSERT_TRUE(alice->poll_until([&] { return alice->last_input_rejected().has_value(); }, 5s));
    EXPECT_EQ(alice->last_input_rejected()->code, ErrorCode::UnknownEntity);
    // One answer a second: the next refusal comes after it, counting both.
    alice->send(steer(Entity{ship.index(), ship.version() + 1}, server_.tick() + 5, {Steer{}}));
    ASSERT_TRUE(alice->poll_until(
        [&] { return alice->last_input_rejected()->code == ErrorCode::StaleVersion; }, 5s));
    EXPECT_EQ(alice->last_input_rejected()->refused, 1U);
}

TEST_F(InputServer, InputStampedBeyondTheBufferIsRefused) {
    auto alice = join(server_.port(), "alice");
    const Entity ship = spawn_ship(*alice);
    alice->send(steer(ship, server_.tick() + 1000, {Steer{0.5F, 0.5F}}));
    ASSERT_TRUE(alice->poll_until([&] { return alice->last_input_rejected().has_value(); }, 5s));
    EXPECT_EQ(alice->last_input_rejected()->code, ErrorCode::InputTooEarly);
    EXPECT_THAT(alice->last_input_rejected()->message, HasSubstr("more than 16 ticks ahead"));
}

TEST_F(InputServer, AValueTheGameRefusesIsRefused) {
    auto alice = join(server_.port(), "alice");
    const Entity ship = spawn_ship(*alice);
    alice->send(steer(ship, server_.tick() + 5, {Steer{0.0F, -0.5F}}));
    ASSERT_TRUE(alice->poll_until([&] { return alice->last_input_rejected().has_value(); }, 5s));
    EXPECT_EQ(alice->last_input_rejected()->code, ErrorCode::InvalidValue);
    EXPECT_THAT(alice->last_input_rejected()->message, HasSubstr("steer value is not valid"));
}

TEST_F(InputServer, AMalformedInputIsAnsweredAndTheConnectionStays) {
    auto alice = join(server_.port(), "alice");
    const Entity ship = spawn_ship(*alice);
    const std::uint16_t steer_id = alice->welcome().components.find("steer")->id;
    flatbuffers::FlatBufferBuilder fbb;
    const std::vector<std::uint8_t> too_short{1};
    const auto values = fbb.CreateVector(too_short);
    const auto column = ecsnet::wire::CreateColumn(fbb, steer_id, 0, values);
    const auto columns = fbb.CreateVector(&column, 1);
    const ecsnet::wire::EntityRef ref{ship.index(), ship.version()};
    const auto body =
        ecsnet::wire::CreateInput(fbb, &ref, server_.tick() + 5, 1, columns);
    raw_socket raw{server_.port()};
    raw.send(protocol::hello{protocol::protocol_version, "raw", ""});
    const protocol::frame f = protocol::finish_frame(
        fbb, ecsnet::wire::CreateClientMessage(fbb, ecsnet::wire::ClientBody::Input, body.Union()));
    raw.write(*f);
    // The raw client owns nothing yet: the shape is checked first.
    std::vector<std::uint8_t> bytes;
    std::optional<protocol::input_rejected> rejected;
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!rejected && std::chrono::steady_clock::now() < deadline) {
        if (raw.read_frame(bytes, 1s) != raw_socket::read_status::frame) {
            continue;
        }
        const auto* message = protocol::verify_server_frame(bytes);
        ASSERT_NE(message, nullptr);
        if (message->body_type() == ecsnet::wire::ServerBody::InputRejected) {
            const auto control = protocol::decode_server_control(*message);
            ASSERT_TRUE(control.has_value());
            rejected = std::get<protocol::input_rejected>(*control);
        }
        ASSERT_NE(message->body_type(), ecsnet::wire::ServerBody::Disconnect);
    }
    ASSERT_TRUE(rejected.has_value());
    EXPECT_EQ(rejected->code, ErrorCode::Malformed);
    EXPECT_THAT(rejected->message, HasSubstr("packed values"));
}

TEST_F(InputServer, AListenerThatThrowsFailsThatInputAloneAndTheTickGoesOn) {
    auto alice = join(server_.port(), "alice");
    const Entity ship = spawn_ship(*alice);
    const std::uint64_t first = server_.tick() + 5;
    alice->send(steer(ship, first, {Steer{0.5F, 0.5F}, Steer{-1.0F, 0.5F}, Steer{0.25F, 0.5F}}));
    ASSERT_TRUE(acked(*alice, first + 2));
    ASSERT_TRUE(alice->poll_until([&] { return alice->mirror().tick() >= first + 4; }, 5s));
    const auto stats = server_.stats();
    EXPECT_EQ(stats.input_failures, 1U);
    EXPECT_EQ(stats.inputs_applied, 3U);
    const auto log = seen();
    EXPECT_EQ(log.at(first + 2).at(ship), (Steer{0.25F, 0.5F}));
    EXPECT_TRUE(log.contains(first + 4)) << "the ticks go on";
}

TEST_F(InputServer, AFloodIsRateLimitedWhileOthersPlayOn) {
    auto alice = join(server_.port(), "alice");
    auto bob = join(server_.port(), "bob");
    const Entity ship = spawn_ship(*alice);
    const Entity bobs = spawn_ship(*bob);
    const std::uint64_t first = server_.tick() + 10;
    // 600 frames at once against a bucket of 120 a second.
    for (int i = 0; i < 600; ++i) {
        alice->send(steer(ship, first, {Steer{0.5F, 0.5F}}));
    }
    bob->send(steer(bobs, first, {Steer{0.25F, 0.75F}}));
    ASSERT_TRUE(alice->poll_until([&] { return alice->last_input_rejected().has_value(); }, 5s));
    EXPECT_EQ(alice->last_input_rejected()->code, ErrorCode::RateLimited);
    ASSERT_TRUE(acked(*bob, first));
    EXPECT_TRUE(alice->is_open());
    EXPECT_GE(server_.stats().inputs_refused, 400U);
    const auto log = seen();
    ASSERT_TRUE(log.contains(first));
    EXPECT_EQ(log.at(first).at(bobs), (Steer{0.25F, 0.75F}));
    EXPECT_EQ(log.at(first).at(ship), (Steer{0.5F, 0.5F}));
}

TEST_F(InputServer, AnInputTypeReachesNoOtherClient) {
    auto alice = join(server_.port(), "alice");
    auto bob = join(server_.port(), "bob");
    const Entity ship = spawn_ship(*alice);
    const std::uint64_t first = server_.tick() + 5;
    alice->send(steer(ship, first, {Steer{0.5F, 0.5F}}));
    ASSERT_TRUE(acked(*alice, first));
    ASSERT_TRUE(bob->poll_until([&] { return bob->mirror().tick() >= first + 2; }, 5s));
    EXPECT_TRUE(bob->mirror().contains(ship));
    EXPECT_FALSE(bob->mirror().get<Steer>(ship).has_value());
    EXPECT_FALSE(alice->mirror().get<Steer>(ship).has_value());
    EXPECT_FALSE(bob->last_input_ack().has_value());  // bob sent none: bob gets no acks
}

TEST_F(InputServer, Protocol6SendsCompactInputsAfterTheFirstAndTheyApplyAlike) {
    auto alice = join(server_.port(), "alice");
    ASSERT_EQ(alice->welcome().version, protocol::protocol_version);
    const Entity ship = spawn_ship(*alice);
    const std::uint64_t first = server_.tick() + 5;
    std::vector<std::uint64_t> sizes;
    for (std::uint64_t i = 0; i < 3; ++i) {
        const std::uint64_t before = alice->bytes_sent();
        alice->send(steer(ship, first + i, {Steer{0.25F * static_cast<float>(i), 0.5F}}));
        sizes.push_back(alice->bytes_sent() - before);
    }
    EXPECT_GT(sizes[0], 16U) << "the first Input of a connection is full";
    EXPECT_LE(sizes[1], 16U);
    EXPECT_LE(sizes[2], 16U);
    ASSERT_TRUE(acked(*alice, first + 2));
    EXPECT_FALSE(alice->last_input_rejected().has_value());
    const auto log = seen();
    for (std::uint64_t i = 0; i < 3; ++i) {
        ASSERT_TRUE(log.contains(first + i));
        EXPECT_EQ(log.at(first + i).at(ship), (Steer{0.25F * static_cast<float>(i), 0.5F})) << i;
    }
}

// Reads frames until one of `type` (or a Disconnect, which fails the wait unless asked for).
std::optional<std::vector<std::uint8_t>> read_until(raw_socket& raw, ecsnet::wire::ServerBody type) {
    std::vector<std::uint8_t> bytes;
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (std::chrono::steady_clock::now() < deadline) {
        if (raw.read_frame(bytes, 1s) != raw_socket::read_status::frame) {
            continue;
        }
        const auto* message = protocol::verify_server_frame(bytes);
        if (message == nullptr) {
            return std::nullopt;
        }
        if (message->body_type() == type) {
            return bytes;
        }
        if (message->body_type() == ecsnet::wire::ServerBody::Disconnect) {
            return std::nullopt;
        }
    }
    return std::nullopt;
}

// The reason of the Disconnect the server sends next ("" when none comes).
std::string disconnect_reason(raw_socket& raw) {
    const auto frame = read_until(raw, ecsnet::wire::ServerBody::Disconnect);
    if (!frame) {
        return "";
    }
    const auto end = protocol::decode_server_control(*protocol::verify_server_frame(*frame));
    return end ? std::get<protocol::disconnect>(*end).reason : "";
}

std::vector<std::uint8_t> compact_frame(std::uint8_t kind, std::vector<std::uint8_t> body) {
    const std::uint32_t word = 0x80000000U | (std::uint32_t{kind} << 24U) | static_cast<std::uint32_t>(body.size());
    body.insert(body.begin(), 4, std::uint8_t{0});
    for (std::size_t i = 0; i < 4; ++i) {
        body[i] = static_cast<std::uint8_t>(word >> (8U * i));
    }
    return body;
}

TEST_F(InputServer, ACompactInputWithoutAFullOneIsRefusedAndAnUnknownKindEndsTheConnection) {
    raw_socket raw{server_.port()};
    raw.send(protocol::hello{protocol::protocol_version, "raw", ""});
    raw.write(compact_frame(1, {0x00, 0x05, 0x00, 0x00}));
    const auto rejected_frame = read_until(raw, ecsnet::wire::ServerBody::InputRejected);
    ASSERT_TRUE(rejected_frame.has_value()) << "refused, and the connection stays";
    const auto control = protocol::decode_server_control(*protocol::verify_server_frame(*rejected_frame));
    ASSERT_TRUE(control.has_value());
    const auto& rejected = std::get<protocol::input_rejected>(*control);
    EXPECT_EQ(rejected.code, ErrorCode::Malformed);
    EXPECT_THAT(rejected.message, HasSubstr("before any full Input"));
    EXPECT_EQ(rejected.first_tick, 5U);

    raw.write(compact_frame(2, {0x00}));
    EXPECT_THAT(disconnect_reason(raw), HasSubstr("unknown compact frame kind 2"));
}

TEST_F(InputServer, AnOlderClientsTopBitIsALengthOverTheLimitAsBefore) {
    raw_socket raw{server_.port()};
    raw.send(protocol::hello{5, "older", ""});
    ASSERT_TRUE(read_until(raw, ecsnet::wire::ServerBody::Welcome).has_value());
    raw.write(compact_frame(1, {0x00, 0x05, 0x00, 0x00}));
    EXPECT_THAT(disconnect_reason(raw), HasSubstr("exceeds the limit"));
}

TEST_F(InputServer, AVersion6ClientGetsCompactAcksAndAVersion5OneFullOnes) {
    const auto joined_as = [&](std::uint32_t version, const char* name) {
        connect_options options;
        options.port = server_.port();
        options.name = name;
        options.protocol_version = version;
        return std::make_unique<connection>(options);
    };
    auto older = joined_as(5, "older");
    auto newer = joined_as(protocol::protocol_version, "newer");
    ASSERT_EQ(older->welcome().version, 5U);
    std::size_t full_acks_older = 0;
    std::size_t full_acks_newer = 0;
    older->on_message = [&](const ecsnet::wire::ServerMessage& m) {
        full_acks_older += m.body_type() == ecsnet::wire::ServerBody::InputAck ? 1 : 0;
    };
    newer->on_message = [&](const ecsnet::wire::ServerMessage& m) {
        full_acks_newer += m.body_type() == ecsnet::wire::ServerBody::InputAck ? 1 : 0;
    };
    const Entity old_ship = spawn_ship(*older);
    const Entity new_ship = spawn_ship(*newer);
    const std::uint64_t first = server_.tick() + 5;
    const std::uint64_t sent0 = older->bytes_sent();
    older->send(steer(old_ship, first, {Steer{0.5F, 0.5F}}));
    older->send(steer(old_ship, first + 1, {Steer{0.5F, 0.5F}}));
    EXPECT_GT(older->bytes_sent() - sent0, 2 * 16U) << "version 5: two full Inputs";
    newer->send(steer(new_ship, first, {Steer{0.25F, 0.5F}}));
    ASSERT_TRUE(acked(*older, first + 1));
    ASSERT_TRUE(acked(*newer, first));
    EXPECT_GE(full_acks_older, 1U);
    EXPECT_EQ(full_acks_newer, 0U) << "its acks come compact: recorded, no FlatBuffers message";
    EXPECT_EQ(newer->last_input_ack()->late, 0U);
    const auto log = seen();
    EXPECT_EQ(log.at(first + 1).at(old_ship), (Steer{0.5F, 0.5F}));
    EXPECT_EQ(log.at(first).at(new_ship), (Steer{0.25F, 0.5F}));
}

TEST(InputServerReconnect, AReconnectKeepsTheShipAndStartsANewStream) {
    auto log = std::make_shared<steering_log>();
    server_config config = input_config();
    config.reconnect_grace = 30s;
    test_server server{config, steering_game(log)};
    auto alice = join(server.port(), "alice");
    const Entity ship = spawn_ship(*alice);
    ASSERT_TRUE(alice->poll_until([&] { return alice->mirror().tick() >= 10; }, 5s));
    alice->send(steer(ship, server.tick() - 2, {Steer{}, Steer{}}));  // late, both
    ASSERT_TRUE(alice->poll_until(
        [&] { return alice->last_input_ack() && alice->last_input_ack()->late == 2; }, 5s));
    const std::vector<std::uint8_t> key = alice->welcome().resume_key;
    alice.reset();

    connect_options options;
    options.port = server.port();
    options.name = "alice again";
    options.timeout = 10s;
    options.resume_key = key;
    connection again{options};
    ASSERT_TRUE(again.mirror().contains(ship));
    const std::uint64_t first = server.tick() + 5;
    again.send(steer(ship, first, {Steer{0.75F, 0.5F}}));
    ASSERT_TRUE(again.poll_until(
        [&] { return again.last_input_ack() && again.last_input_ack()->applied_tick >= first; }, 5s));
    EXPECT_EQ(again.last_input_ack()->late, 0U);  // the old stream's count went with it
    EXPECT_EQ(server.call([log, first](ecsnet::server::server&) { return log->seen.at(first); }).at(ship),
              (Steer{0.75F, 0.5F}));
}

}  // namespace input_server_test
