#include "ecsnet/server/commands.hpp"

#include <string>
#include <vector>

namespace ecsnet::server {

using protocol::command_result;
using protocol::Owner;
using wire::ErrorCode;

namespace {

command_result reject(std::uint32_t request_id, ErrorCode code, std::string message,
                      ecs::Entity entity = {}) {
    return command_result{request_id, false, code, std::move(message), entity};
}

command_result accept(std::uint32_t request_id, ecs::Entity entity) {
    return command_result{request_id, true, ErrorCode::None, {}, entity};
}

}  // namespace

command_processor::command_processor(ecs::World& world, const protocol::component_registry& types,
                                     command_limits limits)
    : world_{world}, types_{types}, limits_{limits} {
    // Ownership counts follow the Owner component, however the entity ends (command,
    // lifetime system, disconnect).
    construct_connection_ = world_.on_construct<Owner>().connect(
        [this](ecs::World& w, ecs::Entity e) { ++owned_[w.get<Owner>(e).client]; });
    destroy_connection_ = world_.on_destroy<Owner>().connect([this](ecs::World& w, ecs::Entity e) {
        const std::uint32_t client = w.get<Owner>(e).client;
        const auto it = owned_.find(client);
        if (it != owned_.end() && --it->second == 0) {
            owned_.erase(it);
            if (on_last_entity_gone) {
                on_last_entity_gone(client);
            }
        }
    });
}

command_processor::~command_processor() {
    world_.on_construct<Owner>().disconnect(construct_connection_);
    world_.on_destroy<Owner>().disconnect(destroy_connection_);
}

std::size_t command_processor::owned_by(std::uint32_t client) const noexcept {
    const auto it = owned_.find(client);
    return it == owned_.end() ? 0 : it->second;
}

command_result command_processor::apply(std::uint32_t client,
                                        const protocol::client_message& message) {
    command_result result = std::visit(
        [&](const auto& m) -> command_result {
            using M = std::decay_t<decltype(m)>;
            if constexpr (std::is_same_v<M, protocol::spawn>) {
                return spawn(client, m);
            } else if constexpr (std::is_same_v<M, protocol::destroy>) {
                return destroy(client, m);
            } else if constexpr (std::is_same_v<M, protocol::set_components>) {
                return set(client, m);
            } else if constexpr (std::is_same_v<M, protocol::remove_components>) {
                return remove(client, m);
            } else {
                return reject(0, ErrorCode::Malformed, "not a command");
            }
        },
        message);
    ++(result.ok ? counters_.applied : counters_.rejected);
    return result;
}

std::optional<command_result> command_processor::check_values(
    std::uint32_t request_id, const protocol::component_set& values) const {
    for (const protocol::component_value& v : values.values()) {
        const auto id = types_.id_of(v.name);
        if (!id) {
            return reject(request_id, ErrorCode::Malformed, "unknown component " + v.name);
        }
        // The decoder refuses these too; checked again here because the processor is the
        // authority, whatever built the command (and a client-given Owner would be emplaced
        // twice on spawn).
        if (types_.info(*id).written_by == protocol::writer::server) {
            return reject(request_id, ErrorCode::InvalidValue,
                          v.name + " is set by the server only");
        }
        std::string why;
        if (!types_.ops(*id).accepts(v, &why)) {
            return reject(request_id, ErrorCode::InvalidValue, why);
        }
    }
    return std::nullopt;
}

bool command_processor::anyone_may_write(const protocol::component_set& values) const noexcept {
    for (const protocol::component_value& v : values.values()) {
        const auto id = types_.id_of(v.name);
        if (!id || types_.info(*id).written_by != protocol::writer::any) {
            return false;
        }
    }
    return !values.empty();
}

std::optional<command_result> command_processor::check_target(std::uint32_t client,
                                                              std::uint32_t request_id,
                                                              ecs::Entity target,
                                                              bool owner_required) const {
    const ecs::Entity current = world_.current(target.index());
    if (current.is_null()) {
        return reject(request_id, ErrorCode::UnknownEntity,
                      "entity " + ecs::to_string(target) + " does not exist", target);
    }
    if (current.version() != target.version()) {
        return reject(request_id, ErrorCode::StaleVersion,
                      "entity " + std::to_string(target.index()) + " is at version " +
                          std::to_string(current.version()) + ", not " +
                          std::to_string(target.version()) + " (stale handle)",
                      target);
    }
    const Owner* owner = world_.try_get<Owner>(current);
    if (!owner_required) {
        return std::nullopt;
    }
    if (owner == nullptr || owner->client != client) {
        return reject(request_id, ErrorCode::NotOwner,
                      "entity " + ecs::to_string(target) + " belongs to " +
                          (owner == nullptr ? std::string{"the server"}
                                            : "client " + std::to_string(owner->client)),
                      target);
    }
    return std::nullopt;
}

command_result command_processor::spawn(std::uint32_t client, const protocol::spawn& command) {
    if (world_.alive() >= limits_.max_entities) {
        return reject(command.request_id, ErrorCode::WorldFull,
                      "the world holds " + std::to_string(world_.alive()) +
                          " entities, its limit");
    }
    if (owned_by(client) >= limits_.max_entities_per_client) {
        return reject(command.request_id, ErrorCode::EntityQuota,
                      "client " + std::to_string(client) + " already owns " +
                          std::to_string(owned_by(client)) + " entities, its limit");
    }
    if (auto rejected = check_values(command.request_id, command.components)) {
        return std::move(*rejected);
    }
    const ecs::Entity e = world_.create();
    for (const protocol::component_value& v : command.components.values()) {
        types_.ops(*types_.id_of(v.name)).assign(world_, e, v);
    }
    world_.emplace<Owner>(e, client);
    return accept(command.request_id, e);
}

command_result command_processor::destroy(std::uint32_t client,
                                          const protocol::destroy& command) {
    if (auto rejected = check_target(client, command.request_id, command.entity, true)) {
        return std::move(*rejected);
    }
    world_.destroy(command.entity);
    return accept(command.request_id, command.entity);
}

command_result command_processor::set(std::uint32_t client,
                                      const protocol::set_components& command) {
    if (auto rejected = check_target(client, command.request_id, command.entity,
                                     !anyone_may_write(command.components))) {
        return std::move(*rejected);
    }
    if (auto rejected = check_values(command.request_id, command.components)) {
        return std::move(*rejected);
    }
    for (const protocol::component_value& v : command.components.values()) {
        types_.ops(*types_.id_of(v.name)).assign(world_, command.entity, v);
    }
    return accept(command.request_id, command.entity);
}

command_result command_processor::remove(std::uint32_t client,
                                         const protocol::remove_components& command) {
    bool anyone = !command.types.empty();
    std::vector<std::uint16_t> ids;
    for (const std::string& name : command.types) {
        const auto id = types_.id_of(name);
        if (!id) {
            return reject(command.request_id, ErrorCode::Malformed, "unknown component " + name);
        }
        if (types_.info(*id).written_by == protocol::writer::server) {
            return reject(command.request_id, ErrorCode::InvalidValue,
                          name + " is set by the server only");
        }
        ids.push_back(*id);
        anyone = anyone && types_.info(*id).written_by == protocol::writer::any;
    }
    if (auto rejected = check_target(client, command.request_id, command.entity, !anyone)) {
        return std::move(*rejected);
    }
    for (const std::uint16_t id : ids) {
        if (!types_.ops(id).contains(world_, command.entity)) {  // all or nothing
            return reject(command.request_id, ErrorCode::ComponentMissing,
                          "entity " + ecs::to_string(command.entity) + " has no " +
                              types_.info(id).name,
                          command.entity);
        }
    }
    for (const std::uint16_t id : ids) {
        types_.ops(id).remove(world_, command.entity);
    }
    return accept(command.request_id, command.entity);
}

std::size_t command_processor::despawn_all_of(std::uint32_t client) {
    std::vector<ecs::Entity> doomed;
    world_.view<const Owner>().each([&](ecs::Entity e, const Owner& owner) {
        if (owner.client == client) {
            doomed.push_back(e);
        }
    });
    for (const ecs::Entity e : doomed) {
        world_.destroy(e);
    }
    return doomed.size();
}

}  // namespace ecsnet::server
