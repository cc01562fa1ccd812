#pragma once

#include <algorithm>
#include <any>
#include <array>
#include <cstddef>
#include <functional>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <flatbuffers/flatbuffers.h>

#include "ecsnet/ecs/world.hpp"
#include "ecsnet/protocol/components.hpp"
#include "ecsnet/protocol/hash.hpp"
#include "ecsnet/protocol/replicated.hpp"
#include "ecsnet/protocol/schema.hpp"
#include "ecsnet/protocol/stored.hpp"

// The server's list of replicated component types: the core's Owner (wire id 0), then what
// the game added, in order. Each entry pairs the type's schema entry with the few operations
// the encoder, the checksum and the command processor need, instantiated for the type when it
// is added, so that none of them knows a game type.
namespace ecsnet::protocol {

// What the registry does with a type, without knowing it.
struct component_ops {
    std::uint64_t type_hash{};  // ecs::type_hash_v<T>
    // The storage's entities, in storage order (empty when the world has none).
    std::span<const ecs::Entity> (*entities)(const ecs::World&) noexcept = nullptr;
    bool (*contains)(const ecs::World&, ecs::Entity) noexcept = nullptr;
    // Canonical bytes of e's value into out (zeroed, value_bytes()); for a string, the text.
    void (*pack)(const ecs::World&, ecs::Entity, std::byte* out) noexcept = nullptr;
    std::string_view (*text)(const ecs::World&, ecs::Entity) noexcept = nullptr;
    // A column of the values of `entities`, in that order: [ubyte] or [string].
    flatbuffers::uoffset_t (*encode)(flatbuffers::FlatBufferBuilder&, const ecs::World&,
                                     std::span<const ecs::Entity>) = nullptr;
    // The type's own check (T::valid()) on a decoded value; `why` on refusal.
    bool (*accepts)(const component_value&, std::string* why) = nullptr;
    // Adds or replaces e's value; the value was accepted.
    void (*assign)(ecs::World&, ecs::Entity, const component_value&) = nullptr;
    void (*remove)(ecs::World&, ecs::Entity) = nullptr;
    // e's value as it is (a typed copy, not the wire's quantized one), empty when e has none;
    // restore() puts it back exactly (or removes the type when the copy is empty). Undoing a
    // command that the game's code failed half-way (command_processor).
    std::any (*save)(const ecs::World&, ecs::Entity) = nullptr;
    void (*restore)(ecs::World&, ecs::Entity, const std::any&) = nullptr;
    // The checksum terms of every value in the world (checksum.hpp); fixed-size types only.
    std::uint64_t (*checksum)(const ecs::World&, std::uint32_t wire_id) = nullptr;
    // The checksum terms of the values of `entities`, which all have the type: one typed loop,
    // where a call per value kept the CPU from overlapping their cache misses.
    std::uint64_t (*checksum_of)(const ecs::World&, std::uint32_t wire_id,
                                 std::span<const ecs::Entity> entities) = nullptr;
};

// What a checkpoint and the journal do with a kept type (stored.hpp), without knowing it.
struct stored_ops {
    std::uint64_t type_hash{};
    stored_type type;
    // Every value, in storage order: the entity indices, and the values (value_bytes() each)
    // or the texts. Replaces what the three vectors held, in the memory they hold (a checkpoint
    // reuses the previous one's vectors); the one a type does not use is left empty.
    void (*capture)(const ecs::World&, std::vector<std::uint32_t>& indices,
                    std::vector<std::byte>& values, std::vector<std::string>& texts) = nullptr;
    bool (*contains)(const ecs::World&, ecs::Entity) noexcept = nullptr;
    // e's value (e has the type) appended to `values`, or into `text`.
    void (*get)(const ecs::World&, ecs::Entity, std::vector<std::byte>& values,
                std::string& text) = nullptr;
    // Adds or replaces e's value: `value` holds value_bytes() bytes, or `text` the text.
    void (*put)(ecs::World&, ecs::Entity, std::span<const std::byte> value,
                std::string_view text) = nullptr;
    // The same from one field_value per field (a migration's result).
    void (*put_fields)(ecs::World&, ecs::Entity, std::span<const field_value>) = nullptr;
    void (*remove)(ecs::World&, ecs::Entity) = nullptr;
};

// A game's answer to a kept type it changed: the new type's field values from a value stored
// under the old layout (`saved`, as the file describes it). Throw to refuse.
using stored_migration =
    std::function<std::vector<field_value>(const stored_type& saved, std::span<const field_value> old)>;

class component_registry {
public:
    component_registry();

