// The Colyseus side of ecsnet-loadgen: K clients of the Colyseus SDK join the room of server.mjs,
// each keeping a full mirror of the state (the SDK decodes every patch; no rootSchema given, so
// it decodes from the handshake's reflection, as ecsnet's clients decode from Welcome). It waits
// until every mirror holds N entities, warms up, then measures over a window: bytes received
// per client (every WebSocket message, plus its frame header: what the TCP socket carried),
// state patches received, and the server process's CPU from /proc/PID/stat, as ecsnet-loadgen
// does. Prints a few lines and one JSON line whose field names follow ecsnet-loadgen's.
// Exit code 1 if a client's mirror does not hold N entities or did not move.
//
// Usage: node clients.mjs --port P --room ROOM_ID --entities N --clients K
//                         [--server-pid PID] [--warmup S] [--window S] [--label L]
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { Client } from "@colyseus/sdk";

const { values: args } = parseArgs({
  options: {
    port: { type: "string" },
    room: { type: "string" },
    entities: { type: "string", default: "1000" },
    clients: { type: "string", default: "8" },
    "server-pid": { type: "string", default: "0" },
    warmup: { type: "string", default: "3" },
    window: { type: "string", default: "10" },
    label: { type: "string", default: "" },
    "join-timeout": { type: "string", default: "60" },
  },
});
if (!args.port || !args.room) {
  console.error("clients.mjs: --port and --room are required");
  process.exit(2);
}
const entities = Number(args.entities);
const clientCount = Number(args.clients);
const serverPid = Number(args["server-pid"]);
const warmupS = Number(args.warmup);
const windowS = Number(args.window);
const joinTimeoutS = Number(args["join-timeout"]);

const PROTOCOL_CODE_MASK = 31; // @colyseus/shared-types: modifier bits sit above it
const ROOM_STATE_PATCH = 15;
const ticksPerSecond = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }));

// utime + stime of a process, in seconds (fields 14 and 15, after the parenthesised name).
function cpuSeconds(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond;
}

function rssMiB(pid) {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith("VmRSS:"));
  return line ? Number.parseInt(line.slice(6), 10) / 1024 : 0;
}

