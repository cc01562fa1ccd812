#pragma once

#include <boost/asio/io_context.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/protocol/replication.hpp"
#include "ecsnet/server/config.hpp"
#include "ecsnet/server/operations/logging.hpp"
#include "ecsnet/server/operations/metrics.hpp"

namespace ecsnet::server {

class session;

// What a session asks of the server it belongs to, and all it sees of it: the server
// implements it (privately: nothing else calls these). The calls a session makes on its own
// I/O thread read shared, thread-safe state; the world-thread ones are posted there by the
// session, holding it (docs/SERVER.md, "Threads").
class session_host {
public:
    // ---- any thread ----------------------------------------------------------------------
    [[nodiscard]] virtual const server_config& config() const noexcept = 0;
    [[nodiscard]] virtual const protocol::component_registry& types() const noexcept = 0;
    // Size of the last snapshot sent: the bound of a session's droppable queue.
    [[nodiscard]] virtual std::size_t snapshot_bytes() const noexcept = 0;
    // The last tick run, for Pongs.
    [[nodiscard]] virtual std::uint64_t ticks_done() const noexcept = 0;
    [[nodiscard]] virtual session_counters& counters() noexcept = 0;
    // Clients' bad frames and resyncs go through client_warnings(); joins, leaves and
    // refusals through connection_lines(): past their rates they are counted and summed up in
    // the stats line, and never hide the game's failures or the server's own warnings.
    [[nodiscard]] virtual log_limiter& client_warnings() noexcept = 0;
    [[nodiscard]] virtual log_limiter& connection_lines() noexcept = 0;
    // The world thread's context, where the calls below are posted.
    [[nodiscard]] virtual boost::asio::io_context& world_context() noexcept = 0;

    // ---- posted to the world thread ------------------------------------------------------
    virtual void hello(const std::shared_ptr<session>& s, const protocol::hello& message) = 0;
    virtual void queue_command(const std::shared_ptr<session>& s, protocol::client_message message) = 0;
    // A reply decided on the session's thread (a command refused at decoding or by the rate
    // limit): it waits behind the session's commands queued for the tick (result order).
    virtual void queue_result(const std::shared_ptr<session>& s, protocol::command_result result) = 0;
    virtual void resync(const std::shared_ptr<session>& s) = 0;
    virtual void set_focus(session& s, const protocol::focus& focus) = 0;
    virtual void queue_input(const std::shared_ptr<session>& s, protocol::input input) = 0;
    virtual void closed(session& s, const std::string& reason) = 0;
    // The session has flushed and closed its socket: the last call it makes.
    virtual void finished() = 0;

protected:
    session_host() = default;
    session_host(const session_host&) = default;
    session_host& operator=(const session_host&) = default;
    ~session_host() = default;
};

}  // namespace ecsnet::server
