#include "ecsnet/server/persistence/world_image.hpp"

#include <xxhash.h>

#include <algorithm>

namespace ecsnet::server {

namespace {

// How a stored column goes into this game's world: its ops, and the migration when the
// layout changed (null: read as is).
struct column_plan {
    const protocol::stored_ops* ops{nullptr};  // null: dropped
    const protocol::stored_migration* migration{nullptr};
};

column_plan plan_column(const image_column& column, const protocol::component_registry& types,
                        std::vector<std::string>* migrated, std::vector<std::string>* dropped) {
    const protocol::stored_type& saved = column.type;
    const protocol::stored_migration* migration = types.migration(saved.name);
    const protocol::stored_ops* ops = types.find_stored(saved.name);
    if (ops == nullptr) {
        if (migration != nullptr && !*migration) {
            if (dropped != nullptr) {
                dropped->push_back(saved.name);
            }
            return {};
        }
        throw restore_error("the checkpoint keeps component type '" + saved.name + "' (" +
                            protocol::describe(saved) +
                            ") and this game has no such type: register it, or drop its values "
                            "with component_registry::drop(\"" + saved.name + "\")");
    }
    const std::string why = protocol::incompatibility(saved, ops->type);
    if (why.empty()) {
        return {ops, nullptr};
    }
    if (migration == nullptr || !*migration || saved.is_string || ops->type.is_string) {
        throw restore_error("component type '" + saved.name + "' changed since the checkpoint: " +
                            why +
                            (saved.is_string || ops->type.is_string
                                 ? std::string{"; a string type cannot be migrated"}
                                 : "; give a migration (component_registry::migrate(\"" +
                                       saved.name + "\", ...)) or keep the old layout"));
    }
    if (migrated != nullptr) {
        migrated->push_back(saved.name);
    }
    return {ops, migration};
}

void check_column(const world_image& image, const image_column& column) {
    const auto& slots = image.entities;
    const std::size_t n = column.indices.size();
    const std::string& name = column.type.name;
    if (column.type.is_string ? column.texts.size() != n
                              : column.values.size() != n * column.type.value_bytes()) {
        throw restore_error("component type '" + name + "': " + std::to_string(n) +
                            " entities but " +
                            std::to_string(column.type.is_string ? column.texts.size()
                                                                 : column.values.size()) +
                            (column.type.is_string ? " texts" : " value bytes"));
    }
    std::vector<bool> seen(slots.versions.size(), false);
    for (const std::uint32_t index : column.indices) {
        if (index >= slots.versions.size() || slots.alive[index] == 0) {
            throw restore_error("component type '" + name + "' has a value for entity index " +
                                std::to_string(index) + ", which is not alive");
        }
        if (seen[index]) {
            throw restore_error("component type '" + name + "' has two values for entity index " +
                                std::to_string(index));
        }
        seen[index] = true;
    }
}

}  // namespace

std::size_t world_image::alive() const noexcept {
    return static_cast<std::size_t>(std::count(entities.alive.begin(), entities.alive.end(), 1));
}

world_image capture(const ecs::World& world, const protocol::component_registry& types) {
    world_image image;
    capture(world, types, image);
    return image;
}

void capture(const ecs::World& world, const protocol::component_registry& types,
             world_image& image) {
    image.tick = world.tick();
    world.save_entities(image.entities);
    const auto& stored = types.stored();
    image.columns.resize(stored.size());
    for (std::size_t i = 0; i < stored.size(); ++i) {
        image_column& column = image.columns[i];
        column.type = stored[i].type;
        stored[i].capture(world, column.indices, column.values, column.texts);
    }
}

restore_report restore(const world_image& image, ecs::World& world,
                       const protocol::component_registry& types) {
    restore_report report;
    // Every check first: a refusal leaves the world untouched.
    if (image.entities.alive.size() != image.entities.versions.size()) {
        throw restore_error("the entity table has " + std::to_string(image.entities.versions.size()) +
                            " versions but " + std::to_string(image.entities.alive.size()) +
                            " alive flags");
    }
    std::vector<column_plan> plans;
    plans.reserve(image.columns.size());
    for (const image_column& column : image.columns) {
        check_column(image, column);
        plans.push_back(plan_column(column, types, &report.migrated, &report.dropped));
    }
    for (std::size_t i = 0; i < image.columns.size(); ++i) {
        for (std::size_t j = 0; j < i; ++j) {
            if (image.columns[i].type.name == image.columns[j].type.name) {
                throw restore_error("component type '" + image.columns[i].type.name +
                                    "' is stored twice");
            }
        }
    }
    // Migrations run before the world changes too: one that throws, or gives the wrong number
    // of fields, refuses the checkpoint.
    std::vector<std::vector<std::vector<protocol::field_value>>> migrated(image.columns.size());
    for (std::size_t c = 0; c < image.columns.size(); ++c) {
        const image_column& column = image.columns[c];
        const column_plan& plan = plans[c];
        if (plan.ops == nullptr || plan.migration == nullptr) {
            continue;
        }
        const std::size_t size = column.type.value_bytes();
        migrated[c].reserve(column.indices.size());
        for (std::size_t i = 0; i < column.indices.size(); ++i) {
            std::vector<protocol::field_value> fields;
            try {
                fields = (*plan.migration)(
                    column.type, protocol::decode_fields(column.type, {column.values.data() + i * size, size}));
            } catch (const std::exception& e) {
                throw restore_error("the migration of component type '" + column.type.name +
                                    "' refused the value of entity index " +
                                    std::to_string(column.indices[i]) + ": " + e.what());
            }
            if (fields.size() != plan.ops->type.fields.size()) {
                throw restore_error("the migration of component type '" + column.type.name + "' gave " +
                                    std::to_string(fields.size()) + " field values for " +
                                    protocol::describe(plan.ops->type));
            }
            migrated[c].push_back(std::move(fields));
        }
    }
    try {
        world.restore_entities(image.entities);
    } catch (const std::exception& e) {
        throw restore_error(e.what());
    }
    report.entities = world.alive();
    for (std::size_t c = 0; c < image.columns.size(); ++c) {
        const image_column& column = image.columns[c];
        const column_plan& plan = plans[c];
        if (plan.ops == nullptr) {
            continue;
        }
        const std::size_t size = column.type.value_bytes();
        for (std::size_t i = 0; i < column.indices.size(); ++i) {
            const std::uint32_t index = column.indices[i];
            const ecs::Entity e{index, image.entities.versions[index]};
            const std::span<const std::byte> value{column.values.data() + i * size,
                                                   column.type.is_string ? 0 : size};
            if (plan.migration != nullptr) {
                plan.ops->put_fields(world, e, migrated[c][i]);
            } else {
                plan.ops->put(world, e, value,
                              column.type.is_string ? std::string_view{column.texts[i]}
                                                    : std::string_view{});
            }
            ++report.values;
        }
    }
    return report;
}

std::uint64_t content_hash(const world_image& image) {
    // A sum of per-item hashes: the same whatever the storage order.
    std::uint64_t sum = 0;
    const auto& slots = image.entities;
    for (std::size_t i = 0; i < slots.versions.size(); ++i) {
        if (slots.alive[i] != 0) {
            const std::uint64_t item[2] = {i, slots.versions[i]};
            sum += XXH3_64bits(item, sizeof item);
        }
    }
    for (const image_column& column : image.columns) {
        const std::uint64_t type = XXH3_64bits(column.type.name.data(), column.type.name.size());
        const std::size_t size = column.type.value_bytes();
        for (std::size_t i = 0; i < column.indices.size(); ++i) {
            const std::uint32_t index = column.indices[i];
            if (index >= slots.versions.size()) {
                continue;  // not a valid image: restore() refuses it
            }
            const std::uint64_t seed = type ^ (std::uint64_t{index} << 32U | slots.versions[index]);
            sum += column.type.is_string
                       ? XXH3_64bits_withSeed(column.texts[i].data(), column.texts[i].size(), seed)
                       : XXH3_64bits_withSeed(column.values.data() + i * size, size, seed);
        }
    }
    return sum;
}

}  // namespace ecsnet::server
