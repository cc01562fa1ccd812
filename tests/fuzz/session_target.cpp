// fuzz_session: the real server (ecsnet::server::server, sessions, command queue, tick) fed over
// a real TCP connection on 127.0.0.1. Unlike fuzz_client_frame, nothing here models the
// session: the bytes take the path a remote client's bytes take. Only the server's public API
// is used (constructor, start, port, tick, world, clients).
//
// One server lives for the whole process, on an io_context this thread runs between steps of
// the client below; every input is one connection, closed at the end of the input.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include <openssl/crypto.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "ecsnet/demo/game.hpp"
#include "ecsnet/protocol/checksum.hpp"
#include "ecsnet/protocol/components.hpp"
#include "ecsnet/protocol/frame.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/protocol/mirror.hpp"
#include "ecsnet/server/admission/connect_token.hpp"
#include "ecsnet/server/server.hpp"
#include "fuzz_input.hpp"
#include "fuzz_targets.hpp"

namespace ecsnet::fuzz {

namespace {

namespace asio = boost::asio;
namespace proto = ecsnet::protocol;
using asio::ip::tcp;
using clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

[[noreturn]] void fail(const std::string& message) {
    report_failure("fuzz_session: " + message);
}

#define ECSNET_SESSION_CHECK(condition, detail)                                \
    do {                                                                       \
        if (!(condition)) {                                                    \
            ::ecsnet::fuzz::fail(std::string{#condition} + " -- " + (detail)); \
        }                                                                      \
    } while (false)

// ECSNET_FUZZ_TRACE=1 (tracing(), failure.cpp) prints the steps of each input with their
// times, to understand a finding.
void trace_since(const clock::time_point since, const std::string& what) {
    if (tracing()) {
        const auto us = std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - since);
        std::fprintf(stderr, "trace: %7lld us  %s\n", static_cast<long long>(us.count()),
                     what.c_str());
    }
}

// Errors the server logs (an exception out of a session or the tick, a failed write of our
// own making aside) are findings: this sink keeps the first one.
class error_sink final : public spdlog::sinks::base_sink<std::mutex> {
public:
    std::string take() {
        const std::lock_guard lock{mutex_};
        return std::exchange(first_, {});
    }

protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
        if (msg.level >= spdlog::level::err && first_.empty()) {
            first_.assign(msg.payload.data(), msg.payload.size());
        }
    }
    void flush_() override {}

private:
    std::string first_;
};

// The demo game (games/demo), its 16 entities moving: Small world, fast ticks, a checksum every tick, short timeouts: many ticks per second of
// fuzzing, each input seeing a few of them.
server::server_config fuzz_config() {
    server::server_config c;
    c.bind = "127.0.0.1";
    c.port = 0;
    c.tick_rate = 1000.0;
    c.max_clients = 4;
    c.demo_entities = 16;
    c.max_entities_per_client = 16;
    c.max_entities = 64;
    c.checksum_interval = 1;
    c.checksum_slice = 32;  // several slices: the rotation is exercised too
    c.hello_timeout = 500ms;
    c.idle_timeout = 2000ms;
    c.frame_timeout = 500ms;
    c.stall_timeout = 1000ms;
    c.shutdown_grace = 100ms;
    c.stats_interval = std::chrono::seconds{3600};
    c.reconnect_grace = 0ms;  // a departed client's entities go at the next tick (checked)
    c.input_buffer_ticks = 64;  // rebase_inputs() stamps inputs up to 63 ticks ahead
    return c;
}

constexpr std::string_view fuzz_token_secret = "fuzz-secret-of-at-least-32-bytes";

// The same with connect tokens (HS256, flags bit 6): the Hello the harness sends carries a
// fresh token, or (bit 7) one with a byte of its signature changed.
server::server_config fuzz_token_config() {
    server::server_config c = fuzz_config();
    c.token_secret = std::string{fuzz_token_secret};
    c.world_id = "fuzz";
    return c;
}

// The same with interest management (the demo's grid; flags bit 5): each client receives what
// lies near its Focus, its own and global entities, within a byte budget small enough to defer.
server::server_config fuzz_interest_config() {
    server::server_config c = fuzz_config();
    c.interest_radius = 200.0F;
    c.interest_cell = 100.0F;
    c.client_budget = 20'000.0;
    return c;
}

// The process's one logger, shared by its servers.
const std::shared_ptr<error_sink>& the_errors() {
    static const auto* errors = [] {
        auto* sink = new std::shared_ptr<error_sink>(std::make_shared<error_sink>());
        auto logger = std::make_shared<spdlog::logger>("ecsnet", *sink);
        logger->set_level(spdlog::level::err);
        spdlog::set_default_logger(logger);
        return sink;
    }();
    return *errors;
}

struct harness {
    std::shared_ptr<error_sink> errors = the_errors();
    asio::io_context io;
    server::server service;

