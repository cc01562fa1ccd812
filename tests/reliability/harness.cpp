#include "harness.hpp"

#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <thread>
#include <variant>

#include "http_get.hpp"
#include "process.hpp"

namespace ecsnet::test {

std::optional<std::size_t> rss_kib(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("VmRSS:", 0) == 0) {
            return static_cast<std::size_t>(std::stoull(line.substr(6)));
        }
    }
    return std::nullopt;
}

std::optional<std::size_t> fd_count(pid_t pid) {
    DIR* dir = ::opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
    if (dir == nullptr) {
        return std::nullopt;
    }
    std::size_t n = 0;
    while (const dirent* entry = ::readdir(dir)) {
        if (entry->d_name[0] != '.') {
            ++n;
        }
    }
    ::closedir(dir);
    return n;
}

std::map<int, std::string> fd_targets(pid_t pid) {
    const std::string dir_path = "/proc/" + std::to_string(pid) + "/fd";
    std::map<int, std::string> targets;
    DIR* dir = ::opendir(dir_path.c_str());
    if (dir == nullptr) {
        return targets;
    }
    while (const dirent* entry = ::readdir(dir)) {
        if (entry->d_name[0] == '.') {
            continue;
        }
        std::array<char, 256> target{};
        const std::string link = dir_path + "/" + entry->d_name;
        const ssize_t n = ::readlink(link.c_str(), target.data(), target.size() - 1);
        targets.emplace(
            std::atoi(entry->d_name),
            n < 0 ? std::string{"?"} : std::string(target.data(), static_cast<std::size_t>(n)));
    }
    ::closedir(dir);
    return targets;
}

namespace {

// The TCP sockets the process can see, by inode: "STATE local -> remote" (addresses in the
// kernel's hexadecimal form).
std::map<std::string, std::string> tcp_sockets_by_inode(pid_t pid) {
    static constexpr std::array<const char*, 12> states{
        "?",         "ESTABLISHED", "SYN_SENT",   "SYN_RECV", "FIN_WAIT1", "FIN_WAIT2",
        "TIME_WAIT", "CLOSE",       "CLOSE_WAIT", "LAST_ACK", "LISTEN",    "CLOSING"};
    std::map<std::string, std::string> sockets;
    for (const char* table : {"tcp", "tcp6"}) {
        std::ifstream in("/proc/" + std::to_string(pid) + "/net/" + table);
        std::string line;
        std::getline(in, line);  // the header
        while (std::getline(in, line)) {
            std::istringstream fields(line);
            std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
            if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >>
                  uid >> timeout >> inode)) {
                continue;
            }
            const auto code = std::stoul(state, nullptr, 16);
            sockets[inode] = std::string(code < states.size() ? states[code] : "?") + " " + local +
                             " -> " + remote + " queues " + queues;
        }
    }
    return sockets;
}

}  // namespace

std::string describe_new_fds(pid_t pid, const std::map<int, std::string>& before) {
    const auto sockets = tcp_sockets_by_inode(pid);
    std::string out;
    for (const auto& [fd, target] : fd_targets(pid)) {
        const auto old = before.find(fd);
        if (old != before.end() && old->second == target) {
            continue;
        }
        out += "fd " + std::to_string(fd) + " -> " + target;
        if (target.starts_with("socket:[")) {
            const auto socket = sockets.find(target.substr(8, target.size() - 9));
            out += socket == sockets.end() ? std::string{" (not a TCP socket)"}
                                           : " (" + socket->second + ")";
        }
        out += "\n";
    }
    return out.empty() ? std::string{"(none)"} : out;
}

std::optional<double> cpu_seconds(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(in, line)) {
        return std::nullopt;
    }
    // The fields after the command name, which is in parentheses and may contain spaces;
    // utime and stime are fields 14 and 15.
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    std::string field;
    unsigned long long utime = 0;
    unsigned long long stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
        if (i == 14) {
            utime = std::stoull(field);
        } else if (i == 15) {
            stime = std::stoull(field);
        }
    }
    return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

