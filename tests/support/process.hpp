#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// Child processes for the end-to-end tests: the real ecsnet-server and ecsnet-client
// binaries, started with posix_spawn. Every wait is bounded; destructors kill what still
// runs, so a failing test leaves no process behind.
namespace ecsnet::test {

using namespace std::chrono_literals;

using environment = std::vector<std::pair<std::string, std::string>>;

// A process with pipes on stdin, stdout and stderr.
class child {
public:
    // argv[0] is the path of the binary. `env` is added to (or overrides) this environment.
    explicit child(const std::vector<std::string>& argv, const environment& env = {});
    child(const child&) = delete;
    child& operator=(const child&) = delete;
    ~child();

    void write_stdin(std::string_view text);
    void close_stdin();

    // Collects output until pred(stdout so far) holds, the process ends or the timeout passes.
    bool read_until(const std::function<bool(const std::string&)>& pred,
                    std::chrono::milliseconds timeout);
    // Closes stdin, collects the output until the process exits; kills it (SIGKILL) after
    // the timeout and then reports timed_out. Returns the exit code (128 + signal if killed).
    int wait(std::chrono::milliseconds timeout);

    [[nodiscard]] pid_t pid() const noexcept { return pid_; }
    [[nodiscard]] const std::string& out() const noexcept { return out_; }
    [[nodiscard]] const std::string& err() const noexcept { return err_; }
    [[nodiscard]] bool timed_out() const noexcept { return timed_out_; }

private:
    // Reads what is available within `wait`; false once both pipes reached EOF.
    bool pump(std::chrono::milliseconds wait);
    bool reap(bool block_briefly);

    pid_t pid_{-1};
    int in_{-1};
    int out_fd_{-1};
    int err_fd_{-1};
    std::string out_;
    std::string err_;
    bool exited_{false};
    int exit_code_{-1};
    bool timed_out_{false};
};

struct result {
    int exit_code = -1;
    std::string out;
    std::string err;
    bool timed_out = false;
};

// Runs a process to completion, with `input` on its stdin.
result run(const std::vector<std::string>& argv, std::string_view input = {},
           const environment& env = {}, std::chrono::milliseconds timeout = 60s);

// ecsnet-server on 127.0.0.1 and a free port (--port 0), with 20 demo entities unless
// extra_args has --demo-entities and --reconnect-grace 0 unless it has --reconnect-grace, its
// log in a temporary file. The
// constructor waits (bounded) for "listening on 127.0.0.1:PORT"; the destructor sends SIGTERM,
// waits a bounded time, then SIGKILL.
class server {
public:
    explicit server(const std::vector<std::string>& extra_args = {});
    // Another game's server binary (ecsnet::server::run takes the same options).
    server(const std::string& binary, const std::vector<std::string>& extra_args);
    server(const server&) = delete;
    server& operator=(const server&) = delete;
    ~server();

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    // With --ws-port in the arguments: its port, from "WebSocket listening on"; else 0.
    [[nodiscard]] std::uint16_t ws_port() const noexcept { return ws_port_; }
    [[nodiscard]] pid_t pid() const noexcept { return pid_; }
    [[nodiscard]] std::string log() const;
    // SIGTERM and a bounded wait; true when it exited.
    bool stop(std::chrono::milliseconds timeout = 10s);

private:
    pid_t pid_{-1};
    std::uint16_t port_{0};
    std::uint16_t ws_port_{0};
    std::string log_path_;
};

// A TCP port on 127.0.0.1 where nothing listens (bound, then released).
std::uint16_t closed_port();

// The lines of a text, without their newlines (a last line without newline included).
std::vector<std::string> lines(const std::string& text);

}  // namespace ecsnet::test
