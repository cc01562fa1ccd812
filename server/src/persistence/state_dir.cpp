#include "ecsnet/server/persistence/state_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <flatbuffers/flatbuffers.h>
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <string_view>
#include <system_error>
#include <utility>

#include "ecsnet/wire/state_generated.h"
#include "state_format.hpp"

namespace ecsnet::server {

// The header and the stored values are written with memcpy: the format is little-endian.
static_assert(std::endian::native == std::endian::little);

namespace {

namespace fs = std::filesystem;

constexpr std::string_view checkpoint_magic = "ECSNCKPT";
constexpr std::string_view checkpoint_prefix = "checkpoint-";
constexpr std::string_view checkpoint_suffix = ".ckpt";
constexpr std::string_view journal_prefix = "journal-";
constexpr std::string_view journal_suffix = ".log";
constexpr std::string_view temporary_prefix = ".checkpoint-";
constexpr std::string_view temporary_suffix = ".ckpt.tmp";
constexpr std::string_view write_check_name = ".write-check.tmp";

template <typename T>
T read_le(const std::uint8_t* at) noexcept {
    T value{};
    std::memcpy(&value, at, sizeof(T));
    return value;
}

template <typename T>
void write_le(std::uint8_t* at, T value) noexcept {
    std::memcpy(at, &value, sizeof(T));
}

std::string tick_name(std::string_view prefix, std::uint64_t tick, std::string_view suffix) {
    return fmt::format("{}{:020}{}", prefix, tick, suffix);
}

// The tick of "<prefix><20 digits><suffix>", or nothing for any other name.
std::optional<std::uint64_t> tick_of(std::string_view name, std::string_view prefix,
                                     std::string_view suffix) {
    if (name.size() != prefix.size() + 20 + suffix.size() || !name.starts_with(prefix) ||
        !name.ends_with(suffix)) {
        return std::nullopt;
    }
    const std::string_view digits = name.substr(prefix.size(), 20);
    if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return std::nullopt;
    }
    std::uint64_t tick = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), tick);
    if (ec != std::errc{} || end != digits.data() + digits.size()) {
        return std::nullopt;  // past 2^64
    }
    return tick;
}

std::vector<state_dir::file> list(const fs::path& dir, std::string_view prefix,
                                  std::string_view suffix) {
    std::vector<state_dir::file> out;
    std::error_code ec;
    for (fs::directory_iterator it{dir, ec}, end; !ec && it != end; it.increment(ec)) {
        const auto tick = tick_of(it->path().filename().native(), prefix, suffix);
        std::error_code file_ec;
        if (!tick || !it->is_regular_file(file_ec)) {
            continue;
        }
        const std::uintmax_t bytes = it->file_size(file_ec);
        out.push_back({it->path(), *tick, file_ec ? 0 : bytes});
    }
    if (ec) {
        throw std::system_error(ec, "list state dir " + dir.string());
    }
    return out;
}

[[noreturn]] void fail(const std::string& what) { throw checkpoint_error(what); }

std::string errno_text(int error) { return std::generic_category().message(error); }

// Closes a descriptor on every path out.
class descriptor {
public:
    explicit descriptor(int fd) noexcept : fd_(fd) {}
    descriptor(const descriptor&) = delete;
    descriptor& operator=(const descriptor&) = delete;
    ~descriptor() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    [[nodiscard]] int get() const noexcept { return fd_; }
    // Closes now, reporting close's error (a delayed write error shows up there).
    int close() noexcept {
        const int rc = ::close(std::exchange(fd_, -1));
        return rc;
    }

private:
    int fd_;
};

std::vector<std::uint8_t> read_file(const fs::path& path) {
    descriptor fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (fd.get() < 0) {
        fail("cannot open: " + errno_text(errno));
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
        fail("cannot stat: " + errno_text(errno));
    }
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(st.st_size));
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::read(fd.get(), bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            fail("cannot read: " + errno_text(errno));
        }
        if (n == 0) {
            bytes.resize(done);  // shrank while read: the checks below say how
            break;
        }
        done += static_cast<std::size_t>(n);
    }
    return bytes;
}

void write_all(int fd, std::span<const std::uint8_t> bytes, const fs::path& path) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            throw std::system_error(errno, std::generic_category(), "write " + path.string());
        }
        done += static_cast<std::size_t>(n);
    }
}

