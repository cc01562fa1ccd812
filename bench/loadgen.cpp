// ecsnet-loadgen: K real clients against an ecsnet-server, measured over a fixed window.
//
// It starts the server itself (--server PATH, pinned to --server-core) or attaches to a running
// one (--port P --server-pid PID), connects K clients with full mirrors (threads pinned to
// --loadgen-core), warms up, then measures: bytes/s per client (mean, p50, p99 across clients),
// bytes per entity update, join time to a complete mirror, spawn-to-visible latency, checksum
// mismatches, server CPU % of one core and RSS from /proc (and each server thread's share),
// tick time p99 and the tick's time by stage (tick_profile) from the server's stats lines.
// Fairness across clients, for a server that cannot keep up: the smallest client's bytes/s, the
// longest time a client waited between two frames (p50, p99, max across clients: one tick
// period when nothing is late, and it counts this program's own scheduling too), the clients
// that missed a tick and those resynced (the server dropped their queue).
// Prints a table and one JSON line. 127.0.0.1 only; bounded in time. A started server logs to
// a temporary file in $TMPDIR, deleted after the run unless the run fails (its path is then
// printed); --server-log FILE keeps it in FILE.
//
// When the server has interest management (Welcome.interest_radius > 0) each client moves its
// own area of interest: a focus that starts uniformly at random in [-E, E]^2, heads in a random
// direction at --focus-speed and bounces off the edges, sent about 10 times per second. The
// clients then also report entities in view and entered/left per second.
//
// With --game arena the server is arena-server (docs/ARENA.md) and every client is a bot: once
// it finds its ship (Owner == its client id) it sends one Input per tick it receives, stamped
// --input-lead ticks past that tick, with ecsnet::arena::bot's decision; --no-input runs the
// same clients without sending any (the server's cost of input, side by side). Each Input says
// the bot was shown the tick it decided on (protocol 5's render tick: it draws the mirror's
// newest state). --laser: every bot also holds the laser (a lag-compensated shot per second
// each, docs/PREDICTION.md), --no-lag-compensation starts the server without it (the cost of
// compensation, side by side). --predict: each bot predicts its ship and bullets with the C++
// SDK's prediction (ecsnet/arena/predicted.hpp) and the report counts its mispredictions.
//
// --transport ws: the clients connect over WebSocket (a server this program starts gets
// --ws-port 0; with --port, P is the server's WebSocket port). Bytes then count each message's
// WebSocket header beside the frames (connection::bytes_received).
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <numbers>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "ecsnet/arena/bot.hpp"
#include "ecsnet/arena/components.hpp"
#include "ecsnet/arena/predicted.hpp"
#include "ecsnet/client/prediction.hpp"
#include "ecsnet/client/connection.hpp"
#include "ecsnet/demo/components.hpp"

extern char** environ;

namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
namespace protocol = ecsnet::protocol;

struct options {
    std::string server_binary;
    std::uint16_t port = 0;
    int server_pid = 0;
    std::size_t entities = 1000;
    std::size_t clients = 8;
    double tick_rate = 30.0;
    double warmup_s = 3.0;
    double window_s = 10.0;
    std::size_t spawns = 100;
    std::size_t joins = 10;
    int server_core = 0;
    int loadgen_core = 1;
    // The nice value of the clients that only watch, so that the spawn probe (client 0) gets
    // the load generator's core as soon as its frames arrive: with 1,000 clients the core is
    // saturated, and the probe otherwise measured its own thread's turn, seconds at times.
    int watcher_nice = 10;
    std::string label;
    // Where a started server's log goes, kept; empty: a temporary file, deleted after the run
    // unless the run fails.
    std::string server_log;
    // Interest management: each client's focus moves at this speed inside [-E, E]^2, E the
    // world's half extent (also given to a server this program starts). Radius, cell and budget
    // only for a server it starts (0 radius: whole world; budget < 0: the server's default).
    double focus_speed = 30.0;
    double world_half_extent = 1000.0;
    double interest_radius = 0.0;
    double interest_cell = 0.0;
    double client_budget = -1.0;
    // "demo" (clients watch, one probes spawns) or "arena" (clients are bots that play).
    std::string game = "demo";
    bool no_input = false;
    std::uint32_t protocol_version = ecsnet::protocol::protocol_version;
    std::uint64_t input_lead = 2;
    bool laser = false;
    bool lag_compensation = true;
    bool predict = false;
    std::string transport = "tcp";  // or "ws"

    [[nodiscard]] bool websocket() const noexcept { return transport == "ws"; }
};

// How often a client tells the server where its focus is.
constexpr auto focus_period = 100ms;

double ms_since(clock_type::time_point t) {
    return std::chrono::duration<double, std::milli>(clock_type::now() - t).count();
}

// One spawn of the probe that reached its mirror, timed from its sending.
struct spawn_sample {
    double visible_ms;  // to the entity being in the mirror
    // To the CommandResult: the command queued, applied at a tick, answered.
    double answered_ms;
    // The ticks the mirror moved on from the send to the answer: at 30 Hz, 1-2 when the server
    // applies and answers at its next tick and the frames arrive in time; many with few
    // milliseconds each: frames that were late and came in a burst.
    double ticks_to_answer;
    // From the answer to the entity being in the mirror: 0 when the answer's tick carried it;
    // more: the entity waited to enter this client's view.
    double ticks_after_answer;
};

double percentile(std::vector<double> v, double p) {
    if (v.empty()) {
        return 0.0;
    }
    std::sort(v.begin(), v.end());
    const auto k = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size()))) - 1;
    return v[std::min(k, v.size() - 1)];
}

void pin_to(pid_t pid, int core) {
    if (core < 0) {
        return;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    if (sched_setaffinity(pid, sizeof(set), &set) != 0) {
        std::fprintf(stderr, "loadgen: cannot pin pid %d to core %d (continuing unpinned)\n", pid,
                     core);
    }
}

// utime + stime from a /proc stat line, in seconds.
double stat_cpu_seconds(const std::string& line) {
    // Fields after the command name, which is in parentheses and may contain spaces.
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
    return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// utime + stime of a process, in seconds.
std::optional<double> cpu_seconds(int pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(in, line)) {
        return std::nullopt;
    }
    return stat_cpu_seconds(line);
}

// Each thread's utime + stime in seconds, by "name (tid)" (the server names its threads: net-N,
// checkpoint, journal, admin; the tick's thread has the program's name).
std::map<std::string, double> thread_cpu_seconds(int pid) {
    std::map<std::string, double> out;
    const std::filesystem::path tasks = "/proc/" + std::to_string(pid) + "/task";
    std::error_code error;
    for (const auto& task : std::filesystem::directory_iterator(tasks, error)) {
        std::ifstream in(task.path() / "stat");
        std::string line;
        if (!std::getline(in, line) || line.find('(') == std::string::npos) {
            continue;  // the thread ended meanwhile
        }
        const std::string name = line.substr(line.find('(') + 1, line.rfind(')') - line.find('(') - 1);
        out[name + " (" + task.path().filename().string() + ")"] = stat_cpu_seconds(line);
    }
    return out;
}

std::optional<double> rss_mib(int pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("VmRSS:", 0) == 0) {
            return std::stod(line.substr(6)) / 1024.0;
        }
    }
    return std::nullopt;
}

struct launched_server {
    pid_t pid = 0;
    std::string log_path;
    bool keep_log = false;      // --server-log's file, the user's
    std::uint16_t port = 0;     // TCP
    std::uint16_t ws_port = 0;  // with --transport ws

