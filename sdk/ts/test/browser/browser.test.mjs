// The bundled SDK in a real browser (Debian's chromium, headless, driven by playwright-core): a
// page joins ecsnet-server over WebSocket and must see the world the C++ client sees. The demo
// world's entities all move, so checksums are compared at the same tick: each client reports,
// per server Checksum, the tick, whether its mirror matched and its entity count; the page and a
// Node session over TCP also report their mirror's checksum value, compared tick by tick. The
// C++ CLI (ecsnet-client watch --json) reports the ticks its mirror matched but not the value.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Session, tcp } from '../../dist/ecsnet.node.js';
import { serverBinary, startServer } from '../support/servers.mjs';
import { launchChromium, pollUntil, serveStatic } from './support.mjs';

const ENTITIES = 200;
const CHECKSUM_INTERVAL = 10;

const serverBin = serverBinary('ECSNET_SERVER_BIN');
const clientBin = process.env.ECSNET_CLIENT_BIN;
if (!clientBin) {
  throw new Error('ECSNET_CLIENT_BIN is not set: point it at the built ecsnet-client ' +
    '(e.g. ECSNET_CLIENT_BIN=build/asan/bin/ecsnet-client); ctest sets it (sdk/ts/CMakeLists.txt)');
}

const pageFiles = {
  '/page.html': fileURLToPath(new URL('page.html', import.meta.url)),
  '/ecsnet.browser.js': fileURLToPath(new URL('../../dist/ecsnet.browser.js', import.meta.url)),
  '/ecsnet.browser.js.map': fileURLToPath(new URL('../../dist/ecsnet.browser.js.map', import.meta.url)),
};

// ecsnet-client watch --json for `seconds`; resolves with its JSON lines once it exits 0.
function watchWithCppClient(port, seconds, env, children) {
  return new Promise((resolve, reject) => {
    const child = spawn(clientBin, ['--port', String(port), '--json', '--name', 'cpp-smoke', 'watch', '--seconds', String(seconds)],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    children.push(child);
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => { out += c; });
    child.stderr.on('data', (c) => { err += c; });
    const timer = setTimeout(() => { process.kill(child.pid, 'SIGKILL'); }, (seconds + 20) * 1000);
    child.once('error', (e) => { clearTimeout(timer); reject(e); });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code !== 0) {
        reject(new Error(`ecsnet-client watch ended with ${code ?? signal}:\n${out}\n${err}`));
        return;
      }
      resolve(out.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l)));
    });
  });
}

// A Node session over TCP, keeping the same record per Checksum as the page.
async function joinOverTcp(port) {
  const session = await Session.connect({ transport: tcp('127.0.0.1', port), name: 'node-smoke', autoUpdate: 10 });
  const checks = [];
  session.events.checksum = (tick, matched) => checks.push({
    tick: Number(tick), matched, entities: session.mirror.size, checksum: session.mirror.checksum().toString(16).padStart(16, '0'),
  });
  return { session, checks };
}

