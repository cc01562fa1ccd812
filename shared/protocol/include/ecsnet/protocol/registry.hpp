#pragma once

#include <any>
#include <cstddef>
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
};

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

private:
    void add(component_info info, component_ops ops);

    schema schema_;
    std::vector<component_ops> ops_;
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
        ops.encode = [](flatbuffers::FlatBufferBuilder& fbb, const ecs::World& w,
                        std::span<const ecs::Entity> entities) {
            const auto& storage = *w.find_storage<T>();
            std::vector<flatbuffers::Offset<flatbuffers::String>> strings;
            strings.reserve(entities.size());
            for (const ecs::Entity e : entities) {
                strings.push_back(fbb.CreateString(text_of(storage.get(e))));
            }
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
                    for (std::size_t i = 0; i < entities.size(); ++i) {
                        pack(storage.get(entities[i]), bytes + i * (bits / 8));
                    }
                }
            } else {
                bit_packer packer{bytes};
                for (const ecs::Entity e : entities) {
                    pack_fields(storage.get(e), packer);
                }
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
    add(describe<T>(), ops);
    return static_cast<std::uint16_t>(ops_.size() - 1);
}

}  // namespace ecsnet::protocol
