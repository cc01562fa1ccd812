// arena-server: the engine running the arena game (docs/ARENA.md).
#include "ecsnet/arena/game.hpp"
#include "ecsnet/server/run.hpp"

int main(int argc, char** argv) {
    ecsnet::server::game arena = ecsnet::arena::game();
    // Its browser page (games/arena/web), built beside the binary: served on --ws-port.
    arena.web_app = "arena";
    return ecsnet::server::run(argc, argv, arena);
}