    ~launched_server() {
        if (pid > 0) {
            kill(pid, SIGTERM);
            int status = 0;
            for (int i = 0; i < 100 && waitpid(pid, &status, WNOHANG) == 0; ++i) {
                std::this_thread::sleep_for(50ms);
            }
            if (waitpid(pid, &status, WNOHANG) == 0) {
                kill(pid, SIGKILL);
                waitpid(pid, &status, 0);
            }
        }
        if (log_path.empty()) {
            return;
        }
        if (keep_log) {
            std::fprintf(stderr, "loadgen: the server's log is in %s\n", log_path.c_str());
        } else if (std::uncaught_exceptions() > 0) {
            // The run failed: what the server said is the first thing to read.
            std::fprintf(stderr, "loadgen: the run failed; the server's log is kept in %s\n",
                         log_path.c_str());
        } else {
            std::remove(log_path.c_str());
        }
    }
};

void launch(const options& o, launched_server& out) {
    int fd = -1;
    if (o.server_log.empty()) {
        std::string path =
            (std::filesystem::temp_directory_path() / "ecsnet-loadgen.XXXXXX").string();
        fd = mkstemp(path.data());
        if (fd < 0) {
            throw std::runtime_error("cannot create a temporary log file " + path + ": " +
                                     std::strerror(errno));
        }
        out.log_path = path;
    } else {
        fd = open(o.server_log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) {
            throw std::runtime_error("cannot write the server's log to " + o.server_log + ": " +
                                     std::strerror(errno));
        }
        out.log_path = o.server_log;
        out.keep_log = true;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fd, STDERR_FILENO);
    const std::string entities = std::to_string(o.entities);
    const std::string rate = std::to_string(o.tick_rate);
    const std::string max_entities = std::to_string(std::max<std::size_t>(2'000'000, o.entities * 2));
    const std::string extent = std::to_string(o.world_half_extent);
    const std::string radius = std::to_string(o.interest_radius);
    const std::string cell = std::to_string(o.interest_cell);
    const std::string budget = std::to_string(o.client_budget);
    std::vector<const char*> argv{o.server_binary.c_str(), "--bind", "127.0.0.1", "--port", "0",
                                  "--demo-entities", entities.c_str(), "--tick-rate", rate.c_str(),
                                  "--max-entities", max_entities.c_str(), "--stats-interval-s",
                                  "1", "--max-clients", "4096",
                                  // Every simulated client comes from 127.0.0.1, hundreds at once.
                                  "--max-pending", "4096", "--max-pending-per-address", "4096",
                                  "--max-clients-per-address", "4096",
                                  // and a thousand of them start on one core: a client's Hello
                                  // can wait longer than the 5 s default for its thread's turn.
                                  "--hello-timeout-ms", "60000", nullptr};
    // Before the terminating nullptr.
    argv.insert(argv.end() - 1, {"--world-half-extent", extent.c_str()});
    const std::string arena_size = std::to_string(2.0 * o.world_half_extent);
    if (o.game == "arena") {
        argv.insert(argv.end() - 1,
                    {"--arena-size", arena_size.c_str(), "--asteroids", entities.c_str()});
        if (!o.lag_compensation) {
            argv.insert(argv.end() - 1, "--no-lag-compensation");
        }
    }
    if (o.interest_radius > 0.0) {
        argv.insert(argv.end() - 1,
                    {"--interest-radius", radius.c_str(), "--interest-cell", cell.c_str()});
    }
    if (o.client_budget >= 0.0) {
        argv.insert(argv.end() - 1, {"--client-budget", budget.c_str()});
    }
    if (o.websocket()) {
        argv.insert(argv.end() - 1, {"--ws-port", "0"});
    }
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, o.server_binary.c_str(), &actions, nullptr,
                               const_cast<char* const*>(argv.data()), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(fd);
    if (rc != 0) {
        throw std::runtime_error("cannot start " + o.server_binary + ": " + std::strerror(rc));
    }
    out.pid = pid;
    pin_to(pid, o.server_core);
    const auto deadline = clock_type::now() + 60s;  // 1M demo entities take a while to spawn
    while (clock_type::now() < deadline) {
        std::ifstream log(out.log_path);
        std::string line;
        while (std::getline(log, line)) {
            constexpr std::string_view listening = "listening on 127.0.0.1:";
            const auto at = line.find(listening);
            if (at != std::string::npos) {
                const auto port = static_cast<std::uint16_t>(std::stoi(line.substr(at + listening.size())));
                (line.find("WebSocket listening") != std::string::npos ? out.ws_port : out.port) = port;
            }
        }
        if (out.port != 0 && (out.ws_port != 0 || !o.websocket())) {
            return;
        }
        int status = 0;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            out.pid = 0;
            throw std::runtime_error("the server exited before listening");
        }
        std::this_thread::sleep_for(50ms);
    }
    throw std::runtime_error("the server did not listen within 60 s");
}

struct tick_stats {
    std::vector<double> p99s;          // of each stats line
    // "stats: stages ms per tick: NAME MS ...": each stage's mean over the lines, in line order.
    std::vector<std::pair<std::string, double>> stage_ms;
    std::size_t stage_lines = 0;
    // "stats: tick waits per client: p50 X ms p99 Y ms max Z ms": each line's three figures.
    struct tick_waits {
        std::vector<double> p50s;
        std::vector<double> p99s;
        std::vector<double> maxes;
    } waits;
    std::optional<std::uint64_t> first_overruns;  // the server's running count, first and last
    std::uint64_t last_overruns = 0;
};

// The stats lines ("stats: tick T p50 X ms p99 Y ms, ..., O overruns, ...") logged after
// `from_line`.
tick_stats read_tick_stats(const std::string& log_path, std::size_t from_line, std::size_t& lines) {
    tick_stats out;
    std::ifstream log(log_path);
    std::string line;
    lines = 0;
    while (std::getline(log, line)) {
        if (lines++ < from_line) {
            continue;
        }
        if (const auto at = line.find("stats: stages ms per tick:"); at != std::string::npos) {
            std::istringstream stages(line.substr(at + 26));
            std::string name;
            double ms = 0;
            for (std::size_t k = 0; stages >> name >> ms; ++k) {
                if (k == out.stage_ms.size()) {
                    out.stage_ms.emplace_back(name, 0.0);
                }
                out.stage_ms[k].second += ms;
            }
            ++out.stage_lines;
            continue;
        }
        if (const auto at = line.find("stats: tick waits per client: p50 ");
            at != std::string::npos) {
            std::istringstream waits(line.substr(at + 34));
            double p50 = 0;
            double p99 = 0;
            double max = 0;
            std::string ms, p99_word, ms2, max_word;
            if (waits >> p50 >> ms >> p99_word >> p99 >> ms2 >> max_word >> max) {
                out.waits.p50s.push_back(p50);
                out.waits.p99s.push_back(p99);
                out.waits.maxes.push_back(max);
            }
            continue;
        }
        if (line.find("stats: tick") == std::string::npos) {
            continue;
        }
        if (const auto at = line.find(" p99 "); at != std::string::npos) {
            out.p99s.push_back(std::stod(line.substr(at + 5)));
        }
        if (const auto at = line.find(" overruns"); at != std::string::npos) {
            const auto start = line.rfind(' ', at - 1) + 1;
            const std::uint64_t overruns = std::stoull(line.substr(start, at - start));
            if (!out.first_overruns) {
                out.first_overruns = overruns;
            }
            out.last_overruns = overruns;
        }
    }
    return out;
}

