#pragma once

// ECSNET_ECS_CHECKS turns on the checks that cost time on hot paths: iterators that detect
// structural changes to the storages they walk, and the presence checks of world.get and
// view.get (EnTT's split: at() and try_get() are the checked forms). They are on unless
// NDEBUG is defined; a build can force either way with -DECSNET_ECS_CHECKS=0/1. The other
// checks (stale entities and missing components in at, try_get, handles and every write;
// undeclared system access) are always on.
#ifndef ECSNET_ECS_CHECKS
#ifdef NDEBUG
#define ECSNET_ECS_CHECKS 0
#else
#define ECSNET_ECS_CHECKS 1
#endif
#endif

// ECSNET_ECS_INLINE marks the few tiny functions on the per-entity hot paths (sparse lookups,
// write marks, checks). In a large translation unit g++ stops inlining once the unit has grown
// by a set fraction, and these then become calls in the middle of iteration loops.
#if defined(__GNUC__) || defined(__clang__)
#define ECSNET_ECS_INLINE [[gnu::always_inline]] inline
#else
#define ECSNET_ECS_INLINE inline
#endif

namespace ecsnet::ecs {

inline constexpr bool checks_enabled = ECSNET_ECS_CHECKS != 0;

}  // namespace ecsnet::ecs
