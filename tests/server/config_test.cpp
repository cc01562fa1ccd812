// parse_command_line: defaults, flags, ECSNET_* environment variables, exit codes.
#include "ecsnet/server/config.hpp"

#include <CLI/CLI.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <thread>
#include <vector>

namespace config_test {

using ecsnet::server::describe;
using ecsnet::server::log_format;
using ecsnet::server::parse_command_line;
using ecsnet::server::parsed_command_line;
using ecsnet::server::server_config;
using namespace std::chrono_literals;
using testing::HasSubstr;

constexpr const char* all_variables[] = {"ECSNET_BIND",
                                         "ECSNET_WS_PORT",
                                         "ECSNET_WS_ALLOWED_ORIGINS",
                                         "ECSNET_WEB_ROOT",
                                         "ECSNET_WEB_CHUNK_BYTES",
                                         "ECSNET_WEB_MEMORY_BYTES",
                                         "ECSNET_WEB_MAX_PER_ADDRESS",
                                         "ECSNET_WEB_STALL_TIMEOUT_MS",
                                         "ECSNET_INSPECTOR_DIR",
                                         "ECSNET_PORT",
                                         "ECSNET_TICK_RATE",
                                         "ECSNET_MAX_CLIENTS",
                                         "ECSNET_MAX_FRAME_BYTES",
                                         "ECSNET_QUEUE_BYTES",
                                         "ECSNET_DEMO_ENTITIES",
                                         "ECSNET_LOG_LEVEL",
                                         "ECSNET_LOG_FORMAT",
                                         "ECSNET_AUTH_TOKEN",
                                         "ECSNET_MAX_ENTITIES_PER_CLIENT",
                                         "ECSNET_MAX_ENTITIES",
                                         "ECSNET_COMMAND_RATE",
                                         "ECSNET_COMMAND_BURST",
                                         "ECSNET_KEEP_ENTITIES_ON_DISCONNECT",
                                         "ECSNET_CHECKSUM_INTERVAL",
                                         "ECSNET_CHECKSUM_SLICE",
                                         "ECSNET_WORLD_HALF_EXTENT",
                                         "ECSNET_STRICT_ACCESS",
                                         "ECSNET_HELLO_TIMEOUT_MS",
                                         "ECSNET_IDLE_TIMEOUT_MS",
                                         "ECSNET_FRAME_TIMEOUT_MS",
                                         "ECSNET_STALL_TIMEOUT_MS",
                                         "ECSNET_ADMIN_PORT",
                                         "ECSNET_ADMIN_BIND",
                                         "ECSNET_ADMIN_ALLOWED_HOSTS",
                                         "ECSNET_ADMIN_ALLOWED_ORIGINS",
                                         "ECSNET_DRAIN_SECONDS",
                                         "ECSNET_TOKEN_SECRET",
                                         "ECSNET_WORLD_ID",
                                         "ECSNET_TOKEN_PUBLIC_KEY",
                                         "ECSNET_MAX_CONNECTIONS_PER_PLAYER",
                                         "ECSNET_MAX_CLIENTS_PER_ADDRESS",
                                         "ECSNET_MAX_REMEMBERED_TOKENS",
                                         "ECSNET_IO_THREADS",
                                         "ECSNET_STATE_DIR",
                                         "ECSNET_CHECKPOINT_SECONDS",
                                         "ECSNET_KEEP_CHECKPOINTS",
                                         "ECSNET_JOURNAL"};

class ServerConfig : public testing::Test {
protected:
    // Whatever the environment of the test run holds must not leak into the results.
    void SetUp() override { clear_environment(); }
    void TearDown() override { clear_environment(); }

    static void clear_environment() {
        for (const char* name : all_variables) {
            ::unsetenv(name);
        }
    }

