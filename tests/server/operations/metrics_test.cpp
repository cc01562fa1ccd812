// The server's metrics (server/include/ecsnet/server/operations/metrics.hpp): the names and types it
// registers against deploy/validate/metrics.json (what the Grafana dashboard is checked
// against), server_stats read back from the registry, and GET /metrics of a live server
// under load: Prometheus' promtool accepts it, and its values add up with what the clients saw.
#include "ecsnet/server/operations/metrics.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ecsnet/client/connection.hpp"
#include "ecsnet/demo/components.hpp"
#include "ecsnet/protocol/registry.hpp"
#include "ecsnet/server/config.hpp"
#include "http_get.hpp"
#include "test_server.hpp"

namespace metrics_test {

namespace protocol = ecsnet::protocol;
using ecsnet::client::connect_options;
using ecsnet::client::connection;
using ecsnet::demo::Position;
using ecsnet::server::disconnect_reason;
using ecsnet::server::refusal_reason;
using ecsnet::server::resync_cause;
using ecsnet::server::server_metrics;
using ecsnet::server::tick_profile;
using ecsnet::server::tick_stage;
using ecsnet::server::timed;
using ecsnet::test::http_get;
using ecsnet::test::test_server;
using ecsnet::wire::ErrorCode;
using testing::HasSubstr;
using namespace std::chrono_literals;

// "name{labels} value" lines of the text format, by series (name and labels as printed).
std::map<std::string, double> samples_of(const std::string& text) {
    std::map<std::string, double> out;
    std::istringstream lines{text};
    std::string line;
    while (std::getline(lines, line)) {
        if (line.empty() || line.front() == '#') {
            continue;
        }
        const auto space = line.rfind(' ');
        out[line.substr(0, space)] = std::stod(line.substr(space + 1));
    }
    return out;
}

// "# TYPE name type" lines: every family and its type.
std::map<std::string, std::string> types_of(const std::string& text) {
    std::map<std::string, std::string> out;
    std::istringstream lines{text};
    std::string line;
    while (std::getline(lines, line)) {
        if (line.starts_with("# TYPE ")) {
            std::istringstream words{line.substr(7)};
            std::string name;
            std::string type;
            words >> name >> type;
            out[name] = type;
        }
    }
    return out;
}

double value(const std::map<std::string, double>& samples, const std::string& series) {
    const auto it = samples.find(series);
    return it == samples.end() ? -1.0 : it->second;
}

nlohmann::json documented_metrics() {
    std::ifstream in{std::filesystem::path{ECSNET_SOURCE_DIR} / "deploy/validate/metrics.json"};
    return nlohmann::json::parse(in);
}

// promtool check metrics (Debian's prometheus package; install-deps.sh ops) on `text`:
// its exit status and what it printed.
std::pair<int, std::string> promtool_check(const std::string& text) {
    const auto file = std::filesystem::temp_directory_path() /
                      ("ecsnet-metrics-" + std::to_string(::getpid()) + ".txt");
    std::ofstream{file} << text;
    const std::string command = "promtool check metrics < " + file.string() + " 2>&1";
    std::string output;
    FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) {
        return {-1, "popen failed"};
    }
    std::array<char, 512> buffer{};
    while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) {
        output += buffer.data();
    }
    const int status = ::pclose(pipe);
    std::filesystem::remove(file);
    return {status, output};
}

