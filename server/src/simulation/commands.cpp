#include "ecsnet/server/simulation/commands.hpp"

#include <algorithm>
#include <string>
#include <utility>
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
    // The owner index follows the Owner component, however the entity ends (command,
    // lifetime system, disconnect) or changes hands (a game may replace Owner).
    construct_connection_ = world_.on_construct<Owner>().connect(
        [this](ecs::World& w, ecs::Entity e) { own(e, w.get<Owner>(e).client); });
    update_connection_ = world_.on_update<Owner>().connect([this](ecs::World& w, ecs::Entity e) {
        disown(e);
        own(e, w.get<Owner>(e).client);
    });
    // on_destroy runs before the entity goes, and a later listener may still throw and keep
    // it whole: settle() owns again what survived.
    destroy_connection_ = world_.on_destroy<Owner>().connect([this](ecs::World&, ecs::Entity e) {
        disown(e);
        survivors_.push_back(e);
    });
}

void command_processor::settle() {
    for (const ecs::Entity e : survivors_) {
        if (const Owner* owner = world_.valid(e) ? world_.try_get<Owner>(e) : nullptr) {
            own(e, owner->client);
        }
    }
    survivors_.clear();
}

command_processor::~command_processor() {
    world_.on_construct<Owner>().disconnect(construct_connection_);
    world_.on_update<Owner>().disconnect(update_connection_);
    world_.on_destroy<Owner>().disconnect(destroy_connection_);
}

void command_processor::own(ecs::Entity e, std::uint32_t client) {
    if (owner_of_.size() <= e.index()) {
        owner_of_.resize(std::max<std::size_t>(e.index() + 1, owner_of_.size() * 2), 0);
    }
    owner_of_[e.index()] = std::uint64_t{client} + 1;
    owned_[client].insert(e.index());
}

void command_processor::disown(ecs::Entity e) {
    if (e.index() >= owner_of_.size() || owner_of_[e.index()] == 0) {
        return;
    }
    const auto client = static_cast<std::uint32_t>(std::exchange(owner_of_[e.index()], 0) - 1);
    const auto it = owned_.find(client);
    if (it == owned_.end()) {
        return;
    }
    it->second.erase(e.index());
    if (it->second.empty()) {
        owned_.erase(it);
        if (on_last_entity_gone) {
            on_last_entity_gone(client);
        }
    }
}

std::size_t command_processor::owned_by(std::uint32_t client) const noexcept {
    const auto it = owned_.find(client);
    return it == owned_.end() ? 0 : it->second.size();
}

command_result command_processor::apply(std::uint32_t client,
                                        const protocol::client_message& message) {
    created_ = {};
    target_ = {};
    saved_.clear();
    current_type_.clear();
    command_result result;
    try {
        result = dispatch(client, message);
    } catch (const std::exception& e) {
        result = game_failed(message, e.what());
    } catch (...) {
        result = game_failed(message, "an exception that is not a std::exception");
    }
    settle();
    ++(result.ok ? counters_.applied : counters_.rejected);
    return result;
}

command_result command_processor::game_failed(const protocol::client_message& message,
                                              std::string what) {
    failure_ = game_failure{current_type_, std::move(what), true};
    undo();
    ++counters_.game_failures;
    std::uint32_t request_id = 0;
    std::visit(
        [&](const auto& m) {
            if constexpr (requires { m.request_id; }) {
                request_id = m.request_id;
            }
        },
        message);
    // A Spawn's entity is named only if it remains (its undo failed).
    const ecs::Entity entity =
        created_.is_null() ? target_ : (world_.valid(created_) ? created_ : ecs::Entity{});
    std::string text = "the game refused it: " + failure_.what;
    if (!failure_.component.empty()) {
        text += " (component " + failure_.component + ")";
    }
    if (!failure_.undone) {
        text += "; undoing it failed too, part of it may remain";
    }
    return reject(request_id, ErrorCode::GameFailed, std::move(text), entity);
}

void command_processor::undo() noexcept {
    // Each step alone: one that throws does not stop the others.
    const auto attempt = [this](auto&& step) {
        try {
            step();
        } catch (...) {
            failure_.undone = false;
        }
    };
    if (!created_.is_null()) {
        attempt([&] { world_.try_destroy(created_); });
        failure_.undone = failure_.undone && !world_.valid(created_);
    }
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
        attempt([&] {
            if (world_.valid(target_)) {
                types_.ops(it->type).restore(world_, target_, it->value);
            }
        });
    }
    if (!failure_.undone) {
        ++counters_.undo_failures;
    }
}

command_result command_processor::dispatch(std::uint32_t client,
                                           const protocol::client_message& message) {
    return std::visit(
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
}

std::optional<command_result> command_processor::check_values(
    std::uint32_t request_id, const protocol::component_set& values) {
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
        current_type_ = v.name;  // valid() is the game's code
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
    // Owner first: the game's on_construct listeners see who spawned it, and an entity that
    // an undo could not destroy still belongs to its sender.
    const ecs::Entity e = world_.create();
    created_ = e;
    current_type_ = protocol::replicated<Owner>::name;
    world_.emplace<Owner>(e, client);
    for (const protocol::component_value& v : command.components.values()) {
        current_type_ = v.name;
        types_.ops(*types_.id_of(v.name)).assign(world_, e, v);
    }
    return accept(command.request_id, e);
}

command_result command_processor::destroy(std::uint32_t client,
                                          const protocol::destroy& command) {
    if (auto rejected = check_target(client, command.request_id, command.entity, true)) {
        return std::move(*rejected);
    }
    target_ = command.entity;  // a throwing on_destroy listener leaves it whole
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
    target_ = command.entity;
    for (const protocol::component_value& v : command.components.values()) {
        const std::uint16_t id = *types_.id_of(v.name);
        saved_.push_back(saved_value{id, types_.ops(id).save(world_, command.entity)});
        current_type_ = v.name;
        types_.ops(id).assign(world_, command.entity, v);
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
    target_ = command.entity;
    for (const std::uint16_t id : ids) {
        saved_.push_back(saved_value{id, types_.ops(id).save(world_, command.entity)});
        current_type_ = types_.info(id).name;
        types_.ops(id).remove(world_, command.entity);
    }
    return accept(command.request_id, command.entity);
}

std::size_t command_processor::despawn_all_of(std::uint32_t client, std::size_t* failed,
                                             std::string* what) {
    const auto it = owned_.find(client);
    if (it == owned_.end()) {
        return 0;
    }
    // Copied first: each destroy edits the index (and the last one erases the owner's entry).
    std::vector<ecs::Entity> doomed;
    doomed.reserve(it->second.size());
    for (const std::uint32_t index : it->second) {
        doomed.push_back(world_.current(index));
    }
    std::size_t destroyed = 0;
    for (const ecs::Entity e : doomed) {
        try {
            destroyed += world_.try_destroy(e) ? 1 : 0;
        } catch (const std::exception& ex) {
            if (failed != nullptr) {
                ++*failed;
            }
            if (what != nullptr) {
                *what = ex.what();
            }
        }
    }
    settle();
    return destroyed;
}

}  // namespace ecsnet::server