    static parsed_command_line parse(std::initializer_list<const char*> args) {
        std::vector<const char*> argv{"ecsnet-server"};
        argv.insert(argv.end(), args.begin(), args.end());
        return parse_command_line(static_cast<int>(argv.size()), argv.data());
    }
};

TEST_F(ServerConfig, DefaultsWithoutArguments) {
    const parsed_command_line parsed = parse({});
    ASSERT_FALSE(parsed.exit_code.has_value());
    EXPECT_FALSE(parsed.healthcheck);
    const server_config& c = parsed.config;
    const server_config defaults;
    EXPECT_EQ(c.bind, "0.0.0.0");
    EXPECT_EQ(c.port, 7777);
    EXPECT_EQ(c.tick_rate, 30.0);
    EXPECT_EQ(c.max_clients, 256U);
    EXPECT_EQ(c.max_frame_bytes, 64U * 1024U);
    EXPECT_EQ(c.queue_bytes, 1024U * 1024U);
    EXPECT_EQ(c.demo_entities, 0U);
    EXPECT_EQ(c.log_level, "info");
    EXPECT_EQ(c.log_format_, log_format::text);
    EXPECT_EQ(c.auth_token, "");
    EXPECT_EQ(c.max_entities_per_client, defaults.max_entities_per_client);
    EXPECT_EQ(c.max_entities, defaults.max_entities);
    EXPECT_EQ(c.command_rate, 200.0);
    EXPECT_EQ(c.command_burst, 400.0);
    EXPECT_FALSE(c.keep_entities_on_disconnect);
    EXPECT_FALSE(c.strict_access);
    EXPECT_EQ(c.checksum_interval, 30U);
    EXPECT_EQ(c.checksum_slice, 65'536U);
    EXPECT_EQ(c.world_half_extent, 1000.0F);
    EXPECT_EQ(c.hello_timeout, 5000ms);
    EXPECT_EQ(c.idle_timeout, 60'000ms);
    EXPECT_EQ(c.frame_timeout, 10'000ms);
    EXPECT_EQ(c.stall_timeout, 10'000ms);
    const unsigned cores = std::thread::hardware_concurrency();
    EXPECT_EQ(c.io_threads, cores > 1 ? cores - 1 : 1U);
    EXPECT_EQ(defaults.io_threads, c.io_threads);
}

TEST_F(ServerConfig, FlagsSetEveryField) {
    const parsed_command_line parsed = parse({"--bind",
                                              "127.0.0.1",
                                              "--port",
                                              "0",
                                              "--tick-rate",
                                              "60",
                                              "--max-clients",
                                              "3",
                                              "--max-frame-bytes",
                                              "1024",
                                              "--queue-bytes",
                                              "65536",
                                              "--demo-entities",
                                              "500",
                                              "--log-level",
                                              "debug",
                                              "--log-format",
                                              "json",
                                              "--auth-token",
                                              "s3cret",
                                              "--max-entities-per-client",
                                              "7",
                                              "--max-entities",
                                              "70",
                                              "--command-rate",
                                              "5",
                                              "--command-burst",
                                              "10",
                                              "--keep-entities-on-disconnect",
                                              "--checksum-interval",
                                              "4",
                                              "--checksum-slice",
                                              "2048",
                                              "--world-half-extent",
                                              "50",
                                              "--hello-timeout-ms",
                                              "300",
                                              "--idle-timeout-ms",
                                              "9000",
                                              "--frame-timeout-ms",
                                              "2500",
                                              "--stall-timeout-ms",
                                              "1500"});
    ASSERT_FALSE(parsed.exit_code.has_value());
    const server_config& c = parsed.config;
    EXPECT_EQ(c.bind, "127.0.0.1");
    EXPECT_EQ(c.port, 0);
    EXPECT_EQ(c.tick_rate, 60.0);
    EXPECT_EQ(c.max_clients, 3U);
    EXPECT_EQ(c.max_frame_bytes, 1024U);
    EXPECT_EQ(c.queue_bytes, 65536U);
    EXPECT_EQ(c.demo_entities, 500U);
    EXPECT_EQ(c.log_level, "debug");
    EXPECT_EQ(c.log_format_, log_format::json);
    EXPECT_EQ(c.auth_token, "s3cret");
    EXPECT_EQ(c.max_entities_per_client, 7U);
    EXPECT_EQ(c.max_entities, 70U);
    EXPECT_EQ(c.command_rate, 5.0);
    EXPECT_EQ(c.command_burst, 10.0);
    EXPECT_TRUE(c.keep_entities_on_disconnect);
    EXPECT_EQ(c.checksum_interval, 4U);
    EXPECT_EQ(c.checksum_slice, 2048U);
    EXPECT_EQ(c.world_half_extent, 50.0F);
    EXPECT_EQ(c.hello_timeout, 300ms);
    EXPECT_EQ(c.idle_timeout, 9000ms);
    EXPECT_EQ(c.frame_timeout, 2500ms);
    EXPECT_EQ(c.stall_timeout, 1500ms);
}

TEST_F(ServerConfig, FrameTimeoutFromFlagOrEnvironment) {
    ::setenv("ECSNET_FRAME_TIMEOUT_MS", "3000", 1);
    EXPECT_EQ(parse({}).config.frame_timeout, 3000ms);
    EXPECT_EQ(parse({"--frame-timeout-ms", "700"}).config.frame_timeout, 700ms);
    testing::internal::CaptureStderr();
    EXPECT_EQ(parse({"--frame-timeout-ms", "99"}).exit_code, 2);
    EXPECT_EQ(parse({"--frame-timeout-ms", "600001"}).exit_code, 2);
    (void)testing::internal::GetCapturedStderr();
}

TEST_F(ServerConfig, WebSocketIsOffByDefaultAndItsOriginsAreChecked) {
    EXPECT_EQ(parse({}).config.ws_port, -1);
    EXPECT_TRUE(parse({}).config.ws_allowed_origins.empty());
    EXPECT_THAT(describe(parse({}).config), HasSubstr("ws=off"));
    const auto on = parse({"--ws-port", "0", "--ws-allowed-origins",
                           "https://game.example.com,http://localhost:5173"});
    ASSERT_EQ(on.exit_code, std::nullopt);
    EXPECT_EQ(on.config.ws_port, 0);
    EXPECT_EQ(on.config.ws_allowed_origins,
              (std::vector<std::string>{"https://game.example.com", "http://localhost:5173"}));
    EXPECT_THAT(describe(on.config), HasSubstr("ws=0(origins https://game.example.com,http://localhost:5173)"));
    ::setenv("ECSNET_WS_PORT", "7780", 1);
    ::setenv("ECSNET_WS_ALLOWED_ORIGINS", "*", 1);
    EXPECT_EQ(parse({}).config.ws_port, 7780);
    EXPECT_EQ(parse({}).config.ws_allowed_origins, std::vector<std::string>{"*"});
    clear_environment();

    // Mistakes say what is wrong.
    testing::internal::CaptureStderr();
    EXPECT_EQ(parse({"--ws-port", "0", "--ws-allowed-origins", "game.example.com"}).exit_code, 2);
    EXPECT_THAT(testing::internal::GetCapturedStderr(), HasSubstr("give the scheme"));
    testing::internal::CaptureStderr();
    EXPECT_EQ(parse({"--ws-allowed-origins", "https://game.example.com"}).exit_code, 2);
    EXPECT_THAT(testing::internal::GetCapturedStderr(), HasSubstr("needs --ws-port"));
    testing::internal::CaptureStderr();
    EXPECT_EQ(parse({"--port", "7777", "--ws-port", "7777"}).exit_code, 2);
    EXPECT_THAT(testing::internal::GetCapturedStderr(), HasSubstr("must differ from --port"));
    testing::internal::CaptureStderr();
    EXPECT_EQ(parse({"--ws-port", "65536"}).exit_code, 2);
    EXPECT_EQ(parse({"--ws-port", "-2"}).exit_code, 2);
    (void)testing::internal::GetCapturedStderr();
}

TEST_F(ServerConfig, AdminAllowedHostsAndOriginsAreTheAdminEndpointsOwn) {
    EXPECT_TRUE(parse({"--admin-port", "0"}).config.admin_allowed_hosts.empty());
    EXPECT_TRUE(parse({"--admin-port", "0"}).config.admin_allowed_origins.empty());
    const auto on = parse({"--admin-port", "0", "--admin-allowed-hosts",
                           "admin.example.internal,Ops.Example", "--admin-allowed-origins",
                           "https://ops.example.com"});
    ASSERT_EQ(on.exit_code, std::nullopt);
    EXPECT_EQ(on.config.admin_allowed_hosts,
              (std::vector<std::string>{"admin.example.internal", "Ops.Example"}));
    EXPECT_EQ(on.config.admin_allowed_origins, std::vector<std::string>{"https://ops.example.com"});
    EXPECT_TRUE(on.config.ws_allowed_origins.empty()) << "the game port's list is another";
    ::setenv("ECSNET_ADMIN_PORT", "7778", 1);
    ::setenv("ECSNET_ADMIN_ALLOWED_HOSTS", "a.example,b.example", 1);
    ::setenv("ECSNET_ADMIN_ALLOWED_ORIGINS", "*", 1);
    EXPECT_EQ(parse({}).config.admin_allowed_hosts,
              (std::vector<std::string>{"a.example", "b.example"}));
    EXPECT_EQ(parse({}).config.admin_allowed_origins, std::vector<std::string>{"*"});
    clear_environment();

    testing::internal::CaptureStderr();
    EXPECT_EQ(parse({"--admin-port", "0", "--admin-allowed-hosts", "a.example:7778"}).exit_code, 2);
    EXPECT_THAT(testing::internal::GetCapturedStderr(), HasSubstr("without a port"));
    testing::internal::CaptureStderr();
    EXPECT_EQ(parse({"--admin-port", "0", "--admin-allowed-hosts", "https://a.example"}).exit_code,
              2);
    EXPECT_THAT(testing::internal::GetCapturedStderr(), HasSubstr("not a URL"));
    testing::internal::CaptureStderr();
    EXPECT_EQ(parse({"--admin-port", "0", "--admin-allowed-origins", "ops.example.com"}).exit_code,
              2);
    EXPECT_THAT(testing::internal::GetCapturedStderr(), HasSubstr("give the scheme"));
    testing::internal::CaptureStderr();
    EXPECT_EQ(parse({"--admin-allowed-hosts", "a.example"}).exit_code, 2);
    EXPECT_THAT(testing::internal::GetCapturedStderr(), HasSubstr("needs --admin-port"));
}

TEST_F(ServerConfig, WebPageBoundsHaveFlagsEnvVarsAndSaneDefaults) {
    const std::string dir = std::filesystem::temp_directory_path().string();
    const server_config defaults = parse({}).config;
    EXPECT_EQ(defaults.web_chunk_bytes, 64U * 1024);
    EXPECT_EQ(defaults.web_memory_bytes, 32U * 1024 * 1024);
    EXPECT_EQ(defaults.web_max_per_address, 8U);
    EXPECT_EQ(defaults.web_stall_timeout, 10s);
    testing::internal::CaptureStdout();
    (void)parse({"--help"});
    const std::string help = testing::internal::GetCapturedStdout();
    for (const char* word : {"--web-chunk-bytes", "ECSNET_WEB_CHUNK_BYTES", "--web-memory-bytes",
                             "ECSNET_WEB_MEMORY_BYTES", "--web-max-per-address",
                             "ECSNET_WEB_MAX_PER_ADDRESS", "--web-stall-timeout-ms",
                             "ECSNET_WEB_STALL_TIMEOUT_MS"}) {
        EXPECT_THAT(help, HasSubstr(word));
    }

    const auto flags = parse({"--ws-port", "0", "--web-root", dir.c_str(), "--web-chunk-bytes",
                              "8192", "--web-memory-bytes", "1048576", "--web-max-per-address", "3",
                              "--web-stall-timeout-ms", "2500"});
    ASSERT_EQ(flags.exit_code, std::nullopt);
    EXPECT_EQ(flags.config.web_chunk_bytes, 8192U);
    EXPECT_EQ(flags.config.web_memory_bytes, 1'048'576U);
    EXPECT_EQ(flags.config.web_max_per_address, 3U);
    EXPECT_EQ(flags.config.web_stall_timeout, 2500ms);
    EXPECT_THAT(describe(flags.config), HasSubstr("pages 3/address, memory 1048576 B, chunk 8192 B, "
                                                  "stall 2500 ms"));

    ::setenv("ECSNET_WEB_MAX_PER_ADDRESS", "5", 1);
    ::setenv("ECSNET_WEB_STALL_TIMEOUT_MS", "700", 1);
    ::setenv("ECSNET_WEB_CHUNK_BYTES", "4096", 1);
    ::setenv("ECSNET_WEB_MEMORY_BYTES", "65536", 1);
    const server_config from_env = parse({}).config;
    EXPECT_EQ(from_env.web_max_per_address, 5U);
    EXPECT_EQ(from_env.web_stall_timeout, 700ms);
    EXPECT_EQ(from_env.web_chunk_bytes, 4096U);
    EXPECT_EQ(from_env.web_memory_bytes, 65'536U);
    clear_environment();

    testing::internal::CaptureStderr();
    EXPECT_EQ(parse({"--web-chunk-bytes", "65536", "--web-memory-bytes", "8192"}).exit_code, 2);
    EXPECT_THAT(testing::internal::GetCapturedStderr(), HasSubstr("at least one chunk"));
    testing::internal::CaptureStderr();
    EXPECT_EQ(parse({"--web-max-per-address", "0"}).exit_code, 2);
    EXPECT_EQ(parse({"--web-stall-timeout-ms", "10"}).exit_code, 2);
    (void)testing::internal::GetCapturedStderr();
}

TEST_F(ServerConfig, WebRootAndInspectorDirAreExistingDirectoriesOfTheirPorts) {
    const std::string dir = std::filesystem::temp_directory_path().string();
    const std::string missing = dir + "/ecsnet-no-such-directory";
    EXPECT_EQ(parse({}).config.web_root, "");
    EXPECT_EQ(parse({}).config.inspector_dir, "") << "empty: beside the executable";
    testing::internal::CaptureStdout();
    (void)parse({"--help"});
    const std::string help = testing::internal::GetCapturedStdout();
    for (const char* word : {"--web-root", "ECSNET_WEB_ROOT", "--inspector-dir",
                             "ECSNET_INSPECTOR_DIR"}) {
        EXPECT_THAT(help, HasSubstr(word));
    }

    const auto web = parse({"--ws-port", "0", "--web-root", dir.c_str()});
    ASSERT_EQ(web.exit_code, std::nullopt);
    EXPECT_EQ(web.config.web_root, dir);
    EXPECT_THAT(describe(web.config), HasSubstr("web-root " + dir));
    const auto inspector = parse({"--admin-port", "0", "--inspector-dir", dir.c_str()});
    ASSERT_EQ(inspector.exit_code, std::nullopt);
    EXPECT_EQ(inspector.config.inspector_dir, dir);

    ::setenv("ECSNET_WS_PORT", "0", 1);
    ::setenv("ECSNET_WEB_ROOT", dir.c_str(), 1);
    ::setenv("ECSNET_ADMIN_PORT", "0", 1);
    ::setenv("ECSNET_INSPECTOR_DIR", dir.c_str(), 1);
    EXPECT_EQ(parse({}).config.web_root, dir);
    EXPECT_EQ(parse({}).config.inspector_dir, dir);
    clear_environment();

    // Mistakes say what is wrong.
    testing::internal::CaptureStderr();
    EXPECT_EQ(parse({"--web-root", dir.c_str()}).exit_code, 2);
    EXPECT_THAT(testing::internal::GetCapturedStderr(), HasSubstr("needs --ws-port"));
    testing::internal::CaptureStderr();
    EXPECT_EQ(parse({"--ws-port", "0", "--web-root", missing.c_str()}).exit_code, 2);
    EXPECT_THAT(testing::internal::GetCapturedStderr(), HasSubstr("ecsnet-no-such-directory"));
    testing::internal::CaptureStderr();
    ::setenv("ECSNET_WS_PORT", "0", 1);
    ::setenv("ECSNET_WEB_ROOT", missing.c_str(), 1);
    EXPECT_EQ(parse({}).exit_code, 2);
    clear_environment();
    (void)testing::internal::GetCapturedStderr();
    testing::internal::CaptureStderr();
    EXPECT_EQ(parse({"--inspector-dir", dir.c_str()}).exit_code, 2);
    EXPECT_THAT(testing::internal::GetCapturedStderr(), HasSubstr("needs --admin-port"));
    testing::internal::CaptureStderr();
    EXPECT_EQ(parse({"--admin-port", "0", "--inspector-dir", missing.c_str()}).exit_code, 2);
    EXPECT_THAT(testing::internal::GetCapturedStderr(), HasSubstr("ecsnet-no-such-directory"));
}

TEST_F(ServerConfig, IoThreadsFromFlagOrEnvironment) {
    EXPECT_EQ(parse({"--io-threads", "3"}).config.io_threads, 3U);
    EXPECT_THAT(describe(parse({"--io-threads", "3"}).config), HasSubstr("io_threads=3"));
    ::setenv("ECSNET_IO_THREADS", "2", 1);
    EXPECT_EQ(parse({}).config.io_threads, 2U);
    EXPECT_EQ(parse({"--io-threads", "1"}).config.io_threads, 1U);
    ::unsetenv("ECSNET_IO_THREADS");

    // Zero is a usage error that says why, from the flag or from the environment.
    testing::internal::CaptureStderr();
    EXPECT_EQ(parse({"--io-threads", "0"}).exit_code, 2);
    EXPECT_THAT(testing::internal::GetCapturedStderr(),
                HasSubstr("--io-threads: must be at least 1"));
    ::setenv("ECSNET_IO_THREADS", "0", 1);
    testing::internal::CaptureStderr();
    EXPECT_EQ(parse({}).exit_code, 2);
    EXPECT_THAT(testing::internal::GetCapturedStderr(), HasSubstr("must be at least 1"));
    ::unsetenv("ECSNET_IO_THREADS");

    testing::internal::CaptureStderr();
    EXPECT_EQ(parse({"--io-threads", "-1"}).exit_code, 2);
    EXPECT_EQ(parse({"--io-threads", "two"}).exit_code, 2);
    EXPECT_EQ(parse({"--io-threads", "1025"}).exit_code, 2);
    (void)testing::internal::GetCapturedStderr();
}

TEST_F(ServerConfig, StrictAccessFromTheFlagOrTheEnvironment) {
    EXPECT_TRUE(parse({"--strict-access"}).config.strict_access);
    ::setenv("ECSNET_STRICT_ACCESS", "true", 1);
    EXPECT_TRUE(parse({}).config.strict_access);
}

TEST_F(ServerConfig, HealthcheckFlag) {
    const parsed_command_line parsed = parse({"--healthcheck", "--port", "9100"});
    ASSERT_FALSE(parsed.exit_code.has_value());
    EXPECT_TRUE(parsed.healthcheck);
    EXPECT_EQ(parsed.config.port, 9100);
}

TEST_F(ServerConfig, EnvironmentVariablesSetFields) {
    ::setenv("ECSNET_PORT", "9000", 1);
    ::setenv("ECSNET_BIND", "127.0.0.2", 1);
    ::setenv("ECSNET_TICK_RATE", "20", 1);
    ::setenv("ECSNET_AUTH_TOKEN", "from-env", 1);
    ::setenv("ECSNET_KEEP_ENTITIES_ON_DISCONNECT", "true", 1);
    ::setenv("ECSNET_LOG_FORMAT", "json", 1);
    ::setenv("ECSNET_HELLO_TIMEOUT_MS", "250", 1);
    ::setenv("ECSNET_CHECKSUM_SLICE", "4096", 1);
    const parsed_command_line parsed = parse({});
    ASSERT_FALSE(parsed.exit_code.has_value());
    EXPECT_EQ(parsed.config.port, 9000);
    EXPECT_EQ(parsed.config.bind, "127.0.0.2");
    EXPECT_EQ(parsed.config.tick_rate, 20.0);
    EXPECT_EQ(parsed.config.auth_token, "from-env");
    EXPECT_TRUE(parsed.config.keep_entities_on_disconnect);
    EXPECT_EQ(parsed.config.checksum_slice, 4096U);
    EXPECT_EQ(parsed.config.log_format_, log_format::json);
    EXPECT_EQ(parsed.config.hello_timeout, 250ms);
}

TEST_F(ServerConfig, CommandLineWinsOverEnvironment) {
    ::setenv("ECSNET_PORT", "9000", 1);
    const parsed_command_line parsed = parse({"--port", "9001"});
    ASSERT_FALSE(parsed.exit_code.has_value());
    EXPECT_EQ(parsed.config.port, 9001);
}

TEST_F(ServerConfig, BadEnvironmentValueIsAUsageError) {
    ::setenv("ECSNET_TICK_RATE", "fast", 1);
    EXPECT_EQ(parse({}).exit_code, 2);
}

TEST_F(ServerConfig, HelpAndVersionExitZero) {
    testing::internal::CaptureStdout();
    const parsed_command_line help = parse({"--help"});
    const std::string text = testing::internal::GetCapturedStdout();
    EXPECT_EQ(help.exit_code, 0);
    EXPECT_THAT(text, HasSubstr("--port"));
    EXPECT_THAT(text, HasSubstr("ECSNET_PORT"));
    EXPECT_THAT(text, HasSubstr("--io-threads"));
    EXPECT_THAT(text, HasSubstr("ECSNET_IO_THREADS"));

    testing::internal::CaptureStdout();
    const parsed_command_line version = parse({"--version"});
    EXPECT_THAT(testing::internal::GetCapturedStdout(), HasSubstr("ecsnet-server"));
    EXPECT_EQ(version.exit_code, 0);
}

TEST_F(ServerConfig, BadValuesExitTwo) {
    testing::internal::CaptureStderr();  // CLI11 explains each error there
    EXPECT_EQ(parse({"--port", "99999"}).exit_code, 2);
    EXPECT_EQ(parse({"--port", "seven"}).exit_code, 2);
    EXPECT_EQ(parse({"--tick-rate", "0"}).exit_code, 2);
    EXPECT_EQ(parse({"--max-clients", "0"}).exit_code, 2);
    EXPECT_EQ(parse({"--log-level", "loud"}).exit_code, 2);
    EXPECT_EQ(parse({"--log-format", "xml"}).exit_code, 2);
    EXPECT_EQ(parse({"--command-rate", "-1"}).exit_code, 2);
    EXPECT_EQ(parse({"--hello-timeout-ms", "5"}).exit_code, 2);
    EXPECT_EQ(parse({"--no-such-flag"}).exit_code, 2);
    EXPECT_EQ(parse({"--port"}).exit_code, 2);
    (void)testing::internal::GetCapturedStderr();
}

TEST_F(ServerConfig, AdminEndpointAndDrain) {
    const auto defaults = parse({});
    EXPECT_EQ(defaults.config.admin_port, -1) << "off unless asked for";
    EXPECT_EQ(defaults.config.admin_bind, "127.0.0.1");
    EXPECT_EQ(defaults.config.drain, 0s);

    const auto flags =
        parse({"--admin-port", "7778", "--admin-bind", "0.0.0.0", "--drain-seconds", "30"});
    ASSERT_FALSE(flags.exit_code);
    EXPECT_EQ(flags.config.admin_port, 7778);
    EXPECT_EQ(flags.config.drain, 30s);
    EXPECT_EQ(ecsnet::server::admin_probe_host(flags.config), "127.0.0.1");
    EXPECT_THAT(describe(flags.config), HasSubstr("admin=0.0.0.0:7778 drain=30s"));

    ::setenv("ECSNET_ADMIN_PORT", "9100", 1);
    ::setenv("ECSNET_DRAIN_SECONDS", "5", 1);
    const auto env = parse({"--healthcheck"});
    EXPECT_TRUE(env.healthcheck);
    EXPECT_EQ(env.config.admin_port, 9100);
    EXPECT_EQ(env.config.drain, 5s);

    testing::internal::CaptureStderr();
    EXPECT_EQ(parse({"--admin-port", "-2"}).exit_code, 2);
    EXPECT_EQ(parse({"--drain-seconds", "-1"}).exit_code, 2);
    (void)testing::internal::GetCapturedStderr();
}

TEST_F(ServerConfig, DescribeNamesTheSettingsButNotTheToken) {
    server_config c;
    c.auth_token = "s3cret";
    c.port = 4242;
    const std::string text = describe(c);
    EXPECT_THAT(text, HasSubstr("port=4242"));
    EXPECT_THAT(text, HasSubstr("auth=token"));
    EXPECT_THAT(text, testing::Not(HasSubstr("s3cret")));
}

constexpr const char* secret_32 = "0123456789abcdef0123456789abcdef";

TEST_F(ServerConfig, IssueTokenTakesPlayerTtlWorldAndTheSecretFromTheEnvironment) {
    ::setenv("ECSNET_TOKEN_SECRET", secret_32, 1);
    const parsed_command_line parsed =
        parse({"issue-token", "--player", "alice", "--ttl", "15m", "--world", "w"});
    ASSERT_FALSE(parsed.exit_code);
    ASSERT_TRUE(parsed.issue_token);
    EXPECT_EQ(parsed.issue_token->player, "alice");
    EXPECT_EQ(parsed.issue_token->world, "w");
    EXPECT_EQ(parsed.issue_token->ttl, 900s);
    EXPECT_EQ(parsed.config.token_secret, secret_32);
}

// `ecsnet-server issue-token --player alice --token-secret S`: the server's options may
// follow the command, as they do in ecsnet-client. Before, CLI11 refused the secret there
// ("The following arguments were not expected").
TEST_F(ServerConfig, IssueTokenTakesTheSecretAfterTheCommand) {
    testing::internal::CaptureStderr();
    const parsed_command_line parsed =
        parse({"issue-token", "--player", "alice", "--token-secret", secret_32});
    const std::string errors = testing::internal::GetCapturedStderr();
    ASSERT_FALSE(parsed.exit_code) << errors;
    ASSERT_TRUE(parsed.issue_token);
    EXPECT_EQ(parsed.config.token_secret, secret_32);
    EXPECT_EQ(parsed.issue_token->world, "default");
}

TEST_F(ServerConfig, IssueTokenWithoutASecretExitsTwoAndSaysSo) {
    testing::internal::CaptureStderr();
    EXPECT_EQ(parse({"issue-token", "--player", "alice"}).exit_code, 2);
    EXPECT_THAT(testing::internal::GetCapturedStderr(),
                HasSubstr("--token-secret (or ECSNET_TOKEN_SECRET) or --private-key for issue-token "
                          "(a public key verifies but cannot sign) is required"));
}

TEST_F(ServerConfig, TooShortTokenSecretExitsTwo) {
    testing::internal::CaptureStderr();
    EXPECT_EQ(parse({"--token-secret", "fifteen-bytes!!"}).exit_code, 2);
    ::setenv("ECSNET_TOKEN_SECRET", "short", 1);
    EXPECT_EQ(parse({"issue-token", "--player", "alice"}).exit_code, 2);
    EXPECT_THAT(testing::internal::GetCapturedStderr(),
                HasSubstr("--token-secret: must be at least 16 bytes"));
    ::unsetenv("ECSNET_TOKEN_SECRET");
    const parsed_command_line sixteen = parse({"--token-secret", "sixteen-bytes!!!"});
    EXPECT_FALSE(sixteen.exit_code);
    EXPECT_EQ(sixteen.config.token_secret, "sixteen-bytes!!!");
}

namespace config_test {

const std::string jwt_dir = ECSNET_JWT_TEST_DIR;

TEST_F(ServerConfig, IdentityLimitsHaveSaneDefaultsFlagsAndVariables) {
    const server_config defaults = parse({}).config;
    EXPECT_EQ(defaults.max_connections_per_player, 1U);
    EXPECT_EQ(defaults.max_clients_per_address, 32U);
    EXPECT_EQ(defaults.max_remembered_tokens, 65'536U);
    EXPECT_EQ(defaults.token_public_key, "");

    const auto flags = parse({"--max-connections-per-player", "3", "--max-clients-per-address",
                              "4", "--max-remembered-tokens", "100"});
    ASSERT_FALSE(flags.exit_code);
    EXPECT_EQ(flags.config.max_connections_per_player, 3U);
    EXPECT_EQ(flags.config.max_clients_per_address, 4U);
    EXPECT_EQ(flags.config.max_remembered_tokens, 100U);

    ::setenv("ECSNET_MAX_CONNECTIONS_PER_PLAYER", "2", 1);
    ::setenv("ECSNET_MAX_CLIENTS_PER_ADDRESS", "5", 1);
    ::setenv("ECSNET_MAX_REMEMBERED_TOKENS", "7", 1);
    const auto from_env = parse({});
    ASSERT_FALSE(from_env.exit_code);
    EXPECT_EQ(from_env.config.max_connections_per_player, 2U);
    EXPECT_EQ(from_env.config.max_clients_per_address, 5U);
    EXPECT_EQ(from_env.config.max_remembered_tokens, 7U);

    testing::internal::CaptureStderr();
    EXPECT_EQ(parse({"--max-connections-per-player", "0"}).exit_code, 2);
    EXPECT_EQ(parse({"--max-clients-per-address", "0"}).exit_code, 2);
    EXPECT_EQ(parse({"--max-remembered-tokens", "0"}).exit_code, 2);
    (void)testing::internal::GetCapturedStderr();
}

TEST_F(ServerConfig, TokenPublicKeyIsCheckedAndExcludesASecret) {
    const std::string pub = jwt_dir + "/es256-public.pem";
    const std::string priv = jwt_dir + "/es256-private.pem";
    const auto ok = parse({"--token-public-key", pub.c_str()});
    ASSERT_FALSE(ok.exit_code);
    EXPECT_EQ(ok.config.token_public_key, pub);
    EXPECT_TRUE(uses_connect_tokens(ok.config));
    ::setenv("ECSNET_TOKEN_PUBLIC_KEY", pub.c_str(), 1);
    EXPECT_EQ(parse({}).config.token_public_key, pub);
    ::unsetenv("ECSNET_TOKEN_PUBLIC_KEY");

    testing::internal::CaptureStderr();
    EXPECT_EQ(parse({"--token-public-key", priv.c_str()}).exit_code, 2) << "a private key";
    EXPECT_EQ(parse({"--token-public-key", "/nonexistent.pem"}).exit_code, 2);
    EXPECT_EQ(parse({"--token-public-key", pub.c_str(), "--token-secret", secret_32}).exit_code, 2);
    const std::string errors = testing::internal::GetCapturedStderr();
    EXPECT_THAT(errors, HasSubstr("must be a PEM EC P-256 public key"));
    EXPECT_THAT(errors, HasSubstr("give one: a secret (HS256) or a public key (ES256)"));
}

TEST_F(ServerConfig, IssueTokenDefaultsToMinutesAndRefusesOverADayUnlessAllowed) {
    const auto short_lived = parse({"issue-token", "--player", "alice", "--token-secret", secret_32});
    ASSERT_TRUE(short_lived.issue_token);
    EXPECT_EQ(short_lived.issue_token->ttl, 300s);
    EXPECT_TRUE(parse({"issue-token", "--player", "a", "--ttl", "1d", "--token-secret", secret_32})
                    .issue_token)
        << "one day is allowed";

    testing::internal::CaptureStderr();
    EXPECT_EQ(parse({"issue-token", "--player", "a", "--ttl", "25h", "--token-secret", secret_32})
                  .exit_code,
              2);
    EXPECT_THAT(testing::internal::GetCapturedStderr(), HasSubstr("add --allow-long-ttl"));
    const auto long_lived = parse({"issue-token", "--player", "a", "--ttl", "30d",
                                   "--allow-long-ttl", "--token-secret", secret_32});
    ASSERT_TRUE(long_lived.issue_token);
    EXPECT_EQ(long_lived.issue_token->ttl, 30 * 24h);
}

TEST_F(ServerConfig, IssueTokenSignsWithAPrivateKeyWithoutASecret) {
    const std::string priv = jwt_dir + "/es256-private.pem";
    const auto parsed = parse({"issue-token", "--player", "alice", "--private-key", priv.c_str()});
    ASSERT_FALSE(parsed.exit_code);
    ASSERT_TRUE(parsed.issue_token);
    EXPECT_EQ(parsed.issue_token->private_key, priv);
}

TEST_F(ServerConfig, DescribeNamesTheIdentityMode) {
    server_config c;
    EXPECT_THAT(describe(c), HasSubstr("identity=resume-keys(max_clients_per_address=32)"));
    c.token_secret = secret_32;
    c.world_id = "eu-1";
    EXPECT_THAT(describe(c), HasSubstr("identity=connect-tokens(HS256 world=eu-1 remembered=65536)"));
    EXPECT_THAT(describe(c), testing::Not(HasSubstr(secret_32)));
    EXPECT_THAT(describe(c), HasSubstr("max_connections_per_player=1"));
}

}  // namespace config_test

TEST_F(ServerConfig, AGamesOwnOptionsAreParsedAndListedBesideTheServers) {
    float size = 4000.0F;
    const auto game_options = [&size](CLI::App& app) {
        app.add_option("--arena-size", size, "Side of the map")->check(CLI::PositiveNumber);
    };
    const auto parse_with = [&](std::initializer_list<const char*> args) {
        std::vector<const char*> argv{"arena-server"};
        argv.insert(argv.end(), args.begin(), args.end());
        return parse_command_line(static_cast<int>(argv.size()), argv.data(), game_options);
    };
    const parsed_command_line parsed = parse_with({"--arena-size", "512", "--port", "9000"});
    EXPECT_FALSE(parsed.exit_code.has_value());
    EXPECT_EQ(size, 512.0F);
    EXPECT_EQ(parsed.config.port, 9000);

    testing::internal::CaptureStdout();
    EXPECT_EQ(parse_with({"--help"}).exit_code, 0);
    const std::string help = testing::internal::GetCapturedStdout();
    EXPECT_THAT(help, HasSubstr("--arena-size"));
    EXPECT_THAT(help, HasSubstr("--tick-rate"));

    testing::internal::CaptureStderr();
    EXPECT_EQ(parse_with({"--arena-size", "-1"}).exit_code, 2);
    (void)testing::internal::GetCapturedStderr();
}

TEST_F(ServerConfig, PersistenceFlagsAndEnvironment) {
    const auto defaults = parse({});
    EXPECT_EQ(defaults.config.state_dir, "");
    EXPECT_EQ(defaults.config.checkpoint_interval, 60s);
    EXPECT_EQ(defaults.config.keep_checkpoints, 3U);
    EXPECT_FALSE(defaults.config.journal);
    EXPECT_THAT(describe(defaults.config), HasSubstr("state=off"));

    const auto flags = parse({"--state-dir", "/data/world", "--checkpoint-seconds", "0",
                              "--keep-checkpoints", "5", "--journal"});
    ASSERT_FALSE(flags.exit_code);
    EXPECT_EQ(flags.config.state_dir, "/data/world");
    EXPECT_EQ(flags.config.checkpoint_interval, 0s);
    EXPECT_EQ(flags.config.keep_checkpoints, 5U);
    EXPECT_TRUE(flags.config.journal);
    EXPECT_THAT(describe(flags.config),
                HasSubstr("state=/data/world(checkpoint at shutdown keep 5 journal on)"));

    ::setenv("ECSNET_STATE_DIR", "/env/world", 1);
    ::setenv("ECSNET_CHECKPOINT_SECONDS", "30", 1);
    ::setenv("ECSNET_KEEP_CHECKPOINTS", "2", 1);
    ::setenv("ECSNET_JOURNAL", "1", 1);
    const auto env = parse({});
    ASSERT_FALSE(env.exit_code);
    EXPECT_EQ(env.config.state_dir, "/env/world");
    EXPECT_EQ(env.config.checkpoint_interval, 30s);
    EXPECT_EQ(env.config.keep_checkpoints, 2U);
    EXPECT_TRUE(env.config.journal);
    EXPECT_THAT(describe(env.config), HasSubstr("(checkpoint every 30 s keep 2 journal on)"));
    clear_environment();

    testing::internal::CaptureStderr();
    EXPECT_EQ(parse({"--journal"}).exit_code, 2) << "a journal needs a state dir";
    EXPECT_EQ(parse({"--state-dir", "d", "--keep-checkpoints", "0"}).exit_code, 2);
    EXPECT_EQ(parse({"--state-dir", "d", "--checkpoint-seconds", "-1"}).exit_code, 2);
    const std::string errors = testing::internal::GetCapturedStderr();
    EXPECT_THAT(errors, HasSubstr("--journal: needs --state-dir"));

    testing::internal::CaptureStdout();
    (void)parse({"--help"});
    const std::string help = testing::internal::GetCapturedStdout();
    for (const char* text : {"--state-dir", "ECSNET_STATE_DIR", "--checkpoint-seconds",
                             "--keep-checkpoints", "--journal", "inspect-state"}) {
        EXPECT_THAT(help, HasSubstr(text));
    }
}

TEST_F(ServerConfig, InspectStateSubcommand) {
    const auto summary = parse({"inspect-state", "/data/world"});
    ASSERT_FALSE(summary.exit_code);
    ASSERT_TRUE(summary.inspect_state);
    EXPECT_EQ(summary.inspect_state->dir, "/data/world");
    EXPECT_FALSE(summary.inspect_state->json);
    EXPECT_FALSE(summary.inspect_state->tick);
    EXPECT_EQ(summary.inspect_state->output, "");
    EXPECT_FALSE(parse({}).inspect_state);

    const auto json =
        parse({"inspect-state", "/data/world", "--json", "--tick", "120", "--output", "w.json"});
    ASSERT_FALSE(json.exit_code);
    ASSERT_TRUE(json.inspect_state);
    EXPECT_TRUE(json.inspect_state->json);
    EXPECT_EQ(json.inspect_state->tick, 120U);
    EXPECT_EQ(json.inspect_state->output, "w.json");

    // Without DIR: the server's own state dir.
    ::setenv("ECSNET_STATE_DIR", "/env/world", 1);
    const auto configured = parse({"inspect-state"});
    ASSERT_TRUE(configured.inspect_state);
    EXPECT_EQ(configured.inspect_state->dir, "/env/world");
    clear_environment();

    testing::internal::CaptureStderr();
    EXPECT_EQ(parse({"inspect-state"}).exit_code, 2);
    EXPECT_EQ(parse({"inspect-state", "d", "--tick", "5"}).exit_code, 2) << "--tick needs --json";
    EXPECT_EQ(parse({"inspect-state", "d", "--json", "--tick", "soon"}).exit_code, 2);
    const std::string errors = testing::internal::GetCapturedStderr();
    EXPECT_THAT(errors, HasSubstr("inspect-state DIR"));
}

}  // namespace config_test