    explicit harness(server::server_config config)
        : service{io, std::move(config), fuzz_game()} {
        service.start();
    }
};

// Created on first use: each serves every input of the process that selects it (flags bit 5:
// the one with interest management, bit 6: the one with tokens).
enum class server_kind { whole_world, interest, tokens };

harness* servers[3] = {};

}  // namespace

// Stopped and joined before the process ends: at exit a server's I/O threads were still ending
// the last input's session while exit() freed the logger under them (ASan, heap-use-after-free
// in an I/O thread, in CI). The run-down may still admit a Hello that arrived last.
void fuzz_session_stop() noexcept {
    for (harness*& h : servers) {
        if (h == nullptr) {
            continue;
        }
        try {
            h->service.stop();
            h->io.restart();
            h->io.run_for(std::chrono::seconds{2});  // the sessions flush and close
        } catch (const std::exception& e) {
            std::fprintf(stderr, "fuzz_session: stopping a server: %s\n", e.what());
        }
        delete h;  // joins its I/O threads
        h = nullptr;
    }
}

namespace {

harness& the_server(server_kind kind) {
    harness*& h = servers[static_cast<int>(kind)];
    if (h == nullptr) {
        // libFuzzer ends with exit(): the servers stop in an atexit handler, which must run
        // before what the run-down uses is gone. Handlers run in the reverse order of their
        // registration (static objects' destructors among them), so the logger and OpenSSL, which
        // registers its cleanup when first initialised, are made first: a Hello admitted in the
        // run-down checked its token's HMAC after OpenSSL's cleanup (SEGV in CI).
        static const bool stops_at_exit = [] {
            (void)the_errors();
            // With no option it returns before registering; these are what its first use asks.
            OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CONFIG, nullptr);
            return std::atexit(&fuzz_session_stop) == 0;
        }();
        if (!stops_at_exit) {
            fail("cannot register the servers' stop at exit");
        }
        h = new harness{kind == server_kind::tokens     ? fuzz_token_config()
                        : kind == server_kind::interest ? fuzz_interest_config()
                                                        : fuzz_config()};
    }
    return *h;
}

server_kind kind_of(std::uint8_t flags) noexcept {
    return (flags & 64U) != 0   ? server_kind::tokens
           : (flags & 32U) != 0 ? server_kind::interest
                                : server_kind::whole_world;
}

// A token the token server admits once (a new player and jti each time), or with one
// character of its signature changed.
std::string connect_token(bool corrupt) {
    static std::uint64_t players = 0;
    server::connect_token_claims claims;
    claims.player = "fuzz-player-" + std::to_string(++players);
    claims.world = "fuzz";
    claims.jti = server::random_jti();
    claims.expires = std::chrono::system_clock::now() + std::chrono::seconds{10};
    std::string token =
        server::issue_connect_token(claims, server::token_algorithm::hs256, fuzz_token_secret);
    if (corrupt) {
        char& c = token[token.size() - 5];
        c = c == 'A' ? 'B' : 'A';
    }
    return token;
}

// Runs the server's io_context until `done()` or `timeout`; false on timeout.
template <typename Done>
bool run_until(harness& h, Done&& done, std::chrono::milliseconds timeout) {
    const auto deadline = clock::now() + timeout;
    while (!done()) {
        if (clock::now() >= deadline) {
            return false;
        }
        h.io.run_one_for(1ms);
    }
    return true;
}

// The client end of one connection: asynchronous on the server's io_context, so the server
// runs while it waits. Its destructor closes the socket and runs the io_context until its own
// handlers have completed, so that none outlives it (even when a check throws).
class fuzz_client {
public:
    explicit fuzz_client(harness& h) : h_{h}, socket_{h.io} {
        bool connected = false;
        boost::system::error_code error;
        ++pending_;
        socket_.async_connect({asio::ip::make_address("127.0.0.1"), h.service.port()},
                              [&](const boost::system::error_code& ec) {
                                  --pending_;
                                  error = ec;
                                  connected = true;
                              });
        ECSNET_SESSION_CHECK(run_until(
                                 h_, [&] { return connected; }, 2000ms),
                             "the server did not accept within 2 s");
        ECSNET_SESSION_CHECK(!error, error.message());
        socket_.set_option(tcp::no_delay{true});
        start_read();
    }
    fuzz_client(const fuzz_client&) = delete;
    fuzz_client& operator=(const fuzz_client&) = delete;

