// ecsnet-server as a child process, for the tests that run the real binary
// (server_process_test, agones_test): ECSNET_SERVER_BINARY names it.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;  // NOLINT: POSIX

#ifndef ECSNET_SERVER_BINARY
#error "ECSNET_SERVER_BINARY must name the ecsnet-server executable"
#endif

namespace ecsnet::test {

// ecsnet-server started with posix_spawn, stdout and stderr going to a temporary file. The
// destructor kills it (SIGKILL) and reaps it if it is still running, whatever the test did.
class server_process {
public:
    explicit server_process(const std::vector<std::string>& args) {
        char path[] = "/tmp/ecsnet-server-test-XXXXXX";
        const int log_fd = ::mkstemp(path);
        if (log_fd < 0) {
            throw std::runtime_error("mkstemp failed");
        }
        log_path_ = path;

        std::vector<std::string> owned{ECSNET_SERVER_BINARY};
        owned.insert(owned.end(), args.begin(), args.end());
        std::vector<char*> argv;
        for (std::string& a : owned) {
            argv.push_back(a.data());
        }
        argv.push_back(nullptr);

        posix_spawn_file_actions_t actions;
        ::posix_spawn_file_actions_init(&actions);
        ::posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
        ::posix_spawn_file_actions_adddup2(&actions, log_fd, 1);
        ::posix_spawn_file_actions_adddup2(&actions, log_fd, 2);
        ::posix_spawn_file_actions_addclose(&actions, log_fd);
        const int rc =
            ::posix_spawn(&pid_, ECSNET_SERVER_BINARY, &actions, nullptr, argv.data(), environ);
        ::posix_spawn_file_actions_destroy(&actions);
        ::close(log_fd);  // the child has its own copy; we read the file by name
        if (rc != 0) {
            ::unlink(log_path_.c_str());
            throw std::runtime_error("posix_spawn " + std::string{ECSNET_SERVER_BINARY} +
                                     " failed: " + std::to_string(rc));
        }
        started_ = std::chrono::steady_clock::now();
    }
    server_process(const server_process&) = delete;
    server_process& operator=(const server_process&) = delete;

    ~server_process() {
        if (!status_) {
            ::kill(pid_, SIGKILL);
            int ignored = 0;
            ::waitpid(pid_, &ignored, 0);
        }
        ::unlink(log_path_.c_str());
    }

    void signal(int number) const { ::kill(pid_, number); }

    // The wait status once the process exited, at most `timeout` from now.
    std::optional<int> wait_exit(std::chrono::milliseconds timeout) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (!status_) {
            int status = 0;
            const pid_t r = ::waitpid(pid_, &status, WNOHANG);
            if (r == pid_) {
                status_ = status;
                exited_ = std::chrono::steady_clock::now();
                break;
            }
            if (r < 0 || std::chrono::steady_clock::now() >= deadline) {
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds{10});
        }
        return status_;
    }

    // Exit code of a process that exited normally, else -1 (killed by a signal or running).
    int exit_code(std::chrono::milliseconds timeout) {
        const auto status = wait_exit(timeout);
        return status && WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
    }

    // From the start to the exit.
    [[nodiscard]] std::chrono::milliseconds lifetime() const {
        return std::chrono::duration_cast<std::chrono::milliseconds>(exited_ - started_);
    }

    [[nodiscard]] std::string log() const {
        std::ifstream in{log_path_};
        std::ostringstream text;
        text << in.rdbuf();
        return text.str();
    }

    // Waits until the log holds `needle`, while calling `meanwhile` (for example to keep a
    // client reading). False when the process exits first or the time runs out.
    bool wait_for_log(const std::string& needle, std::chrono::milliseconds timeout,
                      const std::function<void()>& meanwhile = {}) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (std::chrono::steady_clock::now() < deadline) {
            if (log().find(needle) != std::string::npos) {
                return true;
            }
            if (wait_exit(std::chrono::milliseconds{0})) {
                return false;
            }
            if (meanwhile) {
                meanwhile();
            } else {
                std::this_thread::sleep_for(std::chrono::milliseconds{20});
            }
        }
        return log().find(needle) != std::string::npos;
    }

    // The port of its "listening on 127.0.0.1:PORT" line.
    std::optional<std::uint16_t> port(std::chrono::milliseconds timeout = std::chrono::seconds{10}) {
        if (!wait_for_log("listening on 127.0.0.1:", timeout)) {
            return std::nullopt;
        }
        std::smatch match;
        const std::string text = log();
        static const std::regex listening{R"(listening on 127\.0\.0\.1:(\d+))"};
        if (!std::regex_search(text, match, listening)) {
            return std::nullopt;
        }
        return static_cast<std::uint16_t>(std::stoi(match[1].str()));
    }

    // The port of its "admin endpoint on http://127.0.0.1:PORT" line.
    std::optional<std::uint16_t> admin_port(std::chrono::milliseconds timeout = std::chrono::seconds{10}) {
        if (!wait_for_log("admin endpoint on http://127.0.0.1:", timeout)) {
            return std::nullopt;
        }
        std::smatch match;
        const std::string text = log();
        static const std::regex admin{R"(admin endpoint on http://127\.0\.0\.1:(\d+))"};
        if (!std::regex_search(text, match, admin)) {
            return std::nullopt;
        }
        return static_cast<std::uint16_t>(std::stoi(match[1].str()));
    }

private:
    pid_t pid_{-1};
    std::string log_path_;
    std::optional<int> status_;
    std::chrono::steady_clock::time_point started_;
    std::chrono::steady_clock::time_point exited_;
};

}  // namespace ecsnet::test
