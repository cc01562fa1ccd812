// The arena page in Debian's headless Chromium, served by arena-server's WebSocket port itself
// (--web-root, by default <exe dir>/../share/ecsnet/web/arena: the build's copy). The page
// joins, finds its ship, flies it with the keyboard; the C++ client (ecsnet-client shell, a
// second player) checks on the server that the ship moved under thrust and came to rest when
// the key was released; its own ship appears in the page; a reload resumes the same ship with
// the resume key from localStorage. A screenshot goes to $ECSNET_ARTIFACTS_DIR/arena.png.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { CppShell, launchChromium, pollUntil, requiredBinary, startArenaServer } from './support.mjs';

const serverBin = requiredBinary('ECSNET_ARENA_SERVER_BIN', 'arena-server');
const clientBin = requiredBinary('ECSNET_CLIENT_BIN', 'ecsnet-client');
// The build's artifacts folder: <build>/bin/arena-server -> <build>/artifacts.
const artifacts = process.env.ECSNET_ARTIFACTS_DIR || join(dirname(dirname(resolve(serverBin))), 'artifacts');

// No asteroids: nothing but the keyboard moves or wrecks a ship, so what the server shows is
// the page's doing. The whole small arena is in every player's view.
const SERVER_ARGS = ['--arena-size', '800', '--asteroids', '0', '--interest-radius', '1200', '--checksum-interval', '10',
  ...(process.env.ECSNET_ARENA_WEB_ROOT ? ['--web-root', process.env.ECSNET_ARENA_WEB_ROOT] : [])];

