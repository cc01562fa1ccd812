#include "ecsnet/protocol/registry.hpp"

namespace ecsnet::protocol {

component_registry::component_registry() { add<Owner>(); }

void component_registry::add(component_info info, component_ops ops) {
    if (ops_.size() >= max_component_types) {
        throw std::invalid_argument("cannot register component '" + info.name + "': all " +
                                    std::to_string(max_component_types) +
                                    " component types are taken");
    }
    if (schema_.find(info.name) != nullptr) {
        throw std::invalid_argument("a component named '" + info.name + "' is registered already");
    }
    info.id = static_cast<std::uint16_t>(ops_.size());
    std::vector<component_info> types{schema_.types().begin(), schema_.types().end()};
    types.push_back(std::move(info));
    std::string why;
    auto next = schema::make(std::move(types), &why);
    if (!next) {
        throw std::invalid_argument("cannot register component: " + why);
    }
    schema_ = std::move(*next);
    ops_.push_back(ops);
}

component_value component_registry::value(const ecs::World& world, std::uint32_t id,
                                          ecs::Entity e) const {
    const component_info& type = info(id);
    component_value v;
    v.name = type.name;
    if (type.is_string) {
        v.text = std::string{ops(id).text(world, e)};
    } else {
        v.bytes.assign(type.value_bytes(), std::byte{0});
        ops(id).pack(world, e, v.bytes.data());
    }
    return v;
}

void component_registry::check_stored_name(std::string_view name, std::uint64_t type_hash) const {
    for (const stored_ops& other : stored_) {
        if (other.type.name == name) {
            throw std::invalid_argument("a component named '" + std::string{name} +
                                        "' is registered already");
        }
        if (other.type_hash == type_hash) {
            throw std::invalid_argument("component type '" + std::string{name} +
                                        "' is registered already (as '" + other.type.name + "')");
        }
    }
}

void component_registry::add_stored(stored_ops ops) {
    check_stored_name(ops.type.name, ops.type_hash);
    stored_.push_back(std::move(ops));
}

void component_registry::migrate(std::string name, stored_migration migration) {
    if (!migration) {
        throw std::invalid_argument("the migration of '" + name + "' is empty");
    }
    for (auto& [type, existing] : migrations_) {
        if (type == name) {
            existing = std::move(migration);
            return;
        }
    }
    migrations_.emplace_back(std::move(name), std::move(migration));
}

void component_registry::drop(std::string name) {
    for (auto& [type, existing] : migrations_) {
        if (type == name) {
            existing = nullptr;
            return;
        }
    }
    migrations_.emplace_back(std::move(name), nullptr);
}

const stored_ops* component_registry::find_stored(std::string_view name) const noexcept {
    for (const stored_ops& ops : stored_) {
        if (ops.type.name == name) {
            return &ops;
        }
    }
    return nullptr;
}

const stored_migration* component_registry::migration(std::string_view name) const noexcept {
    for (const auto& [type, migration] : migrations_) {
        if (type == name) {
            return &migration;
        }
    }
    return nullptr;
}

std::optional<std::uint16_t> component_registry::id_of(std::string_view name) const noexcept {
    if (const component_info* info = schema_.find(name)) {
        return info->id;
    }
    return std::nullopt;
}

}  // namespace ecsnet::protocol
