#include "ecsnet/server/transport/io_pool.hpp"

#include "../thread_name.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/executor_work_guard.hpp>

#include <algorithm>
#include <exception>

namespace ecsnet::server {

namespace asio = boost::asio;

// One thread's io_context. Its queued handlers hold sessions and sessions hold it, so the pool
// destroys them itself once the thread has ended (shutdown() is protected).
class io_pool::context : public asio::io_context {
public:
    context() : asio::io_context{1} {}  // one thread: posts from other threads still lock
    void destroy_handlers() noexcept { shutdown(); }
};

io_pool::io_pool(std::size_t threads) {
    threads = std::max<std::size_t>(threads, 1);
    contexts_.reserve(threads);
    threads_.reserve(threads);
    for (std::size_t i = 0; i < threads; ++i) {
        contexts_.push_back(std::make_shared<context>());
    }
    for (std::size_t i = 0; i < threads; ++i) {
        threads_.emplace_back([ctx = contexts_[i].get(), i] {
            detail::name_this_thread("net-" + std::to_string(i));
            // Sessions come and go: without the guard, run() would return while none is here.
            const auto work = asio::make_work_guard(*ctx);
            for (;;) {
                try {
                    ctx->run();
                    return;  // stop()
                } catch (const std::exception& e) {
                    // A handler's exception must not end the thread of every session on it.
                    spdlog::critical("I/O thread {}: a handler failed: {}", i, e.what());
                }
            }
        });
    }
}

io_pool::~io_pool() { stop(); }

std::shared_ptr<asio::io_context> io_pool::next() noexcept {
    const auto& ctx = contexts_[next_++ % contexts_.size()];
    return ctx;
}

void io_pool::stop() noexcept {
    for (const auto& ctx : contexts_) {
        ctx->stop();
    }
    for (auto& t : threads_) {
        if (t.joinable()) {
            t.join();
        }
    }
    threads_.clear();
    for (const auto& ctx : contexts_) {
        ctx->destroy_handlers();
    }
}

}  // namespace ecsnet::server
