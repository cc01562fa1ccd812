// The inspector's logic without a browser: the world model kept by the SDK mirror's events (on
// frames built with the SDK's test builders and on a stream recorded from a real server),
// field readers against the SDK's decoder, colours, the camera, the table's filter and sort,
// the frame and byte figures. Needs npm ci here and the SDK built (npm run build in sdk/ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { ChecksumHasher, Mirror, decodeServerFrame, makeValue, readValue } from '@ecsnet/client';
import { delta, f32, i32, recorded, snapshot, welcome } from '../../sdk/ts/test/support/frames.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const outDir = join(here, '../node_modules/.cache/inspector-unit');
mkdirSync(outDir, { recursive: true });
await build({
  entryPoints: [join(here, 'logic.ts')], outfile: join(outDir, 'logic.mjs'), bundle: true, format: 'esm',
  platform: 'node', external: ['@ecsnet/client'], logLevel: 'warning',
});
const L = await import(pathToFileURL(join(outDir, 'logic.mjs')).href);

const hasher = await ChecksumHasher.create();

// A mirror whose events feed a WorldModel, as the page wires the session's.
function watched(frame = welcome()) {
  const mirror = new Mirror(hasher);
  mirror.setSchema(decodeServerFrame(frame).components);
  const world = new L.WorldModel(mirror);
  const changed = [];
  world.onEntityChanged = (i) => changed.push(i);
  mirror.events = {
    onSpawn: (e) => world.added(e), onEnter: (e) => world.added(e),
    onUpdate: (e, t) => world.updated(e, t), onRemove: (e, t) => world.removed(e, t),
    onDestroy: (e) => world.gone(e), onLeave: (e) => world.gone(e),
  };
  const apply = (bytes) => assert.ok(mirror.apply(decodeServerFrame(bytes)), mirror.error);
  return { mirror, world, apply, changed };
}

// The world model says what the mirror says: the same live entities, positions, owners and
// component sets.
function assertAgrees(world, mirror) {
  const live = [...world.live.subarray(0, world.count)].sort((a, b) => a - b);
  assert.deepEqual(live, mirror.entities().map((e) => e.index));
  for (const e of mirror.entities()) {
    assert.ok(world.isLive(e), `${e.index}:${e.version} live`);
    const p = mirror.get(e, world.positionType);
    assert.equal(world.placed[e.index], p === undefined ? 0 : 1, `${e.index} placed`);
    if (p !== undefined) assert.deepEqual([world.xs[e.index], world.ys[e.index]], [p.x, p.y]);
    assert.equal(world.owners[e.index], mirror.get(e, 'owner')?.client ?? 0);
    for (const t of mirror.types.types) assert.equal(world.has(e.index, t.id), mirror.has(e, t.id), `${e.index} has ${t.name}`);
  }
}

test('number readers agree with the SDK decoder on every field type, at unaligned bit offsets', () => {
  const info = decodeServerFrame(welcome()).components.find('packed');
  for (const [a, b] of [[0, 0], [-1024, 1024], [3.25, -7.5], [1023.9921875, -0.0078125]]) {
    const v = makeValue(info, { a, b });
    assert.deepEqual({ a: L.numberReader(info, 'a')(v), b: L.numberReader(info, 'b')(v) }, readValue(info, v));
  }
  const flag = decodeServerFrame(welcome()).components.find('flag');
  for (const level of [-32768, -1, 0, 1, 32767]) {
    const v = makeValue(flag, { on: true, level });
    assert.equal(L.numberReader(flag, 'level')(v), level);
    assert.equal(L.numberReader(flag, 'on')(v), 1);
  }
  const types = [
    { name: 'wide', fields: [['pad', 5, 16], ['d', 12, 64], ['l', 9, 64], ['u', 8, 32], ['i', 7, 32], ['f', 11, 32]] },
  ];
  const wide = decodeServerFrame(welcome({ types })).components.find('wide');
  const value = { pad: -3, d: -1234.5678, l: -(2n ** 40n) - 5n, u: 4000000000, i: -2000000000, f: 0.1 };
  const v = makeValue(wide, value);
  const decoded = readValue(wide, v);
  for (const name of ['pad', 'd', 'u', 'i', 'f']) assert.equal(L.numberReader(wide, name)(v), decoded[name], name);
  assert.equal(L.numberReader(wide, 'l')(v), Number(decoded.l));
  assert.equal(L.numberReader(wide, 'missing'), null);
  assert.equal(L.numberReader(decodeServerFrame(welcome()).components.find('name'), 'x'), null, 'a string type has no fields');
});

