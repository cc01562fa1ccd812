#include "latency_proxy.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <future>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace ecsnet::test {

namespace asio = boost::asio;
using asio::awaitable;
using asio::ip::tcp;
using steady = std::chrono::steady_clock;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t read_size = 16 * 1024;
// After an accept error such as EMFILE the connection stays in the backlog: retrying at once
// would spin.
constexpr auto accept_backoff = std::chrono::milliseconds{150};

std::uint64_t splitmix64(std::uint64_t x) noexcept {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30U)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27U)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31U);
}

// Each direction of each connection draws from its own stream, so the delays of one do not
// depend on how the kernel interleaves the others.
std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t connection,
                          std::uint64_t way) noexcept {
    return splitmix64(seed ^ splitmix64(connection * 2 + way));
}

// A coroutine that throws is a bug of the proxy: never lose it in a test run.
void abort_on_exception(const char* what, const std::exception_ptr& e) {
    if (!e) {
        return;
    }
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& ex) {
        std::fprintf(stderr, "latency_proxy: %s failed: %s\n", what, ex.what());
    } catch (...) {
        std::fprintf(stderr, "latency_proxy: %s failed\n", what);
    }
    std::abort();
}

struct shared_counters {
    std::atomic<std::uint64_t> connections_accepted{0};
    std::atomic<std::uint64_t> bytes_to_server{0};
    std::atomic<std::uint64_t> chunks_to_server{0};
    std::atomic<std::uint64_t> bytes_to_client{0};
    std::atomic<std::uint64_t> chunks_to_client{0};
};

// What the connections share, touched on the proxy's thread only (the counters excepted).
struct relay_context {
    explicit relay_context(const latency_proxy_config& settings) : config{settings} {}

    latency_proxy_config config;
    steady::time_point stalled_until{};
    shared_counters counters;
};

struct chunk {
    steady::time_point due;
    std::vector<std::byte> bytes;
};

// One direction of a connection: read from `from`, delivered to `to`.
struct direction {
    direction(tcp::socket& sender, tcp::socket& receiver, delivery_schedule delays,
              std::atomic<std::uint64_t>& bytes, std::atomic<std::uint64_t>& chunks)
        : from{sender},
          to{receiver},
          schedule{delays},
          writer_wake{sender.get_executor()},
          reader_wake{sender.get_executor()},
          bytes_relayed{bytes},
          chunks_relayed{chunks} {}

    tcp::socket& from;
    tcp::socket& to;
    delivery_schedule schedule;
    std::deque<chunk> queue;
    std::size_t queued_bytes{0};
    bool sender_finished{false};
    // Wakes the writer: a chunk or the sender's FIN arrived, or the connection closed.
    asio::steady_timer writer_wake;
    // Wakes the reader: a delivery made room, or the connection closed.
    asio::steady_timer reader_wake;
    std::atomic<std::uint64_t>& bytes_relayed;
    std::atomic<std::uint64_t>& chunks_relayed;
};

// Waits on a timer used as a signal: until it expires or someone cancels it.
awaitable<void> wait(asio::steady_timer& timer, steady::time_point until) {
    timer.expires_at(until);
    co_await timer.async_wait(use_tuple);  // expired or cancelled: the caller looks again
}

class connection : public std::enable_shared_from_this<connection> {
public:
    connection(relay_context& context, tcp::socket client, std::uint64_t index)
        : context_{context},
          client_{std::move(client)},
          server_{client_.get_executor()},
          to_server_{client_, server_, schedule(index, 0), context.counters.bytes_to_server,
                     context.counters.chunks_to_server},
          to_client_{server_, client_, schedule(index, 1), context.counters.bytes_to_client,
                     context.counters.chunks_to_client} {}

    static void start(const std::shared_ptr<connection>& self) {
        asio::co_spawn(self->client_.get_executor(), run(self),
                       [](const std::exception_ptr& e) { abort_on_exception("connect", e); });
    }

    // Both sockets closed with SO_LINGER 0 (the peers see a reset), the coroutines woken to end.
    void reset() { close(true); }

private:
    [[nodiscard]] delivery_schedule schedule(std::uint64_t index, std::uint64_t way) const {
        const auto& config = context_.config;
        return delivery_schedule{config.latency, config.jitter,
                                 stream_seed(config.seed, index, way)};
    }