// A WebSocket frame's header from the server: 2 bytes, plus 2 or 8 for the extended length
// (server frames are not masked).
function frameHeaderBytes(length) {
  return 2 + (length >= 65536 ? 8 : length >= 126 ? 2 : 0);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(predicate, timeoutS, what) {
  const deadline = Date.now() + timeoutS * 1000;
  while (!predicate()) {
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutS} s waiting for ${what}`);
    }
    await sleep(20);
  }
}

const endpoint = `ws://127.0.0.1:${args.port}`;
const mirrors = [];
const joinStarted = performance.now();
for (let i = 0; i < clientCount; ++i) {
  const room = await new Client(endpoint).joinById(args.room);
  const mirror = { room, payloadBytes: 0, wireBytes: 0, patches: 0, closed: null };
  // The SDK keeps `ws.onmessage` for itself; a listener beside it sees every message.
  room.connection.transport.ws.addEventListener("message", (event) => {
    const bytes = new Uint8Array(event.data);
    mirror.payloadBytes += bytes.byteLength;
    mirror.wireBytes += bytes.byteLength + frameHeaderBytes(bytes.byteLength);
    if ((bytes[0] & PROTOCOL_CODE_MASK) === ROOM_STATE_PATCH) {
      ++mirror.patches;
    }
  });
  room.onLeave((code) => {
    mirror.closed = code;
  });
  mirrors.push(mirror);
}
const size = (m) => m.room.state?.entities?.size ?? 0;
await waitFor(() => mirrors.every((m) => size(m) === entities), joinTimeoutS,
  `${clientCount} mirrors of ${entities} entities`);
const joinedMs = performance.now() - joinStarted;

await sleep(warmupS * 1000);
const positions = (m) => {
  const first = m.room.state.entities.get("0");
  return first ? [first.x, first.y] : null;
};
const before = mirrors.map((m) => ({
  payloadBytes: m.payloadBytes,
  wireBytes: m.wireBytes,
  patches: m.patches,
  position: positions(m),
}));
const cpu0 = serverPid > 0 ? cpuSeconds(serverPid) : null;
const ownCpu0 = process.cpuUsage();
const t0 = performance.now();
let rssMax = 0;
while (performance.now() - t0 < windowS * 1000) {
  await sleep(250);
  if (serverPid > 0) rssMax = Math.max(rssMax, rssMiB(serverPid));
}
const windowSeconds = (performance.now() - t0) / 1000;
const cpu1 = serverPid > 0 ? cpuSeconds(serverPid) : null;
const ownCpu = process.cpuUsage(ownCpu0);

const failures = [];
let payloadBytes = 0;
let wireBytes = 0;
let patches = 0;
mirrors.forEach((m, i) => {
  payloadBytes += m.payloadBytes - before[i].payloadBytes;
  wireBytes += m.wireBytes - before[i].wireBytes;
  patches += m.patches - before[i].patches;
  if (m.closed !== null) failures.push(`client ${i}: left the room (code ${m.closed})`);
  if (size(m) !== entities) failures.push(`client ${i}: ${size(m)} entities, not ${entities}`);
  const now = positions(m);
  if (entities > 0 && (!now || !before[i].position ||
      (now[0] === before[i].position[0] && now[1] === before[i].position[1]))) {
    failures.push(`client ${i}: entity "0" did not move during the window`);
  }
});
const perClient = (v) => v / clientCount / windowSeconds;
const patchesPerClient = patches / clientCount;
const bytesPerEntityUpdate = patchesPerClient > 0 && entities > 0
  ? wireBytes / clientCount / patchesPerClient / entities
  : 0;
const result = {
  label: args.label,
  system: "colyseus",
  transport: "ws",
  entities,
  clients: clientCount,
  window_s: windowSeconds,
  ticks: patchesPerClient,
  bytes_per_s_per_client: perClient(wireBytes),
  payload_bytes_per_s_per_client: perClient(payloadBytes),
  bytes_per_entity_update: bytesPerEntityUpdate,
  join_all_ms: joinedMs,
  server_cpu_pct: cpu0 !== null ? ((cpu1 - cpu0) / windowSeconds) * 100 : -1,
  server_rss_mib_max: rssMax,
  loadgen_cpu_pct: ((ownCpu.user + ownCpu.system) / 1e6 / windowSeconds) * 100,
  failures,
};
console.log(`${"scenario".padEnd(32)} ${args.label}`);
console.log(`${"load".padEnd(32)} ${entities} moving entities, ${clientCount} clients, ` +
  `${windowSeconds.toFixed(1)} s window, ${patchesPerClient.toFixed(0)} patches per client`);
console.log(`${"bytes per client".padEnd(32)} ${result.bytes_per_s_per_client.toFixed(0)} B/s ` +
  `(payload ${result.payload_bytes_per_s_per_client.toFixed(0)} B/s)`);
console.log(`${"bytes per moving entity update".padEnd(32)} ${bytesPerEntityUpdate.toFixed(2)} B`);
console.log(`${"server".padEnd(32)} ${result.server_cpu_pct.toFixed(2)} % of one core, ` +
  `RSS max ${rssMax.toFixed(1)} MiB`);
console.log(`${"load generator".padEnd(32)} ${result.loadgen_cpu_pct.toFixed(1)} % of one core`);
console.log(JSON.stringify(result));
for (const f of failures) console.error(`clients.mjs: FAILED: ${f}`);

await Promise.race([Promise.allSettled(mirrors.map((m) => m.room.leave())), sleep(5000)]);
process.exit(failures.length === 0 ? 0 : 1);