struct client_result {
    double join_ms = 0;
    bool interest = false;            // the server has interest management
    double interest_radius = 0;       // Welcome's
    std::uint32_t client_budget = 0;  // Welcome's, B/s
    std::uint64_t bytes = 0;
    std::uint64_t ticks = 0;
    std::uint64_t entered = 0;  // during the window
    std::uint64_t left = 0;
    double in_view_sum = 0;  // mirror sizes sampled during the window
    std::uint64_t in_view_samples = 0;
    std::uint64_t checksums_matched = 0;
    std::uint64_t checksums_mismatched = 0;
    std::uint64_t inconsistencies = 0;
    std::vector<spawn_sample> spawns;  // the probe's, seen ones only
    std::uint64_t spawns_unseen = 0;  // not in the mirror 5 s after the spawn was sent
    // Fairness under overload, over the window: the longest time between two frames that
    // moved the mirror's tick on, the most ticks one frame moved it by (1 when none was
    // skipped), and the snapshots received (a resync each: the server dropped its queue).
    double longest_gap_ms = 0;
    std::uint64_t longest_tick_step = 0;
    std::uint64_t resyncs = 0;
    // Arena bots: whether the client found its ship, the Inputs it sent during the window, the
    // size of one Input frame, and the server's count (its acks) of its inputs dropped for
    // arriving late and of ticks run on its previous input, during the window.
    bool found_ship = false;
    std::uint64_t inputs = 0;
    std::uint64_t input_bytes = 0;  // the Input frames' (compact from protocol 6)
    std::uint64_t inputs_late = 0;
    std::uint64_t inputs_repeated = 0;
    // --predict, during the window: the prediction's counters and the time spent in it.
    ecsnet::client::prediction_stats predicted;
    double predict_ms = 0;
    std::map<std::string, std::uint64_t> mispredicted_types;  // the first type to disagree
    std::string error;
};

enum class phase : int { warmup, measure, done };

// A client's area of interest wandering across the world: straight lines at a constant
// speed, bouncing off the edges of [-E, E]^2.
class focus_walk {
public:
    focus_walk(const options& o, std::mt19937& rng) : extent_{o.world_half_extent} {
        std::uniform_real_distribution<double> where(-extent_, extent_);
        std::uniform_real_distribution<double> angle(0.0, 2.0 * std::numbers::pi);
        std::uniform_int_distribution<int> phase_ms(0, static_cast<int>(focus_period.count()) - 1);
        x_ = where(rng);
        y_ = where(rng);
        const double a = angle(rng);
        vx_ = o.focus_speed * std::cos(a);
        vy_ = o.focus_speed * std::sin(a);
        // Clients started together do not all send in the same millisecond.
        next_ = clock_type::now() + std::chrono::milliseconds(phase_ms(rng));
        moved_ = clock_type::now();
    }

    [[nodiscard]] clock_type::time_point next() const noexcept { return next_; }

    // Moves by the time passed and sends the focus, when it is due.
    void step(ecsnet::client::connection& c) {
        const auto now = clock_type::now();
        if (now < next_) {
            return;
        }
        const double dt = std::chrono::duration<double>(now - moved_).count();
        moved_ = now;
        next_ = std::max(next_ + focus_period, now + focus_period / 2);
        x_ = bounce(x_ + vx_ * dt, vx_);
        y_ = bounce(y_ + vy_ * dt, vy_);
        c.send(protocol::focus{static_cast<float>(x_), static_cast<float>(y_)});
    }

private:
    [[nodiscard]] double bounce(double at, double& velocity) const noexcept {
        if (at > extent_) {
            velocity = -velocity;
            return std::max(-extent_, 2 * extent_ - at);
        }
        if (at < -extent_) {
            velocity = -velocity;
            return std::min(extent_, -2 * extent_ - at);
        }
        return at;
    }

    double extent_;
    double x_ = 0;
    double y_ = 0;
    double vx_ = 0;
    double vy_ = 0;
    clock_type::time_point moved_;
    clock_type::time_point next_;
};

// Records a client's frame pacing into its result while the window is on (see
// client_result): called after every message the connection handled.
class frame_pacing {
public:
    frame_pacing(client_result& result, const std::atomic<int>& current)
        : result_{result}, current_{current} {}

    void start(std::uint64_t tick, std::uint64_t snapshots) {
        measuring_ = true;
        tick_ = tick;
        snapshots0_ = snapshots;
        at_ = clock_type::now();
    }
    void observe(std::uint64_t tick, std::uint64_t snapshots) {
        if (!measuring_ || tick == tick_ || current_.load() != static_cast<int>(phase::measure)) {
            return;
        }
        const auto now = clock_type::now();
        result_.longest_gap_ms = std::max(
            result_.longest_gap_ms, std::chrono::duration<double, std::milli>(now - at_).count());
        if (tick > tick_) {
            result_.longest_tick_step = std::max(result_.longest_tick_step, tick - tick_);
        }
        result_.resyncs = snapshots - snapshots0_;
        tick_ = tick;
        at_ = now;
    }

private:
    client_result& result_;
    const std::atomic<int>& current_;
    bool measuring_{false};
    std::uint64_t tick_{0};
    std::uint64_t snapshots0_{0};
    clock_type::time_point at_;
};

void run_client(const options& o, std::uint16_t port, std::size_t index,
                const std::atomic<int>& current, client_result& result) {
    try {
        const auto started = clock_type::now();
        ecsnet::client::connect_options co;
        co.port = port;
        co.websocket = o.websocket();
        co.name = "loadgen-" + std::to_string(index);
        co.timeout = 60s;
        // The probe spawns the demo's Position and Name: a server without them is refused at
        // Welcome, with the reason, rather than at the first spawn.
        co.expected_types = {ecsnet::protocol::describe<ecsnet::demo::Position>(),
                             ecsnet::protocol::describe<ecsnet::demo::Name>()};
        const bool prober = index == 0 && o.spawns > 0;
        if (!prober && o.spawns > 0 && o.watcher_nice != 0) {
            // This thread alone (Linux: a thread id is a process id for setpriority).
            if (setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), o.watcher_nice) != 0) {
                throw std::runtime_error(std::string{"setpriority: "} + std::strerror(errno));
            }
        }
        ecsnet::client::connection c(co);
        result.join_ms = ms_since(started);
        frame_pacing pacing{result, current};
        c.on_message = [&](const auto&) {
            pacing.observe(c.mirror().tick(), c.mirror().statistics().snapshots);
        };

        std::uint64_t bytes0 = 0;
        std::uint64_t tick0 = 0;
        std::uint64_t entered0 = 0;
        std::uint64_t left0 = 0;
        bool measuring = false;
        std::mt19937 rng(static_cast<unsigned>(index) + 1);
        result.interest = c.welcome().interest_radius > 0.0F;
        result.client_budget = c.welcome().client_budget;
        result.interest_radius = c.welcome().interest_radius;
        std::optional<focus_walk> walk;
        if (result.interest) {
            walk.emplace(o, rng);
        }
        // Polls until `until`, moving the focus on time and sampling the view while measuring;
        // returns early once pred() holds.
        const auto poll = [&](const std::function<bool()>& pred, clock_type::time_point until) {
            for (;;) {
                if (walk) {
                    const auto due = walk->next();
                    walk->step(c);
                    if (measuring && walk->next() != due) {
                        result.in_view_sum += static_cast<double>(c.mirror().size());
                        ++result.in_view_samples;
                    }
                }
                const auto now = clock_type::now();
                if (now >= until || !c.is_open()) {
                    return pred();
                }
                const auto stop = walk ? std::min(until, walk->next()) : until;
                if (c.poll_until(pred, std::chrono::ceil<std::chrono::milliseconds>(stop - now))) {
                    return true;
                }
            }
        };
        const auto never = [] { return false; };
        std::uniform_int_distribution<int> gap_ms(0, static_cast<int>(1000.0 / o.tick_rate));
        const double spacing_ms = o.window_s * 1000.0 / static_cast<double>(o.spawns + 1);
        while (current.load() != static_cast<int>(phase::done)) {
            if (!measuring && current.load() == static_cast<int>(phase::measure)) {
                measuring = true;
                bytes0 = c.bytes_received();
                tick0 = c.mirror().tick();
                entered0 = c.mirror().statistics().entered;
                left0 = c.mirror().statistics().left;
                pacing.start(tick0, c.mirror().statistics().snapshots);
            }
            if (prober && measuring && result.spawns.size() < o.spawns) {
                // One spawn at a time: from sending to the entity being in this mirror.
                const std::uint32_t id = c.next_request_id();
                protocol::spawn s{id, {}};
                s.components.set(ecsnet::demo::Position{0, 0}).set(ecsnet::demo::Name{"probe"});
                const auto sent = clock_type::now();
                c.send(s);
                std::optional<protocol::command_result> r;
                double answer_ms = 0;
                const std::uint64_t sent_tick = c.mirror().tick();
                std::uint64_t answer_tick = 0;
                const bool seen = poll(
                    [&] {
                        if (!r) {
                            r = c.take_result(id);
                            if (r) {
                                answer_ms = ms_since(sent);
                                answer_tick = c.mirror().tick();
                            }
                        }
                        return r && r->ok && c.mirror().contains(r->entity);
                    },
                    sent + 5s);
                if (seen) {
                    result.spawns.push_back({ms_since(sent), answer_ms,
                                             static_cast<double>(answer_tick - sent_tick),
                                             static_cast<double>(c.mirror().tick() - answer_tick)});
                    const std::uint32_t did = c.next_request_id();
                    c.send(protocol::destroy{did, r->entity});
                } else if (r && !r->ok) {
                    throw std::runtime_error("spawn refused: " + r->message);
                } else {
                    ++result.spawns_unseen;
                }
                // The spacing, give or take half a tick period, uniformly: sends are then not
                // phase-locked to the server's ticks and sample every point of the period.
                const double period_ms = 1000.0 / o.tick_rate;
                (void)poll(never, clock_type::now() +
                                      std::chrono::milliseconds(
                                          static_cast<int>(std::max(
                                              1.0, spacing_ms - period_ms / 2 - ms_since(sent))) +
                                          gap_ms(rng)));
                continue;
            }
            // Sleeps in the poll between frames (and focus steps): with many clients, fewer
            // wake-ups for nothing leave the core to the ones with work.
            (void)poll(never, clock_type::now() + 50ms);
            if (!c.is_open()) {
                throw std::runtime_error("connection closed: " + *c.closed_reason());
            }
        }
        result.bytes = c.bytes_received() - bytes0;
        result.ticks = c.mirror().tick() - tick0;
        const auto& stats = c.mirror().statistics();
        result.entered = stats.entered - entered0;
        result.left = stats.left - left0;
        if (!walk) {
            result.in_view_sum = static_cast<double>(c.mirror().size());  // the whole world
            result.in_view_samples = 1;
        }
        result.checksums_matched = stats.checksums_matched;
        result.checksums_mismatched = stats.checksums_mismatched;
        result.inconsistencies = stats.inconsistencies;
    } catch (const std::exception& e) {
        result.error = e.what();
    }
}

