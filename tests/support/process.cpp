#include "process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace ecsnet::test {

namespace {

using clock = std::chrono::steady_clock;

[[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error(what + ": " + std::strerror(errno));
}

// This process's environment with `env` added or overridden, as posix_spawn wants it.
class env_block {
public:
    explicit env_block(const environment& env) {
        std::map<std::string, std::string> vars;
        for (char** e = environ; *e != nullptr; ++e) {
            const std::string entry{*e};
            const auto eq = entry.find('=');
            vars[entry.substr(0, eq)] = eq == std::string::npos ? "" : entry.substr(eq + 1);
        }
        for (const auto& [k, v] : env) {
            vars[k] = v;
        }
        for (const auto& [k, v] : vars) {
            strings_.push_back(k + "=" + v);
        }
        for (auto& s : strings_) {
            pointers_.push_back(s.data());
        }
        pointers_.push_back(nullptr);
    }
    char** get() { return pointers_.data(); }

private:
    std::vector<std::string> strings_;
    std::vector<char*> pointers_;
};

std::vector<char*> argv_pointers(std::vector<std::string>& argv) {
    std::vector<char*> out;
    for (auto& a : argv) {
        out.push_back(a.data());
    }
    out.push_back(nullptr);
    return out;
}

int decode_status(int status) {
    if (WIFEXITED(status)) {
        return WEXITSTATUS(status);
    }
    if (WIFSIGNALED(status)) {
        return 128 + WTERMSIG(status);
    }
    return -1;
}

// Waits up to `timeout` for the process to exit; its exit code, or nullopt.
std::optional<int> wait_exit(pid_t pid, std::chrono::milliseconds timeout) {
    const auto deadline = clock::now() + timeout;
    for (;;) {
        int status = 0;
        const pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) {
            return decode_status(status);
        }
        if (r < 0 && errno != EINTR) {
            return -1;  // not our child any more
        }
        if (clock::now() >= deadline) {
            return std::nullopt;
        }
        std::this_thread::sleep_for(10ms);
    }
}

}  // namespace

child::child(const std::vector<std::string>& argv_in, const environment& env) {
    int in_pipe[2];
    int out_pipe[2];
    int err_pipe[2];
    if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0 ||
        pipe2(err_pipe, O_CLOEXEC) != 0) {
        fail("pipe2");
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in_pipe[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
    std::vector<std::string> argv = argv_in;
    auto args = argv_pointers(argv);
    env_block envp{env};
    const int rc = posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), envp.get());
    posix_spawn_file_actions_destroy(&actions);
    close(in_pipe[0]);
    close(out_pipe[1]);
    close(err_pipe[1]);
    in_ = in_pipe[1];
    out_fd_ = out_pipe[0];
    err_fd_ = err_pipe[0];
    if (rc != 0) {
        errno = rc;
        fail("posix_spawn " + argv_in.at(0));
    }
    // A child that exits early must not kill the test with SIGPIPE on write_stdin.
    signal(SIGPIPE, SIG_IGN);
}

child::~child() {
    if (!exited_ && pid_ > 0) {
        kill(pid_, SIGKILL);
        (void)wait_exit(pid_, 10s);
    }
    for (const int fd : {in_, out_fd_, err_fd_}) {
        if (fd >= 0) {
            close(fd);
        }
    }
}

void child::write_stdin(std::string_view text) {
    while (!text.empty() && in_ >= 0) {
        const ssize_t n = write(in_, text.data(), text.size());
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return;  // the child closed its stdin (EPIPE): it will tell why in its output
        }
        text.remove_prefix(static_cast<std::size_t>(n));
    }
}

void child::close_stdin() {
    if (in_ >= 0) {
        close(in_);
        in_ = -1;
    }
}

bool child::pump(std::chrono::milliseconds wait) {
    pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    if (out_fd_ < 0 && err_fd_ < 0) {
        return false;
    }
    const int ready = poll(fds, 2, static_cast<int>(wait.count()));
    if (ready <= 0) {
        return true;
    }
    char buffer[8192];
    const auto drain = [&](int& fd, short revents, std::string& into) {
        if (fd < 0 || (revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
            return;
        }
        const ssize_t n = read(fd, buffer, sizeof buffer);
        if (n > 0) {
            into.append(buffer, static_cast<std::size_t>(n));
        } else if (n == 0 || errno != EINTR) {
            close(fd);
            fd = -1;
        }
    };
    drain(out_fd_, fds[0].revents, out_);
    drain(err_fd_, fds[1].revents, err_);
    return out_fd_ >= 0 || err_fd_ >= 0;
}

bool child::read_until(const std::function<bool(const std::string&)>& pred,
                       std::chrono::milliseconds timeout) {
    const auto deadline = clock::now() + timeout;
    while (!pred(out_)) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
        if (left <= 0ms || !pump(std::min(left, std::chrono::milliseconds{50}))) {
            return pred(out_);
        }
    }
    return true;
}

