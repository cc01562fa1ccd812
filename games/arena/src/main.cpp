// arena-server: the engine running the arena game (docs/ARENA.md).
#include "ecsnet/arena/game.hpp"
#include "ecsnet/server/run.hpp"

int main(int argc, char** argv) { return ecsnet::server::run(argc, argv, ecsnet::arena::game()); }