// An arena bot: plays its ship with one Input per tick received (none with --no-input).
void run_arena_client(const options& o, std::uint16_t port, std::size_t index,
                      const std::atomic<int>& current, client_result& result) {
    namespace arena = ecsnet::arena;
    try {
        const auto started = clock_type::now();
        ecsnet::client::connect_options co;
        co.port = port;
        co.websocket = o.websocket();
        co.name = "bot-" + std::to_string(index);
        co.timeout = 60s;
        co.protocol_version = o.protocol_version;
        co.expected_types = {protocol::describe<arena::Position>(),
                             protocol::describe<arena::Pilot>(), protocol::describe<arena::Ship>()};
        ecsnet::client::connection c(co);
        result.join_ms = ms_since(started);
        result.interest = c.welcome().interest_radius > 0.0F;
        result.client_budget = c.welcome().client_budget;
        result.interest_radius = c.welcome().interest_radius;
        const std::uint32_t me = c.welcome().client_id;
        const auto late = [&] { return c.last_input_ack() ? std::uint64_t{c.last_input_ack()->late} : 0; };
        const auto repeated = [&] {
            return c.last_input_ack() ? std::uint64_t{c.last_input_ack()->repeated} : 0;
        };

        arena::bot bot;
        bool measuring = false;
        std::unique_ptr<ecsnet::client::prediction> prediction;
        if (o.predict) {
            prediction = std::make_unique<ecsnet::client::prediction>(
                1.0 / static_cast<double>(c.welcome().tick_rate));
            arena::predict(*prediction, static_cast<float>(2.0 * o.world_half_extent));
            prediction->on_misprediction = [&](const ecsnet::client::misprediction& m) {
                if (measuring) {
                    ++result.mispredicted_types[m.type];
                }
            };
        }
        frame_pacing pacing{result, current};
        c.on_message = [&](const auto&) {
            pacing.observe(c.mirror().tick(), c.mirror().statistics().snapshots);
        };
        ecsnet::client::prediction_stats predicted0;
        std::uint64_t played = 0;  // the last tick the bot decided on
        std::uint64_t bytes0 = 0;
        std::uint64_t tick0 = 0;
        std::uint64_t entered0 = 0;
        std::uint64_t left0 = 0;
        std::uint64_t late0 = 0;
        std::uint64_t repeated0 = 0;
        while (current.load() != static_cast<int>(phase::done)) {
            if (!measuring && current.load() == static_cast<int>(phase::measure)) {
                measuring = true;
                bytes0 = c.bytes_received();
                tick0 = c.mirror().tick();
                entered0 = c.mirror().statistics().entered;
                left0 = c.mirror().statistics().left;
                late0 = late();
                repeated0 = repeated();
                pacing.start(tick0, c.mirror().statistics().snapshots);
                if (prediction) {
                    predicted0 = prediction->stats();
                }
            }
            (void)c.poll_until([&] { return c.mirror().tick() > played; }, 50ms);
            if (!c.is_open()) {
                throw std::runtime_error("connection closed: " + *c.closed_reason());
            }
            if (c.mirror().tick() <= played) {
                continue;
            }
            played = c.mirror().tick();
            if (measuring) {
                result.in_view_sum += static_cast<double>(c.mirror().size());
                ++result.in_view_samples;
            }
            auto pilot = bot.play(c.mirror(), me);
            if (!pilot) {
                continue;
            }
            result.found_ship = true;
            if (o.no_input) {
                continue;
            }
            pilot->laser = o.laser;
            const protocol::component_set values = protocol::component_set{}.set(*pilot);
            if (prediction) {
                // What a predicting client does each frame: reconcile with the server's tick,
                // then run the input tick with the input at once.
                const auto started_predicting = clock_type::now();
                if (!prediction->tracks(bot.ship())) {
                    (void)prediction->track(bot.ship(), c.mirror());
                }
                prediction->reconcile(played, c.mirror());
                prediction->set_input(played + o.input_lead, bot.ship(), values);
                prediction->advance_to(played + o.input_lead);
                result.predict_ms += measuring ? ms_since(started_predicting) : 0.0;
            }
            const protocol::input in{bot.ship(), played + o.input_lead, {values}, played};
            const std::uint64_t sent0 = c.bytes_sent();
            c.send(in);
            result.inputs += measuring ? 1 : 0;
            result.input_bytes += measuring ? c.bytes_sent() - sent0 : 0;
        }
        result.bytes = c.bytes_received() - bytes0;
        result.ticks = c.mirror().tick() - tick0;
        const auto& stats = c.mirror().statistics();
        result.entered = stats.entered - entered0;
        result.left = stats.left - left0;
        result.inputs_late = late() - late0;
        result.inputs_repeated = repeated() - repeated0;
        if (prediction) {
            const ecsnet::client::prediction_stats& now = prediction->stats();
            result.predicted = now;
            result.predicted.ticks_predicted -= predicted0.ticks_predicted;
            result.predicted.checks -= predicted0.checks;
            result.predicted.mispredictions -= predicted0.mispredictions;
            result.predicted.ticks_replayed -= predicted0.ticks_replayed;
            result.predicted.spawns_predicted -= predicted0.spawns_predicted;
            result.predicted.spawns_matched -= predicted0.spawns_matched;
            result.predicted.spawns_refused -= predicted0.spawns_refused;
        }
        result.checksums_matched = stats.checksums_matched;
        result.checksums_mismatched = stats.checksums_mismatched;
        result.inconsistencies = stats.inconsistencies;
    } catch (const std::exception& e) {
        result.error = e.what();
    }
}

}  // namespace

