#include "ecsnet/server/persistence/inspect_state.hpp"

#include <xxhash.h>

#include <flatbuffers/flatbuffers.h>
#include <nlohmann/json.hpp>
#include <spdlog/fmt/fmt.h>

#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "ecsnet/server/persistence/journal.hpp"
#include "ecsnet/server/persistence/state_dir.hpp"
#include "ecsnet/wire/state_generated.h"

namespace ecsnet::server {

namespace {

namespace fs = std::filesystem;

std::string iso_time(std::int64_t unix_ms) {
    const std::int64_t seconds = unix_ms >= 0 ? unix_ms / 1000 : -((-unix_ms + 999) / 1000);
    const std::int64_t millis = unix_ms - seconds * 1000;
    const auto t = static_cast<std::time_t>(seconds);
    std::tm tm{};
    if (::gmtime_r(&t, &tm) == nullptr) {
        return fmt::format("(unix_ms {})", unix_ms);
    }
    char text[40];
    const std::size_t n = std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S", &tm);
    return fmt::format("{}.{:03}Z", std::string_view{text, n}, millis);
}

std::size_t alive_count(const world_image& image) {
    std::size_t n = 0;
    for (const std::uint8_t a : image.entities.alive) {
        n += a != 0 ? 1 : 0;
    }
    return n;
}

struct journal_summary {
    std::optional<std::uint64_t> base_tick;
    std::size_t batches{0};
    std::size_t records{0};
    std::optional<std::uint64_t> last_tick;
    std::string problem;  // empty: every frame read
};

template <typename Root>
bool verify_frame(const std::vector<std::uint8_t>& payload) {
    flatbuffers::Verifier::Options options;
    options.max_tables = 1U << 30;
    flatbuffers::Verifier verifier{payload.data(), payload.size(), options};
    return verifier.VerifyBuffer<Root>(nullptr);
}

journal_summary read_journal(const state_dir::file& f) {
    journal_summary out;
    std::ifstream in{f.path, std::ios::binary | std::ios::ate};
    if (!in) {
        out.problem = "cannot open: " + std::string{std::strerror(errno)};
        return out;
    }
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(in.tellg()));
    in.seekg(0);
    in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    bytes.resize(static_cast<std::size_t>(in.gcount()));  // shorter if it shrank meanwhile
    if (bytes.size() < journal_magic.size()) {
        const bool prefix = std::memcmp(bytes.data(), journal_magic.data(), bytes.size()) == 0;
        out.problem = prefix ? "torn tail at byte 0" : "not a journal (no ECSNJRNL magic)";
        return out;
    }
    if (std::memcmp(bytes.data(), journal_magic.data(), journal_magic.size()) != 0) {
        out.problem = "not a journal (no ECSNJRNL magic)";
        return out;
    }
    std::size_t at = journal_magic.size();
    std::vector<std::uint8_t> payload;
    while (at < bytes.size()) {
        const std::size_t left = bytes.size() - at;
        std::uint32_t size = 0;
        std::uint64_t checksum = 0;
        if (left >= journal_frame_head_bytes) {
            std::memcpy(&size, bytes.data() + at, sizeof(size));
            std::memcpy(&checksum, bytes.data() + at + 4, sizeof(checksum));
        }
        if (left < journal_frame_head_bytes || size > left - journal_frame_head_bytes) {
            out.problem = fmt::format("torn tail at byte {}", at);
            return out;
        }
        const std::uint8_t* body = bytes.data() + at + journal_frame_head_bytes;
        const bool last = at + journal_frame_head_bytes + size == bytes.size();
        if (XXH3_64bits(body, size) != checksum) {
            out.problem = last ? fmt::format("torn tail at byte {}", at)
                               : fmt::format("checksum mismatch in the frame at byte {}: the {} "
                                             "bytes from there are not read",
                                             at, bytes.size() - at);
            return out;
        }
        // A copy: FlatBuffers reads its scalars in place, and the frames are not aligned.
        payload.assign(body, body + size);
        if (!out.base_tick) {
            if (!verify_frame<state::JournalHeader>(payload)) {
                out.problem = fmt::format("the header frame at byte {} is not a JournalHeader", at);
                return out;
            }
            out.base_tick = flatbuffers::GetRoot<state::JournalHeader>(payload.data())->base_tick();
        } else {
            if (!verify_frame<state::JournalBatch>(payload)) {
                out.problem = fmt::format("the frame at byte {} is not a JournalBatch", at);
                return out;
            }
            const auto* batch = flatbuffers::GetRoot<state::JournalBatch>(payload.data());
            ++out.batches;
            out.records += batch->records() == nullptr ? 0 : batch->records()->size();
            out.last_tick = batch->tick();
        }
        at += journal_frame_head_bytes + size;
    }
    if (out.base_tick && *out.base_tick != f.tick) {
        out.problem = fmt::format("its header says base tick {}, its name {}", *out.base_tick,
                                  f.tick);
    }
    return out;
}

std::string type_counts(const world_image& image) {
    std::string out;
    for (const image_column& c : image.columns) {
        out += fmt::format("{}{} {}{}", out.empty() ? "" : ", ", c.type.name, c.indices.size(),
                           c.type.replicated ? "" : " (persistent, not replicated)");
    }
    return out.empty() ? std::string{"none"} : out;
}

// Returns whether one checkpoint is valid.
bool summarize(const state_dir& dir, std::FILE* out) {
    const auto checkpoints = dir.checkpoints();
    bool any_valid = false;
    std::fprintf(out, "state dir %s\ncheckpoints: %zu\n", dir.path().c_str(), checkpoints.size());
    for (const state_dir::file& f : checkpoints) {
        const std::string name = f.path.filename().string();
        try {
            const world_image image = read_checkpoint(f);
            any_valid = true;
            std::fprintf(out,
                         "  %s  tick %llu  %s  game \"%s\"  entities %zu alive of %zu slots  "
                         "free %zu  owners %zu  %ju bytes  valid\n      values: %s\n",
                         name.c_str(), static_cast<unsigned long long>(image.tick),
                         iso_time(image.unix_ms).c_str(), image.game.c_str(), alive_count(image),
                         image.entities.versions.size(), image.entities.free.size(),
                         image.owners.size(), f.bytes, type_counts(image).c_str());
        } catch (const checkpoint_error& e) {
            std::fprintf(out, "  %s  tick %llu  %ju bytes  invalid: %s\n", name.c_str(),
                         static_cast<unsigned long long>(f.tick), f.bytes, e.what());
        }
    }
    const auto journals = dir.journals();
    std::fprintf(out, "journal segments: %zu\n", journals.size());
    for (const state_dir::file& f : journals) {
        const journal_summary j = read_journal(f);
        std::fprintf(out, "  %s  base tick %s  batches %zu  records %zu  last tick %s  %ju bytes  %s\n",
                     f.path.filename().c_str(),
                     j.base_tick ? std::to_string(*j.base_tick).c_str() : "?", j.batches,
                     j.records, j.last_tick ? std::to_string(*j.last_tick).c_str() : "-", f.bytes,
                     j.problem.empty() ? "complete" : j.problem.c_str());
    }
    return any_valid;
}

// ---- JSON ----------------------------------------------------------------------------------

std::string dump(const nlohmann::json& j) {
    // Texts are the game's: not necessarily UTF-8.
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

nlohmann::json json_of(const protocol::field_value& value) {
    return std::visit(
        [&](auto v) -> nlohmann::json {
            if constexpr (std::is_same_v<decltype(v), double>) {
                if (std::isnan(v)) {
                    return "nan";
                }
                if (std::isinf(v)) {
                    return v > 0 ? "inf" : "-inf";
                }
            }
            return v;
        },
        value);
}

nlohmann::json component_json(const image_column& c, std::size_t row) {
    if (c.type.is_string) {
        return c.texts[row];
    }
    const std::size_t bytes = c.type.value_bytes();
    const auto fields = protocol::decode_fields(
        c.type, std::span<const std::byte>{c.values.data() + row * bytes, bytes});
    nlohmann::json out = nlohmann::json::object();
    for (std::size_t i = 0; i < fields.size(); ++i) {
        out[c.type.fields[i].name] = json_of(fields[i]);
    }
    return out;
}

// Streamed an entity at a time: a million entities need no document of a million objects.
void write_json(const world_image& image, std::FILE* out) {
    constexpr std::uint32_t no_row = std::numeric_limits<std::uint32_t>::max();
    const std::size_t slots = image.entities.versions.size();
    std::vector<std::vector<std::uint32_t>> row_of(image.columns.size());
    for (std::size_t c = 0; c < image.columns.size(); ++c) {
        row_of[c].assign(slots, no_row);
        const auto& indices = image.columns[c].indices;
        for (std::size_t row = 0; row < indices.size(); ++row) {
            row_of[c][indices[row]] = static_cast<std::uint32_t>(row);
        }
    }
    std::fprintf(out, "{\"tick\":%s,\"game\":%s,\"unix_ms\":%s,\"entities\":[",
                 dump(image.tick).c_str(), dump(image.game).c_str(), dump(image.unix_ms).c_str());
    bool first = true;
    for (std::size_t index = 0; index < slots; ++index) {
        if (image.entities.alive[index] == 0) {
            continue;
        }
        nlohmann::json entity{{"index", index}, {"version", image.entities.versions[index]}};
        nlohmann::json components = nlohmann::json::object();
        for (std::size_t c = 0; c < image.columns.size(); ++c) {
            if (row_of[c][index] != no_row) {
                components[image.columns[c].type.name] =
                    component_json(image.columns[c], row_of[c][index]);
            }
        }
        entity["components"] = std::move(components);
        std::fprintf(out, "%s\n%s", first ? "" : ",", dump(entity).c_str());
        first = false;
    }
    nlohmann::json owners = nlohmann::json::array();
    for (const stored_owner& o : image.owners) {
        std::string digest;
        for (const std::uint8_t b : o.key_digest) {
            digest += fmt::format("{:02x}", b);
        }
        owners.push_back({{"id", o.id},
                          {"player", o.player},
                          {"key_digest", o.has_key ? nlohmann::json(digest) : nullptr}});
    }
    nlohmann::json tokens = nlohmann::json::array();
    for (const replay_cache::entry& t : image.tokens) {
        tokens.push_back({{"player", t.player},
                          {"jti", t.jti},
                          {"expires_unix_s", std::chrono::duration_cast<std::chrono::seconds>(
                                                 t.expires.time_since_epoch())
                                                 .count()}});
    }
    std::fprintf(out, "\n],\"free\":%s,\"owners\":%s,\"next_owner\":%s,\"tokens\":%s}\n",
                 dump(image.entities.free).c_str(), dump(owners).c_str(),
                 dump(image.next_owner).c_str(), dump(tokens).c_str());
}

// The checkpoint to export, or nothing (said on err).
std::optional<world_image> pick(const state_dir& dir, const inspect_state_request& request,
                                std::FILE* err) {
    if (request.tick) {
        try {
            return dir.load(*request.tick);
        } catch (const std::exception& e) {
            std::fprintf(err, "inspect-state: %s\n", e.what());
            return std::nullopt;
        }
    }
    auto newest = dir.load_newest();
    for (const auto& [file, why] : newest ? newest->skipped
                                          : std::vector<std::pair<state_dir::file, std::string>>{}) {
        std::fprintf(err, "inspect-state: skipped %s: %s\n", file.path.filename().c_str(),
                     why.c_str());
    }
    if (!newest) {
        // Say why each one failed.
        for (const state_dir::file& f : dir.checkpoints()) {
            try {
                (void)read_checkpoint(f);
            } catch (const checkpoint_error& e) {
                std::fprintf(err, "inspect-state: %s: %s\n", f.path.filename().c_str(), e.what());
            }
        }
        std::fprintf(err, "inspect-state: no valid checkpoint in %s\n", dir.path().c_str());
        return std::nullopt;
    }
    return std::move(newest->image);
}

}  // namespace

int inspect_state(const inspect_state_request& request, std::FILE* out, std::FILE* err) {
    if (request.dir.empty()) {
        std::fprintf(err, "inspect-state: give the state dir: inspect-state DIR\n");
        return 2;
    }
    if (request.tick && !request.json) {
        std::fprintf(err, "inspect-state: --tick exports a checkpoint: it needs --json\n");
        return 2;
    }
    std::optional<state_dir> dir;
    try {
        dir.emplace(state_dir::open_read_only(request.dir));
    } catch (const std::exception& e) {
        std::fprintf(err, "inspect-state: %s\n", e.what());
        return 1;
    }

    std::FILE* target = out;
    std::FILE* opened = nullptr;
    if (!request.output.empty()) {
        opened = std::fopen(request.output.c_str(), "w");
        if (opened == nullptr) {
            std::fprintf(err, "inspect-state: cannot write %s: %s\n", request.output.c_str(),
                         std::strerror(errno));
            return 1;
        }
        target = opened;
    }
    int code = 0;
    try {
        if (request.json) {
            const auto image = pick(*dir, request, err);
            if (image) {
                write_json(*image, target);
            } else {
                code = 1;
            }
        } else if (!summarize(*dir, target)) {
            std::fprintf(err, "inspect-state: no valid checkpoint in %s\n", request.dir.c_str());
            code = 1;
        }
    } catch (const std::exception& e) {
        std::fprintf(err, "inspect-state: %s\n", e.what());
        code = 1;
    }
    if (std::fflush(target) != 0 || std::ferror(target) != 0) {
        std::fprintf(err, "inspect-state: cannot write %s\n",
                     opened != nullptr ? request.output.c_str() : "the output");
        code = 1;
    }
    if (opened != nullptr && std::fclose(opened) != 0) {
        std::fprintf(err, "inspect-state: cannot write %s: %s\n", request.output.c_str(),
                     std::strerror(errno));
        code = 1;
    }
    return code;
}

}  // namespace ecsnet::server