    ~fuzz_client() {
        boost::system::error_code ignored;
        socket_.close(ignored);
        run_until(
            h_, [&] { return pending_ == 0; }, 2000ms);
    }

    // Writes the bytes; false once the connection failed (the server closed it).
    bool write(std::span<const std::uint8_t> bytes) {
        if (write_failed_) {
            return false;
        }
        bool done = false;
        ++pending_;
        asio::async_write(socket_, asio::buffer(bytes.data(), bytes.size()),
                          [&](const boost::system::error_code& ec, std::size_t) {
                              --pending_;
                              write_failed_ = static_cast<bool>(ec);
                              done = true;
                          });
        if (!run_until(
                h_, [&] { return done; }, 2000ms)) {
            // The server stopped reading (backpressure): cancel, and let the handler run
            // while `done` lives.
            boost::system::error_code ignored;
            socket_.cancel(ignored);
            run_until(
                h_, [&] { return done; }, 2000ms);
            write_failed_ = true;
        }
        h_.io.poll();  // the server reads what arrived
        return !write_failed_;
    }

    void shutdown_send() {
        boost::system::error_code ignored;
        socket_.shutdown(tcp::socket::shutdown_send, ignored);
    }

    [[nodiscard]] bool closed_by_server() const noexcept { return eof_; }

    // Complete frames received since the last call.
    std::vector<std::vector<std::uint8_t>> take_frames() {
        std::vector<std::vector<std::uint8_t>> out;
        std::span<const std::uint8_t> frame;
        for (;;) {
            const auto status = reader_.next(frame);
            ECSNET_SESSION_CHECK(status != proto::frame_reader::status::oversize,
                                 "the server announced a frame over 64 MiB");
            if (status == proto::frame_reader::status::need_more) {
                return out;
            }
            out.emplace_back(frame.begin(), frame.end());
        }
    }

private:
    void start_read() {
        ++pending_;
        socket_.async_read_some(asio::buffer(buffer_),
                                [this](const boost::system::error_code& ec, std::size_t n) {
                                    --pending_;
                                    if (ec) {
                                        eof_ = true;
                                        return;
                                    }
                                    reader_.feed(std::span{buffer_.data(), n});
                                    start_read();
                                });
    }

    harness& h_;
    tcp::socket socket_;
    std::array<std::uint8_t, 16384> buffer_{};
    proto::frame_reader reader_{proto::default_max_server_frame, true};  // protocol 6: compact acks
    int pending_ = 0;
    bool eof_ = false;
    bool write_failed_ = false;
};

// What the client makes of the server's frames: a mirror, the owner id it was given.
class observer {
public:
    explicit observer(const server::server& service) : service_{service} {}

    // A client of the interest server holds its view, not the world: its own checksums (which
    // cover what it holds) are checked, the comparison with the whole world is not.

    void on_frame(const std::vector<std::uint8_t>& bytes) {
        std::string why;
        if (proto::is_compact(proto::read_prefix(std::span<const std::uint8_t>{bytes}.first<proto::frame_prefix_bytes>()))) {
            const auto control = proto::decode_compact_server_frame(bytes, &why);
            ECSNET_SESSION_CHECK(control.has_value(), "a compact frame does not decode: " + why);
            ECSNET_SESSION_CHECK(std::holds_alternative<proto::input_ack>(*control),
                                 "a compact frame that is not an InputAck");
            on_control(*control);
            return;
        }
        const auto* message = proto::verify_server_frame(bytes, &why);
        ECSNET_SESSION_CHECK(message != nullptr, "the server sent an unverifiable frame: " + why);
        const auto type = message->body_type();
        if (type == wire::ServerBody::Snapshot || type == wire::ServerBody::Delta ||
            type == wire::ServerBody::Checksum) {
            ECSNET_SESSION_CHECK(welcomed_, "replication before Welcome");
            const bool applied = mirror_.apply(*message);
            ECSNET_SESSION_CHECK(applied || !mirror_.ready(),
                                 "the mirror refused a frame: " + mirror_.error());
            if (const auto reason = mirror_.take_resync_reason()) {
                fail("the server's own stream is inconsistent to its client: " + *reason);
            }
            ECSNET_SESSION_CHECK(mirror_.statistics().checksums_mismatched == 0,
                                 "checksum mismatch at tick " + std::to_string(mirror_.tick()));
            if (type != wire::ServerBody::Checksum) {
                check_caught_up();
            }
            return;
        }
        std::string control_why;
        const auto control = proto::decode_server_control(*message, &control_why);
        ECSNET_SESSION_CHECK(control.has_value(),
                             "a control frame does not decode: " + control_why);
        on_control(*control);
    }

