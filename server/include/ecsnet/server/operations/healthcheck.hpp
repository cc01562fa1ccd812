#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace ecsnet::server {

// Exit code for `ecsnet-server --healthcheck`: GET http://host:port/healthz of the admin
// endpoint; 0 on 200, else 1, within `budget`. It never connects to the game port, so it takes
// no player slot and works on a full server. `why` is the answer's text, or what failed.
[[nodiscard]] int run_healthcheck(const std::string& host, std::uint16_t port,
                                  std::chrono::milliseconds budget, std::string& why);

}  // namespace ecsnet::server
