#pragma once

#include <stdexcept>
#include <string>

namespace ecsnet::ecs {

// Every failure of the ECS core is one of these types, so callers can catch exactly what they
// can recover from. Messages name the entity ("5:2") and the component type.
class error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The entity is null, was destroyed, or its slot now holds a newer version.
class invalid_entity : public error {
public:
    using error::error;
};

// A handle outlived its world.
class expired_world : public error {
public:
    using error::error;
};

class component_missing : public error {
public:
    using error::error;
};

class component_exists : public error {
public:
    using error::error;
};

// No index is left to hand out (every index is alive, waiting for reuse or retired).
class capacity_exhausted : public error {
public:
    using error::error;
};

// A system touched a component type it did not declare.
class access_violation : public error {
public:
    using error::error;
};

// A storage changed structurally (emplace/remove/destroy) while a view was iterating it.
class iteration_invalidated : public error {
public:
    using error::error;
};

}  // namespace ecsnet::ecs