TEST(ServerMetrics, RegistersExactlyTheDocumentedNamesTypesAndLabels) {
    server_metrics m{1.0 / 30.0, 100};
    (void)m.system_failed("move");  // a family with no child has no sample lines
    const std::string text = m.text();
    const auto types = types_of(text);
    const nlohmann::json documented = documented_metrics();
    std::set<std::string> names;
    for (const auto& [name, type] : types) {
        names.insert(name);
        ASSERT_TRUE(documented.contains(name)) << name << " is missing in deploy/validate/metrics.json";
        EXPECT_EQ(documented.at(name).at("type"), type) << name;
    }
    for (const auto& [name, spec] : documented.items()) {
        EXPECT_TRUE(names.contains(name)) << name << " is documented but not registered";
    }
    // Every label a sample carries is a documented one (le: the histograms' own).
    for (const auto& [series, v] : samples_of(text)) {
        const auto brace = series.find('{');
        if (brace == std::string::npos) {
            continue;
        }
        std::string name = series.substr(0, brace);
        for (const char* suffix : {"_bucket", "_sum", "_count"}) {
            if (!documented.contains(name) && name.ends_with(suffix)) {
                name.resize(name.size() - std::string_view{suffix}.size());
            }
        }
        ASSERT_TRUE(documented.contains(name)) << series;
        const auto labels = documented.at(name).at("labels").get<std::vector<std::string>>();
        std::istringstream parts{series.substr(brace + 1)};
        std::string part;
        while (std::getline(parts, part, ',')) {
            const std::string key = part.substr(0, part.find('='));
            EXPECT_TRUE(key == "le" || std::find(labels.begin(), labels.end(), key) != labels.end())
                << series << ": label " << key;
        }
    }
}

TEST(ServerMetrics, ServerStatsAreReadBackFromTheRegistry) {
    server_metrics m{0.02, 10};
    m.refused(refusal_reason::identity);
    m.refused(refusal_reason::full);
    m.refused(refusal_reason::pending);
    m.accepted(false);
    m.accepted(true);
    m.received(100);
    m.sent(300, 2);
    m.dropped(3);
    m.resync(resync_cause::queue_overflow);
    m.resync_requested(false);
    m.resync_requested(true);
    m.command(0);
    m.command(static_cast<std::uint16_t>(ErrorCode::NotOwner));
    m.command(999);  // a code newer than this build: counted, as "unknown"
    m.inputs(5, 1, 2);
    m.input_refused();
    m.tick_run();
    m.tick_timed(0.05, true);
    EXPECT_EQ(m.system_failed("move"), 1U);
    EXPECT_EQ(m.system_failed("move"), 2U);
    EXPECT_EQ(m.system_failed("on_player_joined"), 1U);
    EXPECT_EQ(m.game_failed(ecsnet::server::game_failure_kind::despawn, 4), 4U);
    m.disconnected(disconnect_reason::stalled);

    const ecsnet::server::server_stats s = m.read();
    EXPECT_EQ(s.refused, 3U) << "every reason";
    EXPECT_EQ(s.identity_refused, 1U);
    EXPECT_EQ(s.pending_refused, 1U);
    EXPECT_EQ(s.connections, 2U);
    EXPECT_EQ(s.bytes_in, 100U);
    EXPECT_EQ(s.bytes_out, 300U);
    EXPECT_EQ(s.dropped_frames, 3U);
    EXPECT_EQ(s.resyncs, 1U);
    EXPECT_EQ(s.resyncs_requested, 2U);
    EXPECT_EQ(s.resyncs_coalesced, 1U);
    EXPECT_EQ(s.inputs_applied, 5U);
    EXPECT_EQ(s.inputs_late, 1U);
    EXPECT_EQ(s.inputs_repeated, 2U);
    EXPECT_EQ(s.inputs_refused, 1U);
    EXPECT_EQ(s.ticks, 1U);
    EXPECT_EQ(s.overruns, 1U);
    EXPECT_EQ(s.system_failures, 3U);
    EXPECT_EQ(s.despawn_failures, 4U);

    const auto samples = samples_of(m.text());
    EXPECT_EQ(value(samples, R"(ecsnet_commands_total{result="ok"})"), 1.0);
    EXPECT_EQ(value(samples, R"(ecsnet_commands_total{result="not_owner"})"), 1.0);
    EXPECT_EQ(value(samples, R"(ecsnet_commands_total{result="unknown"})"), 1.0);
    EXPECT_EQ(value(samples, R"(ecsnet_frames_sent_total)"), 2.0);
    EXPECT_EQ(value(samples, R"(ecsnet_system_failures_total{system="move"})"), 2.0);
    EXPECT_EQ(value(samples, R"(ecsnet_disconnects_total{reason="stalled"})"), 1.0);
    EXPECT_EQ(value(samples, R"(ecsnet_disconnects_total{reason="client_closed"})"), 0.0)
        << "every reason is exported from the start, at 0";
    EXPECT_EQ(value(samples, R"(ecsnet_tick_duration_seconds_count)"), 1.0);
    EXPECT_EQ(value(samples, R"(ecsnet_tick_duration_seconds_bucket{le="0.02"})"), 0.0)
        << "50 ms is over the 20 ms budget's bucket";
}