void add_options(CLI::App& app, options& o) {
    app.add_option("--server", o.server_binary, "ecsnet-server binary to start (pinned to --server-core)");
    app.add_option("--port", o.port,
                   "Attach to a server already listening on 127.0.0.1:PORT (with --transport ws, "
                   "its --ws-port)");
    app.add_option("--server-pid", o.server_pid, "Its pid, for CPU and RSS (with --port)");
    app.add_option("--entities", o.entities,
                   "Moving demo entities, or the arena's --asteroids (when starting the server)")
        ->capture_default_str();
    app.add_option("--clients", o.clients, "Client connections, each with a full mirror")->capture_default_str()->check(CLI::Range(1, 4096));
    app.add_option("--tick-rate", o.tick_rate, "Server tick rate")->capture_default_str();
    app.add_option("--warmup", o.warmup_s, "Seconds before measuring")->capture_default_str();
    app.add_option("--window", o.window_s, "Seconds measured")->capture_default_str()->check(CLI::Range(1.0, 3600.0));
    app.add_option("--spawns", o.spawns, "Spawn-to-visible samples (by client 0, during the window)")->capture_default_str();
    app.add_option("--joins", o.joins, "Extra joins after the window, for join time")->capture_default_str();
    app.add_option("--server-core", o.server_core, "Core for the server (-1: no pinning)")->capture_default_str();
    app.add_option("--loadgen-core", o.loadgen_core, "Core for the load generator (-1: no pinning)")->capture_default_str();
    app.add_option("--watcher-nice", o.watcher_nice,
                   "Nice value of the clients other than the spawn probe, so that the probe is not "
                   "kept waiting for the load generator's core (0: all alike)")
        ->check(CLI::Range(0, 19))
        ->capture_default_str();
    app.add_option("--label", o.label, "Scenario name in the output");
    app.add_option("--server-log", o.server_log,
                   "Write the started server's log (its stderr) to this file and keep it; by "
                   "default it goes to a temporary file, deleted after the run unless the run "
                   "fails (then its path is printed)");
    app.add_option("--focus-speed", o.focus_speed,
                   "Interest management: units per second each client's focus moves (when the "
                   "server has it)")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 1e6));
    app.add_option("--world-half-extent", o.world_half_extent,
                   "Foci start uniformly in [-E, E]^2 and bounce off its edges (also the started "
                   "server's --world-half-extent)")
        ->capture_default_str()
        ->check(CLI::Range(1.0, 1e9));
    app.add_option("--interest-radius", o.interest_radius,
                   "Start the server with interest management, this radius (0: off)")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 1e9));
    app.add_option("--interest-cell", o.interest_cell,
                   "Started server's --interest-cell (0: half the radius)")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 1e9));
    app.add_option(
           "--client-budget", o.client_budget,
           "Started server's --client-budget, B/s per client (0: unlimited; default: the server's)")
        ->check(CLI::Range(0.0, 1e12));
    app.add_option("--game", o.game,
                   "demo: clients watch and one probes spawns (ecsnet-server); arena: every "
                   "client is a bot playing its ship with one Input per tick (arena-server, "
                   "--arena-size 2E)")
        ->capture_default_str()
        ->check(CLI::IsMember({"demo", "arena"}));
    app.add_flag("--no-input", o.no_input,
                 "Arena: the same bots, but sending no input (the server's cost of input, by "
                 "difference)");
    app.add_option("--protocol", o.protocol_version,
                   "Arena: the protocol version the bots speak (below 6, every Input is a full "
                   "FlatBuffers frame; 6 sends compact ones)")
        ->capture_default_str()
        ->check(CLI::Range(ecsnet::protocol::oldest_protocol_version, ecsnet::protocol::protocol_version));
    app.add_flag("--laser", o.laser,
                 "Arena: every bot holds the laser (one lag-compensated shot per second each)");
    app.add_flag("!--no-lag-compensation", o.lag_compensation,
                 "Arena: start the server with --no-lag-compensation (the laser hits at the "
                 "present)");
    app.add_flag("--predict", o.predict,
                 "Arena: each bot predicts its ship and bullets (ecsnet/arena/predicted.hpp) "
                 "and the report counts mispredictions");
    app.add_option("--input-lead", o.input_lead,
                   "Arena: stamp each Input this many ticks past the last tick received")
        ->capture_default_str()
        ->check(CLI::Range(1, 30));
    app.add_option("--transport", o.transport,
                   "tcp, or ws: every client over WebSocket, one binary message per frame (a "
                   "started server gets --ws-port 0); bytes then include the WebSocket headers")
        ->capture_default_str()
        ->check(CLI::IsMember({"tcp", "ws"}));
}

// The load: the server started (or attached to), K clients through warm-up and the window,
// then the extra joins.
struct load_run {
    double window_s{0.0};
    std::optional<double> cpu0;  // the server's CPU seconds at the window's start, and end
    std::optional<double> cpu1;
    double rss_max{0.0};
    std::vector<double> p99s;   // the server's per-second tick p99s over the window
    std::vector<std::pair<std::string, double>> stage_ms;  // the window's mean ms per tick, by stage
    tick_stats::tick_waits tick_waits;  // the server's, per stats line over the window
    std::map<std::string, double> thread_pct;              // the window's % of a core, by thread
    std::int64_t overruns{-1};  // unknown when attached to a server we did not start
    std::vector<double> joins;  // ms, the extra joins after the window
    std::vector<client_result> results;
};