    void on_control(const proto::server_control& message) {
        const auto* control = &message;
        if (const auto* w = std::get_if<proto::welcome>(&*control)) {
            ECSNET_SESSION_CHECK(!welcomed_, "a second Welcome");
            // The client's version (a seed's own Hello may be a version-3 one).
            ECSNET_SESSION_CHECK(w->version >= proto::oldest_protocol_version &&
                                     w->version <= proto::protocol_version,
                                 "Welcome version " + std::to_string(w->version));
            ECSNET_SESSION_CHECK(w->components == service_.types().types(),
                                 "Welcome's schema differs from the server's registry");
            welcomed_ = true;
            owner_ = w->client_id;
            mirror_.set_schema(w->components);  // as client::connection does
        } else if (std::holds_alternative<proto::disconnect>(*control)) {
            disconnected_ = true;
        } else if (const auto* ack = std::get_if<proto::input_ack>(&*control)) {
            // The last frame of its tick: the mirror has that tick's Delta (unless resyncing).
            ECSNET_SESSION_CHECK(!disconnected_, "a frame after Disconnect");
            ECSNET_SESSION_CHECK(!mirror_.ready() || ack->tick == mirror_.tick(),
                                 "InputAck of tick " + std::to_string(ack->tick) +
                                     " after the Delta of tick " + std::to_string(mirror_.tick()));
            ECSNET_SESSION_CHECK(ack->applied_tick <= ack->tick, "an ack of a tick not run");
        } else {
            ECSNET_SESSION_CHECK(!disconnected_, "a frame after Disconnect");
        }
    }

    [[nodiscard]] bool welcomed() const noexcept { return welcomed_; }
    [[nodiscard]] std::uint32_t owner() const noexcept { return owner_; }

private:
    // Between ticks nothing writes to the world: a mirror at the server's tick equals it.
    void check_caught_up() {
        if (!mirror_.ready() || mirror_.tick() != service_.tick() ||
            service_.config().interest_radius > 0.0F) {
            return;
        }
        ECSNET_SESSION_CHECK(mirror_.size() == service_.world().alive(),
                             std::to_string(mirror_.size()) + " entities mirrored, " +
                                 std::to_string(service_.world().alive()) + " in the world");
        ECSNET_SESSION_CHECK(
            mirror_.checksum() == proto::checksum::of_world(service_.world(), service_.types()),
            "the mirror differs from the world at tick " + std::to_string(mirror_.tick()));
    }

