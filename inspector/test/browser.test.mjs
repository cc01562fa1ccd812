// The inspector in a real browser (Debian's chromium, headless, driven by playwright-core), as an
// operator opens it: the page served by ecsnet-server's admin endpoint at /inspector/, joined
// to /observe. It must show the world the server and the C++ client see (entity counts at a
// common tick), send its spawns through the same rules as any client, follow spawns and
// destroys made elsewhere, keep its checksum, refuse commands on a read-only server, and draw
// 10,000 entities (fps and frame times logged, not asserted).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { binary, getJson, launchChromium, pollUntil, runClient, startClient, startServer } from './support.mjs';

const serverBin = binary('ECSNET_SERVER_BIN', 'ecsnet-server');
const clientBin = binary('ECSNET_CLIENT_BIN', 'ecsnet-client');
const here = dirname(fileURLToPath(import.meta.url));
// The page as built (ctest passes the build's share/ecsnet/web/inspector; npm run build: dist/).
const inspectorDir = resolve(process.env.ECSNET_INSPECTOR_DIR ?? join(here, '../dist'));
const artifacts = resolve(process.env.ECSNET_ARTIFACTS_DIR ?? join(dirname(dirname(resolve(serverBin))), 'artifacts'));
const VIEWPORT = { width: 1400, height: 900 };

// The page's state, for failure messages.
const inspect = (page) => page.evaluate(() => {
  const i = window.ecsnetInspector;
  if (!i) return 'no window.ecsnetInspector';
  return JSON.stringify({ state: i.state(), closed: i.closedReason(), entities: i.entityCount(), tick: i.tick(), checksums: i.checksums(),
    writes: i.writesAllowed(), banner: document.querySelector('#banner').hidden ? '' : document.querySelector('#banner').textContent });
});

async function openInspector(browser, server, errors) {
  const page = await browser.newPage({ viewport: VIEWPORT });
  page.on('pageerror', (e) => errors.push(String(e)));
  // Through GET /, which redirects to /inspector/.
  await page.goto(`http://127.0.0.1:${server.adminPort}/`, { timeout: 30_000 });
  assert.equal(new URL(page.url()).pathname, '/inspector/');
  await page.waitForFunction(() => window.ecsnetInspector !== undefined, null, { timeout: 30_000 });
  const ready = await page.evaluate(() => Promise.race([
    window.ecsnetInspector.ready.then(() => 'ready', (e) => `failed: ${e.message}`),
    new Promise((r) => setTimeout(() => r('timed out'), 60_000)),
  ]));
  assert.equal(ready, 'ready', `${ready}; ${await inspect(page)}; page errors: ${errors.join('; ')}`);
  return page;
}

// The page's frame figures over `ms` of drawing, as one log line.
async function measureFrames(page, entities, ms) {
  const before = await page.evaluate(() => window.ecsnetInspector.framesDrawn());
  await page.waitForTimeout(ms);
  const m = await page.evaluate(() => {
    const i = window.ecsnetInspector;
    return { fps: i.fps(), frameMs: i.frameMs(), firstDrawMs: i.firstDrawMs(), bytesPerSecond: i.observerBytesPerSecond(), drawn: i.framesDrawn(), entities: i.entityCount() };
  });
  console.log(`inspector fps ${entities}: fps=${m.fps.toFixed(1)} frame_ms_avg=${m.frameMs.average.toFixed(2)} ` +
    `frame_ms_p95=${m.frameMs.p95.toFixed(2)} first_draw_ms=${m.firstDrawMs?.toFixed(0)} ` +
    `observer_bytes_per_s=${m.bytesPerSecond.toFixed(0)} redraws=${m.drawn - before} entities=${m.entities}`);
  return { ...m, redraws: m.drawn - before };
}