void fsync_or_throw(int fd, const fs::path& path) {
    while (::fsync(fd) != 0) {
        if (errno != EINTR) {
            throw std::system_error(errno, std::generic_category(), "fsync " + path.string());
        }
    }
}

// ---- encoding ------------------------------------------------------------------------------

void check_column(const image_column& column) {
    if (column.type.is_string) {
        if (column.texts.size() != column.indices.size() || !column.values.empty()) {
            throw std::invalid_argument(fmt::format(
                "checkpoint of {}: {} texts for {} indices", column.type.name,
                column.texts.size(), column.indices.size()));
        }
    } else if (column.values.size() != column.indices.size() * column.type.value_bytes() ||
               !column.texts.empty()) {
        throw std::invalid_argument(fmt::format(
            "checkpoint of {}: {} value bytes for {} indices of {} bytes", column.type.name,
            column.values.size(), column.indices.size(), column.type.value_bytes()));
    }
}

// Roughly the payload's size, so the builder grows (and copies) at most once or twice.
std::size_t expected_payload_bytes(const world_image& image) {
    std::size_t bytes = 1024 + image.game.size() + image.entities.versions.size() * 5 +
                        image.entities.free.size() * 4 + image.owners.size() * 96 +
                        image.tokens.size() * 128;
    for (const image_column& c : image.columns) {
        bytes += 256 + c.indices.size() * 4 + c.values.size();
        for (const std::string& t : c.texts) {
            bytes += t.size() + 8;
        }
    }
    return bytes;
}

// ---- decoding ------------------------------------------------------------------------------

template <typename T>
std::vector<T> copy_vector(const flatbuffers::Vector<T>* v) {
    if (v == nullptr) {
        return {};
    }
    std::vector<T> out(v->size());
    if (!out.empty()) {
        std::memcpy(out.data(), v->data(), out.size() * sizeof(T));
    }
    return out;
}

std::string string_of(const flatbuffers::String* s) {
    return s == nullptr ? std::string{} : std::string{s->data(), s->size()};
}

protocol::stored_type decode_type(const state::StoredType& t, std::size_t i) {
    protocol::stored_type type;
    if (t.name() == nullptr || t.name()->size() == 0) {
        fail(fmt::format("type {} has no name", i));
    }
    type.name = string_of(t.name());
    type.replicated = t.replicated();
    type.is_string = t.is_string();
    if (t.fields() != nullptr) {
        if (type.is_string && t.fields()->size() != 0) {
            fail("type " + type.name + " is a string type with fields");
        }
        for (const state::StoredField* f : *t.fields()) {
            const auto field_type = protocol::to_field_type(f->type());
            if (!field_type) {
                fail(fmt::format("type {} field {} has unknown field type {}", type.name,
                                 string_of(f->name()), f->type()));
            }
            type.fields.push_back({string_of(f->name()), *field_type});
        }
    }
    if (!type.is_string && type.fields.empty()) {
        fail("type " + type.name + " has neither fields nor text");
    }
    return type;
}

image_column decode_column(const state::Column& c, const protocol::stored_type& type,
                           const world_image& image) {
    image_column column;
    column.type = type;
    column.indices = copy_vector(c.indices());
    const std::size_t n = column.indices.size();
    if (type.is_string) {
        const std::size_t texts = c.texts() == nullptr ? 0 : c.texts()->size();
        if (texts != n || (c.values() != nullptr && c.values()->size() != 0)) {
            fail(fmt::format("column {}: {} texts for {} indices", type.name, texts, n));
        }
        column.texts.reserve(n);
        for (std::size_t i = 0; i < n; ++i) {
            column.texts.push_back(string_of(c.texts()->Get(static_cast<flatbuffers::uoffset_t>(i))));
        }
    } else {
        const std::size_t bytes = c.values() == nullptr ? 0 : c.values()->size();
        if (bytes != n * type.value_bytes() || (c.texts() != nullptr && c.texts()->size() != 0)) {
            fail(fmt::format("column {}: {} value bytes for {} indices of {} bytes", type.name,
                             bytes, n, type.value_bytes()));
        }
        column.values.resize(bytes);
        if (bytes != 0) {
            std::memcpy(column.values.data(), c.values()->data(), bytes);
        }
    }
    // Every index an alive slot, at most once.
    const auto& pool = image.entities;
    std::vector<bool> seen(pool.versions.size());
    for (const std::uint32_t index : column.indices) {
        if (index >= pool.versions.size()) {
            fail(fmt::format("column {}: index {} is past the {} slots", type.name, index,
                             pool.versions.size()));
        }
        if (pool.alive[index] == 0) {
            fail(fmt::format("column {}: index {} is not alive", type.name, index));
        }
        if (seen[index]) {
            fail(fmt::format("column {}: index {} is listed twice", type.name, index));
        }
        seen[index] = true;
    }
    return column;
}

