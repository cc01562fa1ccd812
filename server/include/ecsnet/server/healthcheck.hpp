#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace ecsnet::server {

// Exit code for `ecsnet-server --healthcheck`: 0 when a server answers Ping on host:port and
// its tick advances within `budget`, else 1. It does not join, so it costs the server no
// snapshot. `why` says what failed.
[[nodiscard]] int run_healthcheck(const std::string& host, std::uint16_t port,
                                  std::chrono::milliseconds budget, std::string& why);

}  // namespace ecsnet::server
