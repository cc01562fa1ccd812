#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>

// A bad network for tests: a userspace TCP relay on 127.0.0.1 between clients and one server.
//
//     latency_proxy proxy{{.target_port = server.port(), .latency = 100ms, .jitter = 20ms}};
//     client.connect("127.0.0.1", proxy.port());  // instead of server.port()
//
// - Every accepted client gets its own connection to 127.0.0.1:target_port. Bytes are relayed
//   both ways, each direction on its own: what one read returns is a chunk, delivered at the
//   time `delivery_schedule` gives it (latency +- jitter, never before the chunk before it), so
//   the bytes of one direction never reorder. A sender's FIN is forwarded after its last chunk.
// - Backpressure: each direction of each connection holds at most `buffer_limit` bytes read but
//   not yet delivered. At the limit the proxy stops reading from that sender until a delivery
//   frees room: the sender's kernel buffers fill and its writes then block (or EAGAIN), as on a
//   slow link. Nothing is ever discarded except by drop() and destruction.
// - A reset or error on either side resets the other (both sockets closed with SO_LINGER 0).
// - The proxy runs on its own thread with its own io_context. stall() and drop() post to it and
//   return once done; counters() reads atomics. All three are safe from any other thread.
// - Destruction ends like drop(): the listening port closes, every connection is reset, queued
//   bytes are discarded, the thread is joined. It does not wait for a stall to end.
namespace ecsnet::test {

struct latency_proxy_config {
    // The server's port on 127.0.0.1.
    std::uint16_t target_port{0};
    // One-way delay per chunk, each direction: latency plus a uniform draw in [-jitter, +jitter]
    // (at least zero). latency 100 ms, jitter 50 ms: every chunk takes 50 to 150 ms.
    std::chrono::milliseconds latency{100};
    std::chrono::milliseconds jitter{0};
    // The draws are reproducible: the n-th chunk of a direction of the k-th accepted connection
    // always draws the same delay. Which bytes form a chunk depends on the kernel's timing.
    std::uint64_t seed{1};
    // Bytes read but not yet delivered, per direction of each connection (at least 1).
    std::size_t buffer_limit{1U << 20U};
};

// Totals since construction. Bytes and chunks count what was delivered: handed to the
// receiver's socket once due (counted just before the write, so that bytes a peer has received
// are always counted), not what was read and is still held.
struct latency_proxy_counters {
    std::uint64_t connections_accepted{0};
    std::uint64_t bytes_to_server{0};
    std::uint64_t chunks_to_server{0};
    std::uint64_t bytes_to_client{0};
    std::uint64_t chunks_to_client{0};
};

// When each chunk of one direction is delivered. Deterministic for a seed: mt19937_64's output
// is fixed by the standard, and the draw is computed from it here, not by a library
// distribution, so every compiler and library draws the same delays.
class delivery_schedule {
public:
    using clock = std::chrono::steady_clock;

    delivery_schedule(std::chrono::microseconds latency, std::chrono::microseconds jitter,
                      std::uint64_t seed);

    // The delivery time of a chunk read at `now`: now + draw(), but never before the delivery
    // time of the chunk before it.
    [[nodiscard]] clock::time_point next(clock::time_point now);

    // The next delay: latency plus a uniform draw in [-jitter, +jitter], at least zero.
    [[nodiscard]] std::chrono::microseconds draw();

private:
    std::chrono::microseconds latency_;
    std::chrono::microseconds jitter_;
    std::mt19937_64 random_;
    clock::time_point last_{};
};

class latency_proxy {
public:
    // Listens on 127.0.0.1 on a free port and starts the proxy's thread. Throws
    // std::invalid_argument for a buffer_limit of 0, std::system_error if it cannot listen.
    explicit latency_proxy(latency_proxy_config config);
    latency_proxy(const latency_proxy&) = delete;
    latency_proxy& operator=(const latency_proxy&) = delete;
    ~latency_proxy();

    // The port clients connect to (127.0.0.1).
    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }

    // Holds all traffic, both directions of every connection (present and future), for
    // `duration` from now; then everything due is delivered at once, in order. Reading goes on
    // up to buffer_limit. A stall during a stall ends at the later of the two ends. Connections
    // are still accepted and connected to the server while stalled.
    void stall(std::chrono::milliseconds duration);

    // Resets every relayed connection, as a network failure would: both sockets are closed with
    // SO_LINGER 0 (each peer sees ECONNRESET or EOF) and their queued bytes are discarded. New
    // connections are accepted afterwards as before.
    void drop();

    [[nodiscard]] latency_proxy_counters counters() const noexcept;

private:
    struct state;

    std::unique_ptr<state> state_;
    std::uint16_t port_{0};
};

}  // namespace ecsnet::test
