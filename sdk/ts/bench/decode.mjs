// The SDK's decode time per Delta and per entity, in Node and in headless Chromium, at 1,000 and
// 10,000 moving entities (issue 26's measurements). For each count it records a real
// ecsnet-server's stream over TCP (--demo-entities N: every demo entity has a velocity, so all
// N move every tick), from Welcome through the Snapshot to --deltas Deltas and the Checksums
// between them, then replays the same bytes with the same code (bench/replay.mjs) in Node and in
// a page of Debian's chromium (playwright-core), and prints a table. The server only records, so
// its build does not change the figures; take them on a quiet machine.
//
//   cd sdk/ts && npm ci && npm run build
//   ECSNET_SERVER_BIN=../../build/release/bin/ecsnet-server node bench/decode.mjs
//   options: --entities 1000,10000 --deltas 100 --passes 20 --warmup 5 --runtimes node,chromium
//            --baseline DIR (another build's dist/, e.g. of an earlier commit: measured in the
//              same run on the same recordings, its rows marked "baseline")
//            --keep DIR (keeps the recordings there, stream-N.bin: the C++ mirror replays the
//              same bytes with ECSNET_BENCH_RECORDING=DIR/stream-N.bin protocol_bench
//              --benchmark_filter=MirrorReplay)
//            --quick (1,000 entities, 20 Deltas, 3 passes: checks that it runs, not a figure)
//
// The C++ mirror's figure to set beside it: protocol_bench --benchmark_filter=MirrorApply.
import { createConnection } from 'node:net';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import * as sdk from '../dist/ecsnet.node.js';
import { serverBinary, startServer } from '../test/support/servers.mjs';
import { launchChromium, pollUntil, serveStatic } from '../test/browser/support.mjs';
import { measureDecode } from './replay.mjs';

const { values: args } = parseArgs({
  options: {
    entities: { type: 'string', default: '1000,10000' },
    deltas: { type: 'string', default: '100' },
    passes: { type: 'string', default: '20' },
    warmup: { type: 'string', default: '5' },
    runtimes: { type: 'string', default: 'node,chromium' },
    baseline: { type: 'string' },
    keep: { type: 'string' },
    quick: { type: 'boolean', default: false },
  },
});
if (args.quick) Object.assign(args, { entities: '1000', deltas: '20', passes: '3', warmup: '1' });
const counts = args.entities.split(',').map(Number);
const deltas = Number(args.deltas);
const options = { passes: Number(args.passes), warmup: Number(args.warmup) };
const runtimes = args.runtimes.split(',');
if (counts.some((n) => !(n > 0)) || !(deltas > 0) || runtimes.some((r) => r !== 'node' && r !== 'chromium')) {
  throw new Error('usage: --entities N[,N...] --deltas N --passes N --warmup N --runtimes node,chromium [--baseline DIR] [--keep DIR]');
}
const baselineDir = args.baseline === undefined ? null : resolve(args.baseline);
const baseline = baselineDir === null ? null : await import(pathToFileURL(join(baselineDir, 'ecsnet.node.js')).href);

// Welcome .. the Snapshot .. `count` Deltas, and at least one Checksum after the first Delta.
async function record(entities, count) {
  const server = await startServer(serverBinary('ECSNET_SERVER_BIN'),
    ['--demo-entities', String(entities), '--checksum-interval', '10', '--queue-bytes', String(64 << 20)]);
  try {
    return await new Promise((resolve, reject) => {
      const socket = createConnection({ host: '127.0.0.1', port: server.port });
      const reader = new sdk.FrameReader();
      const frames = [];
      let seen = 0;
      let checked = false;
      const timer = setTimeout(() => { socket.destroy(); reject(new Error(`recording ${entities}: ${seen} of ${count} Deltas within 60 s`)); }, 60_000);
      socket.on('connect', () => socket.write(sdk.encodeHello({ clientName: 'decode-bench' })));
      socket.on('error', (e) => { clearTimeout(timer); reject(e); });
      socket.on('data', (chunk) => {
        reader.feed(new Uint8Array(chunk));
        for (let f = reader.next(); f !== null; f = reader.next()) {
          const kind = sdk.decodeServerFrame(f).kind;
          if (kind !== 'welcome' && kind !== 'snapshot' && kind !== 'delta' && kind !== 'checksum') continue;
          frames.push(f);
          if (kind === 'delta') ++seen;
          if (kind === 'checksum' && seen > 0) checked = true;
          if (seen >= count && checked) {
            clearTimeout(timer);
            socket.destroy();
            resolve(Buffer.concat(frames.map((x) => Buffer.from(x))));
            return;
          }
        }
      });
    });
  } finally {
    await server.stop();
  }
}

