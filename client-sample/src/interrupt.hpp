#pragma once

// Ctrl-C (SIGINT) and SIGTERM for the long-running commands: `watch`, `spawn --hold` and the
// shell stop what they do and exit cleanly instead of dying mid-line.
namespace ecsnet::client_cli {

// Installs the handlers (once; later calls do nothing).
void catch_interrupts();
// True once SIGINT or SIGTERM arrived since the last clear_interrupt().
[[nodiscard]] bool interrupted() noexcept;
void clear_interrupt() noexcept;

}  // namespace ecsnet::client_cli
