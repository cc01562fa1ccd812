#pragma once

// ECSNET_ECS_CHECKS turns on the checks that cost time on hot paths: iterators that detect
// structural changes to the storages they walk. They are on unless NDEBUG is defined; a build
// can force either way with -DECSNET_ECS_CHECKS=0/1. Checks that are cheap (stale entities,
// missing components, undeclared system access) are always on.
#ifndef ECSNET_ECS_CHECKS
#ifdef NDEBUG
#define ECSNET_ECS_CHECKS 0
#else
#define ECSNET_ECS_CHECKS 1
#endif
#endif

namespace ecsnet::ecs {

inline constexpr bool checks_enabled = ECSNET_ECS_CHECKS != 0;

}  // namespace ecsnet::ecs