TEST(ServerMetrics, TheTicksTimeIsCountedByStageEveryStageFromZero) {
    server_metrics m{0.02, 10};
    tick_profile tick;
    tick.add(tick_stage::systems, std::chrono::milliseconds{3});
    tick.add(tick_stage::encode, std::chrono::microseconds{500});
    m.tick_stages(tick);
    m.tick_stages(tick);
    const auto samples = samples_of(m.text());
    EXPECT_DOUBLE_EQ(value(samples, R"(ecsnet_tick_stage_seconds_total{stage="systems"})"), 0.006);
    EXPECT_DOUBLE_EQ(value(samples, R"(ecsnet_tick_stage_seconds_total{stage="encode"})"), 0.001);
    EXPECT_EQ(value(samples, R"(ecsnet_tick_stage_seconds_total{stage="hand_off"})"), 0.0)
        << "every stage is exported from the start, at 0";
    {
        const auto timer = timed(&tick, tick_stage::view_plan);
        std::this_thread::sleep_for(2ms);
    }
    EXPECT_GE(tick.nanoseconds(tick_stage::view_plan), 2'000'000U);
    tick.clear();
    EXPECT_EQ(tick.nanoseconds(tick_stage::systems), 0U);
    const auto untimed = timed(nullptr, tick_stage::systems);  // not profiled: nothing to count
}

TEST(ServerMetrics, BudgetUseIsOneHistogramOverEveryClient) {
    server_metrics m{0.02, 10};
    const std::vector<double> ratios{0.05, 1.0, 3.0};
    m.budget_used(ratios);
    const auto samples = samples_of(m.text());
    EXPECT_EQ(value(samples, R"(ecsnet_client_budget_use_ratio_bucket{le="0.1"})"), 1.0);
    EXPECT_EQ(value(samples, R"(ecsnet_client_budget_use_ratio_bucket{le="1"})"), 2.0)
        << "a client at exactly its budget is in the le=1 bucket";
    EXPECT_EQ(value(samples, R"(ecsnet_client_budget_use_ratio_bucket{le="+Inf"})"), 3.0);
    EXPECT_EQ(value(samples, R"(ecsnet_client_budget_use_ratio_count)"), 3.0);
    EXPECT_DOUBLE_EQ(value(samples, R"(ecsnet_client_budget_use_ratio_sum)"), 4.05);
}

TEST(ServerMetrics, TheSendQueueGaugeFollowsWhatWaits) {
    server_metrics m{0.02, 10};
    m.queued(1000);
    m.queued(-400);
    EXPECT_EQ(value(samples_of(m.text()), "ecsnet_send_queue_bytes"), 600.0);
}

// ---- a live server --------------------------------------------------------------------------

ecsnet::server::game positions_game() {
    ecsnet::server::game g;
    g.name = "metrics";
    g.register_components = [](protocol::component_registry& types) { types.add<Position>(); };
    return g;
}

ecsnet::server::server_config metrics_config() {
    ecsnet::server::server_config c = ecsnet::test::local_server_config(50.0);
    c.reconnect_grace = 0ms;
    return c;
}

