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

#include "ecsnet/ecs/world.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/protocol/replication.hpp"

namespace ecsnet::test {

namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

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

}  // namespace

fake_server::fake_server(std::uint64_t hash) : hash_{hash} {
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
    while (!stop_ && clock::now() < deadline) {
        if (poll(&client_fd, 1, 20) == 1) {
            const ssize_t n = recv(client, buffer, sizeof buffer, 0);
            if (n <= 0) {
                break;  // the client left
            }
            if (!welcomed) {
                welcomed = true;
                const auto world = ecs::World::make();
                bool ok = write_all(client,
                                    protocol::encode(protocol::server_control{protocol::welcome{
                                        1, protocol::protocol_version, 30.0F, snapshot_tick, 1}}));
                protocol::replication_encoder encoder;
                for (const auto& f : encoder.encode_snapshot(*world, snapshot_tick)) {
                    ok = ok && write_all(client, f);
                }
                if (!ok) {
                    break;
                }
                // Checksums only once the client has joined: a mismatch while it joins would
                // make it wait for a fresh snapshot, which this script never sends.
                next_checksum = clock::now() + 300ms;
            }
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
