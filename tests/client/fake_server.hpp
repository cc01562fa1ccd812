#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

// A scripted stand-in for ecsnet-server, for what the real one never does: it accepts one
// client on 127.0.0.1, answers its Hello with Welcome and an empty snapshot at tick 5, then
// sends Checksum{tick 5, `hash`, 0 entities} every 100 ms until the client leaves (bounded
// to 60 s). With a wrong hash the client's mirror is out of sync with "the server".
namespace ecsnet::test {

class fake_server {
public:
    explicit fake_server(std::uint64_t hash);
    fake_server(const fake_server&) = delete;
    fake_server& operator=(const fake_server&) = delete;
    ~fake_server();

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }

private:
    void serve();

    int listener_{-1};
    std::uint16_t port_{0};
    std::uint64_t hash_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

}  // namespace ecsnet::test
