// A world_image built by hand and a temporary state dir: shared by state_dir_test and
// inspect_state_test (no game, no capture()).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "ecsnet/server/persistence/world_image.hpp"

namespace ecsnet::test {

using protocol::field_type;
using protocol::stored_field;
using protocol::stored_type;
using server::image_column;
using server::stored_owner;
using server::world_image;

template <typename T>
void append_value(std::vector<std::byte>& out, T value) {
    const auto* p = reinterpret_cast<const std::byte*>(&value);
    out.insert(out.end(), p, p + sizeof(T));
}

// 5 slots: 0, 1, 3 alive (versions 0, 3, 0); 2 and 4 free. Three fixed-size types (one kept
// without being replicated, one with NaN and infinities), a string type, a type without
// values, two owners (one with a key digest).
inline world_image sample_image(std::uint64_t tick = 10) {
    world_image image;
    image.tick = tick;
    image.game = "sample";
    image.unix_ms = 1'764'165'600'123;  // 2025-11-26T14:00:00.123Z
    image.entities.versions = {0, 3, 1, 0, 2};
    image.entities.alive = {1, 1, 0, 1, 0};
    image.entities.free = {4, 2};

    image_column position{stored_type{"position", true, false,
                                      {{"x", field_type::float32}, {"y", field_type::float32}}},
                          {3, 0}, {}, {}};
    append_value(position.values, 1.5F);
    append_value(position.values, -2.25F);
    append_value(position.values, std::numeric_limits<float>::quiet_NaN());
    append_value(position.values, std::numeric_limits<float>::infinity());

    image_column stats{stored_type{"stats", true, false,
                                   {{"hp", field_type::int32},
                                    {"flying", field_type::bool_},
                                    {"score", field_type::uint64},
                                    {"mass", field_type::float64},
                                    {"level", field_type::int8}}},
                       {1}, {}, {}};
    append_value(stats.values, std::int32_t{-7});
    stats.values.push_back(std::byte{1});
    append_value(stats.values, std::uint64_t{18'000'000'000'000'000'000ULL});
    append_value(stats.values, -std::numeric_limits<double>::infinity());
    append_value(stats.values, std::int8_t{-3});

    image_column hunger{stored_type{"hunger", false, false, {{"f0", field_type::uint16}}},
                        {0, 1, 3}, {}, {}};
    append_value(hunger.values, std::uint16_t{1});
    append_value(hunger.values, std::uint16_t{2});
    append_value(hunger.values, std::uint16_t{65535});

    image_column name{stored_type{"name", true, true, {}}, {1, 3}, {}, {"alice", "b\"ob\n"}};
    image_column unused{stored_type{"marker", true, false, {{"v", field_type::uint8}}}, {}, {}, {}};
    image.columns = {position, stats, hunger, name, unused};

    stored_owner keyed{7, "", {}, true};
    for (std::size_t i = 0; i < keyed.key_digest.size(); ++i) {
        keyed.key_digest[i] = static_cast<std::uint8_t>(i * 9);
    }
    image.owners = {keyed, stored_owner{9, "player-9", {}, false}};
    image.next_owner = 10;
    return image;
}

inline void expect_same(const world_image& a, const world_image& b) {
    EXPECT_EQ(a.tick, b.tick);
    EXPECT_EQ(a.game, b.game);
    EXPECT_EQ(a.unix_ms, b.unix_ms);
    EXPECT_EQ(a.entities.versions, b.entities.versions);
    EXPECT_EQ(a.entities.alive, b.entities.alive);
    EXPECT_EQ(a.entities.free, b.entities.free);
    ASSERT_EQ(a.columns.size(), b.columns.size());
    for (std::size_t i = 0; i < a.columns.size(); ++i) {
        SCOPED_TRACE(a.columns[i].type.name);
        EXPECT_EQ(a.columns[i].type, b.columns[i].type);
        EXPECT_EQ(a.columns[i].indices, b.columns[i].indices);
        EXPECT_EQ(a.columns[i].values, b.columns[i].values);  // bytes: NaN compares too
        EXPECT_EQ(a.columns[i].texts, b.columns[i].texts);
    }
    ASSERT_EQ(a.owners.size(), b.owners.size());
    for (std::size_t i = 0; i < a.owners.size(); ++i) {
        EXPECT_EQ(a.owners[i].id, b.owners[i].id);
        EXPECT_EQ(a.owners[i].player, b.owners[i].player);
        EXPECT_EQ(a.owners[i].has_key, b.owners[i].has_key);
        EXPECT_EQ(a.owners[i].key_digest, b.owners[i].key_digest);
    }
    EXPECT_EQ(a.next_owner, b.next_owner);
}

// A fresh directory under the test's temp dir, removed afterwards.
class temp_dir {
public:
    temp_dir() {
        std::string pattern = (std::filesystem::temp_directory_path() / "ecsnet-state-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr) {
            throw std::runtime_error("mkdtemp failed");
        }
        path_ = pattern;
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
    ~temp_dir() {
        std::error_code ec;
        std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                                     std::filesystem::perm_options::add, ec);
        std::filesystem::remove_all(path_, ec);
    }
    [[nodiscard]] const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

inline std::vector<std::uint8_t> read_bytes(const std::filesystem::path& path) {
    std::ifstream in{path, std::ios::binary};
    return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

inline void write_bytes(const std::filesystem::path& path, const std::vector<std::uint8_t>& bytes) {
    std::ofstream out{path, std::ios::binary | std::ios::trunc};
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace ecsnet::test
