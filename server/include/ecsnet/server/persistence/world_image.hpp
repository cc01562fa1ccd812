#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "ecsnet/ecs/world.hpp"
#include "ecsnet/protocol/registry.hpp"
#include "ecsnet/protocol/stored.hpp"
#include "ecsnet/server/admission/owners.hpp"
#include "ecsnet/server/admission/replay_cache.hpp"

// A world copied out for a checkpoint: plain vectors, no game type, nothing shared with the
// world, so a thread other than the world's can encode and write it while the world ticks on.
// capture() is the part that must run while the world stands still: between two ticks, on the
// persistence copier thread (docs/PERSISTENCE.md).
namespace ecsnet::server {

// One kept type's values: entity indices in storage order, then the values in the same order
// (value_bytes() each) or texts.
struct image_column {
    protocol::stored_type type;
    std::vector<std::uint32_t> indices;
    std::vector<std::byte> values;
    std::vector<std::string> texts;
};

struct world_image {
    std::uint64_t tick{0};        // the tick the world was copied after
    std::string game;             // the game's name (game::name), for inspect-state
    std::int64_t unix_ms{0};      // wall clock at capture
    ecs::basic_entity_pool<ecs::default_entity_traits>::state entities;
    std::vector<image_column> columns;  // one per kept type, in the registry's order
    std::vector<stored_owner> owners;   // by id
    std::uint32_t next_owner{1};        // the owner registry's next id to try
    std::vector<replay_cache::entry> tokens;  // admitted connect tokens, unexpired at capture

    [[nodiscard]] std::size_t alive() const noexcept;
};

// Copies the world's entities and every kept type's values (owners are the server's to add).
[[nodiscard]] world_image capture(const ecs::World& world,
                                  const protocol::component_registry& types);
// The same into `image`, in the memory its vectors already hold (a previous capture's): the
// copy then writes into pages the process has. Sets tick, entities and columns only.
void capture(const ecs::World& world, const protocol::component_registry& types,
             world_image& image);

// What restore() did, for the log.
struct restore_report {
    std::size_t entities{0};
    std::size_t values{0};
    std::vector<std::string> migrated;  // types read through the game's migration
    std::vector<std::string> dropped;   // stored types the game no longer has (values dropped)
};

// Why a checkpoint cannot be restored into this game's world: an incompatible type (changed
// layout, no migration) or an inconsistent image. The message names the type.
class restore_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Puts the image into `world`, which never had an entity: ids exactly as they were, then every
// value of every type the game keeps (a changed layout goes through the game's migration, or
// is refused). A type in the image the game no longer keeps is refused too, unless the game
// said to drop it (component_registry::drop). Checks everything before touching the world:
// throws restore_error (and leaves the world untouched) naming the type or the inconsistency.
// Values go in through emplace: listeners run (the command processor's owner index follows
// Owner).
restore_report restore(const world_image& image, ecs::World& world,
                       const protocol::component_registry& types);

// The image's checksum over entities and kept values, independent of storage order: two
// images of the same world agree (inspect-state, crash tests).
[[nodiscard]] std::uint64_t content_hash(const world_image& image);

}  // namespace ecsnet::server
