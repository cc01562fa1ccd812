#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

// A scripted stand-in for ecsnet-server, for what the real one never does: it accepts one
// client on 127.0.0.1, answers its Hello with Welcome and a snapshot at tick 5, then follows
// its script until the client leaves (bounded to 60 s):
// - checksums: the snapshot is empty; Checksum{tick 5, `hash`, 0 entities} every 100 ms. With
//   a wrong hash the client's mirror is out of sync with "the server".
// - changes: the snapshot holds 0:1 (position (1, 2), health 10), 1:1 (name "gone") and 2:1
//   (position (0, 0), velocity (1, 0)). 300 ms after it, the Delta of tick 6 removes the
//   health of 0:1; 300 ms later a Snapshot at tick 7 replaces the state (the Delta of tick 7
//   never sent): 1:1 destroyed, an entity named "newcomer" spawned, 0:1 moved to (3, 4), 2:1
//   without velocity but with health 5.
// Its Welcome describes the demo game's types (owner, position, velocity, health, lifetime,
// name), except in the scripts whose Welcome lies about them, and nothing follows it:
// - unknown_field_type: position.x has field type 99;
// - bits_beyond_type: health.value is an int32 in 40 bits;
// - duplicate_names: two types are named "position".
namespace ecsnet::test {

enum class fake_script {
    checksums,
    changes,
    unknown_field_type,
    bits_beyond_type,
    duplicate_names
};

class fake_server {
public:
    explicit fake_server(std::uint64_t hash, fake_script script = fake_script::checksums);
    fake_server(const fake_server&) = delete;
    fake_server& operator=(const fake_server&) = delete;
    ~fake_server();

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }

private:
    void serve();

    int listener_{-1};
    std::uint16_t port_{0};
    std::uint64_t hash_;
    fake_script script_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

}  // namespace ecsnet::test
