#pragma once

// The whole ECS core. Each header holds one concept; include only what you use if you prefer.
#include "ecsnet/ecs/access.hpp"          // component_access: what a system reads and writes
#include "ecsnet/ecs/change_set.hpp"      // per-tick net changes, for replication
#include "ecsnet/ecs/command_buffer.hpp"  // structural changes deferred to a sync point
#include "ecsnet/ecs/entity.hpp"          // Entity: index + version
#include "ecsnet/ecs/entity_pool.hpp"     // id allocation, FIFO recycling, retirement
#include "ecsnet/ecs/error.hpp"           // typed errors
#include "ecsnet/ecs/handle.hpp"          // Handle: weak_ptr<World> + Entity
#include "ecsnet/ecs/scheduler.hpp"       // systems, ticks, sync points
#include "ecsnet/ecs/signal.hpp"          // on_construct / on_update / on_destroy
#include "ecsnet/ecs/signature.hpp"       // per-entity component bitsets
#include "ecsnet/ecs/sparse_set.hpp"      // paged sparse set
#include "ecsnet/ecs/storage.hpp"         // per-type component storage
#include "ecsnet/ecs/view.hpp"            // view<A, B>(exclude<C>)
#include "ecsnet/ecs/world.hpp"           // World: the entity manager