load_run run_load(const options& o) {
    const bool arena = o.game == "arena";
    load_run out;
    // Each client holds a socket and its io_context's descriptors: 1000 clients need more
    // than the usual soft limit of 1024.
    if (rlimit files{};
        getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
        files.rlim_cur = files.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &files);
    }
    pin_to(0, o.loadgen_core);
    launched_server launched;
    std::uint16_t port = o.port;
    int pid = o.server_pid;
    if (!o.server_binary.empty()) {
        launch(o, launched);
        port = o.websocket() ? launched.ws_port : launched.port;
        pid = launched.pid;
    }

    std::atomic<int> current{static_cast<int>(phase::warmup)};
    std::vector<client_result>& results = out.results;
    results.resize(o.clients);
    std::vector<std::thread> threads;
    threads.reserve(o.clients);
    for (std::size_t i = 0; i < o.clients; ++i) {
        threads.emplace_back(arena ? run_arena_client : run_client, std::cref(o), port, i,
                             std::cref(current), std::ref(results[i]));
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(o.warmup_s));

    std::size_t log_lines = 0;
    std::uint64_t overruns_before = 0;
    if (!launched.log_path.empty()) {
        overruns_before = read_tick_stats(launched.log_path, 0, log_lines).last_overruns;
    }
    out.cpu0 = pid > 0 ? cpu_seconds(pid) : std::nullopt;
    const std::map<std::string, double> threads0 = pid > 0 ? thread_cpu_seconds(pid) : std::map<std::string, double>{};
    const auto t0 = clock_type::now();
    current = static_cast<int>(phase::measure);
    while (clock_type::now() - t0 < std::chrono::duration<double>(o.window_s)) {
        std::this_thread::sleep_for(250ms);
        if (pid > 0) {
            out.rss_max = std::max(out.rss_max, rss_mib(pid).value_or(0.0));
        }
    }
    out.window_s = std::chrono::duration<double>(clock_type::now() - t0).count();
    out.cpu1 = pid > 0 ? cpu_seconds(pid) : std::nullopt;
    if (pid > 0) {
        for (const auto& [name, seconds] : thread_cpu_seconds(pid)) {
            const auto before = threads0.find(name);
            out.thread_pct[name] =
                100.0 * (seconds - (before == threads0.end() ? 0.0 : before->second)) / out.window_s;
        }
    }
    current = static_cast<int>(phase::done);
    for (auto& t : threads) {
        t.join();
    }
    if (!launched.log_path.empty()) {
        std::size_t total = 0;
        const tick_stats window_stats = read_tick_stats(launched.log_path, log_lines, total);
        out.p99s = window_stats.p99s;
        out.tick_waits = window_stats.waits;
        for (auto [name, sum] : window_stats.stage_ms) {
            out.stage_ms.emplace_back(name, sum / static_cast<double>(window_stats.stage_lines));
        }
        if (window_stats.first_overruns) {
            out.overruns = static_cast<std::int64_t>(window_stats.last_overruns - overruns_before);
        }
    }

    // Warm joins: fresh connections to the running server, one after another.
    for (std::size_t j = 0; j < o.joins; ++j) {
        const auto started = clock_type::now();
        ecsnet::client::connect_options co;
        co.port = port;
        co.websocket = o.websocket();
        co.name = "joiner";
        co.timeout = 60s;
        ecsnet::client::connection c(co);
        out.joins.push_back(ms_since(started));
    }
    return out;
}

// The clients' results summed over the window.
struct load_totals {
    std::vector<spawn_sample> spawns;
    std::uint64_t spawns_unseen{0};
    std::vector<double> client_bps;  // per client, over the window
    std::vector<double> longest_gaps_ms;  // per client (client_result::longest_gap_ms)
    // Per client with entities in view: bytes/s per entity in view. Under one budget a client
    // whose view holds fewer entities is sent fewer bytes; per entity it is served alike.
    std::vector<double> client_bps_per_entity;
    std::uint64_t longest_tick_step{0};   // over every client
    std::size_t clients_skipping{0};      // clients that missed a tick (step > 1)
    std::uint64_t resyncs{0};
    std::size_t clients_resynced{0};
    double entered_ps{0};            // per client, per second
    double left_ps{0};
    double in_view{0};               // mean entities in a client's view
    bool interest{false};
    std::uint32_t client_budget{0};
    double interest_radius{0};
    std::uint64_t bytes{0};
    std::uint64_t ticks{0};
    std::uint64_t matched{0};
    std::uint64_t mismatched{0};
    std::uint64_t inconsistent{0};
    std::vector<double> first_joins;
    std::uint64_t inputs{0};
    std::uint64_t input_bytes{0};
    std::uint64_t inputs_late{0};
    std::uint64_t inputs_repeated{0};
    std::size_t shipless{0};
    ecsnet::client::prediction_stats predicted;  // summed over the bots
    double predict_ms{0};
    std::map<std::string, std::uint64_t> mispredicted_types;
    double per_client_bps{0};
    double bytes_per_update{0};
    double cpu_pct{-1};
    double inputs_ps{0};
    double input_bps{0};
};

load_totals sum_clients(const options& o, const load_run& run) {
    load_totals t;
    const double window = run.window_s;
    // The ticks the clients' mirrors advanced by over the window, the median client's: a client
    // resynced in the window jumps by the gap, and the largest (used before) then read 1,830
    // ticks in 10 s at 30 Hz.
    std::vector<std::uint64_t> ticks;
    for (const auto& r : run.results) {
        ticks.push_back(r.ticks);
    }
    if (!ticks.empty()) {
        const auto median = ticks.begin() + static_cast<std::ptrdiff_t>(ticks.size() / 2);
        std::nth_element(ticks.begin(), median, ticks.end());
        t.ticks = *median;
    }
    for (const auto& r : run.results) {
        if (!r.error.empty()) {
            throw std::runtime_error("a client failed: " + r.error);
        }
        t.spawns.insert(t.spawns.end(), r.spawns.begin(), r.spawns.end());
        t.spawns_unseen += r.spawns_unseen;
        t.bytes += r.bytes;
        t.matched += r.checksums_matched;
        t.mismatched += r.checksums_mismatched;
        t.inconsistent += r.inconsistencies;
        t.first_joins.push_back(r.join_ms);
        t.inputs += r.inputs;
        t.input_bytes += r.input_bytes;
        t.inputs_late += r.inputs_late;
        t.inputs_repeated += r.inputs_repeated;
        t.shipless += r.found_ship ? 0 : 1;
        t.predicted.ticks_predicted += r.predicted.ticks_predicted;
        t.predicted.checks += r.predicted.checks;
        t.predicted.mispredictions += r.predicted.mispredictions;
        t.predicted.ticks_replayed += r.predicted.ticks_replayed;
        t.predicted.spawns_predicted += r.predicted.spawns_predicted;
        t.predicted.spawns_matched += r.predicted.spawns_matched;
        t.predicted.spawns_refused += r.predicted.spawns_refused;
        t.predict_ms += r.predict_ms;
        for (const auto& [type, n] : r.mispredicted_types) {
            t.mispredicted_types[type] += n;
        }
        t.client_bps.push_back(static_cast<double>(r.bytes) / window);
        t.longest_gaps_ms.push_back(r.longest_gap_ms);
        if (r.in_view_samples > 0 && r.in_view_sum > 0.0) {
            t.client_bps_per_entity.push_back(
                static_cast<double>(r.bytes) / window /
                (r.in_view_sum / static_cast<double>(r.in_view_samples)));
        }
        t.longest_tick_step = std::max(t.longest_tick_step, r.longest_tick_step);
        t.clients_skipping += r.longest_tick_step > 1 ? 1 : 0;
        t.resyncs += r.resyncs;
        t.clients_resynced += r.resyncs > 0 ? 1 : 0;
        t.entered_ps += static_cast<double>(r.entered) / window;
        t.left_ps += static_cast<double>(r.left) / window;
        t.in_view += r.in_view_samples == 0
                       ? 0.0
                       : r.in_view_sum / static_cast<double>(r.in_view_samples);
        t.interest = t.interest || r.interest;
        t.client_budget = r.client_budget;
        t.interest_radius = r.interest_radius;
    }
    const auto k = static_cast<double>(o.clients);
    t.entered_ps /= k;
    t.left_ps /= k;
    t.in_view /= k;
    t.per_client_bps = static_cast<double>(t.bytes) / static_cast<double>(o.clients) / window;
    // Per entity the client holds, per tick: the world's entities, or those in its view.
    const double updated = t.interest ? t.in_view : static_cast<double>(o.entities);
    t.bytes_per_update = t.ticks == 0 || updated <= 0.0
                                        ? 0.0
                                        : static_cast<double>(t.bytes) /
                                              static_cast<double>(o.clients) /
                                              static_cast<double>(t.ticks) / updated;
    t.cpu_pct = run.cpu0 && run.cpu1 ? (*run.cpu1 - *run.cpu0) / window * 100.0 : -1.0;
    t.inputs_ps = static_cast<double>(t.inputs) / k / window;
    t.input_bps = static_cast<double>(t.input_bytes) / k / window;
    return t;
}