    static awaitable<void> run(std::shared_ptr<connection> self) {
        if (self->closed_) {
            co_return;  // dropped before it started
        }
        const tcp::endpoint target{asio::ip::address_v4::loopback(),
                                   self->context_.config.target_port};
        auto [ec] = co_await self->server_.async_connect(target, use_tuple);
        if (self->closed_) {
            co_return;
        }
        if (ec) {
            self->reset();  // the nearest a relay gets to "connection refused"
            co_return;
        }
        boost::system::error_code ignored;
        self->client_.set_option(tcp::no_delay(true), ignored);
        self->server_.set_option(tcp::no_delay(true), ignored);
        for (direction* way : {&self->to_server_, &self->to_client_}) {
            asio::co_spawn(self->client_.get_executor(), read_loop(self, *way),
                           [](const std::exception_ptr& e) { abort_on_exception("read loop", e); });
            asio::co_spawn(
                self->client_.get_executor(), write_loop(self, *way),
                [](const std::exception_ptr& e) { abort_on_exception("write loop", e); });
        }
    }

    static awaitable<void> read_loop(std::shared_ptr<connection> self, direction& way) {
        const std::size_t limit = self->context_.config.buffer_limit;
        std::array<std::byte, read_size> buffer{};
        while (!self->closed_) {
            if (way.queued_bytes >= limit) {
                co_await wait(way.reader_wake, steady::time_point::max());
                continue;
            }
            const std::size_t room = std::min(buffer.size(), limit - way.queued_bytes);
            auto [ec, n] =
                co_await way.from.async_read_some(asio::buffer(buffer.data(), room), use_tuple);
            if (self->closed_) {
                co_return;
            }
            if (ec == asio::error::eof) {
                way.sender_finished = true;
                way.writer_wake.cancel();
                co_return;
            }
            if (ec) {
                self->reset();
                co_return;
            }
            const auto received = buffer.begin() + static_cast<std::ptrdiff_t>(n);
            way.queue.push_back(
                chunk{way.schedule.next(steady::now()), {buffer.begin(), received}});
            way.queued_bytes += n;
            way.writer_wake.cancel();
        }
    }

    static awaitable<void> write_loop(std::shared_ptr<connection> self, direction& way) {
        while (!self->closed_) {
            if (way.queue.empty()) {
                if (way.sender_finished) {
                    boost::system::error_code ignored;
                    way.to.shutdown(tcp::socket::shutdown_send, ignored);  // forward the FIN
                    self->writer_finished();
                    co_return;
                }
                co_await wait(way.writer_wake, steady::time_point::max());
                continue;
            }
            // Re-evaluated after every wake: a stall may have begun while waiting.
            const auto due = std::max(way.queue.front().due, self->context_.stalled_until);
            if (steady::now() < due) {
                co_await wait(way.writer_wake, due);
                continue;
            }
            const chunk& next = way.queue.front();
            // Counted when handed over, so that a receiver who has the bytes sees them counted.
            way.bytes_relayed.fetch_add(next.bytes.size(), std::memory_order_relaxed);
            way.chunks_relayed.fetch_add(1, std::memory_order_relaxed);
            auto [ec, n] = co_await asio::async_write(way.to, asio::buffer(next.bytes), use_tuple);
            if (self->closed_) {
                co_return;
            }
            if (ec) {
                self->reset();
                co_return;
            }
            way.queued_bytes -= n;
            way.queue.pop_front();
            way.reader_wake.cancel();
        }
    }

    // Both FINs forwarded after all the bytes: the connection ended as its peers ended it.
    void writer_finished() {
        if (++writers_finished_ == 2) {
            close(false);
        }
    }

    void close(bool abruptly) {
        if (closed_) {
            return;
        }
        closed_ = true;
        boost::system::error_code ignored;
        for (tcp::socket* socket : {&client_, &server_}) {
            if (abruptly && socket->is_open()) {
                socket->set_option(asio::socket_base::linger(true, 0), ignored);
            }
            socket->close(ignored);
        }
        for (direction* way : {&to_server_, &to_client_}) {
            way->writer_wake.cancel();
            way->reader_wake.cancel();
        }
    }

    relay_context& context_;
    tcp::socket client_;
    tcp::socket server_;
    direction to_server_;
    direction to_client_;
    bool closed_{false};
    int writers_finished_{0};
};

// Runs `work` on the proxy's thread and returns when it has run (rethrowing what it threw).
template <typename Work>
void run_on(asio::io_context& io, Work work) {
    std::promise<void> done;
    auto finished = done.get_future();
    asio::post(io, [&] {
        try {
            work();
            done.set_value();
        } catch (...) {
            done.set_exception(std::current_exception());
        }
    });
    finished.get();
}

}  // namespace

