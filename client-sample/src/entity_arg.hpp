#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "ecsnet/ecs/entity.hpp"

// Entities on the command line are written "index:version", as the server and the docs print
// them (e.g. 5:1).
namespace ecsnet::client_cli {

// The entity `text` names, or null with `why` set to a message that quotes the text and says
// what is wrong with it.
[[nodiscard]] std::optional<ecs::Entity> parse_entity(std::string_view text, std::string* why);

}  // namespace ecsnet::client_cli