nlohmann::json report_json(const options& o, const load_run& run, const load_totals& t) {
    const bool arena = o.game == "arena";
    const auto spawn_percentile = [&t](double spawn_sample::*field, double p) {
        std::vector<double> values;
        values.reserve(t.spawns.size());
        for (const spawn_sample& s : t.spawns) {
            values.push_back(s.*field);
        }
        return percentile(std::move(values), p);
    };
    return nlohmann::json{
        {"label", o.label},
        {"game", o.game},
        {"transport", o.transport},
        {"input", arena && !o.no_input},
        {"inputs_per_s_per_client", t.inputs_ps},
        {"input_bytes_per_s_per_client", t.input_bps},
        {"protocol_version", o.protocol_version},
        {"inputs_late", t.inputs_late},
        {"inputs_repeated", t.inputs_repeated},
        {"clients_without_ship", t.shipless},
        {"laser", arena && o.laser},
        {"lag_compensation", arena && o.lag_compensation},
        {"predict", arena && o.predict},
        {"predicted_ticks", t.predicted.ticks_predicted},
        {"prediction_checks", t.predicted.checks},
        {"mispredictions", t.predicted.mispredictions},
        {"mispredictions_per_1000_checks",
         t.predicted.checks == 0 ? 0.0
                                 : 1000.0 * static_cast<double>(t.predicted.mispredictions) /
                                       static_cast<double>(t.predicted.checks)},
        {"ticks_replayed", t.predicted.ticks_replayed},
        {"mispredicted_types", t.mispredicted_types},
        {"spawns_predicted", t.predicted.spawns_predicted},
        {"spawns_matched", t.predicted.spawns_matched},
        {"spawns_refused", t.predicted.spawns_refused},
        {"predict_us_per_tick",
         t.predicted.ticks_predicted == 0
             ? 0.0
             : 1000.0 * t.predict_ms / static_cast<double>(t.predicted.ticks_predicted)},
        {"entities", o.entities},
        {"clients", o.clients},
        {"tick_rate", o.tick_rate},
        {"window_s", run.window_s},
        {"ticks", t.ticks},
        {"bytes_per_s_per_client", t.per_client_bps},
        {"bytes_per_s_per_client_p50", percentile(t.client_bps, 0.5)},
        {"bytes_per_s_per_client_p99", percentile(t.client_bps, 0.99)},
        {"bytes_per_s_per_client_min",
         t.client_bps.empty() ? 0.0 : *std::min_element(t.client_bps.begin(), t.client_bps.end())},
        {"bytes_per_s_per_entity_in_view_min",
         t.client_bps_per_entity.empty()
             ? 0.0
             : *std::min_element(t.client_bps_per_entity.begin(), t.client_bps_per_entity.end())},
        {"bytes_per_s_per_entity_in_view_p50", percentile(t.client_bps_per_entity, 0.5)},
        {"frame_gap_ms_p50", percentile(t.longest_gaps_ms, 0.5)},
        {"frame_gap_ms_p99", percentile(t.longest_gaps_ms, 0.99)},
        {"frame_gap_ms_max", percentile(t.longest_gaps_ms, 1.0)},
        {"server_tick_wait_ms_p50",
         run.tick_waits.p50s.empty() ? -1.0 : percentile(run.tick_waits.p50s, 0.5)},
        {"server_tick_wait_ms_p99",
         run.tick_waits.p99s.empty() ? -1.0 : percentile(run.tick_waits.p99s, 0.5)},
        {"server_tick_wait_ms_max",
         run.tick_waits.maxes.empty() ? -1.0 : percentile(run.tick_waits.maxes, 1.0)},
        {"longest_tick_step", t.longest_tick_step},
        {"clients_skipping_ticks", t.clients_skipping},
        {"resyncs", t.resyncs},
        {"clients_resynced", t.clients_resynced},
        {"interest", t.interest},
        {"interest_radius",
         t.interest ? nlohmann::json(t.interest_radius) : nlohmann::json(nullptr)},
        {"client_budget", t.interest ? nlohmann::json(t.client_budget) : nlohmann::json(nullptr)},
        {"focus_speed",
         t.interest && !arena ? nlohmann::json(o.focus_speed) : nlohmann::json(nullptr)},
        {"in_view_mean", t.in_view},
        {"entered_per_s_per_client", t.entered_ps},
        {"left_per_s_per_client", t.left_ps},
        {"bytes_per_entity_update", t.bytes_per_update},
        {"join_ms_median", percentile(run.joins, 0.5)},
        {"join_ms_max", run.joins.empty() ? 0.0 : *std::max_element(run.joins.begin(), run.joins.end())},
        {"first_join_ms_median", percentile(t.first_joins, 0.5)},
        {"spawn_to_visible_ms_p50", spawn_percentile(&spawn_sample::visible_ms, 0.5)},
        {"spawn_to_visible_ms_p99", spawn_percentile(&spawn_sample::visible_ms, 0.99)},
        {"spawn_samples", t.spawns.size()},
        {"spawn_answered_ms_p50", spawn_percentile(&spawn_sample::answered_ms, 0.5)},
        {"spawn_answered_ms_p99", spawn_percentile(&spawn_sample::answered_ms, 0.99)},
        {"spawn_ticks_to_answer_p50", spawn_percentile(&spawn_sample::ticks_to_answer, 0.5)},
        {"spawn_ticks_to_answer_p99", spawn_percentile(&spawn_sample::ticks_to_answer, 0.99)},
        {"spawn_ticks_after_answer_p50", spawn_percentile(&spawn_sample::ticks_after_answer, 0.5)},
        {"spawn_ticks_after_answer_p99", spawn_percentile(&spawn_sample::ticks_after_answer, 0.99)},
        {"spawns_unseen", t.spawns_unseen},
        {"checksums_matched", t.matched},
        {"checksum_mismatches", t.mismatched},
        {"inconsistencies", t.inconsistent},
        {"server_cpu_pct", t.cpu_pct},
        {"server_rss_mib_max", run.rss_max},
        {"tick_p99_ms_max", run.p99s.empty() ? -1.0 : *std::max_element(run.p99s.begin(), run.p99s.end())},
        {"tick_p99_ms_median", run.p99s.empty() ? -1.0 : percentile(run.p99s, 0.5)},
        {"tick_overruns", run.overruns},
        {"tick_stage_ms", [&] {
             nlohmann::json stages = nlohmann::json::object();
             for (const auto& [name, ms] : run.stage_ms) {
                 stages[name] = ms;
             }
             return stages;
         }()},
        {"server_thread_cpu_pct", run.thread_pct},
    };
}

