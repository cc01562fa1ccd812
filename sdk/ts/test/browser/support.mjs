// What the browser test and the decode bench share: Debian's chromium driven by playwright-core,
// and a static file server on 127.0.0.1 (each server is its own origin, by its port).
import { createServer } from 'node:http';
import { accessSync, constants, readFileSync } from 'node:fs';

export const CHROMIUM = process.env.ECSNET_CHROMIUM ?? '/usr/bin/chromium';

// Without the background-networking flags Chromium keeps calling Google's hosts, which a closed
// network refuses; as root playwright adds --no-sandbox itself.
const CHROMIUM_ARGS = [
  '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run',
  '--disable-gpu', '--disable-quic',
];

export async function launchChromium(extraArgs = []) {
  try {
    accessSync(CHROMIUM, constants.X_OK);
  } catch {
    throw new Error(`no Chromium at ${CHROMIUM}: install Debian's chromium (scripts/install-deps.sh web, ` +
      'or apt-get install chromium), or point ECSNET_CHROMIUM at another build');
  }
  let chromium;
  try {
    ({ chromium } = await import('playwright-core'));
  } catch (e) {
    throw new Error(`playwright-core is not installed: run npm ci in sdk/ts (${e.message})`);
  }
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: [...CHROMIUM_ARGS, ...extraArgs], timeout: 30_000 });
}

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8',
  '.map': 'application/json', '.bin': 'application/octet-stream' };

// Serves `files` ({ '/page.html': absolutePath }) read at each request, nothing else (404).
// Cross-origin isolated (COOP + COEP), which also gives the page's performance.now() its finest
// resolution. Resolves with { origin, close() }.
export function serveStatic(files) {
  const server = createServer((req, res) => {
    const path = new URL(req.url, 'http://x').pathname;
    const file = files[path];
    if (req.method !== 'GET' || file === undefined) {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n');
      return;
    }
    const ext = path.slice(path.lastIndexOf('.'));
    res.writeHead(200, {
      'Content-Type': TYPES[ext] ?? 'application/octet-stream',
      'Cache-Control': 'no-store',
      'Cross-Origin-Opener-Policy': 'same-origin',
      'Cross-Origin-Embedder-Policy': 'require-corp',
    }).end(readFileSync(file));
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      resolve({
        origin: `http://127.0.0.1:${port}`,
        close: () => new Promise((done) => { server.closeAllConnections(); server.close(() => done()); }),
      });
    });
  });
}

// Polls cond() (sync or async) every intervalMs until it returns a truthy value: bounded both in
// polls and in time. Throws with `what` and show(), the state to look at, otherwise.
export async function pollUntil(cond, what, { timeoutMs = 20_000, intervalMs = 100, show = async () => '' } = {}) {
  const polls = Math.ceil(timeoutMs / intervalMs);
  const end = Date.now() + timeoutMs;
  for (let i = 0; i < polls && Date.now() <= end; ++i) {
    const value = await cond();
    if (value) return value;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; ${await show()}`);
}