test('position types: numeric x and y, a type named position first', () => {
  const types = [
    { name: 'owner', writer: 0, fields: [['client', 8, 32]] },
    { name: 'target', fields: [['x', 12, 64], ['y', 12, 64]] },
    { name: 'label', maxBytes: 8 },
    { name: 'Position', fields: [['x', 11, 32], ['y', 11, 32], ['z', 11, 32]] },
    { name: 'half', fields: [['x', 11, 32]] },
  ];
  const schema = decodeServerFrame(welcome({ types })).components;
  assert.deepEqual(L.positionTypes(schema.types).map((t) => t.name), ['Position', 'target']);
});

test('the world model follows snapshot and deltas: spawns, moves, owners, removals, destroys', () => {
  const { mirror, world, apply, changed } = watched();
  // owner 0, position 1, velocity 2, health 3, name 4
  apply(snapshot({ tick: 10n, groups: [
    { at: { runs: [[0, 3]] }, versions: [1, 1, 1], columns: [{ type: 1, values: f32(0, 0, 1, 1, 2, 2) }, { type: 4, strings: ['a', 'b', 'c'] }] },
    { at: { list: [7] }, versions: [3], columns: [{ type: 0, values: i32(5) }, { type: 3, values: i32(9) }] },
  ] }));
  assert.equal(world.count, 4);
  assert.equal(world.positionType, 1);
  assertAgrees(world, mirror);
  assert.equal(world.placed[7], 0, 'no position: not drawn');
  assert.equal(world.entityAt(-1), null, 'no selection');
  assert.equal(world.entityAt(6), null);
  assert.deepEqual(world.entityAt(7), { index: 7, version: 3 });
  assert.equal(world.owners[7], 5);
  const revision = world.revision;
  const membership = world.membershipRevision;

  changed.length = 0;
  apply(delta({ tick: 11n, updated: [{ type: 1, at: { list: [2] }, values: f32(-50.5, 75.25) }] }));
  assert.deepEqual([world.xs[2], world.ys[2]], [-50.5, 75.25]);
  assert.deepEqual(changed, [2]);
  assert.ok(world.revision > revision);
  assert.equal(world.membershipRevision, membership, 'a move changes no row set');

  apply(delta({
    tick: 12n, destroyed: [[1, 1]],
    spawned: [{ at: { list: [1, 9] }, versions: [2, 1], columns: [{ type: 0, values: i32(3, 4) }, { type: 1, values: f32(9, 9, 8, 8) }] }],
    updated: [{ type: 1, at: { list: [7] }, values: f32(4, 4) }, { type: 0, at: { list: [0] }, values: i32(12) }],
    removed: [{ type: 4, at: { list: [0] } }],
  }));
  assertAgrees(world, mirror);
  assert.equal(world.count, 5);
  assert.equal(world.isLive({ index: 1, version: 1 }), false, 'the old version is gone');
  assert.equal(world.placed[7], 1, 'gained a position');
  assert.equal(world.owners[0], 12, 'gained an owner');
  assert.equal(world.has(0, 4), false);
  assert.ok(world.membershipRevision > membership);

  apply(delta({ tick: 13n, destroyed: [[9, 1], [0, 1]], removed: [{ type: 1, at: { list: [7] } }, { type: 0, at: { list: [1] } }] }));
  assertAgrees(world, mirror);
  assert.equal(world.count, 3);
  assert.equal(world.placed[7], 0);
  assert.equal(world.owners[1], 0);

  // Counts by tick: 4 from the snapshot's tick, 5 at 12, 3 at 13; nothing ahead of the mirror.
  assert.deepEqual([10, 11, 12, 13].map((t) => world.countAt(t)), [4, 4, 5, 3]);
  assert.equal(world.countAt(9), null);
  assert.equal(world.countAt(14), null);
});

test('a resync snapshot and a different schema: the model matches the mirror again', () => {
  const { mirror, world, apply } = watched();
  apply(snapshot({ tick: 5n, groups: [{ at: { runs: [[0, 3]] }, versions: [1, 1, 1], columns: [{ type: 1, values: f32(1, 1, 2, 2, 3, 3) }] }] }));
  apply(snapshot({ tick: 40n, groups: [
    { at: { list: [1, 4] }, versions: [1, 2], columns: [{ type: 1, values: f32(7, 7, 4, 4) }, { type: 3, values: i32(1, 2) }] },
  ] }));
  assertAgrees(world, mirror);
  assert.equal(world.count, 2);
  assert.equal(world.countAt(40), 2);

  const types = [{ name: 'owner', writer: 0, fields: [['client', 8, 32]] }, { name: 'spot', fields: [['x', 12, 64], ['y', 12, 64]] }];
  mirror.setSchema(decodeServerFrame(welcome({ types })).components);
  apply(snapshot({ tick: 50n, groups: [{ at: { list: [3] }, versions: [1], columns: [{ type: 1, values: new Uint8Array(new Float64Array([0.5, -0.25]).buffer) }] }] }));
  assert.equal(world.count, 1, 'what the old schema held is forgotten');
  assertAgrees(world, mirror);
  assert.deepEqual([world.xs[3], world.ys[3]], [0.5, -0.25]);
});