world_image decode_payload(const state::Checkpoint& root) {
    if (root.format() > checkpoint_format) {
        fail(fmt::format("payload format {} is newer than this server's {}", root.format(),
                         checkpoint_format));
    }
    world_image image;
    image.tick = root.tick();
    image.unix_ms = root.unix_ms();
    image.game = string_of(root.game());
    image.entities.versions = copy_vector(root.versions());
    image.entities.alive = copy_vector(root.alive());
    image.entities.free = copy_vector(root.free());
    const std::size_t slots = image.entities.versions.size();
    if (image.entities.alive.size() != slots) {
        fail(fmt::format("{} alive flags for {} slots", image.entities.alive.size(), slots));
    }
    for (const std::uint32_t index : image.entities.free) {
        if (index >= slots) {
            fail(fmt::format("free index {} is past the {} slots", index, slots));
        }
    }

    std::vector<protocol::stored_type> types;
    if (root.types() != nullptr) {
        for (const state::StoredType* t : *root.types()) {
            types.push_back(decode_type(*t, types.size()));
            for (std::size_t j = 0; j + 1 < types.size(); ++j) {
                if (types[j].name == types.back().name) {
                    fail("type " + types.back().name + " is stored twice");
                }
            }
        }
    }
    std::vector<bool> has_column(types.size());
    if (root.columns() != nullptr) {
        for (const state::Column* c : *root.columns()) {
            if (c->type() >= types.size()) {
                fail(fmt::format("a column names type {} of {}", c->type(), types.size()));
            }
            if (has_column[c->type()]) {
                fail("type " + types[c->type()].name + " has two columns");
            }
            has_column[c->type()] = true;
            image.columns.push_back(decode_column(*c, types[c->type()], image));
        }
    }
    // A type kept without values still says what the game kept.
    for (std::size_t i = 0; i < types.size(); ++i) {
        if (!has_column[i]) {
            image.columns.push_back(image_column{types[i], {}, {}, {}});
        }
    }

    if (root.owners() != nullptr) {
        for (const state::StoredOwner* o : *root.owners()) {
            stored_owner owner;
            owner.id = o->id();
            owner.player = string_of(o->player());
            if (o->key_digest() != nullptr && o->key_digest()->size() != 0) {
                if (o->key_digest()->size() != owner.key_digest.size()) {
                    fail(fmt::format("owner {}: a key digest of {} bytes, not {}", owner.id,
                                     o->key_digest()->size(), owner.key_digest.size()));
                }
                std::memcpy(owner.key_digest.data(), o->key_digest()->data(),
                            owner.key_digest.size());
                owner.has_key = true;
            }
            image.owners.push_back(std::move(owner));
        }
    }
    image.next_owner = root.next_owner();
    if (root.tokens() != nullptr) {
        for (const state::AdmittedToken* t : *root.tokens()) {
            image.tokens.push_back(detail::read_token(*t));
        }
    }
    return image;
}

}  // namespace

// ---- the file's bytes ----------------------------------------------------------------------

