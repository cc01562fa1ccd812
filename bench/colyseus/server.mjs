// A Colyseus 0.18 server (WebSocket transport) with one room holding ecsnet's demo workload:
// N entities moving every tick (world.mjs), ticking and sending one patch per tick at
// ecsnet-server's tick rate. Prints "listening on 127.0.0.1:PORT room ROOM_ID" once the room
// exists and its entities move, so a runner can wait for that line.
//
// Usage: node server.mjs [--entities N] [--port P (0: a free one)] [--tick-rate HZ]
//                        [--world-half-extent E]
import { parseArgs } from "node:util";
import { Room, Server, matchMaker } from "@colyseus/core";
import { Encoder } from "@colyseus/schema";
import { WebSocketTransport } from "@colyseus/ws-transport";
import { WorldState, moveEntities, spawnEntities } from "./world.mjs";

const { values: args } = parseArgs({
  options: {
    entities: { type: "string", default: "1000" },
    port: { type: "string", default: "0" },
    "tick-rate": { type: "string", default: "30" },
    "world-half-extent": { type: "string", default: "1000" },
  },
});
const entities = Number(args.entities);
const port = Number(args.port);
const tickRate = Number(args["tick-rate"]);
const halfExtent = Number(args["world-half-extent"]);
for (const [name, value] of Object.entries({ entities, port, tickRate, halfExtent })) {
  if (!Number.isFinite(value) || value < 0) {
    console.error(`server.mjs: ${name} must be a non-negative number`);
    process.exit(2);
  }
}

// The encoder grows its buffer on the first overflow, with a warning; sized up front instead,
// as the warning advises (a full state takes about 45 B per entity).
Encoder.BUFFER_SIZE = Math.max(Encoder.BUFFER_SIZE, Math.ceil((entities * 64) / 1024) * 1024);

class WorldRoom extends Room {
  onCreate() {
    this.maxClients = 4096;
    this.autoDispose = false; // the world runs before the first client joins, as ecsnet's does
    this.state = new WorldState();
    spawnEntities(this.state, entities, halfExtent);
    // One patch per tick, sent from the tick. setPatchRate(1000 / tickRate) beside
    // setSimulationInterval means two Node intervals of 33.3 ms that fire late (integer-ms
    // timers) and drift apart: 27-29 patches/s were seen here, some empty, so Colyseus would
    // have done less work per second than ecsnet-server at 30.0 ticks/s. setFixedTimestep
    // runs tickRate steps per second on average, with a fixed dt like ecsnet's scheduler
    // (1 / tick rate), and each step broadcasts its own patch.
    const dt = 1 / tickRate;
    this.setFixedTimestep(() => {
      moveEntities(this.state, dt, halfExtent);
      this.broadcastPatch();
    }, tickRate);
    // No patch timer of its own. After the timestep: with no timestep, null arms an idle clock.
    this.patchRate = null;
  }
}

const transport = new WebSocketTransport();
const server = new Server({ transport, greet: false });
server.define("world", WorldRoom);
await server.listen(port, "127.0.0.1");
const room = await matchMaker.createRoom("world", {});
console.log(`listening on 127.0.0.1:${transport.server.address().port} room ${room.roomId}`);
