// The inspector's figures in headless Chromium (docs/BENCHMARKS.md, "The browser, part 2"): for
// each world size, ecsnet-server with that many moving demo entities and its admin endpoint, the
// page at /inspector/ joined as an observer, then over a window: frames per second (the page's
// requestAnimationFrame loop) and redraws per second (it redraws when the world or the view
// changed: at most once per tick), the page's own time per frame (applying what arrived, drawing,
// table, panel), the main thread's busy time per frame from Chromium (CDP Performance.getMetrics
// TaskDuration: script, style, layout, paint; divided by the frames in the window), page load to
// the first drawn world, and the observer connection's bytes per second.
//
// Usage: node bench/inspector/measure.mjs [--build-dir build/release] [--entities 1000,10000]
//        [--seconds 10] [--uncapped]
// --uncapped launches Chromium with --disable-frame-rate-limit --disable-gpu-vsync (the frame
// rate is then bounded by the work, not by the 60 Hz display). Needs scripts/web-deps.sh (npm ci:
// playwright-core in sdk/ts) and Debian's chromium; run on a quiet machine.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { getJson, launchChromium, pollUntil, startServer } from '../../inspector/test/support.mjs';

const { values } = parseArgs({
  options: {
    'build-dir': { type: 'string', default: 'build/release' },
    entities: { type: 'string', default: '1000,10000' },
    seconds: { type: 'string', default: '10' },
    uncapped: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (values.help) {
  console.log('node bench/inspector/measure.mjs [--build-dir DIR] [--entities 1000,10000] [--seconds 10] [--uncapped]');
  process.exit(0);
}
const build = resolve(values['build-dir']);
const server = `${build}/bin/ecsnet-server`;
const inspectorDir = `${build}/share/ecsnet/web/inspector`;
for (const [path, what] of [[server, 'ecsnet-server'], [`${inspectorDir}/index.html`, 'the inspector page (target inspector_web)']]) {
  if (!existsSync(path)) {
    console.error(`measure.mjs: ${what} not found at ${path}: build it in ${build}`);
    process.exit(2);
  }
}
const seconds = Number(values.seconds);
const sizes = values.entities.split(',').map(Number);

const browser = await launchChromium(values.uncapped ? ['--disable-frame-rate-limit', '--disable-gpu-vsync'] : []);
const rows = [];
try {
  for (const entities of sizes) {
    const srv = await startServer(server, ['--demo-entities', String(entities), '--inspector-dir', inspectorDir,
    ]);
    try {
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      const cdp = await page.context().newCDPSession(page);
      await cdp.send('Performance.enable');
      await page.goto(`http://127.0.0.1:${srv.adminPort}/inspector/`);
      await page.waitForFunction(() => window.ecsnetInspector?.isReady, null, { timeout: 60_000 });
      await pollUntil(async () => (await page.evaluate(() => window.ecsnetInspector.entityCount())) >= entities,
        `${entities} entities in the page`, { timeoutMs: 60_000 });
      await page.waitForTimeout(3000);  // warm up: JIT, the first snapshot's garbage
      const metric = async () => Object.fromEntries((await cdp.send('Performance.getMetrics')).metrics.map((m) => [m.name, m.value]));
      const sample = () => page.evaluate(() => {
        const i = window.ecsnetInspector;
        return { drawn: i.framesDrawn(), bytes: i.observerBytesPerSecond(), frameMs: i.frameMs(), fps: i.fps(), firstDrawMs: i.firstDrawMs(), entities: i.entityCount(), checksums: i.checksums() };
      });
      const rafCount = () => page.evaluate(() => new Promise((done) => {
        // Counts animation frames over the window from inside the page.
        const end = performance.now() + 1000 * window.__window_s;
        let n = 0;
        const step = (t) => { if (t >= end) done(n); else { ++n; requestAnimationFrame(step); } };
        requestAnimationFrame(step);
      }));
      await page.evaluate((s) => { window.__window_s = s; }, seconds);
      const m0 = await metric();
      const s0 = await sample();
      const t0 = Date.now();
      const frames = await rafCount();
      const elapsed = (Date.now() - t0) / 1000;
      const m1 = await metric();
      const s1 = await sample();
      const status = await getJson(`http://127.0.0.1:${srv.adminPort}/status`);
      const row = {
        entities,
        capped: !values.uncapped,
        fps: frames / elapsed,
        redraws_per_s: (s1.drawn - s0.drawn) / elapsed,
        page_frame_ms_avg: s1.frameMs.average,
        page_frame_ms_p95: s1.frameMs.p95,
        main_thread_ms_per_frame: (1000 * (m1.TaskDuration - m0.TaskDuration)) / frames,
        script_ms_per_frame: (1000 * (m1.ScriptDuration - m0.ScriptDuration)) / frames,
        main_thread_busy_pct: (100 * (m1.TaskDuration - m0.TaskDuration)) / elapsed,
        first_draw_ms: s1.firstDrawMs,
        observer_kb_per_s: s1.bytes / 1000,
        server_tick_p50_ms: status.tick_ms?.p50,
        checksums_matched: s1.checksums.matched,
        checksums_mismatched: s1.checksums.mismatched,
        page_entities: s1.entities,
      };
      rows.push(row);
      console.log(JSON.stringify(row));
      await page.close();
    } finally {
      await srv.stop();
    }
  }
} finally {
  await browser.close();
}
const f = (x, d = 1) => (x === null || x === undefined ? '-' : Number(x).toFixed(d));
console.log(`\n| entities | Chromium | fps | redraws/s | page ms/frame avg (p95) | main thread ms/frame | main thread busy % | first draw ms | observer KB/s |`);
console.log('|---|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  console.log(`| ${r.entities} | ${r.capped ? '60 Hz cap' : 'uncapped'} | ${f(r.fps)} | ${f(r.redraws_per_s)} | ${f(r.page_frame_ms_avg, 2)} (${f(r.page_frame_ms_p95, 2)}) | ${f(r.main_thread_ms_per_frame, 2)} | ${f(r.main_thread_busy_pct)} | ${f(r.first_draw_ms, 0)} | ${f(r.observer_kb_per_s)} |`);
}
