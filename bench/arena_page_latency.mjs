// Input to visible in the arena page (docs/BENCHMARKS.md, "Prediction in the browser"): frames
// from a key press (the page's keydown) to the first frame whose drawn ship turned, with the
// page's prediction and with ?prediction=off, one after the other in one run, through a TCP
// relay that delays each direction by --latency-ms (+- --jitter-ms): 75 ms each way is a round
// trip of 150 ms. Debian's headless chromium; arena-server with the page from a build's share/.
//
//   node bench/arena_page_latency.mjs --server <build>/bin/arena-server
//        --web-root <build with ECSNET_WEB>/share/ecsnet/web/arena [--latency-ms 75] [--jitter-ms 0]
//        [--presses 10]
import { createServer, connect } from 'node:net';
import { commandLine } from './cli.mjs';
import { launchChromium, pollUntil } from '../sdk/ts/test/browser/support.mjs';
import { startArenaServer } from '../games/arena/web/test/support.mjs';

const usage = 'usage: node bench/arena_page_latency.mjs --server <arena-server> --web-root <dir> ' +
  '[--latency-ms 75] [--jitter-ms 0] [--presses 10]';
const { option, fail } = commandLine(usage);
const serverBin = option('--server');
const webRoot = option('--web-root');
const latency = Number(option('--latency-ms', '75'));
const jitter = Number(option('--jitter-ms', '0'));
const presses = Number(option('--presses', '10'));
if (!serverBin || !webRoot || !(latency >= 0) || !(jitter >= 0) || !(presses >= 1)) fail();

// Each direction's bytes go out `latency` +- `jitter` ms after they came, never before the
// bytes ahead of them (TCP keeps order).
function relay(targetPort) {
  const sockets = new Set();
  // One queue per direction, drained in order by one timer (timers of different lengths that
  // fall due in the same millisecond may run in any order).
  const delayed = (from, to) => {
    const queue = [];
    let last = 0;
    let timer = null;
    let closed = false;
    const pump = () => {
      timer = null;
      while (queue.length > 0 && queue[0].at <= Date.now()) {
        const { chunk } = queue.shift();
        if (!to.destroyed) to.write(chunk);
      }
      if (queue.length > 0) timer = setTimeout(pump, queue[0].at - Date.now());
      else if (closed) to.destroy();
    };
    from.on('data', (chunk) => {
      last = Math.max(last, Date.now() + latency + (Math.random() * 2 - 1) * jitter);
      queue.push({ at: last, chunk });
      if (timer === null) timer = setTimeout(pump, last - Date.now());
    });
    from.on('close', () => { closed = true; if (timer === null) pump(); });
    from.on('error', () => to.destroy());
  };
  const server = createServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1');
    sockets.add(client).add(upstream);
    delayed(client, upstream);
    delayed(upstream, client);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({
    port: server.address().port,
    close: () => { for (const s of sockets) s.destroy(); server.close(); },
  })));
}

// In the page: frames from the keydown to the first frame whose drawn ship turned (the page
// counts its frames in window.arena.frames; this callback runs after the page's in each frame).
async function measure(page, key) {
  const waiting = page.evaluate(() => new Promise((resolve) => {
    addEventListener('keydown', () => {
      const pressed = window.arena.frames;
      const angle = window.arena.drawn().angle;
      const started = performance.now();
      const look = () => {
        const now = window.arena.drawn();
        if (now !== null && now.angle !== angle) {
          resolve({ frames: window.arena.frames - pressed, ms: performance.now() - started });
        } else if (window.arena.frames - pressed > 180) {
          resolve({ frames: Infinity, ms: performance.now() - started });
        } else {
          requestAnimationFrame(look);
        }
      };
      requestAnimationFrame(look);
    }, { once: true });
  }));
  await page.waitForTimeout(50);
  await page.keyboard.down(key);
  const result = await waiting;
  await page.keyboard.up(key);
  await page.waitForTimeout(600); // at rest again, on both sides
  return result;
}

const server = await startArenaServer(serverBin, ['--web-root', webRoot, '--asteroids', '0', '--arena-size', '4000']);
const proxy = await relay(server.wsPort);
const browser = await launchChromium();
try {
  for (const mode of ['on', 'off']) {
    const page = await browser.newPage({ viewport: { width: 800, height: 600 } });
    await page.goto(`http://127.0.0.1:${proxy.port}/?arena-size=4000${mode === 'off' ? '&prediction=off' : ''}`, { timeout: 30_000 });
    await pollUntil(() => page.evaluate(() => window.arena?.ready && window.arena.drawn() !== null &&
      (window.arena.prediction().on === false || window.arena.prediction().tracked)), 'the page to join', { timeoutMs: 30_000 });
    await page.waitForTimeout(1500); // the server clock settles
    const results = [];
    for (let i = 0; i < presses; ++i) results.push(await measure(page, i % 2 === 0 ? 'ArrowLeft' : 'ArrowRight'));
    const frames = results.map((r) => r.frames).sort((a, b) => a - b);
    const ms = results.map((r) => r.ms).sort((a, b) => a - b);
    const fps = await page.evaluate(async () => {
      const start = [window.arena.frames, performance.now()];
      await new Promise((r) => setTimeout(r, 1000));
      return (window.arena.frames - start[0]) / ((performance.now() - start[1]) / 1000);
    });
    const rtt = await page.evaluate(() => window.arena.pingMs());
    console.log(`prediction ${mode}: input to visible, frames p50 ${frames[Math.floor(frames.length / 2)]} ` +
      `max ${frames.at(-1)} (${frames.join(' ')}); ms p50 ${ms[Math.floor(ms.length / 2)].toFixed(0)}; ` +
      `${fps.toFixed(0)} fps; ping ${rtt?.toFixed(0)} ms`);
    await page.close();
  }
} finally {
  await browser.close();
  proxy.close();
  await server.stop();
}
