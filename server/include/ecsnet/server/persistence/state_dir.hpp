#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "ecsnet/server/persistence/world_image.hpp"

// A server's state dir (--state-dir, docs/PERSISTENCE.md): checkpoint files, journal
// segments and the lock that keeps a second server out.
namespace ecsnet::server {

// Why a checkpoint cannot be read: the message says which check failed.
class checkpoint_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

inline constexpr std::uint32_t checkpoint_format = 1;
inline constexpr std::size_t checkpoint_header_bytes = 32;

// A checkpoint file's bytes: the 32-byte header (magic ECSNCKPT, format, payload size, XXH3-64
// of the payload), then the FlatBuffers payload (schemas/state.fbs, Checkpoint).
[[nodiscard]] std::vector<std::uint8_t> encode_checkpoint(const world_image& image);
// The image a file's bytes hold. Throws checkpoint_error naming the check that failed: size,
// magic, format, truncation, checksum, FlatBuffers verification, consistency.
[[nodiscard]] world_image decode_checkpoint(std::span<const std::uint8_t> bytes);

class state_dir {
public:
    struct file {
        std::filesystem::path path;
        std::uint64_t tick{0};
        std::uintmax_t bytes{0};
    };
    struct loaded {
        world_image image;
        file from;
        // Newer checkpoints that did not read, newest first, with why.
        std::vector<std::pair<file, std::string>> skipped;
    };

    // Opens (creating it and its parents when missing) and locks the directory. Throws
    // std::runtime_error with a clear message when it cannot be created or written, or when
    // another process holds its lock.
    explicit state_dir(std::filesystem::path dir);
    // Opens without the lock and without creating anything: for inspect-state, which may run
    // beside the server. Throws std::runtime_error when `dir` is not a directory.
    [[nodiscard]] static state_dir open_read_only(std::filesystem::path dir);
    state_dir(state_dir&&) noexcept;
    state_dir& operator=(state_dir&&) noexcept;
    state_dir(const state_dir&) = delete;
    state_dir& operator=(const state_dir&) = delete;
    ~state_dir();

    [[nodiscard]] const std::filesystem::path& path() const noexcept { return dir_; }

    // Checkpoint files by name (not checked), newest (highest tick) first.
    [[nodiscard]] std::vector<file> checkpoints() const;
    // Journal segments, oldest (lowest base tick) first.
    [[nodiscard]] std::vector<file> journals() const;
    [[nodiscard]] std::filesystem::path checkpoint_path(std::uint64_t tick) const;
    [[nodiscard]] std::filesystem::path journal_path(std::uint64_t base_tick) const;

    // Writes `bytes` (encode_checkpoint's) as the checkpoint of `tick` atomically: a temporary
    // file, write, fsync, rename, fsync the directory. Returns the final path. Throws
    // std::system_error / std::runtime_error naming the file and the failed call.
    std::filesystem::path write_checkpoint(std::uint64_t tick, std::span<const std::uint8_t> bytes);

    // The newest checkpoint that reads and verifies; every newer one that does not is in
    // `skipped`. Empty when there is none (a new world).
    [[nodiscard]] std::optional<loaded> load_newest() const;
    // A checkpoint by tick. Throws checkpoint_error (or std::runtime_error when absent).
    [[nodiscard]] world_image load(std::uint64_t tick) const;

    // Keeps the newest `keep` checkpoints (>= 1), removes older ones, the journal segments
    // whose base tick is below the oldest kept checkpoint's, and leftover temporary files.
    // Returns the paths removed.
    std::vector<std::filesystem::path> prune(std::size_t keep);

private:
    state_dir() = default;

    std::filesystem::path dir_;
    int lock_fd_{-1};
};

// One checkpoint file's image: decode_checkpoint of its bytes, whose tick must be the one its
// name says. Throws checkpoint_error with the reason (not the file's name; unreadable files
// too).
[[nodiscard]] world_image read_checkpoint(const state_dir::file& f);

}  // namespace ecsnet::server