TEST(MetricsEndpoint, AScrapeUnderLoadPassesPromtoolAndAddsUpWithTheClients) {
    test_server server{metrics_config(), positions_game()};
    const std::uint16_t admin = server.start_admin();
    constexpr int players = 6;
    constexpr int spawns_each = 5;
    std::vector<std::unique_ptr<connection>> clients;
    for (int i = 0; i < players; ++i) {
        connect_options o;
        o.port = server.port();
        o.name = "p" + std::to_string(i);
        o.timeout = 10s;
        clients.push_back(std::make_unique<connection>(o));
    }
    std::vector<ecsnet::ecs::Entity> first;
    int ok = 0;
    for (int round = 0; round < spawns_each; ++round) {
        for (auto& c : clients) {
            const std::uint32_t id = c->next_request_id();
            const auto r = c->request(
                protocol::spawn{id, protocol::component_set{}.set(Position{float(round), 1.0F})}, id);
            ASSERT_EQ(r.code, ErrorCode::None) << r.message;
            ++ok;
            if (round == 0) {
                first.push_back(r.entity);
            }
        }
        // Scraped while the others' commands and ticks go on: each scrape is well-formed.
        const auto reply = http_get(admin, "/metrics");
        ASSERT_EQ(reply.status, 200U) << reply.error;
        EXPECT_EQ(reply.content_type, "text/plain; version=0.0.4; charset=utf-8");
        const auto [status, output] = promtool_check(reply.body);
        ASSERT_EQ(status, 0) << "promtool check metrics (install it: scripts/install-deps.sh ops):\n"
                             << output;
    }
    // A refused command: player 0 destroys player 1's entity.
    const std::uint32_t id = clients[0]->next_request_id();
    EXPECT_EQ(clients[0]->request(protocol::destroy{id, first[1]}, id).code, ErrorCode::NotOwner);

    // The server writes its counters from its own threads while the admin thread scrapes: a
    // scrape may fall between a tick's two counters, or before a write's completion has counted
    // bytes a client already read. Scrape (bounded) until one shows both settled.
    double read = 0;
    for (const auto& c : clients) {
        read += static_cast<double>(c->bytes_received());
    }
    auto samples = samples_of(http_get(admin, "/metrics").body);
    for (int i = 0; i < 100; ++i) {
        if (value(samples, "ecsnet_tick_duration_seconds_count") == value(samples, "ecsnet_ticks_total") &&
            value(samples, "ecsnet_bytes_sent_total") >= read) {
            break;
        }
        std::this_thread::sleep_for(20ms);
        samples = samples_of(http_get(admin, "/metrics").body);
    }
    EXPECT_EQ(value(samples, "ecsnet_clients"), players);
    EXPECT_EQ(value(samples, "ecsnet_entities"), players * spawns_each);
    EXPECT_EQ(value(samples, R"(ecsnet_commands_total{result="ok"})"), ok);
    EXPECT_EQ(value(samples, R"(ecsnet_commands_total{result="not_owner"})"), 1.0);
    EXPECT_EQ(value(samples, R"(ecsnet_connections_total{transport="tcp"})"), players);
    EXPECT_EQ(value(samples, R"(ecsnet_connections_refused_total{reason="full"})"), 0.0);
    EXPECT_GT(value(samples, "ecsnet_ticks_total"), 0.0);
    EXPECT_EQ(value(samples, "ecsnet_tick_duration_seconds_count"), value(samples, "ecsnet_ticks_total"));
    EXPECT_GT(value(samples, R"(ecsnet_tick_stage_seconds_total{stage="commands"})"), 0.0);
    EXPECT_GT(value(samples, R"(ecsnet_tick_stage_seconds_total{stage="encode"})"), 0.0)
        << "the deltas the clients received were encoded";
    EXPECT_GT(value(samples, R"(ecsnet_tick_stage_seconds_total{stage="hand_off"})"), 0.0);
    EXPECT_EQ(value(samples, "ecsnet_snapshot_size_bytes_count"), players) << "one per join";
    // Every frame the clients sent: Hello and their commands, and whatever else they send (pings).
    EXPECT_GE(value(samples, "ecsnet_frames_received_total"), players + ok + 1);
    // The server wrote at least what the clients had read before the scrape.
    EXPECT_GE(value(samples, "ecsnet_bytes_sent_total"), read);

    // Everyone leaves: the gauges come back down and the reasons are counted. The send queue's
    // gauge drops when a session is destroyed, which may be after its disconnect is counted
    // (a scrape between the two read 520 bytes under TSan): waited for as well.
    clients.clear();
    for (int i = 0; i < 100; ++i) {
        samples = samples_of(http_get(admin, "/metrics").body);
        if (value(samples, "ecsnet_clients") == 0.0 &&
            value(samples, R"(ecsnet_disconnects_total{reason="client_closed"})") == players &&
            value(samples, "ecsnet_send_queue_bytes") == 0.0) {
            break;
        }
        std::this_thread::sleep_for(50ms);
    }
    EXPECT_EQ(value(samples, "ecsnet_clients"), 0.0);
    EXPECT_EQ(value(samples, R"(ecsnet_disconnects_total{reason="client_closed"})"), players);
    EXPECT_EQ(value(samples, "ecsnet_send_queue_bytes"), 0.0) << "nothing waits for a closed session";
}

