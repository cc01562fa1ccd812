#pragma once

#include <boost/asio/io_context.hpp>

#include <cstddef>
#include <memory>
#include <thread>
#include <vector>

namespace ecsnet::server {

// The threads that run the sessions' socket I/O (docs/SERVER.md, "Threads"). Each runs an
// io_context of its own, so a session placed on one needs no strand: its coroutines and the
// handlers posted to it run one at a time, in the order they were posted.
class io_pool {
public:
    // Starts `threads` threads (at least one).
    explicit io_pool(std::size_t threads);
    io_pool(const io_pool&) = delete;
    io_pool& operator=(const io_pool&) = delete;
    ~io_pool();

    // The next thread's context, round robin; from one thread at a time (the server's).
    // Shared, because a session keeps its context alive: a session released after the pool
    // stopped (by a handler still queued on the world's io_context) must destroy its socket and
    // timers while the context they belong to still exists.
    [[nodiscard]] std::shared_ptr<boost::asio::io_context> next() noexcept;
    [[nodiscard]] std::size_t size() const noexcept { return contexts_.size(); }

    // Stops the contexts, joins the threads and destroys the handlers still queued (the
    // sessions they hold go with them). Idempotent; never from a pool thread.
    void stop() noexcept;

private:
    class context;

    std::vector<std::shared_ptr<context>> contexts_;
    std::vector<std::thread> threads_;
    std::size_t next_{0};
};

}  // namespace ecsnet::server
