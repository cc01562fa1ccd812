// bench/ecs_vs_entt as a process, with few entities and --json: every row in order, both
// libraries measured (positive medians inside their min-max spread), the ratio of the medians,
// the page faults of each side reported, and the two sides' checksums agreeing (each did the
// same work). No figure is judged.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct run_result {
    int exit_code = -1;
    std::string out;
};

// Runs ecs_vs_entt with `args` through the shell (bounded by timeout(1)); stderr is merged
// into the output when `merge_stderr`, else left to the test's own stderr for diagnostics.
run_result run(const std::string& args, bool merge_stderr = false) {
    const std::string command = std::string{"timeout 120 '"} + ECSNET_ECS_VS_ENTT_BIN + "' " +
                                args + (merge_stderr ? " 2>&1" : "");
    run_result result;
    FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) {
        ADD_FAILURE() << "popen failed: " << command;
        return result;
    }
    char buffer[4096];
    std::size_t got = 0;
    while ((got = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) {
        result.out.append(buffer, got);
    }
    const int status = ::pclose(pipe);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return result;
}

std::vector<nlohmann::json> json_lines(const std::string& text) {
    std::vector<nlohmann::json> rows;
    std::istringstream in{text};
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty()) {
            rows.push_back(nlohmann::json::parse(line));  // throws (test fails) on a non-JSON line
        }
    }
    return rows;
}

void expect_measured(const nlohmann::json& row, const char* side) {
    SCOPED_TRACE(side);
    ASSERT_TRUE(row.contains(side)) << row.dump();
    const auto& s = row[side];
    const double median = s.at("median").get<double>();
    EXPECT_GT(median, 0.0) << row.dump();
    EXPECT_LE(s.at("min").get<double>(), median) << row.dump();
    EXPECT_GE(s.at("max").get<double>(), median) << row.dump();
}

void expect_row(const nlohmann::json& row, const std::string& name, std::size_t units) {
    SCOPED_TRACE(name);
    EXPECT_EQ(row.at("row").get<std::string>(), name);
    EXPECT_EQ(row.at("units").get<std::size_t>(), units);
    expect_measured(row, "entt");
    expect_measured(row, "ecsnet");
    const double ratio = row.at("ratio").get<double>();
    EXPECT_TRUE(std::isfinite(ratio) && ratio > 0) << row.dump();
    EXPECT_DOUBLE_EQ(ratio,
                     row["ecsnet"]["median"].get<double>() / row["entt"]["median"].get<double>());
    EXPECT_TRUE(row.at("checks_match").get<bool>()) << row.dump();
    EXPECT_EQ(row.at("entt_check").get<double>(), row.at("ecsnet_check").get<double>());
    const auto& faults = row.at("minor_faults_per_1000");
    EXPECT_GE(faults.at("entt").get<double>(), 0.0) << row.dump();
    EXPECT_GE(faults.at("ecsnet").get<double>(), 0.0) << row.dump();
}

const std::vector<std::string> all_rows{"create",
                                        "create untracked",
                                        "destroy",
                                        "destroy untracked",
                                        "create+emplace2",
                                        "create+emplace2 untracked",
                                        "create+emplace2 recycled",
                                        "emplace+erase",
                                        "emplace+erase untracked",
                                        "emplace+remove",
                                        "get (world)",
                                        "get_unchecked (world)",
                                        "try_get (world)",
                                        "get (storage)",
                                        "get (view)",
                                        "get_unchecked (view)",
                                        "iterate 1 read",
                                        "iterate 2 read",
                                        "pos+=vel untracked",
                                        "pos+=vel tracked",
                                        "pos+=vel tracked vs patch+listener",
                                        "patch+listener",
                                        "patch+listener untracked",
                                        "patch tracked vs patch+listener",
                                        "destroy half+iterate 2"};

TEST(EcsVsEntt, EveryRowIsMeasuredOnBothLibrariesWithMatchingChecksums) {
    const auto result = run("--entities 2000 --repetitions 1 --json");
    ASSERT_EQ(result.exit_code, 0) << result.out;
    const auto rows = json_lines(result.out);
    ASSERT_EQ(rows.size(), all_rows.size()) << result.out;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        // The last row times the half that is left alive.
        expect_row(rows[i], all_rows[i], i + 1 == rows.size() ? 1000 : 2000);
        EXPECT_EQ(rows[i].at("entities").get<std::size_t>(), 2000U);
        EXPECT_EQ(rows[i].at("repetitions").get<std::size_t>(), 1U);
    }
}

// Issue 24.4: EnTT over a 64-bit entity (32-bit index and version, as ecsnet's), every row.
TEST(EcsVsEntt, TheLikeForLikeModeRunsEveryRowOnA64BitEnttEntity) {
    const auto result = run("--entities 2000 --repetitions 1 --json --entt-entity 64");
    ASSERT_EQ(result.exit_code, 0) << result.out;
    const auto rows = json_lines(result.out);
    ASSERT_EQ(rows.size(), all_rows.size()) << result.out;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        expect_row(rows[i], all_rows[i], i + 1 == rows.size() ? 1000 : 2000);
        EXPECT_EQ(rows[i].at("entt_entity_bits").get<int>(), 64);
    }
    const auto table = run("--entities 500 --repetitions 1 --filter create --entt-entity 64");
    ASSERT_EQ(table.exit_code, 0) << table.out;
    EXPECT_NE(table.out.find("EnTT's entity: 64-bit"), std::string::npos) << table.out;
    const auto wrong = run("--entities 10 --entt-entity 48", true);
    EXPECT_NE(wrong.exit_code, 0) << wrong.out;
    EXPECT_NE(wrong.out.find("--entt-entity"), std::string::npos) << wrong.out;
}

TEST(EcsVsEntt, FilterRunsOnlyTheMatchingRowsOverEveryRepetition) {
    const auto result = run("--entities 1000 --repetitions 2 --json --filter iterate");
    ASSERT_EQ(result.exit_code, 0) << result.out;
    const auto rows = json_lines(result.out);
    ASSERT_EQ(rows.size(), 3U) << result.out;
    expect_row(rows[0], "iterate 1 read", 1000);
    expect_row(rows[1], "iterate 2 read", 1000);
    expect_row(rows[2], "destroy half+iterate 2", 500);
    EXPECT_EQ(rows[0].at("repetitions").get<std::size_t>(), 2U);
}

TEST(EcsVsEntt, TheTableNamesTheBuildAndTheLoad) {
    const auto result = run("--entities 500 --repetitions 1 --filter create");
    ASSERT_EQ(result.exit_code, 0) << result.out;
    EXPECT_NE(result.out.find("build: "), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("CPUs this process may run on: "), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("load average at start: "), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("load average at end: "), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("create+emplace2"), std::string::npos) << result.out;
    EXPECT_EQ(result.out.find("get (world)"), std::string::npos) << result.out;
#ifndef NDEBUG
    EXPECT_NE(result.out.find("not a release build"), std::string::npos) << result.out;
#endif
}

TEST(EcsVsEntt, AFilterMatchingNoRowFailsAndListsTheRows) {
    const auto result = run("--entities 10 --filter no-such-row", true);
    EXPECT_EQ(result.exit_code, 2) << result.out;
    EXPECT_NE(result.out.find("no row matches --filter 'no-such-row'"), std::string::npos)
        << result.out;
    EXPECT_NE(result.out.find("'patch+listener'"), std::string::npos) << result.out;
}

}  // namespace
