#pragma once

#include <cstdio>

#include "ecsnet/server/config.hpp"

namespace ecsnet::server {

// `ecsnet-server inspect-state DIR`: prints what a state dir holds (docs/PERSISTENCE.md), each
// checkpoint (valid or why not) and each journal segment (a torn tail included); with
// request.json, the newest valid checkpoint (or request.tick) as JSON instead. Reads only:
// safe beside a running server. Writes to `out`, or request.output; problems go to `err`.
// Returns 0; 1 when the dir, the checkpoint or any valid one is missing, or the output cannot
// be written; 2 on a usage error.
int inspect_state(const inspect_state_request& request, std::FILE* out, std::FILE* err);

}  // namespace ecsnet::server
