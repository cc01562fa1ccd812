// ecsnet-codegen (shared/codegen): what it writes from codegen_test.fbs, compiled here as a game
// compiles it (ecsnet_add_schemas COMPONENTS), and what it refuses.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

#include "codegen_test_components.hpp"
#include "ecsnet/protocol/registry.hpp"

namespace codegen_test {

namespace protocol = ecsnet::protocol;
using ::testing::HasSubstr;

template <typename T>
using options_of = protocol::replicated<T>;

TEST(Codegen, ComponentsAreAggregatesWithTheSchemasFields) {
    static_assert(std::is_aggregate_v<Position> && std::is_aggregate_v<Move> && std::is_aggregate_v<Stats>);
    static_assert(std::is_same_v<decltype(Position::x), float>);
    static_assert(std::is_same_v<decltype(Stats::score), std::uint64_t>);
    static_assert(std::is_same_v<decltype(Stats::alive), bool>);
    static_assert(std::is_same_v<decltype(Stats::level), std::int8_t>);
    EXPECT_EQ((Position{1.0F, 2.0F}), (Position{1.0F, 2.0F}));
    EXPECT_EQ(Position{}, (Position{0.0F, 0.0F}));
}

TEST(Codegen, EachReplicatesAsItsAttributesSay) {
    EXPECT_EQ(options_of<Position>::name, "position");
    EXPECT_EQ(options_of<Position>::options.written_by, protocol::writer::server);
    EXPECT_EQ(options_of<Position>::options.quantized.min, -1024.0);
    EXPECT_EQ(options_of<Position>::options.quantized.max, 1024.0);
    EXPECT_EQ(options_of<Position>::options.quantized.step, 0.0625);
    EXPECT_TRUE(options_of<Position>::options.interpolate);
    EXPECT_FALSE(options_of<Position>::options.input);

    EXPECT_EQ(options_of<Move>::options.written_by, protocol::writer::owner);
    EXPECT_TRUE(options_of<Move>::options.input);
    EXPECT_FALSE(options_of<Move>::options.interpolate);

    EXPECT_TRUE(options_of<Stats>::options.owner_only);
    EXPECT_EQ(options_of<Stats>::options.quantized.step, 0.0);
}

TEST(Codegen, AnEmptyTableIsAMarker) {
    static_assert(std::is_empty_v<Frozen>);
    static_assert(std::is_same_v<options_of<Frozen>::wire_type, protocol::marker_value>);
    EXPECT_EQ(options_of<Frozen>::name, "frozen");
    EXPECT_EQ(options_of<Frozen>::options.written_by, protocol::writer::server);
    EXPECT_EQ(protocol::pack(Frozen{}).size(), 1U);
}

TEST(Codegen, RangesAndFloatsMakeValid) {
    EXPECT_TRUE((Move{1.0F, -1.0F}).valid());
    EXPECT_FALSE((Move{1.5F, 0.0F}).valid());
    EXPECT_FALSE((Move{std::numeric_limits<float>::quiet_NaN(), 0.0F}).valid());
    EXPECT_TRUE((Position{1e6F, 0.0F}).valid()) << "no range: only finite";
    EXPECT_FALSE((Stats{0, true, 100}).valid());
}

TEST(Codegen, RegisterComponentsAddsThemInSchemaOrderAfterOwner) {
    protocol::component_registry types;
    register_components(types);
    const protocol::schema schema = types.types();
    ASSERT_EQ(schema.size(), 5U);
    EXPECT_EQ(schema.find(0U)->name, "owner");
    EXPECT_EQ(schema.find(1U)->name, "position");
    EXPECT_EQ(schema.find(2U)->name, "move");
    EXPECT_EQ(schema.find(3U)->name, "stats");
    EXPECT_EQ(schema.find(4U)->name, "frozen");
    EXPECT_TRUE(schema.find(2U)->input);
    EXPECT_TRUE(schema.find(3U)->owner_only);
}

std::string read(const std::filesystem::path& path) {
    std::ifstream in{path, std::ios::binary};
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

TEST(Codegen, TheTypeScriptTypesAreTheSameComponents) {
    EXPECT_EQ(read(ECSNET_CODEGEN_TS), read(ECSNET_CODEGEN_EXPECTED_TS));
}

// Runs ecsnet-codegen on `schema` (written to a temp file): its exit status and stderr.
std::pair<int, std::string> codegen(const std::string& schema) {
    const auto dir = std::filesystem::temp_directory_path() / ("ecsnet-codegen-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::ofstream{dir / "bad.fbs"} << schema;
    const std::string command = std::string{ECSNET_CODEGEN} + " --cpp " + (dir / "out.hpp").string() + " " +
                                (dir / "bad.fbs").string() + " 2>" + (dir / "err.txt").string();
    const int status = std::system(command.c_str());
    std::string err = read(dir / "err.txt");
    std::filesystem::remove_all(dir);
    return {WEXITSTATUS(status), err};
}

constexpr const char* attributes = "attribute \"ecsnet_component\"; attribute \"ecsnet_written_by\"; "
                                   "attribute \"ecsnet_quantize\";\n";

TEST(Codegen, RefusesWhatCannotBeAComponentSayingWhy) {
    const std::array<std::pair<std::string, std::string>, 8> cases{{
        {"namespace g.wire; table T (ecsnet_component: \"t\", ecsnet_quantize: \"0 1 1\") {}",
         "a marker has no value to quantize"},
        {"namespace g.wire; table T (ecsnet_component: \"t\") { a: int; }", "a component is a struct, not a table"},
        {"namespace g; struct T (ecsnet_component: \"t\") { a: int; }", "namespace ending in .wire"},
        {"namespace g.wire; struct T (ecsnet_component: \"t\", ecsnet_written_by: \"everyone\") { a: int; }",
         "not server, owner or any"},
        {"namespace g.wire; struct T (ecsnet_component: \"t\", ecsnet_quantize: \"1 2\") { a: float; }",
         "needs 3 numbers"},
        {"namespace g.wire; struct T { a: int; }", "no struct marked"},
        {"namespace g.wire; struct V { a: int; } struct T (ecsnet_component: \"t\") { v: V; }",
         "T.v: only numbers and bools can be component fields"},
        {"namespace g.wire; struct T (ecsnet_component: \"t\") { a: int; b: string; }",
         "bad.fbs:2"},  // flatc's own error, with the file and line (the attributes are line 1)
    }};
    for (const auto& [schema, why] : cases) {
        const auto [status, err] = codegen(attributes + schema);
        EXPECT_EQ(status, 1) << schema;
        EXPECT_THAT(err, HasSubstr(why)) << schema;
    }
}

}  // namespace codegen_test