delivery_schedule::delivery_schedule(std::chrono::microseconds latency,
                                     std::chrono::microseconds jitter, std::uint64_t seed)
    : latency_{latency}, jitter_{std::max(jitter, std::chrono::microseconds{0})}, random_{seed} {}

std::chrono::microseconds delivery_schedule::draw() {
    if (jitter_.count() == 0) {
        return std::max(latency_, std::chrono::microseconds{0});
    }
    const auto span = static_cast<std::uint64_t>(jitter_.count()) * 2 + 1;
    const auto offset = static_cast<std::int64_t>(random_() % span) - jitter_.count();
    return std::max(latency_ + std::chrono::microseconds{offset}, std::chrono::microseconds{0});
}

delivery_schedule::clock::time_point delivery_schedule::next(clock::time_point now) {
    last_ = std::max(now + draw(), last_);
    return last_;
}

struct latency_proxy::state {
    explicit state(const latency_proxy_config& config) : context{config} {}

    awaitable<void> accept_loop() {
        while (acceptor.is_open()) {
            auto [ec, socket] = co_await acceptor.async_accept(use_tuple);
            if (!acceptor.is_open()) {
                break;
            }
            if (ec) {
                co_await wait(backoff, steady::now() + accept_backoff);
                continue;
            }
            context.counters.connections_accepted.fetch_add(1, std::memory_order_relaxed);
            auto relay = std::make_shared<connection>(context, std::move(socket), accepted++);
            std::erase_if(connections,
                          [](const std::weak_ptr<connection>& c) { return c.expired(); });
            connections.push_back(relay);
            connection::start(relay);
        }
    }

    void reset_all() {
        for (const auto& weak : connections) {
            if (const auto relay = weak.lock()) {
                relay->reset();
            }
        }
        connections.clear();
    }

    // run() returns once the coroutines have seen their sockets closed and ended.
    void shut_down() {
        boost::system::error_code ignored;
        acceptor.close(ignored);
        backoff.cancel();
        reset_all();
        work.reset();
    }

    relay_context context;
    asio::io_context io;
    // Keeps run() going while the accept loop waits; control calls always find it running.
    asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
    tcp::acceptor acceptor{io};
    asio::steady_timer backoff{io};
    std::vector<std::weak_ptr<connection>> connections;
    std::uint64_t accepted{0};
    std::thread thread;
};

namespace {

latency_proxy_config checked(latency_proxy_config config) {
    if (config.buffer_limit == 0) {
        throw std::invalid_argument{"latency_proxy: buffer_limit must be at least 1 byte"};
    }
    return config;
}

}  // namespace

latency_proxy::latency_proxy(latency_proxy_config config)
    : state_{std::make_unique<state>(checked(config))} {
    auto& acceptor = state_->acceptor;
    acceptor.open(tcp::v4());
    acceptor.bind(tcp::endpoint{asio::ip::address_v4::loopback(), 0});
    acceptor.listen();
    port_ = acceptor.local_endpoint().port();
    asio::co_spawn(state_->io, state_->accept_loop(),
                   [](const std::exception_ptr& e) { abort_on_exception("accept loop", e); });
    state_->thread = std::thread{[s = state_.get()] { s->io.run(); }};
}

latency_proxy::~latency_proxy() {
    asio::post(state_->io, [s = state_.get()] { s->shut_down(); });
    state_->thread.join();
}

void latency_proxy::stall(std::chrono::milliseconds duration) {
    run_on(state_->io, [s = state_.get(), duration] {
        auto& until = s->context.stalled_until;
        until = std::max(until, steady::now() + duration);
    });
}

void latency_proxy::drop() {
    run_on(state_->io, [s = state_.get()] { s->reset_all(); });
}

latency_proxy_counters latency_proxy::counters() const noexcept {
    const auto& c = state_->context.counters;
    return {.connections_accepted = c.connections_accepted.load(std::memory_order_relaxed),
            .bytes_to_server = c.bytes_to_server.load(std::memory_order_relaxed),
            .chunks_to_server = c.chunks_to_server.load(std::memory_order_relaxed),
            .bytes_to_client = c.bytes_to_client.load(std::memory_order_relaxed),
            .chunks_to_client = c.chunks_to_client.load(std::memory_order_relaxed)};
}

}  // namespace ecsnet::test