int child::wait(std::chrono::milliseconds timeout) {
    if (exited_) {
        return exit_code_;
    }
    close_stdin();
    const auto deadline = clock::now() + timeout;
    while (clock::now() < deadline && pump(50ms)) {
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
    auto code = wait_exit(pid_, std::max(left, std::chrono::milliseconds{0}));
    if (!code) {
        timed_out_ = true;
        kill(pid_, SIGKILL);
        code = wait_exit(pid_, 10s);
    }
    while (pump(0ms)) {  // what was written just before the end
    }
    exited_ = true;
    exit_code_ = code.value_or(-1);
    return exit_code_;
}

result run(const std::vector<std::string>& argv, std::string_view input, const environment& env,
           std::chrono::milliseconds timeout) {
    child c{argv, env};
    c.write_stdin(input);
    result r;
    r.exit_code = c.wait(timeout);
    r.out = c.out();
    r.err = c.err();
    r.timed_out = c.timed_out();
    return r;
}

server::server(const std::vector<std::string>& extra_args)
    : server(ECSNET_SERVER_BIN, extra_args) {}

server::server(const std::string& binary, const std::vector<std::string>& extra_args) {
    char path[] = "/tmp/ecsnet-client-test-server-XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0) {
        fail("mkstemp");
    }
    close(fd);
    log_path_ = path;

    std::vector<std::string> argv{binary,      "--port",      "0",   "--bind",
                                  "127.0.0.1", "--log-level", "info"};
    // 20 demo entities unless the test asks for another number (CLI11 refuses an option twice).
    if (std::find(extra_args.begin(), extra_args.end(), "--demo-entities") == extra_args.end()) {
        argv.insert(argv.end(), {"--demo-entities", "20"});
    }
    // A leaving owner's entities go at the next tick (as before the reconnect grace), unless
    // the test asks for a grace.
    if (std::find(extra_args.begin(), extra_args.end(), "--reconnect-grace") == extra_args.end()) {
        argv.insert(argv.end(), {"--reconnect-grace", "0"});
    }
    // Tests read the connection lines: every one is logged, unless the test asks otherwise.
    if (std::find(extra_args.begin(), extra_args.end(), "--connection-log-lines") ==
        extra_args.end()) {
        argv.insert(argv.end(), {"--connection-log-lines", "0"});
    }
    argv.insert(argv.end(), extra_args.begin(), extra_args.end());
    auto args = argv_pointers(argv);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, path, O_WRONLY | O_APPEND, 0);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    env_block envp{{}};
    const int rc = posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), envp.get());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
        errno = rc;
        fail("posix_spawn " + argv[0]);
    }

    // "listening on 127.0.0.1:PORT", within 30 s (sanitizer builds start slowly).
    // And "WebSocket listening on 127.0.0.1:PORT" (logged after it) with --ws-port.
    const std::regex listening{R"(listening on 127\.0\.0\.1:(\d+))"};
    const std::regex ws_listening{R"(WebSocket listening on 127\.0\.0\.1:(\d+))"};
    const bool websocket =
        std::find(extra_args.begin(), extra_args.end(), "--ws-port") != extra_args.end();
    const auto deadline = clock::now() + 30s;
    while (clock::now() < deadline) {
        std::smatch m;
        std::smatch ws;
        const std::string text = log();
        if (std::regex_search(text, m, listening) &&
            (!websocket || std::regex_search(text, ws, ws_listening))) {
            port_ = static_cast<std::uint16_t>(std::stoi(m[1].str()));
            if (websocket) {
                ws_port_ = static_cast<std::uint16_t>(std::stoi(ws[1].str()));
            }
            return;
        }
        if (auto code = wait_exit(pid_, 0ms)) {
            pid_ = -1;
            throw std::runtime_error(binary + " exited with " + std::to_string(*code) +
                                     " before listening:\n" + text);
        }
        std::this_thread::sleep_for(20ms);
    }
    const std::string text = log();
    stop(1s);
    throw std::runtime_error(binary + " did not log 'listening on' within 30 s:\n" + text);
}

server::~server() {
    stop();
    std::remove(log_path_.c_str());
}

bool server::stop(std::chrono::milliseconds timeout) {
    if (pid_ <= 0) {
        return true;
    }
    kill(pid_, SIGTERM);
    bool clean = wait_exit(pid_, timeout).has_value();
    if (!clean) {
        kill(pid_, SIGKILL);
        (void)wait_exit(pid_, 10s);
    }
    pid_ = -1;
    return clean;
}

std::string server::log() const {
    std::ifstream in{log_path_};
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::uint16_t closed_port() {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fail("socket");
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    socklen_t length = sizeof address;
    if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        close(fd);
        fail("bind");
    }
    close(fd);  // never listened: connecting is refused
    return ntohs(address.sin_port);
}

std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in{text};
    for (std::string line; std::getline(in, line);) {
        out.push_back(line);
    }
    return out;
}

}  // namespace ecsnet::test
