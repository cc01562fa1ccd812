// The arena's prediction module measured (docs/BENCHMARKS.md, "Prediction in the browser"): its
// size, raw and gzipped; its load time in Debian's headless chromium; and, on the same recording
// (arena_golden bench: one ship and 64 bullets, 300 updates that replay 12 ticks, then 300 that
// predict one tick), the update's time natively (the build of arena_golden), in Node and in
// chromium, side by side in one run.
//
//   node bench/prediction_wasm.mjs --golden <build>/bin/arena_golden
//        --module <build>/share/ecsnet/web/arena/arena_prediction.js [--runs 3]
//
// Take figures on an idle machine: nothing else building or testing.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { commandLine } from './cli.mjs';
import { launchChromium, serveStatic } from '../sdk/ts/test/browser/support.mjs';
import { replay } from '../tests/wasm/golden.mjs';

const usage = 'usage: node bench/prediction_wasm.mjs --golden <arena_golden> --module <arena_prediction.js> [--runs N]';
const { option, fail } = commandLine(usage);
const golden = option('--golden');
const moduleJs = option('--module');
const runs = Number(option('--runs', '3'));
if (!golden || !moduleJs || !(runs >= 1)) fail();
const wasmPath = moduleJs.replace(/\.js$/, '.wasm');
const here = dirname(fileURLToPath(import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'ecsnet-prediction-wasm-'));
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)] ?? NaN;
const us = (x) => `${x.toFixed(1)} us`;

try {
  const recording = join(work, 'bench.bin');
  execFileSync(golden, ['bench', recording]);
  const wasm = readFileSync(wasmPath);
  console.log(`module: ${moduleJs}: .wasm ${wasm.length} bytes (gzip -9: ${gzipSync(wasm, { level: 9 }).length}), ` +
    `.js ${readFileSync(moduleJs).length} bytes (gzip -9: ${gzipSync(readFileSync(moduleJs), { level: 9 }).length})`);

  for (let i = 0; i < runs; ++i) console.log(`  ${execFileSync(golden, ['replay', recording, '--time']).toString().trim()}`);

  const factory = createRequire(import.meta.url)(resolve(moduleJs));
  const bytes = new Uint8Array(readFileSync(recording));
  for (let i = 0; i < runs; ++i) {
    const module = await factory({ wasmBinary: wasm });
    const t = replay(module, bytes, { time: true });
    console.log(`  node ${process.version}: replay of 12 ticks p50 ${us(median(t.replays))} (${t.replays.length}), ` +
      `one predicted tick p50 ${us(median(t.steps))} (${t.steps.length})`);
  }

  const site = await serveStatic({
    '/golden.html': join(here, '../tests/wasm/golden.html'), '/golden.mjs': join(here, '../tests/wasm/golden.mjs'),
    '/module.js': moduleJs, '/module.wasm': wasmPath, '/recording.bin': recording,
  });
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    await page.goto(`${site.origin}/golden.html`, { timeout: 30_000 });
    const results = await page.evaluate((n) => window.bench(n), runs);
    for (const t of results) {
      console.log(`  chromium ${browser.version()}: replay of 12 ticks p50 ${us(median(t.replays))} (${t.replays.length}), ` +
        `one predicted tick p50 ${us(median(t.steps))} (${t.steps.length}); module loaded in ${t.loadMs.toFixed(1)} ms`);
    }
    // A first load in a new page: fetch and compile, nothing cached.
    const loads = [];
    for (let i = 0; i < 5; ++i) {
      const fresh = await browser.newPage();
      await fresh.goto(`${site.origin}/golden.html`, { timeout: 30_000 });
      loads.push(await fresh.evaluate(async () => {
        const started = performance.now();
        await createPredictionModule({ locateFile: () => `/module.wasm?${Math.random()}` });
        return performance.now() - started;
      }));
      await fresh.close();
    }
    console.log(`  chromium: module load (fetch + compile + instantiate), 5 new pages: ${loads.map((x) => x.toFixed(1)).join(', ')} ms`);
  } finally {
    await browser.close();
    await site.close();
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