std::vector<server_stats> parse_stats(const std::string& log) {
    static const std::regex line{
        R"(stats: tick (\d+) p50 ([\d.]+) ms p99 ([\d.]+) ms, (\d+) entities, (\d+) clients, )"
        R"((\d+) B/s out, (\d+) overruns, (\d+) resyncs, (\d+) rate-limited, (\d+) invalid frames)"};
    std::vector<server_stats> out;
    for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator();
         ++it) {
        const std::smatch& m = *it;
        server_stats s;
        s.tick = std::stoull(m[1].str());
        s.tick_p50_ms = std::stod(m[2].str());
        s.tick_p99_ms = std::stod(m[3].str());
        s.entities = std::stoull(m[4].str());
        s.clients = std::stoull(m[5].str());
        s.bytes_out_per_s = std::stod(m[6].str());
        s.overruns = std::stoull(m[7].str());
        s.resyncs = std::stoull(m[8].str());
        s.rate_limited = std::stoull(m[9].str());
        s.invalid_frames = std::stoull(m[10].str());
        out.push_back(s);
    }
    return out;
}

std::size_t count_lines(const std::string& log, std::string_view needle) {
    std::istringstream in(log);
    std::string line;
    std::size_t n = 0;
    while (std::getline(in, line)) {
        if (line.find(needle) != std::string::npos) {
            ++n;
        }
    }
    return n;
}

std::string sanitizer_report(const std::string& log) {
    for (const std::string_view marker :
         {"ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"}) {
        if (const auto at = log.find(marker); at != std::string::npos) {
            const auto from = at < 200 ? 0 : at - 200;
            return log.substr(from, 2000);
        }
    }
    return {};
}

double percentile(std::vector<double> values, double p) {
    if (values.empty()) {
        return 0.0;
    }
    const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(values.size())));
    const auto k = std::max<std::size_t>(rank, 1) - 1;
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
    return values[k];
}

std::optional<int> exit_status_of(pid_t pid, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        siginfo_t info{};
        if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
            return std::nullopt;
        }
        if (info.si_pid == pid) {
            return info.si_code == CLD_EXITED ? info.si_status : 128 + info.si_status;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds{20});
    }
    return std::nullopt;
}

std::optional<std::uint16_t> admin_port(const server& s, std::chrono::milliseconds timeout) {
    static const std::regex line{R"(admin endpoint on http://127\.0\.0\.1:(\d+))"};
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        // Only the log's start: the line comes at start-up, before any traffic.
        const std::string head = s.log().substr(0, 16384);
        std::smatch match;
        if (std::regex_search(head, match, line)) {
            return static_cast<std::uint16_t>(std::stoi(match[1].str()));
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            return std::nullopt;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds{20});
    }
}

std::optional<nlohmann::json> admin_status(std::uint16_t admin_port) {
    const http_reply reply = http_get(admin_port, "/status", std::chrono::seconds{5});
    if (reply.status != 200) {
        return std::nullopt;
    }
    auto parsed = nlohmann::json::parse(reply.body, nullptr, false);
    if (parsed.is_discarded()) {
        return std::nullopt;
    }
    return parsed;
}

figures::figures(const std::string& test) : json_{"{\"test\":\"" + test + "\""} {}

std::string figures::format(double value) {
    std::array<char, 32> buffer{};
    std::snprintf(buffer.data(), buffer.size(), "%.2f", value);
    return buffer.data();
}

figures& figures::add_number(const std::string& key, const std::string& text) {
    json_ += ",\"" + key + "\":" + text;
    testing::Test::RecordProperty(key, text);
    return *this;
}

figures& figures::add(const std::string& key, const std::string& value) {
    std::string escaped;
    for (const char c : value) {
        if (c == '"' || c == '\\') {
            escaped += '\\';
        }
        escaped += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
    }
    json_ += ",\"" + key + "\":\"" + escaped + "\"";
    testing::Test::RecordProperty(key, value);
    return *this;
}

void figures::print() const { std::cout << "FIGURES " << json_ << "}\n" << std::flush; }

std::vector<std::uint32_t> send_numbered(client::connection& c,
                                         std::vector<protocol::client_message>& commands) {
    std::vector<std::uint32_t> ids;
    for (auto& command : commands) {
        const std::uint32_t id = c.next_request_id();
        std::visit(
            [&](auto& m) {
                if constexpr (requires { m.request_id; }) {
                    m.request_id = id;
                }
            },
            command);
        ids.push_back(id);
        c.send(command);
    }
    return ids;
}

}  // namespace ecsnet::test
