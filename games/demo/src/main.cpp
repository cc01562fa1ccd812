// ecsnet-server: the engine running the demo game.
#include "ecsnet/demo/game.hpp"
#include "ecsnet/server/run.hpp"

int main(int argc, char** argv) { return ecsnet::server::run(argc, argv, ecsnet::demo::game()); }
