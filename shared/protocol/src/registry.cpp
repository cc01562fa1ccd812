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

std::optional<std::uint16_t> component_registry::id_of(std::string_view name) const noexcept {
    if (const component_info* info = schema_.find(name)) {
        return info->id;
    }
    return std::nullopt;
}

}  // namespace ecsnet::protocol