const rows = [];
const dir = mkdtempSync(join(tmpdir(), 'ecsnet-decode-bench-'));
let browser = null;
let site = null;
try {
  const recordings = [];
  for (const n of counts) {
    const bytes = await record(n, deltas);
    const file = join(dir, `stream-${n}.bin`);
    writeFileSync(file, bytes);
    recordings.push({ n, bytes: new Uint8Array(bytes), path: `/stream-${n}.bin`, file });
  }
  if (runtimes.includes('node')) {
    for (const r of recordings) {
      if (baseline !== null) rows.push({ runtime: `node ${process.version} baseline`, ...await measureDecode(baseline, r.bytes, options) });
      rows.push({ runtime: `node ${process.version}`, ...await measureDecode(sdk, r.bytes, options) });
    }
  }
  if (runtimes.includes('chromium')) {
    const here = (p) => fileURLToPath(new URL(p, import.meta.url));
    site = await serveStatic({
      '/decode.html': here('decode.html'),
      '/replay.mjs': here('replay.mjs'),
      '/ecsnet.browser.js': here('../dist/ecsnet.browser.js'),
      ...(baselineDir === null ? {} : { '/baseline/ecsnet.browser.js': join(baselineDir, 'ecsnet.browser.js') }),
      ...Object.fromEntries(recordings.map((r) => [r.path, r.file])),
    });
    browser = await launchChromium();
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${site.origin}/decode.html`);
    await pollUntil(() => page.evaluate(() => window.benchReady === true), 'the bench page', { show: async () => errors.join('; ') });
    for (const r of recordings) {
      for (const which of baselineDir === null ? ['sdk'] : ['baseline', 'sdk']) {
        rows.push({ runtime: `chromium ${browser.version()}${which === 'baseline' ? ' baseline' : ''}`,
          ...await page.evaluate(([url, o, w]) => window.measureDecode(url, o, w), [r.path, options, which]) });
      }
    }
  }
} finally {
  await browser?.close();
  await site?.close();
  if (args.keep !== undefined) {
    mkdirSync(args.keep, { recursive: true });
    for (const n of counts) {
      if (existsSync(join(dir, `stream-${n}.bin`))) copyFileSync(join(dir, `stream-${n}.bin`), join(args.keep, `stream-${n}.bin`));
    }
  }
  rmSync(dir, { recursive: true, force: true });
}

const us = (ms) => (ms * 1000).toFixed(1);
const table = [
  ['runtime', 'entities', 'moving/Delta', 'Delta bytes', 'Deltas x passes', 'decode us/Delta (min)', 'decode+apply us/Delta (min)', 'decode+apply ns/entity', 'Snapshot ms (min)'],
  ...rows.map((r) => [
    r.runtime, String(r.entities), r.movingPerDelta.toFixed(0), r.bytesPerDelta.toFixed(0), `${r.deltas} x ${r.passes}`,
    `${us(r.decodeMs.median)} (${us(r.decodeMs.min)})`, `${us(r.decodeApplyMs.median)} (${us(r.decodeApplyMs.min)})`,
    (r.decodeApplyMs.median * 1e6 / r.movingPerDelta).toFixed(1),
    `${r.snapshotMs.median.toFixed(2)} (${r.snapshotMs.min.toFixed(2)})`,
  ]),
];
const widths = table[0].map((_, c) => Math.max(...table.map((row) => row[c].length)));
console.log('medians over the passes (min in brackets); apply includes the decode; Snapshot: its frames decoded and applied to a new mirror; every Checksum of each recording matched');
for (const row of table) console.log(row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  '));
