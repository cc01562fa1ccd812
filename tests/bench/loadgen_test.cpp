// bench/loadgen as a process, with a small load: where the log of the server it starts goes.
// With --server-log the log is the user's file and stays; by default a temporary file, deleted
// after a run that succeeds and kept, its path printed, after one that fails. And what its
// report says of the spawns. No speed is judged.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "process.hpp"

namespace loadgen_test {

using namespace std::chrono_literals;
using ecsnet::test::child;

// Two clients, a second of warm-up and a two-second window: the started server logs a stats
// line a second, so the window holds at least one.
std::vector<std::string> small_load(const std::string& server) {
    std::vector<std::string> argv{ECSNET_LOADGEN_BIN, "--server", server};
    for (const auto& [option, value] : {std::pair{"--entities", "50"},
                                        {"--clients", "2"},
                                        {"--warmup", "1"},
                                        {"--window", "2"},
                                        {"--spawns", "2"},
                                        {"--joins", "0"},
                                        {"--server-core", "-1"},
                                        {"--loadgen-core", "-1"}}) {
        argv.insert(argv.end(), {option, value});
    }
    return argv;
}

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// The path printed after `prefix` on a line of `text`, empty when there is none.
std::string path_after(const std::string& text, const std::string& prefix) {
    const auto at = text.find(prefix);
    if (at == std::string::npos) {
        return {};
    }
    const auto from = at + prefix.size();
    return text.substr(from, text.find('\n', from) - from);
}

class Loadgen : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = std::filesystem::temp_directory_path() /
               ("ecsnet-loadgen-test-" + std::to_string(::getpid()));
        std::filesystem::create_directories(dir_);
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }

    std::filesystem::path dir_;
};

TEST_F(Loadgen, ServerLogGoesToTheGivenFileAndStays) {
    const auto log = dir_ / "server.log";
    auto argv = small_load(ECSNET_SERVER_BIN);
    argv.insert(argv.end(), {"--server-log", log.string()});
    child loadgen{argv};
    ASSERT_EQ(loadgen.wait(120s), 0) << loadgen.err();
    EXPECT_EQ(path_after(loadgen.err(), "loadgen: the server's log is in "), log.string())
        << loadgen.err();
    const std::string text = read_file(log);
    EXPECT_NE(text.find("listening on 127.0.0.1:"), std::string::npos) << text;
    EXPECT_NE(text.find("stats: tick"), std::string::npos) << "the per-second stats lines\n"
                                                           << text;
}

// Temporary logs go to $TMPDIR: each test's own directory, so that tests running beside
// each other do not see each other's.
TEST_F(Loadgen, ARunThatFailsKeepsTheTemporaryLogAndSaysWhere) {
    // A "server" that exits at once, saying why on stderr: the run fails before listening.
    const auto script = dir_ / "exits.sh";
    std::ofstream{script} << "#!/bin/sh\necho 'this server gives up at once' >&2\nexit 3\n";
    std::filesystem::permissions(script, std::filesystem::perms::owner_all);
    child loadgen{small_load(script.string()), {{"TMPDIR", dir_.string()}}};
    EXPECT_EQ(loadgen.wait(120s), 1) << loadgen.err();
    EXPECT_NE(loadgen.err().find("the server exited before listening"), std::string::npos)
        << loadgen.err();
    const std::string kept =
        path_after(loadgen.err(), "loadgen: the run failed; the server's log is kept in ");
    ASSERT_FALSE(kept.empty()) << loadgen.err();
    EXPECT_EQ(std::filesystem::path{kept}.parent_path(), dir_);
    EXPECT_NE(read_file(kept).find("this server gives up at once"), std::string::npos);
}

TEST_F(Loadgen, ARunThatSucceedsDeletesTheTemporaryLog) {
    child loadgen{small_load(ECSNET_SERVER_BIN), {{"TMPDIR", dir_.string()}}};
    ASSERT_EQ(loadgen.wait(120s), 0) << loadgen.err();
    EXPECT_EQ(loadgen.err().find("server's log"), std::string::npos) << loadgen.err();
    EXPECT_TRUE(std::filesystem::is_empty(dir_)) << "a log was left behind";
}

// The report's JSON line (the last line of stdout that starts with '{').
nlohmann::json report_of(const std::string& out) {
    std::istringstream lines{out};
    std::string line;
    std::string last;
    while (std::getline(lines, line)) {
        if (line.starts_with('{')) {
            last = line;
        }
    }
    return last.empty() ? nlohmann::json{} : nlohmann::json::parse(last);
}

// Each spawn seen is split into its answer (the CommandResult) and its arrival in the mirror,
// which cannot come before the answer it is found by.
TEST_F(Loadgen, EachSpawnIsSplitIntoItsAnswerAndItsArrival) {
    child loadgen{small_load(ECSNET_SERVER_BIN)};
    ASSERT_EQ(loadgen.wait(120s), 0) << loadgen.err();
    const nlohmann::json report = report_of(loadgen.out());
    ASSERT_TRUE(report.is_object()) << loadgen.out();
    ASSERT_EQ(report.value("spawn_samples", 0), 2) << report.dump();
    for (const char* at : {"p50", "p99"}) {
        const double answered = report.at(std::string{"spawn_answered_ms_"} + at).get<double>();
        const double visible = report.at(std::string{"spawn_to_visible_ms_"} + at).get<double>();
        EXPECT_GT(answered, 0.0) << at << ": " << report.dump();
        EXPECT_LE(answered, visible) << at << ": " << report.dump();
        EXPECT_GE(report.at(std::string{"spawn_ticks_to_answer_"} + at).get<double>(), 0.0);
        EXPECT_GE(report.at(std::string{"spawn_ticks_after_answer_"} + at).get<double>(), 0.0);
    }
    EXPECT_NE(loadgen.out().find("answered p50"), std::string::npos) << loadgen.out();
}

TEST_F(Loadgen, ServerLogNeedsAServerItStartsAndAWritablePath) {
    child attached{{ECSNET_LOADGEN_BIN, "--port", "1", "--server-log", (dir_ / "x.log").string()}};
    EXPECT_EQ(attached.wait(30s), 2);
    EXPECT_NE(attached.err().find("--server-log is the log of a server it starts"),
              std::string::npos)
        << attached.err();

    auto argv = small_load(ECSNET_SERVER_BIN);
    argv.insert(argv.end(), {"--server-log", (dir_ / "no-such-dir" / "server.log").string()});
    child unwritable{argv};
    EXPECT_EQ(unwritable.wait(30s), 1);
    EXPECT_NE(unwritable.err().find("cannot write the server's log to"), std::string::npos)
        << unwritable.err();
}

}  // namespace loadgen_test