describe('the bundled SDK in headless Chromium', () => {
  const children = [];
  let server = null;
  let allowedSite = null;
  let otherSite = null;
  let browser = null;
  let nodeClient = null;
  let stateHome = null;

  before(async () => {
    stateHome = mkdtempSync(join(tmpdir(), 'ecsnet-browser-test-'));
    allowedSite = await serveStatic(pageFiles);
    otherSite = await serveStatic(pageFiles);
    server = await startServer(serverBin, ['--ws-port', '0', '--ws-allowed-origins', allowedSite.origin,
      '--demo-entities', String(ENTITIES), '--checksum-interval', String(CHECKSUM_INTERVAL)]);
    browser = await launchChromium();
  });

  after(async () => {
    nodeClient?.session.close();
    await browser?.close();
    for (const child of children) {
      if (child.exitCode === null && child.signalCode === null) process.kill(child.pid, 'SIGKILL');
    }
    await server?.stop();
    await allowedSite?.close();
    await otherSite?.close();
    if (stateHome) rmSync(stateHome, { recursive: true, force: true });
  });

  async function openPage(site) {
    const page = await browser.newPage();
    const socketErrors = [];
    const pageErrors = [];
    page.on('websocket', (ws) => ws.on('socketerror', (e) => socketErrors.push(e)));
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    await page.goto(`${site.origin}/page.html?ws=ws://127.0.0.1:${server.wsPort}/`, { timeout: 15_000 });
    const state = () => page.evaluate(() => window.__ecsnet);
    const show = async () => {
      const { checks, ...rest } = await state();
      return `page: ${JSON.stringify({ ...rest, lastChecks: checks.slice(-3) })}; page errors: ${pageErrors.join('; ')}`;
    };
    return { page, state, show, socketErrors, pageErrors };
  }

  test('a page joins over WebSocket and sees the entity count and checksum of the C++ client and of a Node client over TCP, tick by tick',
    { timeout: 120_000 }, async () => {
      const browserPage = await openPage(allowedSite);
      nodeClient = await joinOverTcp(server.port);
      await pollUntil(async () => (await browserPage.state()).matched >= 1, 'the page to join and match a checksum', { show: browserPage.show });

      const cpp = await watchWithCppClient(server.port, 3, { XDG_STATE_HOME: stateHome }, children);
      const watching = cpp.find((o) => o.event === 'watching');
      const summaries = cpp.filter((o) => o.event === 'summary');
      const total = cpp.find((o) => o.event === 'total');
      assert.ok(watching && total && summaries.length >= 2, JSON.stringify(cpp));
      assert.equal(watching.entities, ENTITIES);
      assert.equal(total.checksums_mismatched, 0);
      assert.ok(total.checksums_matched >= 2, JSON.stringify(total));
      // Nothing spawned or destroyed while it watched: its entity count holds at every tick.
      assert.equal(total.spawned, 0);
      assert.equal(total.destroyed, 0);
      for (const s of summaries) assert.equal(s.entities, ENTITIES, JSON.stringify(s));
      const cppTicks = [...new Set(summaries.filter((s) => s.checksum === 'ok').map((s) => s.checksum_tick))];
      assert.ok(cppTicks.length >= 2, JSON.stringify(summaries));

      const lastTick = Math.max(...cppTicks);
      const page = await pollUntil(async () => {
        const s = await browserPage.state();
        return s.tick >= lastTick && nodeClient.checks.at(-1)?.tick >= lastTick ? s : null;
      }, `the page and the Node client to pass tick ${lastTick}`, { show: browserPage.show });

      assert.equal(page.state, 'joined');
      assert.equal(page.error, '');
      assert.equal(page.mismatched, 0);
      assert.deepEqual(browserPage.pageErrors, []);
      // The C++ client's mirror matched the server's checksum at these ticks: so did the page's,
      // with the same entity count.
      for (const tick of cppTicks) {
        const seen = page.checks.find((c) => c.tick === tick);
        assert.ok(seen, `the page has no checksum record at the C++ client's tick ${tick}: ${JSON.stringify(page.checks)}`);
        assert.deepEqual({ tick, matched: seen.matched, entities: seen.entities }, { tick, matched: true, entities: ENTITIES });
      }
      // The page (WebSocket) and the Node session (TCP) hold the same world at the same ticks.
      const common = page.checks.filter((c) => nodeClient.checks.some((n) => n.tick === c.tick));
      assert.ok(common.length >= 3, `common ticks: ${JSON.stringify(common)}`);
      for (const c of common) {
        assert.deepEqual(nodeClient.checks.find((n) => n.tick === c.tick), c);
        assert.equal(c.matched, true);
      }
      // The world moves: a value compared at another tick would differ.
      assert.ok(new Set(common.map((c) => c.checksum)).size > 1, 'the checksum changes from tick to tick');
      await browserPage.page.close();
    });

  test('a page from an origin not in --ws-allowed-origins cannot connect: the server answers 403 and the page reports it',
    { timeout: 60_000 }, async () => {
      const refused = await openPage(otherSite);
      // Chromium tells the page only that the connection failed; the 403 is in its network events.
      const page = await pollUntil(async () => {
        const s = await refused.state();
        return s.state === 'closed' && refused.socketErrors.length > 0 ? s : null;
      }, 'the refused page to close', { show: async () => `${await refused.show()}; socket errors: ${refused.socketErrors.join('; ')}` });
      assert.equal(page.joined, false);
      assert.match(page.error, /^cannot connect to ws:\/\/127\.0\.0\.1:\d+\//);
      assert.ok(refused.socketErrors.some((e) => /Unexpected response code: 403/.test(e)), refused.socketErrors.join('; '));
      await refused.page.close();
    });
});
