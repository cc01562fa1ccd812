// Prints run.sh's table from its JSON lines: one row per workload, system and transport, then
// the ratios that matter (WebSocket against TCP, Colyseus against ecsnet over WebSocket) and
// anything that makes a row doubtful.
//
// Usage: node table.mjs RESULTS.jsonl TICK_RATE
import { readFileSync } from "node:fs";

const [file, tickRateArg] = process.argv.slice(2);
const tickRate = Number(tickRateArg);
const rows = readFileSync(file, "utf8")
  .split("\n")
  .filter((line) => line.startsWith("{"))
  .map((line) => JSON.parse(line))
  .filter((row) => row.workload !== undefined);

const columns = [
  ["workload", (r) => r.workload],
  ["system", (r) => r.system],
  ["transport", (r) => r.transport],
  ["server CPU %", (r) => (r.failed ? "failed" : r.server_cpu_pct.toFixed(2))],
  ["CPU per client %", (r) => (r.failed ? "" : (r.server_cpu_pct / r.clients).toFixed(3))],
  ["KB/s per client", (r) => (r.failed ? "" : (r.bytes_per_s_per_client / 1000).toFixed(1))],
  ["B per entity update", (r) => (r.failed ? "" : r.bytes_per_entity_update.toFixed(2))],
  ["updates/s", (r) => (r.failed ? "" : (r.ticks / r.window_s).toFixed(1))],
];
const cells = rows.map((r) => columns.map(([, cell]) => cell(r)));
const widths = columns.map(([title], i) => Math.max(title.length, ...cells.map((c) => c[i].length)));
const line = (values) => `| ${values.map((v, i) => v.padEnd(widths[i])).join(" | ")} |`;
console.log(line(columns.map(([title]) => title)));
console.log(`|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`);
for (const c of cells) console.log(line(c));

const find = (workload, system, transport) =>
  rows.find((r) => r.workload === workload && r.system === system &&
    r.transport === transport && !r.failed);
const ratio = (a, b, field) => (a[field] / b[field]).toFixed(2);
console.log("");
for (const workload of [...new Set(rows.map((r) => r.workload))]) {
  const tcp = find(workload, "ecsnet", "tcp");
  const ws = find(workload, "ecsnet", "ws");
  const colyseus = find(workload, "colyseus", "ws");
  const parts = [];
  if (ws && tcp) {
    parts.push(`ecsnet ws/tcp: CPU x${ratio(ws, tcp, "server_cpu_pct")}, ` +
      `bytes x${ratio(ws, tcp, "bytes_per_s_per_client")}`);
  }
  const ecsnet = ws ?? tcp;
  if (colyseus && ecsnet) {
    parts.push(`colyseus/ecsnet-${ecsnet.transport}: CPU x${ratio(colyseus, ecsnet, "server_cpu_pct")}, ` +
      `bytes x${ratio(colyseus, ecsnet, "bytes_per_s_per_client")}`);
  }
  if (parts.length > 0) console.log(`${workload}: ${parts.join("; ")}`);
}

for (const r of rows) {
  const name = `${r.workload} ${r.system} ${r.transport}`;
  if (r.failed) {
    console.log(`doubtful: ${name}: the run failed (${r.failed})`);
    continue;
  }
  const rate = r.ticks / r.window_s;
  if (Math.abs(rate - tickRate) > 0.05 * tickRate) {
    console.log(`doubtful: ${name}: ${rate.toFixed(1)} updates/s per client, not ${tickRate}`);
  }
  if (r.loadgen_cpu_pct !== undefined && r.loadgen_cpu_pct > 90) {
    console.log(`doubtful: ${name}: the load generator used ${r.loadgen_cpu_pct.toFixed(0)} % ` +
      "of its core (it may not keep up)");
  }
  if ((r.checksum_mismatches ?? 0) > 0 || (r.inconsistencies ?? 0) > 0 || (r.failures ?? []).length > 0) {
    console.log(`doubtful: ${name}: mirrors did not agree (see the raw lines)`);
  }
}