std::vector<std::uint8_t> encode_checkpoint(const world_image& image) {
    for (const image_column& c : image.columns) {
        check_column(c);
    }
    const std::size_t expected = expected_payload_bytes(image);
    if (expected >= FLATBUFFERS_MAX_BUFFER_SIZE) {
        throw std::length_error(fmt::format(
            "a checkpoint of {} bytes is past FlatBuffers' 2 GiB limit", expected));
    }
    flatbuffers::FlatBufferBuilder fbb{expected};

    const auto& pool = image.entities;
    const auto versions = fbb.CreateVector(pool.versions.data(), pool.versions.size());
    const auto alive = fbb.CreateVector(pool.alive.data(), pool.alive.size());
    const auto free = fbb.CreateVector(pool.free.data(), pool.free.size());

    std::vector<flatbuffers::Offset<state::StoredType>> types;
    std::vector<flatbuffers::Offset<state::Column>> columns;
    types.reserve(image.columns.size());
    columns.reserve(image.columns.size());
    for (const image_column& c : image.columns) {
        const auto type_index = static_cast<std::uint32_t>(types.size());
        types.push_back(detail::write_type(fbb, c.type));
        const auto indices = fbb.CreateVector(c.indices.data(), c.indices.size());
        flatbuffers::Offset<flatbuffers::Vector<std::uint8_t>> values;
        flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>> texts;
        if (c.type.is_string) {
            texts = fbb.CreateVectorOfStrings(c.texts);
        } else {
            values = fbb.CreateVector(reinterpret_cast<const std::uint8_t*>(c.values.data()),
                                      c.values.size());
        }
        columns.push_back(state::CreateColumn(fbb, type_index, indices, values, texts));
    }

    std::vector<flatbuffers::Offset<state::StoredOwner>> owners;
    owners.reserve(image.owners.size());
    for (const stored_owner& o : image.owners) {
        const auto player = fbb.CreateString(o.player);
        flatbuffers::Offset<flatbuffers::Vector<std::uint8_t>> digest;
        if (o.has_key) {
            digest = fbb.CreateVector(o.key_digest.data(), o.key_digest.size());
        }
        owners.push_back(state::CreateStoredOwner(fbb, o.id, player, digest));
    }

    std::vector<flatbuffers::Offset<state::AdmittedToken>> tokens;
    tokens.reserve(image.tokens.size());
    for (const replay_cache::entry& t : image.tokens) {
        tokens.push_back(detail::write_token(fbb, t));
    }

    // One builder call a statement: as arguments their order would be the compiler's (g++ and
    // clang differ), and so would the file's bytes. This is g++'s order, the files' so far.
    const auto token_list = fbb.CreateVector(tokens);
    const auto owner_list = fbb.CreateVector(owners);
    const auto column_list = fbb.CreateVector(columns);
    const auto type_list = fbb.CreateVector(types);
    const auto game = fbb.CreateString(image.game);
    const auto root = state::CreateCheckpoint(fbb, checkpoint_format, image.tick, image.unix_ms,
                                              game, versions, alive, free, type_list, column_list,
                                              owner_list, image.next_owner, token_list);
    state::FinishCheckpointBuffer(fbb, root);

    const std::span<const std::uint8_t> payload{fbb.GetBufferPointer(), fbb.GetSize()};
    std::vector<std::uint8_t> out(checkpoint_header_bytes + payload.size());
    std::memcpy(out.data(), checkpoint_magic.data(), checkpoint_magic.size());
    write_le<std::uint32_t>(out.data() + 8, checkpoint_format);
    write_le<std::uint32_t>(out.data() + 12, 0);
    write_le<std::uint64_t>(out.data() + 16, payload.size());
    write_le<std::uint64_t>(out.data() + 24, XXH3_64bits(payload.data(), payload.size()));
    std::memcpy(out.data() + checkpoint_header_bytes, payload.data(), payload.size());
    return out;
}