for (const file of ['demo-stream.bin', 'arena-stream.bin']) {
  test(`a stream recorded from a real server (${file}), replayed: the model agrees with the mirror after every message`, () => {
    const frames = recorded(file);
    const { mirror, world } = watched(frames[0]);
    let applied = 0;
    for (const bytes of frames.slice(1)) {
      const message = decodeServerFrame(bytes);
      if (message.kind !== 'snapshot' && message.kind !== 'delta' && message.kind !== 'checksum') continue;
      assert.ok(mirror.apply(message), mirror.error);
      assertAgrees(world, mirror);
      ++applied;
    }
    assert.ok(applied >= 5 && world.count > 0, `${applied} messages, ${world.count} entities`);
    assert.ok(mirror.stats.checksumsMatched > 0);
    // A rebuild from the mirror gives the same model.
    const again = new L.WorldModel(mirror);
    again.rebuild();
    assertAgrees(again, mirror);
    assert.equal(again.count, world.count);
  });
}

test('the table: a column per field, filter by type and owner, sort by value with missing values last', () => {
  const { world, apply } = watched();
  apply(snapshot({ tick: 1n, groups: [
    { at: { runs: [[0, 3]] }, versions: [1, 1, 1], columns: [{ type: 1, values: f32(3, 0, -1, 5, 2, 9) }, { type: 4, strings: ['bob', 'al', 'cy'] }] },
    { at: { list: [3, 4] }, versions: [1, 2], columns: [{ type: 0, values: i32(2, 2) }, { type: 3, values: i32(-4, 8) }] },
  ] }));
  const columns = L.tableColumns(world.types);
  assert.deepEqual(columns.map((c) => c.key).slice(0, 6), ['entity', 'owner', 'position.x', 'position.y', 'velocity.x', 'velocity.y']);
  assert.ok(columns.some((c) => c.key === 'health') && columns.some((c) => c.key === 'name'));
  assert.ok(!columns.some((c) => c.key.startsWith('owner.')), 'the owner has its own column');

  const rows = (q) => [...L.selectRows(world, columns, { ...L.defaultQuery(), ...q })];
  assert.deepEqual(rows({}), [0, 1, 2, 3, 4]);
  assert.deepEqual(rows({ descending: true }), [4, 3, 2, 1, 0]);
  assert.deepEqual(rows({ sortKey: 'position.x' }), [1, 2, 0, 3, 4], 'no position: last, by index');
  assert.deepEqual(rows({ sortKey: 'position.x', descending: true }), [0, 2, 1, 3, 4]);
  assert.deepEqual(rows({ sortKey: 'name' }), [1, 0, 2, 3, 4]);
  assert.deepEqual(rows({ sortKey: 'health' }), [3, 4, 0, 1, 2]);
  assert.deepEqual(rows({ sortKey: 'owner', descending: true }), [3, 4, 0, 1, 2]);
  assert.deepEqual(rows({ withType: 3 }), [3, 4]);
  assert.deepEqual(rows({ owner: 0 }), [0, 1, 2]);
  assert.deepEqual(rows({ owner: 2, withType: 1 }), []);

  const cell = (i, key) => L.cellText(world, i, columns.find((c) => c.key === key));
  assert.deepEqual([cell(4, 'entity'), cell(4, 'owner'), cell(0, 'owner'), cell(1, 'position.y'), cell(3, 'health'), cell(2, 'name'), cell(3, 'name')],
    ['4:2', '2', 'server', '5', '-4', 'cy', '']);
});

