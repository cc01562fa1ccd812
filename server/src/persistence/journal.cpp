#include "ecsnet/server/persistence/journal.hpp"

#include "../thread_name.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <system_error>
#include <unordered_map>
#include <variant>

#include "ecsnet/server/persistence/world_image.hpp"
#include "state_format.hpp"

namespace ecsnet::server {

namespace {


std::vector<std::uint8_t> frame(const std::uint8_t* payload, std::size_t size) {
    std::vector<std::uint8_t> out(journal_frame_head_bytes + size);
    const auto size32 = static_cast<std::uint32_t>(size);
    const std::uint64_t sum = XXH3_64bits(payload, size);
    std::memcpy(out.data(), &size32, 4);
    std::memcpy(out.data() + 4, &sum, 8);
    std::memcpy(out.data() + journal_frame_head_bytes, payload, size);
    return out;
}

std::string errno_text(const char* call, const std::filesystem::path& path) {
    return std::string{call} + " " + path.string() + ": " + std::strerror(errno);
}

// Writes everything, through partial writes and EINTR; false with errno set on failure.
bool write_all(int fd, const std::uint8_t* data, std::size_t size) {
    while (size > 0) {
        const ssize_t n = ::write(fd, data, size);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return false;
        }
        data += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

void sync_directory(const std::filesystem::path& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        throw std::runtime_error(errno_text("open", dir));
    }
    const int rc = ::fsync(fd);
    const int saved = errno;
    ::close(fd);
    if (rc != 0) {
        errno = saved;
        throw std::runtime_error(errno_text("fsync", dir));
    }
}

}  // namespace

journal_writer::journal_writer(std::filesystem::path path, std::uint64_t base_tick,
                               std::string game, const protocol::component_registry& types)
    : types_{types}, game_{std::move(game)} {
    start_batch();
    // The first segment is opened here, so that a bad path fails at start, not on a tick.
    fd_ = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
    if (fd_ < 0) {
        throw std::runtime_error("cannot start the journal: " + errno_text("open", path));
    }
    path_ = std::move(path);
    const auto header = header_frame(base_tick);
    if (!write_all(fd_, header.data(), header.size()) || ::fdatasync(fd_) != 0) {
        const std::string why = errno_text("write", path_);
        ::close(fd_);
        throw std::runtime_error("cannot start the journal: " + why);
    }
    sync_directory(path_.parent_path());
    thread_ = std::thread{[this] {
        detail::name_this_thread("journal");
        run();
    }};
}

journal_writer::~journal_writer() {
    {
        const std::lock_guard lock{mutex_};
        stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

void journal_writer::start_batch() {
    builder_ = std::make_unique<flatbuffers::FlatBufferBuilder>(4096);
    records_.clear();
    recorded_.clear();
}

std::vector<std::uint8_t> journal_writer::header_frame(std::uint64_t base_tick) const {
    flatbuffers::FlatBufferBuilder fbb;
    std::vector<flatbuffers::Offset<state::StoredType>> types;
    for (const protocol::stored_ops& ops : types_.stored()) {
        types.push_back(detail::write_type(fbb, ops.type));
    }
    const auto game = fbb.CreateString(game_);
    const auto list = fbb.CreateVector(types);
    fbb.Finish(state::CreateJournalHeader(fbb, journal_format, base_tick, game, list));
    std::vector<std::uint8_t> out(journal_magic.begin(), journal_magic.end());
    const auto framed = frame(fbb.GetBufferPointer(), fbb.GetSize());
    out.insert(out.end(), framed.begin(), framed.end());
    return out;
}

void journal_writer::command(const ecs::World& world, const protocol::client_message& message,
                             const protocol::command_result& result) {
    if (std::holds_alternative<protocol::spawn>(message)) {
        if (world.valid(result.entity)) {
            row(world, result.entity);
        }
    } else if (const auto* destroy = std::get_if<protocol::destroy>(&message)) {
        destroyed(destroy->entity);
    } else if (const auto* set = std::get_if<protocol::set_components>(&message)) {
        if (world.valid(set->entity)) {
            row(world, set->entity);
        }
    } else if (const auto* remove = std::get_if<protocol::remove_components>(&message)) {
        if (world.valid(remove->entity)) {
            row(world, remove->entity);
        }
    }
}

void journal_writer::structure(const ecs::World& world, const ecs::World::change_set_type& changes) {
    // Destroys first: an index a system freed may be handed out again in the same tick.
    std::unordered_map<std::uint64_t, bool> last_is_row;
    const auto key = [](ecs::Entity e) {
        return (std::uint64_t{e.index()} << 32U) | std::uint64_t{e.version()};
    };
    for (const auto& [e, is_row] : recorded_) {
        last_is_row[key(e)] = is_row;
    }
    for (const auto& [k, is_row] : last_is_row) {
        const ecs::Entity e{static_cast<std::uint32_t>(k >> 32U), static_cast<std::uint32_t>(k)};
        if (is_row && !world.valid(e)) {
            destroyed(e);  // a command's entity that a system ended in the same tick
        }
    }
    for (const ecs::Entity e : changes.destroyed) {
        if (!last_is_row.contains(key(e))) {
            destroyed(e);
        }
    }
    for (const ecs::Entity e : changes.created) {
        if (!last_is_row.contains(key(e)) && world.valid(e)) {
            row(world, e);
        }
    }
}

void journal_writer::row(const ecs::World& world, ecs::Entity e) {
    auto& fbb = *builder_;
    std::vector<flatbuffers::Offset<state::StoredValue>> values;
    std::vector<std::byte> bytes;
    std::string text;
    const auto& stored = types_.stored();
    for (std::size_t t = 0; t < stored.size(); ++t) {
        if (!stored[t].contains(world, e)) {
            continue;
        }
        bytes.clear();
        text.clear();
        stored[t].get(world, e, bytes, text);
        const auto value_bytes =
            stored[t].type.is_string
                ? flatbuffers::Offset<flatbuffers::Vector<std::uint8_t>>{}
                : fbb.CreateVector(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
        const auto value_text =
            stored[t].type.is_string ? fbb.CreateString(text) : flatbuffers::Offset<flatbuffers::String>{};
        values.push_back(state::CreateStoredValue(fbb, static_cast<std::uint32_t>(t), value_bytes,
                                                  value_text));
    }
    const auto list = fbb.CreateVector(values);
    records_.push_back(
        state::CreateRecord(fbb, state::RecordKind::Row, e.index(), e.version(), list).o);
    recorded_.emplace_back(e, true);
}

void journal_writer::destroyed(ecs::Entity e) {
    recorded_.emplace_back(e, false);
    records_.push_back(
        state::CreateRecord(*builder_, state::RecordKind::Destroy, e.index(), e.version()).o);
}

void journal_writer::owner(const stored_owner& owner) {
    auto& fbb = *builder_;
    const auto table = detail::write_owner(fbb, owner);
    records_.push_back(state::CreateRecord(fbb, state::RecordKind::Owner, 0, 0, 0, table).o);
}

void journal_writer::token(const replay_cache::entry& token) {
    auto& fbb = *builder_;
    const auto table = detail::write_token(fbb, token);
    records_.push_back(
        state::CreateRecord(fbb, state::RecordKind::Token, 0, 0, 0, 0, table).o);
}

void journal_writer::commit(std::uint64_t tick, durable_fn durable) {
    job j;
    j.durable = std::move(durable);
    if (!records_.empty()) {
        auto& fbb = *builder_;
        std::vector<flatbuffers::Offset<state::Record>> records;
        records.reserve(records_.size());
        for (const std::uint32_t o : records_) {
            records.emplace_back(o);
        }
        const auto list = fbb.CreateVector(records);
        fbb.Finish(state::CreateJournalBatch(fbb, tick, list));
        j.frame = frame(fbb.GetBufferPointer(), fbb.GetSize());
        start_batch();
    }
    {
        const std::lock_guard lock{mutex_};
        jobs_.push_back(std::move(j));
    }
    wake_.notify_one();
}

void journal_writer::rotate(std::filesystem::path path, std::uint64_t base_tick) {
    job j;
    j.new_segment = std::move(path);
    j.frame = header_frame(base_tick);
    {
        const std::lock_guard lock{mutex_};
        jobs_.push_back(std::move(j));
    }
    wake_.notify_one();
}

void journal_writer::flush() {
    std::unique_lock lock{mutex_};
    idle_.wait(lock, [&] { return jobs_.empty() && !busy_; });
}

void journal_writer::run() {
    for (;;) {
        job j;
        {
            std::unique_lock lock{mutex_};
            wake_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
            if (jobs_.empty()) {
                return;  // stopping, everything written
            }
            j = std::move(jobs_.front());
            jobs_.pop_front();
            busy_ = true;
        }
        const auto started = std::chrono::steady_clock::now();
        if (failed_.empty() && !j.new_segment.empty()) {
            const int fd = ::open(j.new_segment.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
            if (fd < 0) {
                failed_ = errno_text("open", j.new_segment);
            } else {
                ::close(fd_);
                fd_ = fd;
                path_ = j.new_segment;
            }
        }
        if (failed_.empty() && !j.frame.empty()) {
            if (!write_all(fd_, j.frame.data(), j.frame.size())) {
                failed_ = errno_text("write", path_);
            } else if (::fdatasync(fd_) != 0) {
                failed_ = errno_text("fdatasync", path_);
            }
        }
        if (failed_.empty() && !j.new_segment.empty()) {
            try {
                sync_directory(path_.parent_path());
            } catch (const std::exception& e) {
                failed_ = e.what();
            }
        }
        if (failed_.empty() && !j.frame.empty() && j.new_segment.empty() && on_commit) {
            on_commit(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
                      j.frame.size());
        }
        if (j.durable) {
            j.durable(failed_);
        }
        {
            const std::lock_guard lock{mutex_};
            busy_ = false;
        }
        idle_.notify_all();
    }
}

// ---- replay ----------------------------------------------------------------------------------

namespace {

struct replay_type {
    const protocol::stored_ops* ops{nullptr};  // null: dropped by the game
    const protocol::stored_migration* migration{nullptr};
    protocol::stored_type saved;
};

std::vector<replay_type> plan_types(const state::JournalHeader& header,
                                    const protocol::component_registry& types,
                                    const std::string& file) {
    std::vector<replay_type> out;
    if (header.types() == nullptr) {
        return out;
    }
    for (const state::StoredType* table : *header.types()) {
        std::string why;
        auto saved = detail::read_type(*table, &why);
        if (!saved) {
            throw restore_error(file + ": " + why);
        }
        replay_type plan;
        plan.migration = types.migration(saved->name);
        plan.ops = types.find_stored(saved->name);
        if (plan.ops == nullptr) {
            if (plan.migration == nullptr || *plan.migration) {
                throw restore_error(file + " keeps component type '" + saved->name + "' (" +
                                    protocol::describe(*saved) +
                                    ") and this game has no such type: register it, or drop "
                                    "its values with component_registry::drop(\"" +
                                    saved->name + "\")");
            }
        } else {
            const std::string incompatible = protocol::incompatibility(*saved, plan.ops->type);
            if (incompatible.empty()) {
                plan.migration = nullptr;
            } else if (plan.migration == nullptr || !*plan.migration || saved->is_string ||
                       plan.ops->type.is_string) {
                throw restore_error(file + ": component type '" + saved->name +
                                    "' changed: " + incompatible +
                                    "; give a migration (component_registry::migrate) or keep "
                                    "the old layout");
            }
        }
        plan.saved = std::move(*saved);
        out.push_back(std::move(plan));
    }
    return out;
}

void apply_row(const state::Record& record, const std::vector<replay_type>& plans,
               ecs::World& world, const protocol::component_registry& types,
               replay_report& report) {
    const ecs::Entity e{record.index(), record.version()};
    if (e.is_null()) {
        ++report.skipped;
        return;
    }
    if (!world.valid(e)) {
        const ecs::Entity current = world.current(e.index());
        if (!current.is_null() && current.version() > e.version()) {
            ++report.skipped;
            return;
        }
        if (current.is_null() && world.entities().version_at(e.index()) > e.version() &&
            world.entities().version_at(e.index()) != ecs::default_entity_traits::null_version) {
            ++report.skipped;  // an id this slot had before: reviving it would reuse an id
            return;
        }
        if (!current.is_null()) {
            // Ended by a system after the checkpoint (unjournaled), before the index came back.
            world.destroy(current);
        }
        world.revive(e);
    }
    std::vector<bool> listed(types.stored().size(), false);
    if (record.values() != nullptr) {
        for (const state::StoredValue* value : *record.values()) {
            if (value->type() >= plans.size()) {
                throw std::runtime_error("a journal value names type " +
                                         std::to_string(value->type()) + " of " +
                                         std::to_string(plans.size()));
            }
            const replay_type& plan = plans[value->type()];
            if (plan.ops == nullptr) {
                continue;
            }
            const std::span<const std::byte> bytes =
                value->bytes() == nullptr
                    ? std::span<const std::byte>{}
                    : std::span<const std::byte>{reinterpret_cast<const std::byte*>(value->bytes()->data()),
                                                 value->bytes()->size()};
            if (!plan.saved.is_string && bytes.size() != plan.saved.value_bytes()) {
                throw std::runtime_error("a journal value of '" + plan.saved.name + "' has " +
                                         std::to_string(bytes.size()) + " bytes, not " +
                                         std::to_string(plan.saved.value_bytes()));
            }
            if (plan.migration != nullptr) {
                std::vector<protocol::field_value> fields;
                try {
                    fields = (*plan.migration)(plan.saved, protocol::decode_fields(plan.saved, bytes));
                } catch (const std::exception& ex) {
                    throw restore_error("the migration of component type '" + plan.saved.name +
                                        "' refused a journaled value of entity index " +
                                        std::to_string(e.index()) + ": " + ex.what());
                }
                if (fields.size() != plan.ops->type.fields.size()) {
                    throw restore_error("the migration of component type '" + plan.saved.name +
                                        "' gave " + std::to_string(fields.size()) +
                                        " field values for " + protocol::describe(plan.ops->type));
                }
                plan.ops->put_fields(world, e, fields);
            } else {
                plan.ops->put(world, e, bytes,
                              value->text() == nullptr ? std::string_view{} : value->text()->string_view());
            }
            listed[static_cast<std::size_t>(plan.ops - types.stored().data())] = true;
        }
    }
    for (std::size_t t = 0; t < types.stored().size(); ++t) {
        if (!listed[t] && types.stored()[t].contains(world, e)) {
            types.stored()[t].remove(world, e);
        }
    }
}

}  // namespace

void replay_journal(const std::filesystem::path& segment, std::uint64_t after_tick,
                    ecs::World& world, const protocol::component_registry& types,
                    owner_registry& owners, replay_report& report, replay_cache* tokens) {
    const std::string name = segment.filename().string();
    std::ifstream in{segment, std::ios::binary};
    if (!in) {
        throw std::runtime_error("cannot read " + segment.string() + ": " + std::strerror(errno));
    }
    const std::vector<std::uint8_t> bytes{std::istreambuf_iterator<char>{in},
                                          std::istreambuf_iterator<char>{}};
    ++report.segments;
    if (bytes.size() < journal_magic.size()) {
        report.torn.push_back(name + ": torn at byte 0 (no header: the segment was being started)");
        return;
    }
    if (std::memcmp(bytes.data(), journal_magic.data(), journal_magic.size()) != 0) {
        throw std::runtime_error(segment.string() + " is not an ecsnet journal (bad magic)");
    }
    std::size_t at = journal_magic.size();
    std::vector<replay_type> plans;
    bool header = true;
    while (at < bytes.size()) {
        const std::size_t left = bytes.size() - at;
        std::uint32_t size = 0;
        std::uint64_t sum = 0;
        if (left >= journal_frame_head_bytes) {
            std::memcpy(&size, bytes.data() + at, 4);
            std::memcpy(&sum, bytes.data() + at + 4, 8);
        }
        // A copy: FlatBuffers reads its scalars in place, and frames are not aligned.
        std::vector<std::uint8_t> frame_copy;
        if (left >= journal_frame_head_bytes && left - journal_frame_head_bytes >= size) {
            frame_copy.assign(bytes.data() + at + journal_frame_head_bytes,
                              bytes.data() + at + journal_frame_head_bytes + size);
        }
        const std::uint8_t* payload = frame_copy.data();
        std::string torn;
        if (left < journal_frame_head_bytes || left - journal_frame_head_bytes < size) {
            torn = "incomplete frame";
        } else if (XXH3_64bits(payload, size) != sum) {
            torn = "checksum mismatch";
        } else {
            flatbuffers::Verifier verifier{payload, size, flatbuffers::Verifier::Options{64, 1U << 30U}};
            const bool ok = header ? verifier.VerifyBuffer<state::JournalHeader>(nullptr)
                                   : verifier.VerifyBuffer<state::JournalBatch>(nullptr);
            if (!ok) {
                torn = "a frame that does not verify";
            }
        }
        // A file system may also leave zeros where an unsynced append was cut (power loss).
        const bool zeros_after = std::all_of(bytes.begin() + static_cast<std::ptrdiff_t>(at),
                                             bytes.end(), [](std::uint8_t b) { return b == 0; });
        if (!torn.empty() && !zeros_after && left >= journal_frame_head_bytes &&
            left - journal_frame_head_bytes > size) {
            // Whole frames follow the bad one: not a write cut short by a crash, but damage to
            // batches that were acknowledged. The operator decides.
            throw std::runtime_error(
                segment.string() + ": the frame at byte " + std::to_string(at) + " is corrupt (" +
                torn + ") and " + std::to_string(left - journal_frame_head_bytes - size) +
                " bytes of later batches follow it; refusing to start without them: restore a "
                "backup, or accept losing them with `truncate -s " + std::to_string(at) + " " +
                segment.string() + "`");
        }
        if (!torn.empty()) {
            report.torn.push_back(name + ": torn tail at byte " + std::to_string(at) + " of " +
                                  std::to_string(bytes.size()) + " (" + torn +
                                  "; written during a crash, never acknowledged)");
            return;
        }
        if (header) {
            const auto* h = flatbuffers::GetRoot<state::JournalHeader>(payload);
            if (h->format() > journal_format) {
                throw std::runtime_error(segment.string() + ": journal format " +
                                         std::to_string(h->format()) +
                                         " is newer than this server's " +
                                         std::to_string(journal_format));
            }
            plans = plan_types(*h, types, name);
            header = false;
        } else {
            const auto* batch = flatbuffers::GetRoot<state::JournalBatch>(payload);
            if (batch->tick() > after_tick) {
                if (batch->records() != nullptr) {
                    for (const state::Record* record : *batch->records()) {
                        switch (record->kind()) {
                            case state::RecordKind::Row:
                                apply_row(*record, plans, world, types, report);
                                break;
                            case state::RecordKind::Destroy: {
                                const ecs::Entity e{record->index(), record->version()};
                                if (world.valid(e)) {
                                    world.destroy(e);
                                }
                                break;
                            }
                            case state::RecordKind::Owner:
                                if (record->owner() != nullptr) {
                                    owners.restore(detail::read_owner(*record->owner()));
                                }
                                break;
                            case state::RecordKind::Token:
                                if (record->token() != nullptr && tokens != nullptr) {
                                    tokens->restore(detail::read_token(*record->token()),
                                                    std::chrono::system_clock::now());
                                }
                                break;
                            default:
                                throw std::runtime_error(name + ": a record of unknown kind " +
                                                         std::to_string(static_cast<int>(record->kind())));
                        }
                        ++report.records;
                    }
                }
                ++report.batches;
                report.last_tick = std::max(report.last_tick, batch->tick());
            }
        }
        at += journal_frame_head_bytes + size;
    }
}

}  // namespace ecsnet::server