// Prometheus' convention: a counter exists at 0 before it first counts (an alert on its
// increase would otherwise miss the first failure, the series appearing at 1).
TEST(MetricsEndpoint, EverySystemsFailuresAreExportedAtZeroBeforeItFails) {
    test_server server{metrics_config(), positions_game()};
    const std::uint16_t admin = server.start_admin();
    const std::uint64_t added_at = server.call([](ecsnet::server::server& s) {
        s.scheduler().add("move", ecsnet::ecs::component_access{}, [](ecsnet::ecs::SystemContext&) {});
        s.on_player_left = [](std::uint32_t) {};
        return s.tick();
    });
    for (int i = 0; i < 200 && server.tick() < added_at + 2; ++i) {
        std::this_thread::sleep_for(10ms);
    }
    ASSERT_GE(server.tick(), added_at + 2) << "the server stopped ticking";
    const auto samples = samples_of(http_get(admin, "/metrics").body);
    EXPECT_EQ(value(samples, R"(ecsnet_system_failures_total{system="move"})"), 0.0);
    EXPECT_EQ(value(samples, R"(ecsnet_system_failures_total{system="on_player_left"})"), 0.0);
    EXPECT_EQ(value(samples, R"(ecsnet_system_failures_total{system="on_player_joined"})"), -1.0)
        << "a hook the game did not set cannot fail";
}

TEST(MetricsEndpoint, RefusalsAreCountedByReason) {
    auto config = metrics_config();
    config.max_clients = 1;
    test_server server{config, positions_game()};
    const std::uint16_t admin = server.start_admin();
    connect_options o;
    o.port = server.port();
    o.name = "first";
    o.timeout = 10s;
    connection first{o};
    o.name = "second";
    EXPECT_THROW((void)std::make_unique<connection>(o), ecsnet::client::client_error)
        << "server full";
    std::map<std::string, double> samples;
    for (int i = 0; i < 100; ++i) {
        samples = samples_of(http_get(admin, "/metrics").body);
        if (value(samples, R"(ecsnet_disconnects_total{reason="refused"})") == 1.0) {
            break;
        }
        std::this_thread::sleep_for(50ms);
    }
    EXPECT_EQ(value(samples, R"(ecsnet_connections_refused_total{reason="full"})"), 1.0);
    EXPECT_EQ(value(samples, R"(ecsnet_disconnects_total{reason="refused"})"), 1.0);
    EXPECT_EQ(value(samples, "ecsnet_clients_max"), 1.0);
    EXPECT_EQ(server.stats().refused, 1U) << "server_stats reads the same counters";
}

}  // namespace metrics_test