describe('the arena page in headless Chromium', () => {
  let server = null;
  let browser = null;
  let cpp = null;
  let stateHome = null;

  before(async () => {
    stateHome = mkdtempSync(join(tmpdir(), 'ecsnet-arena-web-test-'));
    server = await startArenaServer(serverBin, SERVER_ARGS);
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await cpp?.stop();
    await server?.stop();
    if (stateHome) rmSync(stateHome, { recursive: true, force: true });
  });

  // The page's ship as the server sends it to the C++ client.
  async function onServer(ship) {
    const { entities } = await cpp.list();
    return entities.find((e) => e.index === ship.index && e.version === ship.version) ?? null;
  }

  test('the page joins, flies its ship, sees another player, and gets the same ship back after a reload',
    { timeout: 180_000 }, async () => {
      const origin = `http://127.0.0.1:${server.wsPort}`;
      const index = await fetch(`${origin}/`, { signal: AbortSignal.timeout(5000) });
      const html = await index.text();
      assert.equal(index.status, 200, `arena-server serves no page at / (build the web app, games/arena/web/README.md): ${html}`);
      assert.match(html, /arena\.js/);

      const page = await browser.newPage({ viewport: { width: 1000, height: 700 } });
      const pageErrors = [];
      page.on('pageerror', (e) => pageErrors.push(String(e)));
      const probe = () => page.evaluate(() => ({
        ready: window.arena?.ready, state: window.arena?.state, problem: window.arena?.problem, clientId: window.arena?.clientId,
        ship: window.arena?.myShip(), ships: window.arena?.shipCount(), stats: window.arena?.stats(),
      }));
      const show = async () => `page: ${JSON.stringify(await probe().catch((e) => String(e)))}; page errors: ${pageErrors.join('; ')}; ` +
        `server log: ${server.log().slice(-2000)}`;
      // The page predicts with the server's size (its walls).
      await page.goto(`${origin}/?arena-size=800`, { timeout: 15_000 });

      // Joined, with its own ship, alone in the arena.
      const joined = await pollUntil(async () => { const s = await probe(); return s.ready && s.ship ? s : null; },
        'the page to join and find its ship', { show });
      assert.equal(joined.state, 'joined');
      assert.equal(joined.ships, 1);
      assert.deepEqual(joined.stats, { score: 0, ammo: 12, deaths: 0 });
      const ship = { index: joined.ship.index, version: joined.ship.version };

      // A second player: the C++ client's ship appears in the page.
      cpp = CppShell.start(clientBin, server.port, { XDG_STATE_HOME: stateHome });
      await pollUntil(async () => (await probe()).ships >= 2, 'the C++ player\'s ship in the page', { show });
      const seen = await pollUntil(async () => (await onServer(ship)), 'the page\'s ship in the C++ client\'s view', { show });
      assert.equal(seen.owner, joined.clientId, JSON.stringify(seen));
      assert.deepEqual(seen.velocity, { x: 0, y: 0 }, 'at rest before any key');

      // Thrust: the server moves the ship along its heading; released, it comes to rest.
      const start = seen.position;
      await page.keyboard.down('ArrowUp');
      let moving;
      try {
        await page.waitForTimeout(1000);
        moving = await pollUntil(async () => {
          const e = await onServer(ship);
          return e && (e.velocity.x !== 0 || e.velocity.y !== 0) && (e.position.x !== start.x || e.position.y !== start.y) ? e : null;
        }, 'the server to move the ship under thrust', { timeoutMs: 5000, show });
      } finally {
        await page.keyboard.up('ArrowUp');
      }
      const along = moving.velocity.x * moving.heading.x + moving.velocity.y * moving.heading.y;
      const speed = Math.hypot(moving.velocity.x, moving.velocity.y);
      assert.ok(along > 0.9 * speed, `the velocity follows the heading: ${JSON.stringify(moving)}`);
      const rest = await pollUntil(async () => {
        const e = await onServer(ship);
        return e && e.velocity.x === 0 && e.velocity.y === 0 ? e : null;
      }, 'the ship to come to rest once the key is up', { timeoutMs: 30_000, intervalMs: 250, show });
      assert.notDeepEqual(rest.position, start);
      assert.notEqual(rest.ship, 2, 'not wrecked');
      const flown = await probe();
      assert.equal(flown.stats.deaths, 0);

      // A reload presents the resume key from localStorage: the same owner, the same ship.
      await page.reload({ timeout: 15_000 });
      const back = await pollUntil(async () => { const s = await probe(); return s.ready && s.ship ? s : null; },
        'the reloaded page to join and find its ship', { show });
      assert.deepEqual({ index: back.ship.index, version: back.ship.version }, ship);
      assert.equal(back.clientId, joined.clientId);
      assert.deepEqual({ x: back.ship.x, y: back.ship.y }, rest.position);
      await pollUntil(async () => (await probe()).ships >= 2, 'the C++ player\'s ship after the reload', { show });

      // A few bullets in the picture, then the screenshot for people to look at.
      await page.keyboard.down('Space');
      try {
        await pollUntil(async () => (await probe()).stats?.ammo < 12, 'a shot', { timeoutMs: 5000, show });
      } finally {
        await page.keyboard.up('Space');
      }
      mkdirSync(artifacts, { recursive: true });
      await page.screenshot({ path: join(artifacts, 'arena.png') });
      assert.deepEqual(pageErrors, []);
      await page.close();
    });

  test('prediction: the page flies and fires its ship through the WebAssembly module; ?prediction=off plays without',
    { timeout: 120_000 }, async () => {
      const origin = `http://127.0.0.1:${server.wsPort}`;
      const page = await browser.newPage({ viewport: { width: 800, height: 600 } });
      const pageErrors = [];
      page.on('pageerror', (e) => pageErrors.push(String(e)));
      const probe = () => page.evaluate(() => ({ ready: window.arena?.ready, prediction: window.arena?.prediction() }));
      const show = async () => `page: ${JSON.stringify(await probe().catch((e) => String(e)))}; page errors: ${pageErrors.join('; ')}`;
      await page.goto(`${origin}/?arena-size=800&name=predictor`, { timeout: 15_000 });
      const on = await pollUntil(async () => { const s = await probe(); return s.ready && s.prediction?.tracked ? s : null; },
        'the page to predict its ship', { show });
      assert.equal(on.prediction.on, true, JSON.stringify(on));
      assert.equal(await page.textContent('#predict-state'), 'on');

      // Turning and firing: the prediction runs ahead of the server, its bullets are matched.
      await page.keyboard.down('ArrowLeft');
      await page.keyboard.down('Space');
      let flown;
      try {
        flown = await pollUntil(async () => {
          const s = (await probe()).prediction;
          return s.stats.spawnsMatched >= 3 && s.stats.checks >= 60 ? s : null;
        }, 'three predicted bullets matched with the server\'s', { timeoutMs: 20_000, show });
      } finally {
        await page.keyboard.up('Space');
        await page.keyboard.up('ArrowLeft');
      }
      // The figures, in the test's output whether it passes or not.
      console.log(`prediction: ${JSON.stringify(flown)}`);
      assert.ok(flown.tick > flown.serverTick, `the predicted tick ${flown.tick} is ahead of the server's ${flown.serverTick}`);
      assert.equal(flown.stats.systemFailures, 0);
      assert.ok(flown.stats.mispredictions <= 3, JSON.stringify(flown));
      // More refusals only when inputs reached the server late (a loaded machine): its acks
      // corrected them, and the rerun undid the shots of those ticks (docs/PREDICTION.md).
      assert.ok(flown.stats.spawnsRefused <= 1 || flown.stats.inputsCorrected > 0, JSON.stringify(flown.stats));
      assert.match(await page.textContent('#mispredictions'), /^\d+ \/ \d+$/);
      assert.deepEqual(pageErrors, []);

      // Off: the same page, without the module.
      await page.goto(`${origin}/?arena-size=800&prediction=off`, { timeout: 15_000 });
      const off = await pollUntil(async () => { const s = await probe(); return s.ready ? s : null; }, 'the page without prediction', { show });
      assert.deepEqual(off.prediction, { on: false, why: 'off (?prediction=off)' });
      assert.equal(await page.textContent('#predict-state'), 'off (?prediction=off)');
      await page.close();
    });
});