describe('the inspector served by ecsnet-server, writes allowed', () => {
  const ENTITIES = 1000;
  let server = null;
  let browser = null;
  let page = null;
  let stateHome = null;
  const errors = [];

  before(async () => {
    stateHome = mkdtempSync(join(tmpdir(), 'ecsnet-inspector-test-'));
    server = await startServer(serverBin, ['--demo-entities', String(ENTITIES), '--checksum-interval', '10',
      '--inspector-dir', inspectorDir, '--inspector-writes']);
    browser = await launchChromium();
    page = await openInspector(browser, server, errors);
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    if (stateHome) rmSync(stateHome, { recursive: true, force: true });
  });

  const client = (args) => runClient(clientBin, ['--port', String(server.port), ...args], { env: { XDG_STATE_HOME: stateHome } });
  const show = async () => `${await inspect(page)}; page errors: ${errors.join('; ')}`;
  const pageAt = (tick) => pollUntil(async () => {
    const s = await page.evaluate((t) => ({ tick: window.ecsnetInspector.tick(), count: window.ecsnetInspector.entityCountAt(t) }), tick);
    return s.tick >= tick ? s : null;
  }, `the page to reach tick ${tick}`, { show });

  test('the page shows the entity count of /status and of the C++ client at the same tick', { timeout: 120_000 }, async () => {
    const listed = await client(['list']);
    const cli = listed.find((o) => o.event === 'list');
    assert.equal(cli.entities, listed.filter((o) => o.event === 'entity').length);
    assert.equal((await pageAt(cli.tick)).count, cli.entities, `the page's count at the C++ client's tick ${cli.tick}`);

    const status = await getJson(`http://127.0.0.1:${server.adminPort}/status`);
    assert.equal(typeof status.entities, 'number', JSON.stringify(status));
    assert.equal((await pageAt(status.tick)).count, status.entities, `the page's count at /status's tick ${status.tick}`);
    assert.equal(status.entities, ENTITIES);
    assert.ok(status.observers >= 1, 'the page is an observer');
    assert.equal(status.clients, 0, 'an observer takes no player slot');
    await measureFrames(page, ENTITIES, 3000);
  });

  test("a spawn from the page's controls appears in ecsnet-client list, owned by the page", { timeout: 60_000 }, async () => {
    await page.fill('#spawn-values', '{"name": "from-page", "health": 42}');
    await page.click('#spawn-button');
    const result = await pollUntil(async () => {
      const text = await page.textContent('#spawn .result');
      return /^spawned \d+:\d+$/.test(text) || /error/.test(await page.getAttribute('#spawn .result', 'class')) ? text : null;
    }, 'the spawn result', { show });
    const entity = /^spawned (\d+:\d+)$/.exec(result)?.[1];
    assert.ok(entity, result);
    const listed = await client(['list']);
    const row = listed.find((o) => o.event === 'entity' && o.entity === entity);
    assert.ok(row, `${entity} not in ecsnet-client list: ${JSON.stringify(listed.slice(-3))}`);
    assert.equal(row.name, 'from-page');
    assert.equal(row.health, 42);
    assert.equal(typeof row.owner, 'number', 'owned by the page, not the server');
    assert.ok(row.position !== null, "placed at the view's centre");
    assert.equal(await page.evaluate((e) => window.ecsnetInspector.hasEntity(e), entity), true);
    // The page selected what it spawned: its panel shows the value.
    assert.equal(await page.textContent('#entity .entity-name'), entity);
  });

  test("the entity panel sets and destroys the page's own entity; another owner's is refused with NotOwner", { timeout: 60_000 }, async () => {
    const listed = await client(['list']);
    const own = listed.find((o) => o.event === 'entity' && o.name === 'from-page');
    assert.ok(own, 'the entity spawned by the page');
    const panelResult = async () => {
      const text = await pollUntil(async () => {
        const t = await page.textContent('#entity .result');
        return t && !t.endsWith('...') ? t : null;
      }, 'the panel command result', { show });
      return text;
    };
    await page.evaluate((e) => window.ecsnetInspector.select(e), own.entity);
    await page.selectOption('#entity select[name=set-type]', { label: 'health' });
    // The form is filled with the current value first.
    await pollUntil(async () => (await page.inputValue('#entity textarea[name=set-value]')) === '{"value":42}', 'the current health in the form', { show });
    await page.fill('#entity textarea[name=set-value]', '{"value": 7}');
    await page.click('#entity button[name=set]');
    assert.equal(await panelResult(), `set ${own.entity} health`);
    const after = (await client(['list'])).find((o) => o.event === 'entity' && o.entity === own.entity);
    assert.equal(after?.health, 7);
    await pollUntil(async () => /value 7/.test(await page.textContent('#entity .components')), 'the panel to follow the new value', { show });

    await page.click('#entity button[name=destroy]');
    assert.equal(await panelResult(), `destroyed ${own.entity}`);
    const gone = await client(['list']);
    assert.equal(gone.find((o) => o.event === 'entity' && o.entity === own.entity), undefined, 'destroyed on the server');

    await page.evaluate(() => window.ecsnetInspector.select('0:1')); // a demo entity: the server's
    await page.click('#entity button[name=destroy]');
    assert.match(await panelResult(), /^NotOwner: /);
    assert.equal(await page.evaluate(() => window.ecsnetInspector.hasEntity('0:1')), true);
  });

  test('an entity spawned and then destroyed by the C++ client appears, then disappears, in the page', { timeout: 60_000 }, async () => {
    const spawned = (await client(['--name', 'cli-probe', 'spawn', '--name', 'probe', '--x', '5', '--y', '5'])).find((o) => o.event === 'spawned');
    assert.ok(spawned);
    const has = () => page.evaluate((e) => window.ecsnetInspector.hasEntity(e), spawned.entity);
    await pollUntil(has, `${spawned.entity} to appear in the page`, { show });
    // The same --name and state directory: the same owner (its resume key), who may destroy it.
    const destroyed = (await client(['--name', 'cli-probe', 'destroy', spawned.entity])).find((o) => o.event === 'destroyed');
    assert.equal(destroyed?.entity, spawned.entity);
    await pollUntil(async () => !(await has()), `${spawned.entity} to disappear from the page`, { show });
  });

  test('the checksum stayed OK throughout; a screenshot is saved', { timeout: 60_000 }, async () => {
    const first = await page.evaluate(() => window.ecsnetInspector.checksums());
    // At least two more server Checksums (every 10 ticks) compared after all of the above.
    await pollUntil(async () => (await page.evaluate(() => window.ecsnetInspector.checksums())).matched >= first.matched + 2,
      'two more checksums', { show });
    const c = await page.evaluate(() => window.ecsnetInspector.checksums());
    assert.equal(c.mismatched, 0, JSON.stringify(c));
    assert.equal(c.resyncs, 0, JSON.stringify(c));
    assert.equal(await page.evaluate(() => window.ecsnetInspector.checksumOk()), true);
    assert.deepEqual(errors, []);
    mkdirSync(artifacts, { recursive: true });
    await page.screenshot({ path: join(artifacts, 'inspector.png') });
    console.log(`screenshot: ${join(artifacts, 'inspector.png')}`);
  });
});

