#include "ecsnet/protocol/mirror.hpp"

#include <algorithm>

#include "ecsnet/protocol/checksum.hpp"

namespace ecsnet::protocol {

void mirror::state::clear() {
    versions.clear();
    count = 0;
    std::apply([](auto&... s) { (s.clear(), ...); }, storages);
}

std::optional<std::string> mirror::take_resync_reason() {
    if (!awaiting_resync_ || resync_reported_) {
        return std::nullopt;
    }
    resync_reported_ = true;
    return resync_reason_;
}

mirror::entity_type mirror::find(std::uint32_t index) const noexcept { return live_.find(index); }

bool mirror::inconsistent(std::string why) {
    ++stats_.inconsistencies;
    error_ = why;
    resync_reason_ = std::move(why);
    awaiting_resync_ = true;
    resync_reported_ = false;
    staging_active_ = false;
    return false;
}

bool mirror::apply(const wire::ServerMessage& message) {
    if (applying_) {
        // The outer message is half applied and scratch_ is in use: refuse, change nothing.
        error_ =
            "apply() called from a mirror callback: messages are applied one at a time "
            "(queue this one and apply it after the callback returned)";
        return false;
    }
    applying_ = true;
    active_ = callbacks_;
    // Also when a callback throws: the mirror then waits for what follows (a tick gap asks for
    // a resync).
    struct done {
        mirror& m;
        ~done() { m.applying_ = false; }
    } reset{*this};
    return apply_message(message);
}

bool mirror::apply_message(const wire::ServerMessage& message) {
    switch (message.body_type()) {
        case wire::ServerBody::Snapshot:
            return apply_snapshot(*message.body_as_Snapshot());
        case wire::ServerBody::Delta:
            return apply_delta(*message.body_as_Delta());
        case wire::ServerBody::Checksum:
            return apply_checksum(*message.body_as_Checksum());
        case wire::ServerBody::Welcome:
        case wire::ServerBody::CommandResult:
        case wire::ServerBody::Pong:
        case wire::ServerBody::Disconnect:
            return true;
        case wire::ServerBody::NONE:
        default:
            // The verifier lets unknown union tags through on purpose (forward compatibility).
            return inconsistent("unknown server message type " +
                                std::to_string(static_cast<unsigned>(message.body_type())));
    }
}

bool mirror::apply_group(state& target, const wire::EntityGroup& group, bool notify) {
    // One version per entity: the versions, really present in the frame, bound the indices an
    // 8-byte IndexRun may announce before anything is expanded.
    const auto* versions = group.versions();
    const std::size_t version_count = versions == nullptr ? 0 : versions->size();
    if (!expand_index_set(group.at(), std::min(version_count, options_.max_index + std::size_t{1}),
                          scratch_)) {
        return inconsistent("entity group lists too many entities: more than its " +
                            std::to_string(version_count) + " versions");
    }
    const std::size_t count = scratch_.size();
    if (version_count != count) {
        return inconsistent("entity group has " + std::to_string(count) + " entities but " +
                            std::to_string(version_count) + " versions");
    }
    // Validate the whole group before touching the state.
    for (std::size_t i = 0; i < count; ++i) {
        const std::uint32_t index = scratch_[i];
        if (index > options_.max_index) {
            return inconsistent("entity index " + std::to_string(index) + " above the limit");
        }
        if (versions->Get(static_cast<flatbuffers::uoffset_t>(i)) == 0) {
            return inconsistent("entity " + std::to_string(index) + " has the null version 0");
        }
        if (!target.find(index).is_null()) {
            return inconsistent("spawn of " + std::to_string(index) + ":" +
                                std::to_string(versions->Get(static_cast<flatbuffers::uoffset_t>(i))) +
                                " over live entity " + ecs::to_string(target.find(index)));
        }
    }
    // An index listed twice would be spawned twice.
    std::vector<std::uint32_t> sorted(scratch_);
    std::sort(sorted.begin(), sorted.end());
    if (const auto twice = std::adjacent_find(sorted.begin(), sorted.end());
        twice != sorted.end()) {
        return inconsistent("entity group lists index " + std::to_string(*twice) + " twice");
    }
    bool ok = true;
    const wire::ComponentColumns* columns = group.columns();
    if (columns != nullptr) {
        for_each_component([&]<typename T>() {
            const auto* values = column<T>::values(*columns);
            if (!ok || values == nullptr) {
                return;
            }
            if (values->size() != count) {
                ok = inconsistent("column " + std::string{column<T>::name} + " has " +
                                  std::to_string(values->size()) + " values for " +
                                  std::to_string(count) + " entities");
                return;
            }
            for (std::size_t i = 0; i < count && ok; ++i) {
                if (!valid_value(decode_value<T>(*values, i))) {
                    ok = inconsistent("invalid " + std::string{column<T>::name} + " value");
                }
            }
        });
    }
    if (!ok) {
        return false;
    }
    for (std::size_t i = 0; i < count; ++i) {
        const std::uint32_t index = scratch_[i];
        if (index >= target.versions.size()) {
            target.versions.resize(std::max(std::size_t{index} + 1, target.versions.size() * 2), 0);
        }
        target.versions[index] = versions->Get(static_cast<flatbuffers::uoffset_t>(i));
        ++target.count;
    }
    if (columns != nullptr) {
        for_each_component([&]<typename T>() {
            const auto* values = column<T>::values(*columns);
            if (values == nullptr) {
                return;
            }
            auto& storage = std::get<storage_t<T>>(target.storages);
            for (std::size_t i = 0; i < count; ++i) {
                storage.emplace(target.find(scratch_[i]), decode_value<T>(*values, i));
            }
        });
    }
    if (notify && active_.on_spawn) {
        for (const std::uint32_t index : scratch_) {
            active_.on_spawn(target.find(index));
        }
    }
    return true;
}

bool mirror::apply_snapshot(const wire::Snapshot& snapshot) {
    if (snapshot.chunk() == 0) {
        staging_.clear();
        staging_active_ = true;
        staging_tick_ = snapshot.tick();
        staging_next_chunk_ = 0;
        staging_chunk_count_ = snapshot.chunk_count();
        staging_entity_count_ = snapshot.entity_count();
    }
    if (!staging_active_ || snapshot.chunk() != staging_next_chunk_ ||
        snapshot.tick() != staging_tick_ || snapshot.chunk_count() != staging_chunk_count_ ||
        snapshot.chunk_count() == 0) {
        return inconsistent("snapshot chunk " + std::to_string(snapshot.chunk()) + "/" +
                            std::to_string(snapshot.chunk_count()) + " of tick " +
                            std::to_string(snapshot.tick()) + " out of sequence");
    }
    if (const auto* groups = snapshot.groups()) {
        for (const auto* group : *groups) {
            if (!apply_group(staging_, *group, false)) {
                return false;
            }
        }
    }
    ++staging_next_chunk_;
    if (staging_next_chunk_ < staging_chunk_count_) {
        return true;
    }
    staging_active_ = false;
    if (staging_.count != staging_entity_count_) {
        return inconsistent("snapshot announced " + std::to_string(staging_entity_count_) +
                            " entities but carried " + std::to_string(staging_.count));
    }
    event_tick_ = staging_tick_;
    if (active_.on_destroy) {
        // Before the swap, while what goes can still be read.
        for (std::size_t i = 0; i < live_.versions.size(); ++i) {
            const std::uint32_t version = live_.versions[i];
            if (version != 0 &&
                (i >= staging_.versions.size() || staging_.versions[i] != version)) {
                active_.on_destroy(entity_type{static_cast<std::uint32_t>(i), version});
            }
        }
    }
    std::swap(live_, staging_);
    tick_ = staging_tick_;
    ready_ = true;
    awaiting_resync_ = false;
    ++stats_.snapshots;
    report_snapshot_differences(staging_);
    staging_.clear();
    if (active_.on_snapshot) {
        active_.on_snapshot(tick_, live_.count);
    }
    return true;
}

void mirror::report_snapshot_differences(const state& before) {
    const auto kept = [&](std::size_t i) {
        return i < before.versions.size() && before.versions[i] == live_.versions[i];
    };
    if (active_.on_spawn) {
        for (std::size_t i = 0; i < live_.versions.size(); ++i) {
            if (live_.versions[i] != 0 && !kept(i)) {
                active_.on_spawn(entity_type{static_cast<std::uint32_t>(i), live_.versions[i]});
            }
        }
    }
    if (!active_.on_update && !active_.on_remove) {
        return;
    }
    const std::size_t common = std::min(before.versions.size(), live_.versions.size());
    for_each_component([&]<typename T>() {
        const auto& was = std::get<storage_t<T>>(before.storages);
        const auto& is = std::get<storage_t<T>>(live_.storages);
        for (std::size_t i = 0; i < common && active_.on_update; ++i) {
            if (live_.versions[i] == 0 || !kept(i)) {
                continue;
            }
            const entity_type e{static_cast<std::uint32_t>(i), live_.versions[i]};
            const T* now = is.try_get(e);
            const T* then = was.try_get(e);
            if (now != nullptr && (then == nullptr || !(*now == *then))) {
                active_.on_update(e, wire_id_v<T>);
            }
        }
    });
    for_each_component([&]<typename T>() {
        const auto& was = std::get<storage_t<T>>(before.storages);
        const auto& is = std::get<storage_t<T>>(live_.storages);
        for (std::size_t i = 0; i < common && active_.on_remove; ++i) {
            if (live_.versions[i] == 0 || !kept(i)) {
                continue;
            }
            const entity_type e{static_cast<std::uint32_t>(i), live_.versions[i]};
            if (was.contains(e) && !is.contains(e)) {
                active_.on_remove(e, wire_id_v<T>);
            }
        }
    });
}

bool mirror::apply_updates(const wire::ComponentColumns& columns) {
    bool ok = true;
    for_each_component([&]<typename T>() {
        if (!ok) {
            return;
        }
        const auto* at = column<T>::at(columns);
        const auto* values = column<T>::values(columns);
        if (at == nullptr && values == nullptr) {
            return;
        }
        const std::size_t count = values == nullptr ? 0 : values->size();
        if (!expand_index_set(at, count, scratch_) || scratch_.size() != count) {
            ok = inconsistent("update column " + std::string{column<T>::name} +
                              " lists a different number of entities and values");
            return;
        }
        for (std::size_t i = 0; i < count; ++i) {
            const entity_type e = live_.find(scratch_[i]);
            if (e.is_null()) {
                ok = inconsistent("update of " + std::string{column<T>::name} +
                                  " for unknown entity index " + std::to_string(scratch_[i]));
                return;
            }
            T value = decode_value<T>(*values, i);
            if (!valid_value(value)) {
                ok = inconsistent("invalid " + std::string{column<T>::name} + " value for " +
                                  ecs::to_string(e));
                return;
            }
            auto& storage = std::get<storage_t<T>>(live_.storages);
            if (T* current = storage.try_get(e)) {
                *current = std::move(value);
            } else {
                storage.emplace(e, std::move(value));
            }
            if (active_.on_update) {
                active_.on_update(e, wire_id_v<T>);
            }
        }
    });
    return ok;
}

bool mirror::apply_removals(const wire::ComponentColumns& columns) {
    bool ok = true;
    for_each_component([&]<typename T>() {
        const auto* at = column<T>::at(columns);
        if (!ok || at == nullptr) {
            return;
        }
        if (!expand_index_set(at, live_.count, scratch_)) {
            ok = inconsistent("removal column " + std::string{column<T>::name} +
                              " lists more entities than exist");
            return;
        }
        auto& storage = std::get<storage_t<T>>(live_.storages);
        for (const std::uint32_t index : scratch_) {
            const entity_type e = live_.find(index);
            if (e.is_null() || !storage.contains(e)) {
                ok = inconsistent("removal of " + std::string{column<T>::name} +
                                  " that entity index " + std::to_string(index) + " does not have");
                return;
            }
            storage.erase(e);
            if (active_.on_remove) {
                active_.on_remove(e, wire_id_v<T>);
            }
        }
    });
    return ok;
}

bool mirror::apply_delta(const wire::Delta& delta) {
    if (awaiting_resync_) {
        error_ = "waiting for a snapshot after an inconsistency";
        return false;
    }
    if (!ready_) {
        // The snapshot comes first (docs/PROTOCOL.md): a stream that starts with a delta will
        // not bring one by itself, so this asks for a resync.
        return inconsistent("delta before the first snapshot");
    }
    if (delta.tick() != tick_ + 1) {
        return inconsistent("tick gap: delta for tick " + std::to_string(delta.tick()) +
                            " after tick " + std::to_string(tick_));
    }
    event_tick_ = delta.tick();
    if (const auto* destroyed = delta.destroyed()) {
        for (const auto* ref : *destroyed) {
            const entity_type e = live_.find(ref->index());
            if (e.is_null() || e.version() != ref->version()) {
                return inconsistent("destroy of " + std::to_string(ref->index()) + ":" +
                                    std::to_string(ref->version()) + " but the mirror has " +
                                    (e.is_null() ? std::string{"nothing"} : ecs::to_string(e)) +
                                    " there");
            }
            if (active_.on_destroy) {
                active_.on_destroy(e);
            }
            std::apply([&](auto&... s) { ((s.contains(e) ? s.erase(e) : void()), ...); },
                       live_.storages);
            live_.versions[e.index()] = 0;
            --live_.count;
        }
    }
    if (const auto* spawned = delta.spawned()) {
        for (const auto* group : *spawned) {
            if (!apply_group(live_, *group, true)) {
                return false;
            }
        }
    }
    if (delta.updated() != nullptr && !apply_updates(*delta.updated())) {
        return false;
    }
    if (delta.removed() != nullptr && !apply_removals(*delta.removed())) {
        return false;
    }
    tick_ = delta.tick();
    ++stats_.deltas;
    return true;
}

bool mirror::apply_checksum(const wire::Checksum& message) {
    if (!ready() || message.tick() != tick_) {
        return true;  // not comparable now (still joining, or resyncing)
    }
    const checksum::index_range range{message.first_index(), message.end_index()};
    if (range.first >= range.end) {
        return inconsistent("Checksum covers an empty index range");
    }
    const checksum::slice_sum own =
        range.whole()
            ? checksum::slice_sum{checksum(), static_cast<std::uint32_t>(live_.count)}
            : checksum::of_slice(
                  range, live_.versions.size(),
                  [&](std::uint32_t index) { return live_.find(index); },
                  [&]<typename T>() { return &std::get<storage_t<T>>(live_.storages); });
    const bool matched = own.hash == message.hash() && own.entities == message.entity_count();
    if (matched) {
        ++stats_.checksums_matched;
    } else {
        ++stats_.checksums_mismatched;
    }
    event_tick_ = message.tick();
    if (active_.on_checksum) {
        active_.on_checksum(message.tick(), matched);
    }
    return matched ? true
                   : inconsistent("checksum mismatch at tick " + std::to_string(message.tick()) +
                                  " (desync)");
}

std::uint64_t mirror::checksum() const {
    std::uint64_t sum = 0;
    each([&](entity_type e) { sum += checksum::entity_term(e.index(), e.version()); });
    for_each_component([&]<typename T>() {
        const auto& storage = std::get<storage_t<T>>(live_.storages);
        const auto entities = storage.entities();
        const auto values = storage.values();
        for (std::size_t i = 0; i < entities.size(); ++i) {
            sum += checksum::component_term(entities[i].index(), entities[i].version(), values[i]);
        }
    });
    return sum;
}

}  // namespace ecsnet::protocol