    // Registers T; its wire id is the number of types registered before it. Throws
    // std::invalid_argument when the name or the type is registered already, or when the
    // 64 types are taken.
    template <replicated_component T>
    std::uint16_t add();

    [[nodiscard]] const schema& types() const noexcept { return schema_; }
    [[nodiscard]] std::size_t size() const noexcept { return ops_.size(); }
    [[nodiscard]] const component_ops& ops(std::uint32_t id) const noexcept { return ops_[id]; }
    [[nodiscard]] const component_info& info(std::uint32_t id) const noexcept {
        return *schema_.find(id);
    }
    [[nodiscard]] std::optional<std::uint16_t> id_of(std::string_view name) const noexcept;
    // e's value of type `id` as the wire carries it (canonical bytes, or text); e has the type.
    [[nodiscard]] component_value value(const ecs::World& world, std::uint32_t id,
                                        ecs::Entity e) const;
    template <replicated_component T>
    [[nodiscard]] std::optional<std::uint16_t> id_of() const noexcept {
        return id_of(replicated<T>::name);
    }

    // Keeps T in checkpoints and the journal without replicating it (stored.hpp). Every
    // replicated type is kept already. Throws std::invalid_argument when the name or the type
    // is taken.
    template <persistent_component T>
    void persist();
    // How to read values of the kept type `name` that a checkpoint stored under another
    // layout (otherwise such a checkpoint is refused, naming the type).
    void migrate(std::string name, stored_migration migration);
    // Values of the kept type `name` that a checkpoint holds and the game no longer keeps are
    // dropped (otherwise such a checkpoint is refused, naming the type).
    void drop(std::string name);

    // The kept types, in registration order (the core's Owner first).
    [[nodiscard]] const std::vector<stored_ops>& stored() const noexcept { return stored_; }
    [[nodiscard]] const stored_ops* find_stored(std::string_view name) const noexcept;
    // The game's migration of `name`; an empty function when it said drop(name); null when
    // neither.
    [[nodiscard]] const stored_migration* migration(std::string_view name) const noexcept;

private:
    void add(component_info info, component_ops ops);
    void add_stored(stored_ops ops);
    // Throws std::invalid_argument when a kept type has this name or this type already.
    void check_stored_name(std::string_view name, std::uint64_t type_hash) const;
    template <typename T>
    [[nodiscard]] static stored_ops stored_ops_of(stored_type type);