describe('the inspector of a read-only server', () => {
  let server = null;
  let browser = null;

  before(async () => {
    server = await startServer(serverBin, ['--demo-entities', '50', '--inspector-dir', inspectorDir]);
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test('the controls are disabled and a command gets ReadOnly', { timeout: 90_000 }, async () => {
    const errors = [];
    const page = await openInspector(browser, server, errors);
    await pollUntil(async () => (await page.evaluate(() => window.ecsnetInspector.writesAllowed())) === false,
      'the page to read inspector.writes from /status', { show: () => inspect(page) });
    assert.equal(await page.isDisabled('#spawn-button'), true);
    assert.match(await page.textContent('#spawn .hint'), /read-only/);
    await page.evaluate(() => window.ecsnetInspector.select('0:1'));
    assert.equal(await page.isDisabled('#entity button[name=destroy]'), true);
    // Past the disabled controls, straight to the server: refused.
    const refused = await page.evaluate(() => window.ecsnetInspector.spawn({ name: 'nope' }).then(
      (e) => `spawned ${e}`, (e) => `${e.codeName}: ${e.message}`));
    assert.match(refused, /^ReadOnly: .*--inspector-writes/);
    const destroy = await page.evaluate(() => window.ecsnetInspector.destroy('0:1').then(() => 'destroyed', (e) => e.codeName));
    assert.equal(destroy, 'ReadOnly');
    assert.equal(await page.evaluate(() => window.ecsnetInspector.hasEntity('0:1')), true);
    assert.deepEqual(errors, []);
  });
});

describe('the inspector of a server with --inspector-token and interest management', () => {
  let server = null;
  let browser = null;
  let watcher = null;

  before(async () => {
    server = await startServer(serverBin, ['--demo-entities', '20', '--inspector-dir', inspectorDir, '--inspector-token', 's3cret',
      '--interest-radius', '300']);
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await watcher?.stop();
    await server?.stop();
  });

  test('the token from the URL fragment opens /observe and /clients and leaves the address bar; the whole world, the grid and a client\'s interest circle; without the token the page says why', { timeout: 90_000 }, async () => {
    const errors = [];
    const page = await browser.newPage({ viewport: VIEWPORT });
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`http://127.0.0.1:${server.adminPort}/inspector/#token=s3cret`, { timeout: 30_000 });
    await page.waitForFunction(() => window.ecsnetInspector !== undefined, null, { timeout: 30_000 });
    assert.equal(await page.evaluate(() => window.ecsnetInspector.ready.then(() => 'ready', (e) => e.message)), 'ready');
    assert.equal(new URL(page.url()).hash, '', 'the token is not left in the address bar');
    assert.equal(await page.evaluate(() => window.ecsnetInspector.entityCount()), 20);
    // /clients answered (with the token as a Bearer header): the page lists itself.
    await pollUntil(async () => /inspector \(observer\)/.test(await page.textContent('#stats .clients')), 'the page in the clients table',
      { show: async () => `${await page.textContent('#stats .problem')}` });
    assert.equal(await page.textContent('#stats .problem'), '');
    await page.reload(); // the token kept in sessionStorage
    assert.equal(await page.evaluate(() => window.ecsnetInspector.ready.then(() => 'ready', (e) => e.message)), 'ready');
    assert.equal(await page.evaluate(() => window.ecsnetInspector.entityCount()), 20, 'an observer sees the whole world');
    // The grid cells (half the radius by default) and, for a client clicked in the table, its
    // interest circle.
    await pollUntil(async () => (await page.evaluate(() => window.ecsnetInspector.gridCell())) === 150, 'the grid cell size from /status',
      { show: () => inspect(page) });
    watcher = startClient(clientBin, ['--port', String(server.port), '--name', 'watcher', 'watch', '--focus', '100,50', '--seconds', '60']);
    await pollUntil(async () => (await page.$$('#stats .clients tr[data-session]')).length >= 2 &&
      /watcher/.test(await page.textContent('#stats .clients')), 'the watcher in the clients table');
    await page.locator('#stats .clients tr[data-session]', { hasText: 'watcher' }).click();
    // /clients is published once a second: the focus shows in a later poll.
    await pollUntil(() => page.evaluate(() => window.ecsnetInspector.interestCircle()), "the watcher's interest circle",
      { show: () => page.textContent('#stats .clients') });
    assert.deepEqual(await page.evaluate(() => window.ecsnetInspector.interestCircle()), { x: 100, y: 50, radius: 300 });

    const without = await (await browser.newContext({ viewport: VIEWPORT })).newPage();
    await without.goto(`http://127.0.0.1:${server.adminPort}/inspector/`, { timeout: 30_000 });
    await without.waitForFunction(() => window.ecsnetInspector !== undefined, null, { timeout: 30_000 });
    const refused = await without.evaluate(() => Promise.race([
      window.ecsnetInspector.ready.then(() => 'ready', (e) => `refused: ${e.message}`),
      new Promise((r) => setTimeout(() => r('timed out'), 30_000)),
    ]));
    assert.match(refused, /^refused: /);
    assert.equal(await without.evaluate(() => window.ecsnetInspector.state()), 'closed');
    assert.equal(await without.isVisible('#banner'), true);
    await pollUntil(async () => /clients: .*401/.test(await without.textContent('#stats .problem')), 'the 401 of /clients shown',
      { show: async () => `${await without.textContent('#stats .problem')}` });
    assert.deepEqual(errors, []);
  });
});

describe('the inspector drawing 10,000 entities', () => {
  const ENTITIES = 10_000;
  let server = null;
  let browser = null;

  before(async () => {
    server = await startServer(serverBin, ['--demo-entities', String(ENTITIES), '--inspector-dir', inspectorDir]);
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test('frames are drawn; fps, frame times, first draw and the observer bytes per second are logged', { timeout: 180_000 }, async () => {
    const errors = [];
    const page = await openInspector(browser, server, errors);
    await pollUntil(async () => (await page.evaluate(() => window.ecsnetInspector.entityCount())) === ENTITIES,
      `${ENTITIES} entities in the page`, { show: () => inspect(page), timeoutMs: 60_000 });
    const m = await measureFrames(page, ENTITIES, 5000);
    assert.ok(m.redraws >= 2, `the moving world was redrawn: ${JSON.stringify(m)}`);
    assert.ok(m.frameMs.frames > 0 && m.firstDrawMs > 0, JSON.stringify(m));
    assert.equal(await page.evaluate(() => window.ecsnetInspector.checksums().mismatched), 0);
    assert.deepEqual(errors, []);
    mkdirSync(artifacts, { recursive: true });
    await page.screenshot({ path: join(artifacts, 'inspector-10000.png') });
  });
});