world_image decode_checkpoint(std::span<const std::uint8_t> bytes) {
    if (bytes.size() < checkpoint_header_bytes) {
        fail(fmt::format("truncated: {} bytes, shorter than the {}-byte header", bytes.size(),
                         checkpoint_header_bytes));
    }
    if (std::memcmp(bytes.data(), checkpoint_magic.data(), checkpoint_magic.size()) != 0) {
        fail("not a checkpoint (no ECSNCKPT magic)");
    }
    const auto format = read_le<std::uint32_t>(bytes.data() + 8);
    if (format > checkpoint_format) {
        fail(fmt::format("format {} is newer than this server's {}", format, checkpoint_format));
    }
    if (format == 0) {
        fail("format 0 is not a checkpoint format");
    }
    if (read_le<std::uint32_t>(bytes.data() + 12) != 0) {
        fail("reserved header bytes are not zero (header corrupt)");
    }
    const auto payload_size = read_le<std::uint64_t>(bytes.data() + 16);
    const std::size_t present = bytes.size() - checkpoint_header_bytes;
    if (payload_size > present) {
        fail(fmt::format("truncated: {} of {} payload bytes", present, payload_size));
    }
    if (payload_size < present) {
        fail(fmt::format("{} bytes past the payload of {} bytes (header or file corrupt)",
                         present - payload_size, payload_size));
    }
    auto payload = bytes.subspan(checkpoint_header_bytes);
    if (XXH3_64bits(payload.data(), payload.size()) != read_le<std::uint64_t>(bytes.data() + 24)) {
        fail("checksum mismatch (file torn or corrupt)");
    }
    if (payload.size() >= FLATBUFFERS_MAX_BUFFER_SIZE) {
        fail(fmt::format("a payload of {} bytes is past FlatBuffers' 2 GiB limit",
                         payload.size()));
    }
    // FlatBuffers reads its scalars in place: give it an 8-byte aligned copy when needed.
    std::vector<std::uint8_t> aligned;
    if (reinterpret_cast<std::uintptr_t>(payload.data()) % alignof(std::uint64_t) != 0) {
        aligned.assign(payload.begin(), payload.end());
        payload = aligned;
    }
    flatbuffers::Verifier::Options options;
    options.max_tables = 1U << 30;  // a Column or StoredOwner each: millions of owners pass
    flatbuffers::Verifier verifier{payload.data(), payload.size(), options};
    if (!verifier.VerifyBuffer<state::Checkpoint>(nullptr)) {
        fail("payload is not a valid Checkpoint (FlatBuffers verification failed)");
    }
    if (payload.size() < 8 || !state::CheckpointBufferHasIdentifier(payload.data())) {
        fail("payload identifier is not ECSK");
    }
    return decode_payload(*state::GetCheckpoint(payload.data()));
}

world_image read_checkpoint(const state_dir::file& f) {
    world_image image = decode_checkpoint(read_file(f.path));
    if (image.tick != f.tick) {
        fail(fmt::format("holds tick {}, not {} as its name says", image.tick, f.tick));
    }
    return image;
}

// ---- the directory -------------------------------------------------------------------------

state_dir::state_dir(std::filesystem::path dir) : dir_(std::move(dir)) {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec) {
        throw std::runtime_error("cannot create state dir " + dir_.string() + ": " +
                                 ec.message());
    }
    if (!fs::is_directory(dir_, ec)) {
        throw std::runtime_error("state dir " + dir_.string() + " is not a directory");
    }
    const fs::path lock = dir_ / "lock";
    lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock_fd_ < 0) {
        const int error = errno;
        throw std::runtime_error("state dir " + dir_.string() + " is not writable: cannot open " +
                                 lock.string() + ": " + errno_text(error));
    }
    if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
        const int error = errno;
        ::close(std::exchange(lock_fd_, -1));
        if (error == EWOULDBLOCK) {
            throw std::runtime_error("state dir " + dir_.string() +
                                     " is in use by another server (lock held)");
        }
        throw std::runtime_error("cannot lock state dir " + dir_.string() + ": " +
                                 errno_text(error));
    }
    // The lock file may exist in a directory that is no longer writable: try a file.
    const fs::path probe = dir_ / write_check_name;
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        const int error = errno;
        ::close(std::exchange(lock_fd_, -1));
        throw std::runtime_error("state dir " + dir_.string() + " is not writable: cannot create " +
                                 probe.string() + ": " + errno_text(error));
    }
    ::close(fd);
    ::unlink(probe.c_str());
}

state_dir state_dir::open_read_only(std::filesystem::path dir) {
    std::error_code ec;
    if (!fs::exists(dir, ec)) {
        throw std::runtime_error("state dir " + dir.string() + " does not exist");
    }
    if (!fs::is_directory(dir, ec)) {
        throw std::runtime_error(dir.string() + " is not a directory");
    }
    state_dir out;
    out.dir_ = std::move(dir);
    return out;
}

state_dir::state_dir(state_dir&& other) noexcept
    : dir_(std::move(other.dir_)), lock_fd_(std::exchange(other.lock_fd_, -1)) {}

state_dir& state_dir::operator=(state_dir&& other) noexcept {
    if (this != &other) {
        if (lock_fd_ >= 0) {
            ::close(lock_fd_);
        }
        dir_ = std::move(other.dir_);
        lock_fd_ = std::exchange(other.lock_fd_, -1);
    }
    return *this;
}

state_dir::~state_dir() {
    if (lock_fd_ >= 0) {
        ::close(lock_fd_);  // releases the flock
    }
}

