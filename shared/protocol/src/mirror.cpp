#include "ecsnet/protocol/mirror.hpp"

#include <algorithm>

#include <cstring>

#include "ecsnet/protocol/checksum.hpp"
#include "ecsnet/protocol/messages.hpp"

namespace ecsnet::protocol {

bool mirror::value_store::same(std::uint32_t index, const value_store& other) const noexcept {
    if (is_string) {
        return texts[slot[index] - 1] == other.texts[other.slot[index] - 1];
    }
    const auto a = value(index);
    const auto b = other.value(index);
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

std::byte* mirror::value_store::add(std::uint32_t index) {
    if (index >= slot.size()) {
        slot.resize(std::max<std::size_t>(std::size_t{index} + 1, slot.size() * 2), 0);
    }
    if (slot[index] == 0) {
        dense.push_back(index);
        slot[index] = static_cast<std::uint32_t>(dense.size());
        bytes.resize(dense.size() * stride);
    }
    return bytes.data() + std::size_t{slot[index] - 1} * stride;
}

void mirror::value_store::set_text(std::uint32_t index, std::string text) {
    if (index >= slot.size()) {
        slot.resize(std::max<std::size_t>(std::size_t{index} + 1, slot.size() * 2), 0);
    }
    if (slot[index] == 0) {
        dense.push_back(index);
        slot[index] = static_cast<std::uint32_t>(dense.size());
        texts.push_back(std::move(text));
    } else {
        texts[slot[index] - 1] = std::move(text);
    }
}

void mirror::value_store::erase(std::uint32_t index) {
    const std::uint32_t at = slot[index] - 1;
    const std::uint32_t last = static_cast<std::uint32_t>(dense.size() - 1);
    if (at != last) {
        // Swap and pop: the last value takes the erased one's place.
        const std::uint32_t moved = dense[last];
        dense[at] = moved;
        slot[moved] = at + 1;
        if (is_string) {
            texts[at] = std::move(texts[last]);
        } else {
            std::memcpy(bytes.data() + std::size_t{at} * stride,
                        bytes.data() + std::size_t{last} * stride, stride);
        }
    }
    dense.pop_back();
    if (is_string) {
        texts.pop_back();
    } else {
        bytes.resize(dense.size() * stride);
    }
    slot[index] = 0;
}

void mirror::value_store::clear() {
    for (const std::uint32_t index : dense) {
        slot[index] = 0;
    }
    dense.clear();
    bytes.clear();
    texts.clear();
}

void mirror::state::clear() {
    versions.clear();
    count = 0;
    for (auto& store : stores) {
        store.clear();
    }
}

void mirror::state::reset(const schema& types) {
    versions.clear();
    count = 0;
    stores.clear();
    stores.resize(types.size());
    for (const component_info& info : types.types()) {
        stores[info.id].is_string = info.is_string;
        stores[info.id].stride = info.value_bytes();
        stores[info.id].bits = info.value_bits();
        stores[info.id].valid = value_checker{info};
    }
}

void mirror::set_schema(schema types) {
    if (types == types_ && live_.stores.size() == types_.size()) {
        return;
    }
    types_ = std::move(types);
    live_.reset(types_);
    staging_.reset(types_);
    staging_active_ = false;
    ready_ = false;
    awaiting_resync_ = false;
    resync_reported_ = false;
}

bool mirror::has(entity_type e, std::uint32_t type) const noexcept {
    return contains(e) && type < live_.stores.size() && live_.stores[type].contains(e.index());
}

std::span<const std::byte> mirror::value(entity_type e, std::uint32_t type) const noexcept {
    if (!has(e, type) || live_.stores[type].is_string) {
        return {};
    }
    return live_.stores[type].value(e.index());
}

const std::string* mirror::text(entity_type e, std::uint32_t type) const noexcept {
    if (!has(e, type) || !live_.stores[type].is_string) {
        return nullptr;
    }
    const auto& store = live_.stores[type];
    return &store.texts[store.slot[e.index()] - 1];
}

const component_info* mirror::check_column(const wire::Column& column, std::size_t count,
                                           const char* where) {
    const component_info* info = types_.find(column.type());
    if (info == nullptr) {
        inconsistent(std::string{where} + " column of unknown component type " +
                     std::to_string(column.type()));
        return nullptr;
    }
    if (!info->replicated) {
        inconsistent(std::string{where} + " column of " + info->name +
                     ", which the schema says is not replicated");
        return nullptr;
    }
    const std::string name = std::string{where} + " column " + info->name;
    if (info->is_string) {
        const auto* strings = column.strings();
        if (column.values() != nullptr || (strings == nullptr ? 0 : strings->size()) != count) {
            inconsistent(name + " does not hold one string per entity");
            return nullptr;
        }
        if (strings == nullptr) {
            return info;  // no entity, no strings: nothing to check (and *strings is no vector)
        }
        for (const auto* text : *strings) {
            if (text->size() > info->max_bytes || !valid_utf8(text->string_view())) {
                inconsistent(name + " holds a string that is not UTF-8 of at most " +
                             std::to_string(info->max_bytes) + " bytes");
                return nullptr;
            }
        }
        return info;
    }
    const auto* values = column.values();
    const std::size_t expected = column_bytes(*info, count);
    // A column without its values vector is malformed even for no entity: callers read it.
    if (column.strings() != nullptr || values == nullptr || values->size() != expected) {
        inconsistent(name + " has " + std::to_string(values == nullptr ? 0 : values->size()) +
                     " bytes of values for " + std::to_string(count) + " entities; " +
                     std::to_string(expected) + " expected");
        return nullptr;
    }
    return info;
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
        case wire::ServerBody::InputAck:
        case wire::ServerBody::InputRejected:
            return true;
        case wire::ServerBody::NONE:
        default:
            // The verifier lets unknown union tags through on purpose (forward compatibility).
            return inconsistent("unknown server message type " +
                                std::to_string(static_cast<unsigned>(message.body_type())));
    }
}

bool mirror::apply_group(state& target, const wire::EntityGroup& group,
                         const std::function<void(entity_type)>* notify) {
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
    const auto* columns = group.columns();
    std::uint64_t seen = 0;
    if (columns != nullptr) {
        if (columns->size() > types_.size()) {
            return inconsistent("entity group has more columns than there are component types");
        }
        for (const auto* column : *columns) {
            const component_info* info = check_column(*column, count, "spawn");
            if (info == nullptr) {
                return false;
            }
            if ((seen >> info->id) & 1U) {
                return inconsistent("entity group has two columns of " + info->name);
            }
            seen |= std::uint64_t{1} << info->id;
            if (!info->is_string) {
                const auto& store = target.stores[info->id];
                value_scratch_.resize(store.stride);
                const auto bytes = std::as_bytes(std::span{column->values()->data(), column->values()->size()});
                for (std::size_t i = 0; i < count; ++i) {
                    unpack_value(store.bits, *info, bytes, i, value_scratch_);
                    if (!store.valid(value_scratch_)) {
                        std::string why;
                        (void)valid_value(*info, value_scratch_, &why);
                        return inconsistent("invalid spawn value: " + why);
                    }
                }
            }
        }
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
        for (const auto* column : *columns) {
            const component_info& info = *types_.find(column->type());
            auto& store = target.stores[info.id];
            if (info.is_string) {
                for (std::size_t i = 0; i < count; ++i) {
                    store.set_text(scratch_[i], column->strings()->Get(static_cast<flatbuffers::uoffset_t>(i))->str());
                }
            } else {
                const auto bytes = std::as_bytes(std::span{column->values()->data(), column->values()->size()});
                for (std::size_t i = 0; i < count; ++i) {
                    std::byte* out = store.set(scratch_[i]);
                    unpack_value(store.bits, info, bytes, i, std::span<std::byte>{out, store.stride});
                }
            }
        }
    }
    if (notify != nullptr && *notify) {
        for (const std::uint32_t index : scratch_) {
            (*notify)(target.find(index));
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
            if (!apply_group(staging_, *group, nullptr)) {
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
    for (std::uint32_t id = 0; id < live_.stores.size() && active_.on_update; ++id) {
        const auto& was = before.stores[id];
        const auto& is = live_.stores[id];
        for (std::size_t i = 0; i < common; ++i) {
            const auto index = static_cast<std::uint32_t>(i);
            if (live_.versions[i] == 0 || !kept(i) || !is.contains(index)) {
                continue;
            }
            if (!was.contains(index) || !is.same(index, was)) {
                active_.on_update(entity_type{index, live_.versions[i]}, id);
            }
        }
    }
    for (std::uint32_t id = 0; id < live_.stores.size() && active_.on_remove; ++id) {
        const auto& was = before.stores[id];
        const auto& is = live_.stores[id];
        for (std::size_t i = 0; i < common; ++i) {
            const auto index = static_cast<std::uint32_t>(i);
            if (live_.versions[i] == 0 || !kept(i)) {
                continue;
            }
            if (was.contains(index) && !is.contains(index)) {
                active_.on_remove(entity_type{index, live_.versions[i]}, id);
            }
        }
    }
}

bool mirror::apply_updates(const columns_type& columns) {
    for (const auto* column : columns) {
        // The values present bound the entities an 8-byte IndexRun may announce.
        const component_info* known = types_.find(column->type());
        if (known == nullptr) {
            return inconsistent("update column of unknown component type " +
                                std::to_string(column->type()));
        }
        if (!known->replicated) {
            return inconsistent("update column of " + known->name +
                                ", which the schema says is not replicated");
        }
        const std::size_t count =
            known->is_string
                ? (column->strings() == nullptr ? 0 : column->strings()->size())
                : (column->values() == nullptr || known->value_bits() == 0
                       ? 0
                       : column->values()->size() * 8 / known->value_bits());
        if (!expand_index_set(column->at(), count, scratch_)) {
            return inconsistent("update column lists more entities than it has values");
        }
        const component_info* info = check_column(*column, scratch_.size(), "update");
        if (info == nullptr) {
            return false;
        }
        auto& store = live_.stores[info->id];
        const auto bytes = info->is_string ? std::span<const std::byte>{}
                                           : std::as_bytes(std::span{column->values()->data(),
                                                                     column->values()->size()});
        value_scratch_.resize(store.stride);
        const auto invalid = [&](entity_type e, std::span<const std::byte> value) {
            std::string why;
            (void)valid_value(*info, value, &why);
            return inconsistent("invalid " + info->name + " value for " + ecs::to_string(e) +
                                ": " + why);
        };
        // Whole-byte values of the common sizes: the value's size known at compile time, so
        // each update is a fixed-size load, its checks and a fixed-size store.
        const bool notify = static_cast<bool>(active_.on_update);
        const auto apply_whole = [&]<std::size_t size>() -> bool {
            for (std::size_t i = 0; i < scratch_.size(); ++i) {
                const entity_type e = live_.find(scratch_[i]);
                if (e.is_null()) {
                    return unknown_update(*info, scratch_[i]);
                }
                const std::byte* value = bytes.data() + i * size;
                std::uint64_t word = 0;
                std::memcpy(&word, value, size);
                if (!store.valid.word_ok(word)) {
                    return invalid(e, {value, size});
                }
                std::memcpy(store.set(e.index()), value, size);
                if (notify) {
                    active_.on_update(e, info->id);
                }
            }
            return true;
        };
        if (!info->is_string && store.bits % 8 == 0 && store.stride <= 8) {
            bool ok = true;
            switch (store.stride) {
                case 1: ok = apply_whole.template operator()<1>(); break;
                case 2: ok = apply_whole.template operator()<2>(); break;
                case 4: ok = apply_whole.template operator()<4>(); break;
                case 8: ok = apply_whole.template operator()<8>(); break;
                default: ok = apply_general(*info, *column, bytes); break;
            }
            if (!ok) {
                return false;
            }
            continue;
        }
        if (!apply_general(*info, *column, bytes)) {
            return false;
        }
    }
    return true;
}

bool mirror::unknown_update(const component_info& info, std::uint32_t index) {
    return inconsistent("update of " + info.name + " for unknown entity index " +
                        std::to_string(index));
}

bool mirror::apply_general(const component_info& info, const wire::Column& column,
                           std::span<const std::byte> bytes) {
    auto& store = live_.stores[info.id];
    const bool aligned = store.bits % 8 == 0;
    for (std::size_t i = 0; i < scratch_.size(); ++i) {
        const entity_type e = live_.find(scratch_[i]);
        if (e.is_null()) {
            return unknown_update(info, scratch_[i]);
        }
        if (info.is_string) {
            store.set_text(e.index(),
                           column.strings()->Get(static_cast<flatbuffers::uoffset_t>(i))->str());
        } else {
            // Checked before it is stored: the mirror never holds an invalid value.
            std::span<const std::byte> value;
            if (aligned) {
                value = bytes.subspan(i * store.stride, store.stride);
            } else {
                unpack_value(store.bits, info, bytes, i, value_scratch_);
                value = value_scratch_;
            }
            if (!store.valid(value)) {
                std::string why;
                (void)valid_value(info, value, &why);
                return inconsistent("invalid " + info.name + " value for " + ecs::to_string(e) +
                                    ": " + why);
            }
            std::memcpy(store.set(e.index()), value.data(), store.stride);
        }
        if (active_.on_update) {
            active_.on_update(e, info.id);
        }
    }
    return true;
}

bool mirror::apply_removals(const columns_type& columns) {
    for (const auto* column : columns) {
        const component_info* info = types_.find(column->type());
        if (info == nullptr) {
            return inconsistent("removal column of unknown component type " +
                                std::to_string(column->type()));
        }
        if (!info->replicated) {
            return inconsistent("removal column of " + info->name +
                                ", which the schema says is not replicated");
        }
        if (column->values() != nullptr || column->strings() != nullptr) {
            return inconsistent("removal column " + info->name + " carries values");
        }
        if (!expand_index_set(column->at(), live_.count, scratch_)) {
            return inconsistent("removal column " + info->name + " lists more entities than exist");
        }
        auto& store = live_.stores[info->id];
        for (const std::uint32_t index : scratch_) {
            const entity_type e = live_.find(index);
            if (e.is_null() || !store.contains(index)) {
                return inconsistent("removal of " + info->name + " that entity index " +
                                    std::to_string(index) + " does not have");
            }
            store.erase(index);
            if (active_.on_remove) {
                active_.on_remove(e, info->id);
            }
        }
    }
    return true;
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
    if (delta.owner_only()) {
        return apply_owner_only(delta);
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
            forget(e);
        }
    }
    // Interest management: what came into view arrives whole, like a spawn; what went out of
    // it is forgotten, like a destroy, but is still alive on the server.
    if (const auto* left = delta.left()) {
        for (const auto* ref : *left) {
            const entity_type e = live_.find(ref->index());
            if (e.is_null() || e.version() != ref->version()) {
                return inconsistent("leave of " + std::to_string(ref->index()) + ":" +
                                    std::to_string(ref->version()) + " but the mirror has " +
                                    (e.is_null() ? std::string{"nothing"} : ecs::to_string(e)) +
                                    " there");
            }
            if (active_.on_leave) {
                active_.on_leave(e);
            }
            forget(e);
            ++stats_.left;
        }
    }
    if (const auto* spawned = delta.spawned()) {
        for (const auto* group : *spawned) {
            if (!apply_group(live_, *group, &active_.on_spawn)) {
                return false;
            }
        }
    }
    if (const auto* entered = delta.entered()) {
        for (const auto* group : *entered) {
            if (!apply_group(live_, *group, &active_.on_enter)) {
                return false;
            }
            stats_.entered += scratch_.size();
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

void mirror::forget(entity_type e) {
    for (auto& store : live_.stores) {
        if (store.contains(e.index())) {
            store.erase(e.index());
        }
    }
    live_.versions[e.index()] = 0;
    --live_.count;
}

bool mirror::apply_owner_only(const wire::Delta& delta) {
    if (delta.tick() != tick_) {
        return inconsistent("owner-only delta for tick " + std::to_string(delta.tick()) +
                            " at tick " + std::to_string(tick_));
    }
    if (delta.destroyed() != nullptr || delta.spawned() != nullptr ||
        delta.entered() != nullptr || delta.left() != nullptr) {
        return inconsistent("owner-only delta with spawns, destroys, entries or leaves");
    }
    for (const auto* list : {delta.updated(), delta.removed()}) {
        if (list == nullptr) {
            continue;
        }
        for (const auto* column : *list) {
            const component_info* info = types_.find(column->type());
            if (info != nullptr && !info->owner_only) {
                return inconsistent("owner-only delta carries " + info->name +
                                    ", which every client receives");
            }
        }
    }
    event_tick_ = delta.tick();
    if (delta.updated() != nullptr && !apply_updates(*delta.updated())) {
        return false;
    }
    return delta.removed() == nullptr || apply_removals(*delta.removed());
}

bool mirror::apply_checksum(const wire::Checksum& message) {
    if (!ready() || message.tick() != tick_) {
        return true;  // not comparable now (still joining, or resyncing)
    }
    const checksum::index_range range{message.first_index(), message.end_index()};
    if (range.first >= range.end) {
        return inconsistent("Checksum covers an empty index range");
    }
    checksum::slice_sum own;
    if (range.whole()) {
        own = {checksum(), static_cast<std::uint32_t>(live_.count)};
    } else {
        const std::size_t end = std::min<std::size_t>(range.end, live_.versions.size());
        for (std::size_t i = range.first; i < end; ++i) {
            own.hash += entity_terms(static_cast<std::uint32_t>(i));
            own.entities += live_.versions[i] != 0 ? 1 : 0;
        }
    }
    if (const auto* excluded = message.excluded()) {
        // Entities whose latest values wait for bandwidth: the server left them out too.
        // Ascending and unique, or an index would be subtracted twice.
        if (!std::is_sorted(excluded->begin(), excluded->end()) ||
            std::adjacent_find(excluded->begin(), excluded->end()) != excluded->end()) {
            return inconsistent("Checksum excludes indices out of order or twice");
        }
        for (const std::uint32_t index : *excluded) {
            if (range.contains(index) && !live_.find(index).is_null()) {
                own.hash -= entity_terms(index);
                --own.entities;
            }
        }
    }
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

std::uint64_t mirror::component_term(std::uint32_t id, std::uint32_t index) const noexcept {
    const value_store& store = live_.stores[id];
    if (!store.contains(index)) {
        return 0;
    }
    const std::uint32_t version = live_.versions[index];
    if (store.is_string) {
        const std::string& text = store.texts[store.slot[index] - 1];
        return checksum::component_term(id, index, version, std::as_bytes(std::span{text}));
    }
    return checksum::component_term(id, index, version, store.value(index));
}

std::uint64_t mirror::entity_terms(std::uint32_t index) const noexcept {
    const entity_type e = live_.find(index);
    if (e.is_null()) {
        return 0;
    }
    std::uint64_t sum = checksum::entity_term(index, e.version());
    for (std::uint32_t id = 0; id < live_.stores.size(); ++id) {
        sum += component_term(id, index);
    }
    return sum;
}

std::uint64_t mirror::checksum() const {
    std::uint64_t sum = 0;
    each([&](entity_type e) { sum += checksum::entity_term(e.index(), e.version()); });
    for (std::uint32_t id = 0; id < live_.stores.size(); ++id) {
        for (const std::uint32_t index : live_.stores[id].dense) {
            sum += component_term(id, index);
        }
    }
    return sum;
}

}  // namespace ecsnet::protocol
