#include "fake_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>

#include "ecsnet/demo/components.hpp"
#include "ecsnet/ecs/world.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/protocol/registry.hpp"
#include "ecsnet/protocol/replication.hpp"

namespace ecsnet::test {

namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;
using demo::Health;
using demo::Name;
using demo::Position;
using demo::Velocity;

constexpr std::uint64_t snapshot_tick = 5;

bool write_all(int fd, const protocol::frame& frame) {
    const auto* data = frame->data();
    std::size_t left = frame->size();
    while (left > 0) {
        const ssize_t n = send(fd, data, left, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        data += n;
        left -= static_cast<std::size_t>(n);
    }
    return true;
}

// The `changes` script after the snapshot: step 0 sends tick 6, step 1 the snapshot of tick 7.
bool play_changes(int client, ecs::World& world, protocol::replication_encoder& encoder, int step) {
    const ecs::Entity keeper{0, 1};
    const ecs::Entity gone{1, 1};
    const ecs::Entity mover{2, 1};
    if (step == 0) {
        world.erase<Health>(keeper);
        return write_all(client, encoder.encode_delta(world, world.take_changes(), 6));
    }
    world.destroy(gone);
    world.emplace<Name>(world.create(), "newcomer");
    world.patch<Position>(keeper, [](Position& p) { p = {3.0F, 4.0F}; });
    world.erase<Velocity>(mover);
    world.emplace<Health>(mover, 5);
    (void)world.take_changes();  // the Delta of tick 7 the client never gets
    bool ok = true;
    for (const auto& f : encoder.encode_snapshot(world, 7)) {
        ok = ok && write_all(client, f);
    }
    return ok;
}

// The demo game's types, in its order (games/demo: demo::register_components).
void register_demo(protocol::component_registry& types) {
    types.add<Position>();
    types.add<Velocity>();
    types.add<Health>();
    types.add<demo::Lifetime>();
    types.add<Name>();
}

// A Welcome whose schema says what `script` lies about; built by hand, as encode() only
// sends schemas that passed schema::make.
protocol::frame lying_welcome(fake_script script, const protocol::schema& truth) {
    flatbuffers::FlatBufferBuilder fbb;
    std::vector<flatbuffers::Offset<wire::ComponentType>> types;
    for (const protocol::component_info& t : truth.types()) {
        std::vector<flatbuffers::Offset<wire::Field>> fields;
        for (const protocol::field_info& f : t.fields) {
            auto type = static_cast<wire::FieldType>(f.type);
            unsigned bits = f.bits;
            if (script == fake_script::unknown_field_type && t.name == "position" &&
                f.name == "x") {
                type = static_cast<wire::FieldType>(99);
            }
            if (script == fake_script::bits_beyond_type && t.name == "health") {
                bits = 40;
            }
            fields.push_back(wire::CreateField(fbb, fbb.CreateString(f.name), type,
                                               static_cast<std::uint8_t>(bits), f.quantized.min,
                                               f.quantized.step));
        }
        const std::string name =
            script == fake_script::duplicate_names && t.name == "velocity" ? "position" : t.name;
        types.push_back(wire::CreateComponentType(
            fbb, t.id, fbb.CreateString(name), static_cast<wire::Writer>(t.written_by),
            t.owner_only, t.is_string ? t.max_bytes : 0, fbb.CreateVector(fields)));
    }
    const auto welcome = wire::CreateWelcome(fbb, 1, protocol::protocol_version, 30.0F,
                                             snapshot_tick, 1, 0, 0, fbb.CreateVector(types));
    return protocol::finish_frame(
        fbb, wire::CreateServerMessage(fbb, wire::ServerBody::Welcome, welcome.Union()));
}

bool lies(fake_script script) {
    return script == fake_script::unknown_field_type || script == fake_script::bits_beyond_type ||
           script == fake_script::duplicate_names;
}

}  // namespace

fake_server::fake_server(std::uint64_t hash, fake_script script) : hash_{hash}, script_{script} {
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (listener_ < 0 || bind(listener_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
        listen(listener_, 4) != 0 ||
        getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        throw std::runtime_error(std::string{"fake server: "} + std::strerror(errno));
    }
    port_ = ntohs(address.sin_port);
    thread_ = std::thread{[this] { serve(); }};
}

fake_server::~fake_server() {
    stop_ = true;
    thread_.join();
    close(listener_);
}

void fake_server::serve() {
    const auto deadline = clock::now() + 60s;
    pollfd accept_fd{listener_, POLLIN, 0};
    while (!stop_ && clock::now() < deadline) {
        if (poll(&accept_fd, 1, 50) == 1) {
            break;
        }
    }
    if (stop_ || clock::now() >= deadline) {
        return;
    }
    const int client = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
        return;
    }
    // Whatever the client sends (Hello, ResyncRequest) is read and ignored; the script does
    // not depend on it beyond the first bytes arriving.
    char buffer[4096];
    pollfd client_fd{client, POLLIN, 0};
    bool welcomed = false;
    auto next_checksum = clock::now();
    const auto world = ecs::World::make();
    protocol::component_registry types;
    register_demo(types);
    protocol::replication_encoder encoder{types};
    if (script_ == fake_script::changes) {
        const ecs::Entity keeper = world->create();
        world->emplace<Position>(keeper, 1.0F, 2.0F);
        world->emplace<Health>(keeper, 10);
        world->emplace<Name>(world->create(), "gone");
        const ecs::Entity mover = world->create();
        world->emplace<Position>(mover, 0.0F, 0.0F);
        world->emplace<Velocity>(mover, 1.0F, 0.0F);
        (void)world->take_changes();
    }
    int step = 0;
    auto next_step = clock::time_point::max();
    while (!stop_ && clock::now() < deadline) {
        if (poll(&client_fd, 1, 20) == 1) {
            const ssize_t n = recv(client, buffer, sizeof buffer, 0);
            if (n <= 0) {
                break;  // the client left
            }
            if (!welcomed) {
                welcomed = true;
                if (lies(script_)) {
                    (void)write_all(client, lying_welcome(script_, types.types()));
                    continue;  // until the client leaves, as it should
                }
                bool ok = write_all(client, protocol::encode(protocol::server_control{
                                                protocol::welcome{1,
                                                                  protocol::protocol_version,
                                                                  30.0F,
                                                                  snapshot_tick,
                                                                  1,
                                                                  {},
                                                                  {},
                                                                  types.types()}}));
                for (const auto& f : encoder.encode_snapshot(*world, snapshot_tick)) {
                    ok = ok && write_all(client, f);
                }
                if (!ok) {
                    break;
                }
                // Checksums only once the client has joined: a mismatch while it joins would
                // make it wait for a fresh snapshot, which this script never sends.
                next_checksum = clock::now() + 300ms;
                next_step = clock::now() + 300ms;
            }
        }
        if (script_ == fake_script::changes) {
            if (welcomed && step < 2 && clock::now() >= next_step) {
                if (!play_changes(client, *world, encoder, step)) {
                    break;
                }
                ++step;
                next_step = clock::now() + 300ms;
            }
            continue;
        }
        if (lies(script_)) {
            continue;  // nothing follows a Welcome the client must refuse
        }
        if (welcomed && clock::now() >= next_checksum) {
            next_checksum = clock::now() + 100ms;
            if (!write_all(client, protocol::encode(protocol::server_control{
                                       protocol::checksum_report{snapshot_tick, hash_, 0}}))) {
                break;
            }
        }
    }
    close(client);
}

}  // namespace ecsnet::test