std::vector<state_dir::file> state_dir::checkpoints() const {
    auto out = list(dir_, checkpoint_prefix, checkpoint_suffix);
    std::sort(out.begin(), out.end(), [](const file& a, const file& b) { return a.tick > b.tick; });
    return out;
}

std::vector<state_dir::file> state_dir::journals() const {
    auto out = list(dir_, journal_prefix, journal_suffix);
    std::sort(out.begin(), out.end(), [](const file& a, const file& b) { return a.tick < b.tick; });
    return out;
}

std::filesystem::path state_dir::checkpoint_path(std::uint64_t tick) const {
    return dir_ / tick_name(checkpoint_prefix, tick, checkpoint_suffix);
}

std::filesystem::path state_dir::journal_path(std::uint64_t base_tick) const {
    return dir_ / tick_name(journal_prefix, base_tick, journal_suffix);
}

std::filesystem::path state_dir::write_checkpoint(std::uint64_t tick,
                                                  std::span<const std::uint8_t> bytes) {
    const fs::path final_path = checkpoint_path(tick);
    const fs::path temporary = dir_ / tick_name(temporary_prefix, tick, temporary_suffix);
    try {
        descriptor fd{::open(temporary.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644)};
        if (fd.get() < 0) {
            throw std::system_error(errno, std::generic_category(), "create " + temporary.string());
        }
        write_all(fd.get(), bytes, temporary);
        fsync_or_throw(fd.get(), temporary);
        if (fd.close() != 0) {
            throw std::system_error(errno, std::generic_category(), "close " + temporary.string());
        }
        if (::rename(temporary.c_str(), final_path.c_str()) != 0) {
            throw std::system_error(errno, std::generic_category(),
                                    "rename " + temporary.string() + " to " + final_path.string());
        }
    } catch (...) {
        ::unlink(temporary.c_str());
        throw;
    }
    // The rename is durable once the directory is.
    descriptor dir_fd{::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
    if (dir_fd.get() < 0) {
        throw std::system_error(errno, std::generic_category(), "open " + dir_.string());
    }
    fsync_or_throw(dir_fd.get(), dir_);
    return final_path;
}

std::optional<state_dir::loaded> state_dir::load_newest() const {
    std::vector<std::pair<file, std::string>> skipped;
    for (const file& f : checkpoints()) {
        try {
            return loaded{read_checkpoint(f), f, std::move(skipped)};
        } catch (const checkpoint_error& e) {
            skipped.emplace_back(f, e.what());
        }
    }
    return std::nullopt;
}

world_image state_dir::load(std::uint64_t tick) const {
    const fs::path path = checkpoint_path(tick);
    std::error_code ec;
    if (!fs::exists(path, ec)) {
        throw std::runtime_error("no checkpoint of tick " + std::to_string(tick) + " in " +
                                 dir_.string());
    }
    try {
        return read_checkpoint(file{path, tick, 0});
    } catch (const checkpoint_error& e) {
        throw checkpoint_error(path.filename().string() + ": " + e.what());
    }
}

std::vector<std::filesystem::path> state_dir::prune(std::size_t keep) {
    if (keep == 0) {
        throw std::invalid_argument("prune: keep at least one checkpoint");
    }
    std::vector<fs::path> doomed;
    const std::vector<file> kept = checkpoints();
    if (kept.size() > keep) {
        for (std::size_t i = keep; i < kept.size(); ++i) {
            doomed.push_back(kept[i].path);
        }
    }
    if (!kept.empty()) {
        const std::uint64_t oldest = kept[std::min(keep, kept.size()) - 1].tick;
        for (const file& j : journals()) {
            if (j.tick < oldest) {
                doomed.push_back(j.path);
            }
        }
    }
    std::error_code ec;
    for (fs::directory_iterator it{dir_, ec}, end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (tick_of(name, temporary_prefix, temporary_suffix)) {
            doomed.push_back(it->path());
        }
    }
    if (ec) {
        throw std::system_error(ec, "list state dir " + dir_.string());
    }
    std::vector<fs::path> removed;
    for (const fs::path& p : doomed) {
        if (fs::remove(p, ec)) {
            removed.push_back(p);
        } else if (ec) {
            throw std::system_error(ec, "remove " + p.string());
        }
    }
    return removed;
}

}  // namespace ecsnet::server