    const server::server& service_;
    proto::mirror mirror_;
    bool welcomed_ = false;
    bool disconnected_ = false;
    std::uint32_t owner_ = 0;
};

std::size_t owned_by(const ecs::World& world, std::uint32_t owner) {
    const auto* storage = world.find_storage<proto::Owner>();
    if (storage == nullptr) {
        return 0;
    }
    const auto values = storage->values();
    return static_cast<std::size_t>(std::count_if(
        values.begin(), values.end(), [&](const proto::Owner& o) { return o.client == owner; }));
}

void drain(fuzz_client& client, observer& seen) {
    for (const auto& frame : client.take_frames()) {
        seen.on_frame(frame);
    }
}

// The corpus cannot know the server's tick, so an Input's first_tick in it means "that many
// ticks (mod 64) after the tick at which the connection starts": each whole frame of the
// payload that decodes as an Input is re-encoded with its tick rebased; every other byte is
// sent as it is.
std::vector<std::uint8_t> rebase_inputs(std::span<const std::uint8_t> payload,
                                        const proto::schema& types, std::uint64_t now) {
    std::vector<std::uint8_t> out;
    out.reserve(payload.size());
    std::size_t at = 0;
    while (payload.size() - at >= proto::frame_prefix_bytes) {
        std::array<std::uint8_t, proto::frame_prefix_bytes> prefix{};
        std::copy_n(payload.begin() + static_cast<std::ptrdiff_t>(at), prefix.size(), prefix.begin());
        const std::size_t length = proto::read_prefix(prefix);
        if (length > payload.size() - at - proto::frame_prefix_bytes) {
            break;
        }
        const auto frame = payload.subspan(at, proto::frame_prefix_bytes + length);
        at += frame.size();
        // A copy: FlatBuffers reads scalars in place, so the frame must start aligned.
        const std::vector<std::uint8_t> aligned(frame.begin(), frame.end());
        proto::decoded_client decoded = proto::decode_client_frame(aligned, types);
        if (auto* in = decoded.message ? std::get_if<proto::input>(&*decoded.message) : nullptr) {
            in->first_tick = now + 1 + in->first_tick % 64;
            const proto::frame rebased = proto::encode(*decoded.message, types);
            out.insert(out.end(), rebased->begin(), rebased->end());
        } else {
            out.insert(out.end(), frame.begin(), frame.end());
        }
    }
    out.insert(out.end(), payload.begin() + static_cast<std::ptrdiff_t>(at), payload.end());
    return out;
}

void run_session(harness& h, std::span<const std::uint8_t> input) {
    const std::uint8_t flags = input.empty() ? 0 : input[0];
    const std::vector<std::uint8_t> rebased = rebase_inputs(
        input.empty() ? input : input.subspan(1), h.service.types().types(), h.service.tick());
    const std::span<const std::uint8_t> payload{rebased};
    const std::size_t chunk = session_chunks[(flags >> 1U) & 7U];
    const auto& config = h.service.config();

    const auto started = clock::now();
    observer seen{h.service};
    {
        fuzz_client client{h};
        trace_since(started, "connected at tick " + std::to_string(h.service.tick()));
        if ((flags & 1U) != 0) {
            proto::hello hello{proto::protocol_version, "fuzz", ""};
            if (!h.service.config().token_secret.empty()) {
                hello.connect_token = connect_token((flags & 128U) != 0);
            }
            client.write(*proto::encode(proto::client_message{hello}, h.service.types().types()));
        }
        for (std::size_t at = 0; at < payload.size(); at += chunk) {
            if (!client.write(payload.subspan(at, std::min(chunk, payload.size() - at)))) {
                break;
            }
            drain(client, seen);
        }
        if ((flags & 16U) != 0) {
            client.shutdown_send();
        }
        trace_since(started, "sent " + std::to_string(payload.size()) + " bytes in chunks of " +
                           std::to_string(chunk));
        // Two ticks: the commands sent are applied and answered, their changes replicated.
        const std::uint64_t sent_at = h.service.tick();
        ECSNET_SESSION_CHECK(run_until(
                                 h,
                                 [&] {
                                     drain(client, seen);
                                     return client.closed_by_server() ||
                                            h.service.tick() >= sent_at + 2;
                                 },
                                 2000ms),
                             "the server stopped ticking");
        drain(client, seen);
        trace_since(started, client.closed_by_server() ? "closed by the server" : "two ticks later");
    }
    trace_since(started, "closed");

    // The client closed: the server lets go of the connection, then of its entities.
    ECSNET_SESSION_CHECK(run_until(
                             h, [&] { return h.service.clients() == 0; }, 2000ms),
                         "the server still counts the connection 2 s after it closed");
    const std::uint64_t closed_at = h.service.tick();
    ECSNET_SESSION_CHECK(run_until(
                             h, [&] { return h.service.tick() >= closed_at + 1; }, 2000ms),
                         "the server stopped ticking");
    if (seen.welcomed() && !config.keep_entities_on_disconnect) {
        ECSNET_SESSION_CHECK(owned_by(h.service.world(), seen.owner()) == 0,
                             "entities of a departed client are still in the world");
    }
    ECSNET_SESSION_CHECK(h.service.world().alive() <= config.max_entities,
                         std::to_string(h.service.world().alive()) + " entities");
    trace_since(started, "connection gone, a tick later; " + std::to_string(h.service.stats().ticks) +
                       " ticks, " + std::to_string(h.service.stats().overruns) + " overruns");
    if (const std::string error = h.errors->take(); !error.empty()) {
        fail("the server logged an error: " + error);
    }
}

}  // namespace

void fuzz_session_one(const std::uint8_t* data, std::size_t size) {
    harness& h = the_server(kind_of(size > 0 ? data[0] : 0));
    try {
        run_session(h, {data, size});
    } catch (const check_failure&) {
        throw;
    } catch (const std::exception& e) {
        fail(std::string{"an exception escaped: "} + e.what());
    }
}

}  // namespace ecsnet::fuzz
