#pragma once

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "ecsnet/protocol/frame.hpp"
#include "ecsnet/protocol/schema.hpp"

// Where a client connects and who it is: shared by the blocking connection (connection.hpp) and
// the game's session (session.hpp), without the sockets.
namespace ecsnet::client {

using namespace std::chrono_literals;

class client_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct connect_options {
    std::string host = "127.0.0.1";
    std::uint16_t port = 7777;
    std::string name = "ecsnet-client";
    std::string token;          // the shared --auth-token, when the server has one
    std::string connect_token;  // a connect token (JWT) from the game's backend; admits once
    // The key an earlier Welcome gave this owner (welcome().resume_key), in both identity
    // modes: a reconnect with it needs no new connect token. Empty: a new owner (development)
    // or the connect token's player.
    std::vector<std::uint8_t> resume_key;
    std::chrono::milliseconds timeout = 5000ms;  // connect + handshake + snapshot
    std::size_t max_frame_bytes = protocol::default_max_server_frame;
    bool join = true;                            // send Hello and wait for the snapshot
    // The protocol version Hello names (oldest_protocol_version to protocol_version): an older
    // one speaks as an older client would (below 6, every Input full; a comparison, a test).
    std::uint32_t protocol_version = protocol::protocol_version;
    // TLS, verifying the server's certificate chain and its name (`host`) by default.
    bool tls = false;
    std::string ca_file;  // PEM; empty: the system's trusted certificates
    // WebSocket (the server's --ws-port, `port` then names it): each frame one binary message.
    // With `tls` it is wss. ws_path is the request target of the upgrade.
    bool websocket = false;
    std::string ws_path = "/";
    // Optional, to fail early: component types this program was compiled with
    // (protocol::describe<T>()), checked against the server's at Welcome, so that a type the
    // server changed (a field reordered, retyped, requantized) refuses the connection before
    // anything runs. Not needed to be safe: every typed access (mirror().get<T>, a
    // component_set::set<T> sent) checks its type on first use and throws
    // protocol::schema_mismatch instead of misreading. Types the server lacks are fine
    // (nothing arrives); fields and types it added are ignored.
    std::vector<protocol::component_info> expected_types;
};

}  // namespace ecsnet::client
