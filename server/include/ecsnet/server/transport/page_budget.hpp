#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <variant>

namespace ecsnet::server {

// The bounds on the connections that fetch --web-root pages from the WebSocket port. A page
// connection holds one chunk of memory while its answer streams; the rest of the file stays on
// disk.
struct page_limits {
    std::size_t chunk_bytes = 64 * 1024;          // read from the file and written at a time
    std::size_t memory_bytes = 32 * 1024 * 1024;  // every page connection's chunk together
    std::size_t per_address = 8;                  // page connections from one remote address
    // A chunk (and the headers) must be taken by the client within this: at least
    // chunk_bytes per stall_timeout, averaged over each chunk.
    std::chrono::milliseconds stall_timeout{10'000};
};

struct page_stats {
    std::size_t connections = 0;          // being answered now
    std::size_t buffered_bytes = 0;       // memory the page connections hold now
    std::size_t peak_buffered_bytes = 0;  // the most they held at once
    std::uint64_t file_bytes_read = 0;    // read from files, all connections together
    std::uint64_t served = 0;             // answers written whole
    std::uint64_t refused_address = 0;    // 429: per_address reached
    std::uint64_t refused_memory = 0;     // 503: memory_bytes reached
    std::uint64_t stalled = 0;            // cut: a chunk not taken within stall_timeout
};

// Admission of page connections, thread-safe (connections live on every I/O thread). A handle:
// copies share one budget, and each lease keeps it alive.
class page_budget {
    struct state;

public:
    explicit page_budget(page_limits limits = {});

    // A page connection's place: its count against its address and its memory, given back
    // when the lease goes.
    class lease {
    public:
        lease(lease&&) noexcept = default;
        lease& operator=(lease&&) = delete;
        lease(const lease&) = delete;
        lease& operator=(const lease&) = delete;
        ~lease();

        // The chunk buffer (empty when admitted without one).
        [[nodiscard]] std::span<char> buffer() const noexcept;
        [[nodiscard]] const page_limits& limits() const noexcept;
        void read_from_file(std::size_t bytes) noexcept;
        void served() noexcept;
        void stalled() noexcept;

    private:
        friend class page_budget;
        lease(std::shared_ptr<state> s, std::string address, std::size_t memory,
              std::size_t buffer_bytes);

        std::shared_ptr<state> state_;
        std::string address_;
        std::size_t memory_ = 0;
        std::unique_ptr<char[]> buffer_;
        std::size_t buffer_bytes_ = 0;
    };

    enum class refusal { per_address, memory };

    // A place for a connection from `address` that holds `memory` bytes, `buffer_bytes` of
    // them a chunk buffer the lease allocates (at most chunk_bytes); or why not.
    [[nodiscard]] std::variant<lease, refusal> admit(const std::string& address, std::size_t memory,
                                                     std::size_t buffer_bytes) const;

    [[nodiscard]] const page_limits& limits() const noexcept;
    [[nodiscard]] page_stats stats() const;

private:
    std::shared_ptr<state> state_;
};

}  // namespace ecsnet::server