void print_report(const options& o, const load_run& run, const load_totals& t,
                  const nlohmann::json& j) {
    const bool arena = o.game == "arena";
    std::printf("%-32s %s\n", "scenario", o.label.c_str());
    std::printf("%-32s %zu %s, %zu clients over %s, %.0f Hz, %.1f s window, %llu ticks\n",
                "load", o.entities, arena ? "asteroids" : "moving entities", o.clients,
                o.websocket() ? "WebSocket" : "TCP", o.tick_rate, run.window_s,
                static_cast<unsigned long long>(t.ticks));
    if (arena) {
        std::printf("%-32s %s: %.1f/s and %.0f B/s per client (%.1f B an Input, protocol %u), "
                    "%llu late, %llu ticks repeated, %zu clients without a ship\n",
                    "bot input", o.no_input ? "off (--no-input)" : "on", t.inputs_ps, t.input_bps,
                    t.inputs_ps > 0.0 ? t.input_bps / t.inputs_ps : 0.0, o.protocol_version,
                    static_cast<unsigned long long>(t.inputs_late),
                    static_cast<unsigned long long>(t.inputs_repeated), t.shipless);
        std::printf("%-32s %s, lag compensation %s\n", "laser",
                    o.laser ? "held by every bot" : "off", o.lag_compensation ? "on" : "off");
        if (o.predict) {
            std::printf("%-32s %llu checks, %llu mispredicted (%.2f per 1,000), %llu replayed; "
                        "bullets %llu predicted, %llu matched, %llu refused; %.1f us per tick\n",
                        "bot prediction", static_cast<unsigned long long>(t.predicted.checks),
                        static_cast<unsigned long long>(t.predicted.mispredictions),
                        j["mispredictions_per_1000_checks"].get<double>(),
                        static_cast<unsigned long long>(t.predicted.ticks_replayed),
                        static_cast<unsigned long long>(t.predicted.spawns_predicted),
                        static_cast<unsigned long long>(t.predicted.spawns_matched),
                        static_cast<unsigned long long>(t.predicted.spawns_refused),
                        j["predict_us_per_tick"].get<double>());
            std::string types;
            for (const auto& [type, n] : t.mispredicted_types) {
                types += (types.empty() ? "" : ", ") + type + " " + std::to_string(n);
            }
            std::printf("%-32s %s\n", "... first type to disagree", types.empty() ? "none" : types.c_str());
        }
    }
    if (t.interest && arena) {
        std::printf("%-32s radius %g, budget %s, following each ship\n",
                    "interest per client", t.interest_radius,
                    t.client_budget == 0 ? "unlimited"
                                       : (std::to_string(t.client_budget) + " B/s").c_str());
    } else if (t.interest) {
        std::printf(
            "%-32s radius %g, budget %s, focus speed %g/s in [-%g, %g]^2\n",
            "interest per client", t.interest_radius,
            t.client_budget == 0 ? "unlimited" : (std::to_string(t.client_budget) + " B/s").c_str(),
            o.focus_speed, o.world_half_extent, o.world_half_extent);
    } else {
        std::printf("%-32s off (every client receives the whole world)\n",
                    "interest per client");
    }
    std::printf("%-32s %.0f B/s (p50 %.0f, p99 %.0f across clients)\n", "bytes per client",
                t.per_client_bps, percentile(t.client_bps, 0.5), percentile(t.client_bps, 0.99));
    std::printf("%-32s min %.0f B/s (per entity in view: min %.0f, p50 %.0f); longest gap "
                "between frames p50 %.1f ms, p99 %.1f ms, max %.1f ms; %zu clients missed a tick "
                "(largest step %llu), %zu resynced (%llu resyncs)\n",
                "fairness across clients", j["bytes_per_s_per_client_min"].get<double>(),
                j["bytes_per_s_per_entity_in_view_min"].get<double>(),
                j["bytes_per_s_per_entity_in_view_p50"].get<double>(),
                percentile(t.longest_gaps_ms, 0.5), percentile(t.longest_gaps_ms, 0.99),
                percentile(t.longest_gaps_ms, 1.0), t.clients_skipping,
                static_cast<unsigned long long>(t.longest_tick_step), t.clients_resynced,
                static_cast<unsigned long long>(t.resyncs));
    if (!run.tick_waits.maxes.empty()) {
        std::printf(
            "%-32s the longest each client waited for tick frames to be written, per "
            "second: p50 %.1f ms, p99 %.1f ms (medians over %zu seconds), max %.1f ms\n",
            "fairness, server side", j["server_tick_wait_ms_p50"].get<double>(),
            j["server_tick_wait_ms_p99"].get<double>(), run.tick_waits.maxes.size(),
            j["server_tick_wait_ms_max"].get<double>());
    }
    std::printf("%-32s %.1f mean, entered %.1f/s, left %.1f/s per client\n", "entities in view",
                t.in_view, t.entered_ps, t.left_ps);
    std::printf("%-32s %.2f B\n",
                t.interest ? "bytes per entity in view update" : "bytes per moving entity update",
                t.bytes_per_update);
    std::printf("%-32s median %.2f ms, max %.2f ms (%zu joins)\n", "join to complete mirror",
                percentile(run.joins, 0.5), j["join_ms_max"].get<double>(), run.joins.size());
    std::printf("%-32s p50 %.2f ms, p99 %.2f ms (%zu spawns; %llu not seen within 5 s)\n",
                "spawn to visible", j["spawn_to_visible_ms_p50"].get<double>(),
                j["spawn_to_visible_ms_p99"].get<double>(), t.spawns.size(),
                static_cast<unsigned long long>(t.spawns_unseen));
    if (!t.spawns.empty()) {
        std::printf(
            "%-32s answered p50 %.2f ms, p99 %.2f ms (p50 %.0f, p99 %.0f ticks after the "
            "send); then in view p50 %.0f, p99 %.0f ticks after the answer\n",
            "  of which", j["spawn_answered_ms_p50"].get<double>(),
            j["spawn_answered_ms_p99"].get<double>(), j["spawn_ticks_to_answer_p50"].get<double>(),
            j["spawn_ticks_to_answer_p99"].get<double>(),
            j["spawn_ticks_after_answer_p50"].get<double>(),
            j["spawn_ticks_after_answer_p99"].get<double>());
    }
    std::printf("%-32s %llu mismatches, %llu matched, %llu inconsistencies\n", "checksums",
                static_cast<unsigned long long>(t.mismatched),
                static_cast<unsigned long long>(t.matched),
                static_cast<unsigned long long>(t.inconsistent));
    std::printf("%-32s %.2f %% of one core, RSS max %.1f MiB\n", "server", t.cpu_pct, run.rss_max);
    std::printf("%-32s p99 max %.3f ms, median %.3f ms (per-second stats lines), %lld "
                "overruns\n",
                "server tick time", j["tick_p99_ms_max"].get<double>(),
                j["tick_p99_ms_median"].get<double>(), static_cast<long long>(run.overruns));
    const auto fixed = [](double v, int decimals) {
        char text[32];
        std::snprintf(text, sizeof text, "%.*f", decimals, v);
        return std::string{text};
    };
    if (!run.stage_ms.empty()) {
        std::string stages;
        double total = 0;
        for (const auto& [name, ms] : run.stage_ms) {
            stages += " " + name + " " + fixed(ms, 3);
            total += ms;
        }
        std::printf("%-32s%s (sum %.3f ms per tick)\n", "server tick stages, ms per tick", stages.c_str(), total);
    }
    if (!run.thread_pct.empty()) {
        std::string threads;
        for (const auto& [name, pct] : run.thread_pct) {
            if (pct >= 0.05) {
                threads += " " + name + " " + fixed(pct, 1) + " %";
            }
        }
        std::printf("%-32s%s\n", "server threads, % of a core", threads.c_str());
    }
    std::printf("%s\n", j.dump().c_str());
}

int main(int argc, char** argv) {
    options o;
    CLI::App app{"ecsnet-loadgen: measure an ecsnet-server with K real clients"};
    add_options(app, o);
    CLI11_PARSE(app, argc, argv);
    if (o.game == "arena") {
        o.spawns = 0;  // the probe spawns the demo's types
    }
    if (o.server_binary.empty() == (o.port == 0)) {
        std::cerr << "loadgen: give either --server PATH or --port P (see --help)\n";
        return 2;
    }
    if (!o.server_log.empty() && o.server_binary.empty()) {
        std::cerr << "loadgen: --server-log is the log of a server it starts (--server PATH)\n";
        return 2;
    }
    try {
        const load_run run = run_load(o);
        const load_totals t = sum_clients(o, run);
        const nlohmann::json j = report_json(o, run, t);
        print_report(o, run, t, j);
        if (t.mismatched != 0 || t.inconsistent != 0) {
            std::fprintf(stderr,
                         "loadgen: FAILED: %llu checksum mismatches, %llu inconsistencies\n",
                         static_cast<unsigned long long>(t.mismatched),
                         static_cast<unsigned long long>(t.inconsistent));
            return 1;
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "loadgen: %s\n", e.what());
        return 1;
    }
}