    schema schema_;
    std::vector<component_ops> ops_;
    std::vector<stored_ops> stored_;
    std::vector<std::pair<std::string, stored_migration>> migrations_;
};

namespace detail {

template <typename T>
bool check_value(const T& value, std::string* why) {
    if constexpr (requires { value.valid(); }) {
        if (!value.valid()) {
            if (why != nullptr) {
                *why = "the " + std::string{replicated<T>::name} + " value is not valid";
            }
            return false;
        }
    }
    return true;
}

template <typename T>
T value_of(const component_value& value) {
    if constexpr (is_string_v<T>) {
        T out{};
        boost::pfr::get<0>(out) = value.text;
        return out;
    } else {
        return unpack<T>(value.bytes.data());
    }
}

// A storage's entity indices into `indices`, replacing what it held.
inline void capture_indices(std::span<const ecs::Entity> entities,
                            std::vector<std::uint32_t>& indices) {
    indices.resize(entities.size());
    for (std::size_t i = 0; i < entities.size(); ++i) {
        indices[i] = entities[i].index();
    }
}

// Calls f(i, value) for each entity of the column, in order. A block's places in the packed
// array are read first, then their values: each lookup is a cache miss in a large world, and
// the misses of a block then overlap instead of each value waiting for its sparse entry (a
// view's entities are scattered over the storages: its columns and its checksum read them so).
inline constexpr std::size_t gather_block = 64;
template <typename Storage, typename F>
void gather(const Storage& storage, std::span<const ecs::Entity> entities, F&& f) {
    constexpr std::size_t block = gather_block;
    std::array<std::size_t, block> at;
    const auto values = storage.values();
    for (std::size_t first = 0; first < entities.size(); first += block) {
        const std::size_t n = std::min(block, entities.size() - first);
        for (std::size_t i = 0; i < n; ++i) {
            at[i] = storage.index_of(entities[first + i]);
        }
        for (std::size_t i = 0; i < n; ++i) {
            f(first + i, values[at[i]]);
        }
    }
}

}  // namespace detail

template <replicated_component T>
std::uint16_t component_registry::add() {
    component_ops ops;
    ops.type_hash = ecs::type_hash_v<T>;
    ops.entities = [](const ecs::World& w) noexcept -> std::span<const ecs::Entity> {
        const auto* storage = w.find_storage<T>();
        return storage == nullptr ? std::span<const ecs::Entity>{} : storage->entities();
    };
    ops.contains = [](const ecs::World& w, ecs::Entity e) noexcept {
        const auto* storage = w.find_storage<T>();
        return storage != nullptr && storage->contains(e);
    };
    if constexpr (detail::is_string_v<T>) {
        ops.text = [](const ecs::World& w, ecs::Entity e) noexcept -> std::string_view {
            return text_of(w.find_storage<T>()->get(e));
        };
        ops.checksum_of = [](const ecs::World& w, std::uint32_t wire_id,
                             std::span<const ecs::Entity> entities) -> std::uint64_t {
            std::uint64_t sum = 0;
            detail::gather(*w.find_storage<T>(), entities, [&](std::size_t i, const T& value) {
                const std::string_view text = text_of(value);
                sum += checksum::component_term(wire_id, entities[i].index(), entities[i].version(),
                                                std::as_bytes(std::span{text}));
            });
            return sum;
        };
        ops.encode = [](flatbuffers::FlatBufferBuilder& fbb, const ecs::World& w,
                        std::span<const ecs::Entity> entities) {
            std::vector<flatbuffers::Offset<flatbuffers::String>> strings;
            strings.reserve(entities.size());
            detail::gather(*w.find_storage<T>(), entities, [&](std::size_t, const T& value) {
                strings.push_back(fbb.CreateString(text_of(value)));
            });
            return fbb.CreateVector(strings).o;
        };
    } else {
        ops.pack = [](const ecs::World& w, ecs::Entity e, std::byte* out) noexcept {
            pack(w.find_storage<T>()->get(e), out);
        };
        ops.encode = [](flatbuffers::FlatBufferBuilder& fbb, const ecs::World& w,
                        std::span<const ecs::Entity> entities) {
            const auto& storage = *w.find_storage<T>();
            constexpr std::size_t bits = detail::value_bits<T>();
            std::uint8_t* out = nullptr;
            const auto offset = fbb.CreateUninitializedVector(
                (entities.size() * bits + 7) / 8, sizeof(std::uint8_t), &out);
            auto* bytes = reinterpret_cast<std::byte*>(out);
            if constexpr (bits % 8 == 0) {
                // Whole-byte fields write every byte: nothing to zero first. When the column
                // lists the storage's own entities in its own order (everything moved, in a
                // world whose storage follows index order), the values are read in sequence
                // instead of looked up one by one.
                const auto dense = storage.entities();
                if (entities.size() == dense.size() &&
                    std::equal(entities.begin(), entities.end(), dense.begin())) {
                    const auto values = storage.values();
                    for (std::size_t i = 0; i < values.size(); ++i) {
                        pack(values[i], bytes + i * (bits / 8));
                    }
                } else {
                    detail::gather(storage, entities, [&](std::size_t i, const T& value) {
                        pack(value, bytes + i * (bits / 8));
                    });
                }
            } else {
                bit_packer packer{bytes};
                detail::gather(storage, entities,
                               [&](std::size_t, const T& value) { pack_fields(value, packer); });
                packer.flush();
            }
            return offset;
        };
    }
    if constexpr (!detail::is_string_v<T>) {
        ops.checksum = [](const ecs::World& w, std::uint32_t wire_id) -> std::uint64_t {
            const auto* storage = w.find_storage<T>();
            if (storage == nullptr) {
                return 0;
            }
            // Packed in blocks, hashed in one pass each: no call per value.
            constexpr std::size_t block = 4096;
            constexpr std::size_t size = value_bytes_v<T>;
            std::vector<std::byte> packed(block * size);
            const auto entities = storage->entities();
            const auto values = storage->values();
            std::uint64_t sum = 0;
            for (std::size_t first = 0; first < entities.size(); first += block) {
                const std::size_t n = std::min(block, entities.size() - first);
                std::fill_n(packed.begin(), n * size, std::byte{0});
                for (std::size_t i = 0; i < n; ++i) {
                    pack(values[first + i], packed.data() + i * size);
                }
                sum += checksum::sum_terms(wire_id, entities.subspan(first, n),
                                           std::span<const std::byte>{packed.data(), n * size},
                                           size);
            }
            return sum;
        };
        ops.checksum_of = [](const ecs::World& w, std::uint32_t wire_id,
                             std::span<const ecs::Entity> entities) -> std::uint64_t {
            const auto& storage = *w.find_storage<T>();
            constexpr std::size_t block = detail::gather_block;
            constexpr std::size_t size = value_bytes_v<T>;
            std::array<std::byte, block * size> packed;
            std::uint64_t sum = 0;
            for (std::size_t first = 0; first < entities.size(); first += block) {
                const std::size_t n = std::min(block, entities.size() - first);
                std::fill_n(packed.begin(), n * size, std::byte{0});
                detail::gather(
                    storage, entities.subspan(first, n),
                    [&](std::size_t i, const T& value) { pack(value, packed.data() + i * size); });
                sum += checksum::sum_terms(wire_id, entities.subspan(first, n),
                                           std::span<const std::byte>{packed.data(), n * size},
                                           size);
            }
            return sum;
        };
    }
    ops.accepts = [](const component_value& value, std::string* why) {
        return detail::check_value(detail::value_of<T>(value), why);
    };
    ops.assign = [](ecs::World& w, ecs::Entity e, const component_value& value) {
        w.emplace_or_replace<T>(e, detail::value_of<T>(value));
    };
    ops.remove = [](ecs::World& w, ecs::Entity e) { w.erase<T>(e); };
    ops.save = [](const ecs::World& w, ecs::Entity e) -> std::any {
        const T* value = w.try_get<T>(e);
        return value == nullptr ? std::any{} : std::any{*value};
    };
    ops.restore = [](ecs::World& w, ecs::Entity e, const std::any& saved) {
        if (const T* value = std::any_cast<T>(&saved)) {
            w.emplace_or_replace<T>(e, *value);
        } else {
            w.remove<T>(e);
        }
    };
    for (const auto& other : ops_) {
        if (other.type_hash == ops.type_hash) {
            throw std::invalid_argument("component type " + std::string{ecs::type_name_v<T>} +
                                        " is registered already");
        }
    }
    check_stored_name(replicated<T>::name, ops.type_hash);
    add(describe<T>(), ops);
    if constexpr (detail::is_string_v<T> || detail::is_marker_v<T>) {
        add_stored(stored_ops_of<T>(
            detail::stored_type_of<T>(replicated<T>::name, true, [](std::size_t) { return std::string{}; })));
    } else {
        using W = typename replicated<T>::wire_type;
        add_stored(stored_ops_of<T>(detail::stored_type_of<T>(
            replicated<T>::name, true,
            [](std::size_t i) { return std::string{W::Traits::field_names[i]}; })));
    }
    return static_cast<std::uint16_t>(ops_.size() - 1);
}

template <persistent_component T>
void component_registry::persist() {
    static_assert(std::is_default_constructible_v<T> && std::is_aggregate_v<T>,
                  "a kept type is an aggregate of scalars, or of one std::string");
    add_stored(stored_ops_of<T>(detail::stored_type_of<T>(
        persistent<T>::name, false, [](std::size_t i) { return "f" + std::to_string(i); })));
}

template <typename T>
stored_ops component_registry::stored_ops_of(stored_type type) {
    stored_ops ops;
    ops.type_hash = ecs::type_hash_v<T>;
    ops.type = std::move(type);
    ops.contains = [](const ecs::World& w, ecs::Entity e) noexcept {
        const auto* storage = w.find_storage<T>();
        return storage != nullptr && storage->contains(e);
    };
    ops.remove = [](ecs::World& w, ecs::Entity e) { w.remove<T>(e); };
    if constexpr (detail::is_stored_string<T>()) {
        ops.capture = [](const ecs::World& w, std::vector<std::uint32_t>& indices,
                         std::vector<std::byte>& values, std::vector<std::string>& texts) {
            values.clear();
            const auto* storage = w.find_storage<T>();
            if (storage == nullptr) {
                indices.clear();
                texts.clear();
                return;
            }
            detail::capture_indices(storage->entities(), indices);
            const auto stored = storage->values();
            texts.resize(stored.size());
            for (std::size_t i = 0; i < stored.size(); ++i) {
                texts[i] = boost::pfr::get<0>(stored[i]);  // in the string's buffer when it fits
            }
        };
        ops.get = [](const ecs::World& w, ecs::Entity e, std::vector<std::byte>&, std::string& text) {
            text = boost::pfr::get<0>(w.find_storage<T>()->get(e));
        };
        ops.put = [](ecs::World& w, ecs::Entity e, std::span<const std::byte>, std::string_view text) {
            T value{};
            boost::pfr::get<0>(value) = std::string{text};
            w.emplace_or_replace<T>(e, std::move(value));
        };
        ops.put_fields = [](ecs::World&, ecs::Entity, std::span<const field_value>) {
            throw std::invalid_argument("a string type has no fields to migrate");
        };
    } else {
        ops.capture = [](const ecs::World& w, std::vector<std::uint32_t>& indices,
                         std::vector<std::byte>& values, std::vector<std::string>& texts) {
            texts.clear();
            const auto* storage = w.find_storage<T>();
            if (storage == nullptr) {
                indices.clear();
                values.clear();
                return;
            }
            constexpr std::size_t size = detail::stored_value_bytes<T>();
            detail::capture_indices(storage->entities(), indices);
            const auto stored = storage->values();
            values.resize(stored.size() * size);
            std::byte* out = values.data();
            for (const T& value : stored) {
                detail::stored_pack(value, out);
                out += size;
            }
        };
        ops.get = [](const ecs::World& w, ecs::Entity e, std::vector<std::byte>& values, std::string&) {
            constexpr std::size_t size = detail::stored_value_bytes<T>();
            const std::size_t first = values.size();
            values.resize(first + size);
            detail::stored_pack(w.find_storage<T>()->get(e), values.data() + first);
        };
        ops.put = [](ecs::World& w, ecs::Entity e, std::span<const std::byte> value, std::string_view) {
            w.emplace_or_replace<T>(e, detail::stored_unpack<T>(value.data()));
        };
        ops.put_fields = [](ecs::World& w, ecs::Entity e, std::span<const field_value> values) {
            if (values.size() != boost::pfr::tuple_size_v<T>) {
                throw std::invalid_argument("the migration gave " + std::to_string(values.size()) +
                                            " field values for " +
                                            std::to_string(boost::pfr::tuple_size_v<T>) + " fields");
            }
            w.emplace_or_replace<T>(e, detail::from_field_values<T>(values));
        };
    }
    return ops;
}

}  // namespace ecsnet::protocol