test('colours: the server one colour, owners cycling through the palette; by component: with and without', () => {
  assert.equal(L.ownerColour(0), 0);
  const n = L.OWNER_COLOURS.length;
  assert.deepEqual([1, 2, n, n + 1].map(L.ownerColour), [1, 2, n, 1]);
  const { world, apply } = watched();
  apply(snapshot({ tick: 1n, groups: [
    { at: { list: [0] }, versions: [1], columns: [{ type: 0, values: i32(2) }, { type: 3, values: i32(1) }] },
    { at: { list: [1] }, versions: [1], columns: [{ type: 1, values: f32(0, 0) }] },
  ] }));
  assert.deepEqual([0, 1].map((i) => L.colourOf(world, i, { by: 'owner' })), [2, 0]);
  assert.deepEqual([0, 1].map((i) => L.colourOf(world, i, { by: 'component', type: 3 })), [1, 0]);
  assert.equal(L.palette({ by: 'component', type: 3 }).length, 2);
});

test('the camera: world and screen are inverse, zoom keeps the point under the cursor, fit and pick', () => {
  const c = new L.Camera();
  Object.assign(c, { width: 800, height: 600, zoom: 2, centreX: 10, centreY: -5 });
  assert.deepEqual([c.screenX(10), c.screenY(-5)], [400, 300]);
  assert.ok(c.screenY(0) < 300, 'y grows upwards');
  const [wx, wy] = [c.worldX(123), c.worldY(456)];
  c.zoomAt(123, 456, 3.5);
  assert.ok(Math.abs(c.worldX(123) - wx) < 1e-9 && Math.abs(c.worldY(456) - wy) < 1e-9);
  c.panBy(10, 20);
  assert.ok(Math.abs(c.worldX(133) - wx) < 1e-9 && Math.abs(c.worldY(476) - wy) < 1e-9, 'dragging moves the world with the pointer');

  const { world, apply } = watched();
  apply(snapshot({ tick: 1n, groups: [{ at: { runs: [[0, 3]] }, versions: [1, 1, 1], columns: [{ type: 1, values: f32(-100, -50, 100, 50, 0, 0) }] }] }));
  assert.ok(c.fit(world));
  for (const i of [0, 1]) {
    const [sx, sy] = [c.screenX(world.xs[i]), c.screenY(world.ys[i])];
    assert.ok(sx > 0 && sx < 800 && sy > 0 && sy < 600, `entity ${i} in view after fit`);
  }
  assert.equal(L.pickNearest(world, c, c.screenX(100) + 3, c.screenY(50) - 2, 10), 1);
  assert.equal(L.pickNearest(world, c, c.screenX(50), c.screenY(25), 10), -1, 'nothing within the radius');
});

test('frame figures: fps over the last second, average and p95 of the recent frames; bytes per second', () => {
  const f = new L.FrameTimes(100);
  for (let k = 0; k < 100; ++k) f.record(k * 20, k === 99 ? 30 : 2); // 50 fps, one slow frame
  assert.ok(Math.abs(f.fps(99 * 20) - 50) < 1e-9, String(f.fps(99 * 20)));
  const ms = f.frameMs();
  assert.equal(ms.frames, 100);
  assert.ok(Math.abs(ms.average - 2.28) < 1e-9);
  assert.equal(ms.p95, 2);
  for (let k = 0; k < 10; ++k) f.record(2000 + k, 40);
  assert.equal(f.frameMs().p95, 40, 'the ring keeps the recent frames');

  const r = new L.ByteRate(1000);
  r.sample(0, 0);
  r.sample(500, 500);
  assert.equal(r.perSecond, 0, 'no complete window yet');
  r.sample(3000, 1500);
  assert.equal(r.perSecond, 2000);
});

test('command input: entities as INDEX:VERSION, values as a JSON object; errors say what is wrong', () => {
  assert.deepEqual(L.parseEntity(' 12:3 '), { index: 12, version: 3 });
  assert.throws(() => L.parseEntity('12'), /INDEX:VERSION/);
  assert.deepEqual(L.parseValues(''), {});
  assert.deepEqual(L.parseValues('{"position": {"x": 1, "y": 2}, "name": "p"}'), { position: { x: 1, y: 2 }, name: 'p' });
  assert.throws(() => L.parseValues('[1]'), /JSON object/);
  assert.throws(() => L.parseValues('{x'), /not JSON/);
  assert.equal(L.describeError({ codeName: 'ReadOnly', message: 'the inspector is read-only' }), 'ReadOnly: the inspector is read-only');
  const types = decodeServerFrame(welcome()).components.types;
  assert.deepEqual(L.withFieldNames(types, { health: 5, name: 'n', position: { x: 1, y: 2 }, flag: 1, unknown: 3 }),
    { health: { value: 5 }, name: 'n', position: { x: 1, y: 2 }, flag: 1, unknown: 3 }, 'only a one-field type takes a bare value');
});
