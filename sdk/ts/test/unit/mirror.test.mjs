import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChecksumHasher, Mirror, decodeServerFrame, makeValue } from '../../dist/ecsnet.node.js';
import { checksum, delta, f32, i32, recorded, snapshot, welcome } from '../support/frames.mjs';

const hasher = await ChecksumHasher.create();
const decode = (frame) => decodeServerFrame(frame);

function mirrorWith(types) {
  const m = new Mirror(hasher);
  const w = decode(welcome(types ? { types } : {}));
  m.setSchema(w.components);
  const log = [];
  m.events = {
    onSpawn: (e) => log.push(`spawn ${e.index}:${e.version}`),
    onDestroy: (e) => log.push(`destroy ${e.index}:${e.version}`),
    onUpdate: (e, t) => log.push(`update ${e.index}:${e.version} ${t}`),
    onRemove: (e, t) => log.push(`remove ${e.index}:${e.version} ${t}`),
    onEnter: (e) => log.push(`enter ${e.index}:${e.version}`),
    onLeave: (e) => log.push(`leave ${e.index}:${e.version}`),
  };
  return { m, log, schema: w.components };
}

function replay(file) {
  const frames = recorded(file).map(decode);
  const m = new Mirror(hasher);
  m.setSchema(frames[0].components);
  for (const f of frames.slice(1)) {
    if (f.kind === 'snapshot' || f.kind === 'delta' || f.kind === 'checksum') assert.ok(m.apply(f), m.error);
  }
  return { m, frames };
}

test('recorded demo stream: the mirror matches the server checksum, strings and signed values included', () => {
  const { m } = replay('demo-stream.bin');
  assert.ok(m.stats.checksumsMatched >= 1);
  assert.equal(m.stats.checksumsMismatched, 0);
  const bob = m.entities().find((e) => m.get(e, 'name') === 'héllo');
  assert.ok(bob, 'the spawned entity with its UTF-8 name');
  assert.deepEqual(m.get(bob, 'health'), { value: -7 });
});

test('recorded arena stream: quantized and owner-only values agree with the server checksum', () => {
  const { m, frames } = replay('arena-stream.bin');
  assert.ok(m.stats.checksumsMatched >= 1);
  const ship = m.entities().find((e) => m.get(e, 'ship') !== undefined);
  assert.ok(ship);
  const p = m.get(ship, 'position');
  assert.ok(Number.isFinite(p.x) && Number.isFinite(p.y));
  assert.ok(frames[0].interestRadius > 0, 'the arena sends each client its view');
  assert.ok(m.get(ship, 'stats') !== undefined, 'the owner-only stats of our own ship');
});

test('snapshot then delta: events in order destroyed, spawned, updated, removed', () => {
  const { m, log } = mirrorWith();
  assert.ok(m.apply(decode(snapshot({ tick: 10n, groups: [
    { at: { runs: [[0, 3]] }, versions: [1, 1, 1], columns: [{ type: 1, values: f32(0, 0, 1, 1, 2, 2) }, { type: 4, strings: ['a', 'b', 'c'] }] },
  ] }))));
  assert.equal(m.size, 3);
  assert.deepEqual(log.splice(0), ['spawn 0:1', 'spawn 1:1', 'spawn 2:1']);
  assert.ok(m.apply(decode(delta({
    tick: 11n, destroyed: [[1, 1]],
    spawned: [{ at: { list: [1, 5] }, versions: [2, 1], columns: [{ type: 3, values: i32(-5, 6) }] }],
    updated: [{ type: 1, at: { list: [1, 2] }, values: f32(9, 9, 3, 3) }],
    removed: [{ type: 4, at: { list: [0] } }],
  }))), m.error);
  assert.deepEqual(log, ['destroy 1:1', 'spawn 1:2', 'spawn 5:1', 'update 1:2 1', 'update 2:1 1', 'remove 0:1 4']);
  assert.deepEqual(m.get({ index: 1, version: 2 }, 'position'), { x: 9, y: 9 });
  assert.equal(m.get({ index: 1, version: 1 }, 'position'), undefined, 'the old version is gone');
  assert.deepEqual(m.get({ index: 5, version: 1 }, 'health'), { value: 6 });
  assert.equal(m.get({ index: 0, version: 1 }, 'name'), undefined);
  assert.equal(m.tick, 11n);
});

test('a second snapshot reports its differences; the checksum matches and a wrong one asks for a resync once', () => {
  const { m, log } = mirrorWith();
  m.apply(decode(snapshot({ tick: 1n, groups: [{ at: { list: [0, 1] }, versions: [1, 1], columns: [{ type: 3, values: i32(1, 2) }] }] })));
  log.length = 0;
  assert.ok(m.apply(decode(snapshot({ tick: 5n, groups: [
    { at: { list: [0] }, versions: [1], columns: [{ type: 3, values: i32(7) }] },
    { at: { list: [1] }, versions: [2], columns: [] },
  ] }))));
  assert.deepEqual(log, ['destroy 1:1', 'spawn 1:2', 'update 0:1 3']);
  const sum = m.checksum();
  const expected = (hasher.entityTerm(0, 1) + hasher.entityTerm(1, 2) + hasher.componentTerm(3, 0, 1, i32(7))) & (2n ** 64n - 1n);
  assert.equal(sum, expected);
  assert.ok(m.apply(decode(checksum({ tick: 5n, hash: sum, entityCount: 2 }))));
  assert.equal(m.stats.checksumsMatched, 1);
  assert.equal(m.apply(decode(checksum({ tick: 5n, hash: sum + 1n, entityCount: 2 }))), false);
  assert.match(m.takeResyncReason(), /checksum mismatch at tick 5/);
  assert.equal(m.takeResyncReason(), null, 'asked once per inconsistency');
  assert.equal(m.apply(decode(delta({ tick: 6n }))), false, 'waits for a snapshot');
  assert.ok(m.apply(decode(snapshot({ tick: 9n, groups: [] }))));
  assert.ok(m.ready);
  assert.ok(m.apply(decode(checksum({ tick: 9n, hash: 0n, entityCount: 0 }))));
});

test('checksum with excluded indices subtracts their terms', () => {
  const { m } = mirrorWith();
  m.apply(decode(snapshot({ tick: 1n, groups: [{ at: { list: [0, 4] }, versions: [1, 3], columns: [] }] })));
  assert.ok(m.apply(decode(checksum({ tick: 1n, hash: hasher.entityTerm(0, 1), entityCount: 1, excluded: [4, 9] }))), m.error);
  assert.equal(m.apply(decode(checksum({ tick: 1n, hash: hasher.entityTerm(0, 1), entityCount: 1, excluded: [4, 4] }))), false);
});

test('versions: inconsistencies are detected and reported as resync reasons', () => {
  const cases = [
    [delta({ tick: 2n, destroyed: [[0, 2]] }), /destroy of 0:2 but the mirror has 0:1/],
    [delta({ tick: 2n, spawned: [{ at: { list: [0] }, versions: [2] }] }), /spawn of 0:2 over live entity 0:1/],
    [delta({ tick: 3n }), /tick gap: delta for tick 3 after tick 1/],
    [delta({ tick: 2n, updated: [{ type: 1, at: { list: [7] }, values: f32(1, 1) }] }), /unknown entity index 7/],
    [delta({ tick: 2n, updated: [{ type: 1, at: { list: [0] }, values: f32(1) }] }), /1 entities; 8 expected|lists more entities/],
    [delta({ tick: 2n, updated: [{ type: 1, at: { list: [0] }, values: f32(NaN, 1) }] }), /not a finite number/],
    [delta({ tick: 2n, removed: [{ type: 3, at: { list: [0] } }] }), /does not have/],
    [delta({ tick: 2n, spawned: [{ at: { runs: [[1, 4000000000]] }, versions: [1] }] }), /too many entities/],
    [delta({ tick: 2n, spawned: [{ at: { list: [3, 3] }, versions: [1, 1] }] }), /twice/],
    [delta({ tick: 2n, spawned: [{ at: { list: [3] }, versions: [0] }] }), /null version/],
    [delta({ tick: 1n, ownerOnly: true, updated: [{ type: 1, at: { list: [0] }, values: f32(1, 1) }] }), /every client receives/],
    [delta({ tick: 2n, ownerOnly: true }), /owner-only delta for tick 2 at tick 1/],
    [snapshot({ tick: 2n, chunk: 1, chunkCount: 2 }), /out of sequence/],
    [snapshot({ tick: 2n, entityCount: 5 }), /announced 5 entities but carried 0/],
  ];
  for (const [frame, why] of cases) {
    const { m } = mirrorWith();
    assert.ok(m.apply(decode(snapshot({ tick: 1n, groups: [{ at: { list: [0] }, versions: [1], columns: [{ type: 1, values: f32(0, 0) }] }] }))));
    assert.equal(m.apply(decode(frame)), false, String(why));
    assert.match(m.takeResyncReason(), why);
    assert.equal(m.stats.inconsistencies, 1);
  }
});

test('interest: left and entered, owner-only delta of the same tick', () => {
  const { m, log, schema } = mirrorWith();
  m.apply(decode(snapshot({ tick: 1n, groups: [{ at: { list: [0, 1] }, versions: [1, 1] }] })));
  log.length = 0;
  const code = makeValue(schema.get('secret'), { code: 42n });
  assert.ok(m.apply(decode(delta({ tick: 2n, left: [[1, 1]], entered: [{ at: { list: [1] }, versions: [4], columns: [{ type: 3, values: i32(3) }] }] }))), m.error);
  assert.ok(m.apply(decode(delta({ tick: 2n, ownerOnly: true, updated: [{ type: 5, at: { list: [0] }, values: code }] }))), m.error);
  assert.deepEqual(log, ['leave 1:1', 'enter 1:4', 'update 0:1 5']);
  assert.deepEqual(m.get({ index: 0, version: 1 }, 'secret'), { code: 42n });
  assert.equal(m.stats.entered, 1);
  assert.equal(m.stats.left, 1);
});

test('a quantized column of unaligned values decodes per entity', () => {
  const { m, schema } = mirrorWith();
  const packed = schema.get('packed');
  const { packColumn } = await_import;
  const values = [makeValue(packed, { a: 1.5, b: -2 }), makeValue(packed, { a: 100.25, b: 3 })];
  assert.ok(m.apply(decode(snapshot({ tick: 1n, groups: [{ at: { list: [2, 3] }, versions: [1, 1], columns: [{ type: 6, values: packColumn(packed, values) }] }] }))), m.error);
  assert.deepEqual(m.get({ index: 3, version: 1 }, 'packed'), { a: 100.25, b: 3 });
});

const await_import = await import('../../dist/ecsnet.node.js');

test('a group that lists an index twice spawns none of its entities; value() is a copy', () => {
  const { m } = mirrorWith();
  assert.ok(m.apply(decode(snapshot({ tick: 1n, groups: [{ at: { list: [0] }, versions: [1], columns: [{ type: 1, values: f32(1, 2) }] }] }))));
  assert.equal(m.apply(decode(delta({ tick: 2n, spawned: [{ at: { list: [5, 6, 5] }, versions: [1, 1, 1] }] }))), false);
  assert.equal(m.find(5), null, 'taken back');
  assert.equal(m.find(6), null, 'taken back');
  assert.equal(m.size, 1);

  const { m: n } = mirrorWith();
  assert.ok(n.apply(decode(snapshot({ tick: 1n, groups: [{ at: { list: [0] }, versions: [1], columns: [{ type: 1, values: f32(1, 2) }] }] }))));
  const e = { index: 0, version: 1 };
  const before = n.value(e, 1);
  before.fill(0);
  assert.deepEqual(n.value(e, 1), f32(1, 2), 'changing a returned value changes nothing');
  assert.ok(n.apply(decode(delta({ tick: 2n, updated: [{ type: 1, at: { list: [0] }, values: f32(3, 4) }] }))), n.error);
  const kept = n.value(e, 1);
  assert.ok(n.apply(decode(delta({ tick: 3n, updated: [{ type: 1, at: { list: [0] }, values: f32(5, 6) }] }))), n.error);
  assert.deepEqual(kept, f32(3, 4), 'a later update does not change a value returned before');
  assert.deepEqual(n.entities(), [e]);
});

test('unaligned values: every entity of a long column reads back as packed, at every bit offset', () => {
  const { m, schema } = mirrorWith();
  const packed = schema.get('packed'); // 38 bits a value: each starts at another bit of a byte
  const { packColumn, readValue } = await_import;
  let seed = 7;
  const random = () => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed / 2 ** 31; };
  const values = Array.from({ length: 64 }, () => makeValue(packed, { a: random() * 2048 - 1024, b: random() * 2048 - 1024 }));
  const at = { list: values.map((_, i) => i) };
  assert.ok(m.apply(decode(snapshot({ tick: 1n, groups: [{ at, versions: values.map(() => 1), columns: [{ type: 6, values: packColumn(packed, values) }] }] }))), m.error);
  values.forEach((v, i) => assert.deepEqual(m.get({ index: i, version: 1 }, 'packed'), readValue(packed, v), `entity ${i}`));
  const moved = values.map((_, i) => values[(i + 5) % values.length]);
  assert.ok(m.apply(decode(delta({ tick: 2n, updated: [{ type: 6, at, values: packColumn(packed, moved) }] }))), m.error);
  moved.forEach((v, i) => assert.deepEqual(m.value({ index: i, version: 1 }, 'packed'), v, `entity ${i} after the update`));

  // b all ones (beyond the range) in value k: its top bits lie in the fourth byte read when b
  // starts at bit 6 or 7 of a byte.
  const beyond = new Uint8Array(5);
  for (let bit = 19; bit < 38; ++bit) beyond[bit >> 3] |= 1 << (bit & 7);
  for (let k = 0; k < 8; ++k) {
    const { m: n } = mirrorWith();
    const eight = { list: [0, 1, 2, 3, 4, 5, 6, 7] };
    assert.ok(n.apply(decode(snapshot({ tick: 1n, groups: [{ at: eight, versions: Array(8).fill(1), columns: [{ type: 6, values: packColumn(packed, values.slice(0, 8)) }] }] }))), n.error);
    const column = values.slice(0, 8).map((v, i) => (i === k ? beyond : v));
    assert.equal(n.apply(decode(delta({ tick: 2n, updated: [{ type: 6, at: eight, values: packColumn(packed, column) }] }))), false, `value ${k}`);
    assert.match(n.error, /packed\.b is beyond its quantized range/);
  }
});

test('a string is judged by its UTF-8 bytes: 8 for name, whatever the characters', () => {
  const cases = [['abcdefgh', true], ['abcdefghi', false], ['éééé', true], ['ééééé', false], ['😀😀', true], ['😀😀a', false],
    ['\ud800\ud800a', true], ['\ud800\ud800abc', false]]; // a lone surrogate is 3 bytes (U+FFFD)
  for (const [text, fits] of cases) {
    const { m } = mirrorWith();
    const ok = m.apply(decode(snapshot({ tick: 1n, groups: [{ at: { list: [0] }, versions: [1], columns: [{ type: 4, strings: [text] }] }] })));
    assert.equal(ok, fits, `${JSON.stringify(text)}: ${m.error}`);
    // What the wire carries: a lone surrogate became U+FFFD when the frame was written.
    if (fits) assert.equal(m.text({ index: 0, version: 1 }, 'name'), new TextDecoder().decode(new TextEncoder().encode(text)));
  }
});

test('a frame anywhere in memory: its columns are views, read alike at every byte offset', () => {
  const at = (frame, offset) => { // the frame's bytes at `offset` in a larger buffer
    const buffer = new Uint8Array(frame.length + 8);
    buffer.set(frame, offset);
    return buffer.subarray(offset, offset + frame.length);
  };
  for (let offset = 0; offset < 4; ++offset) {
    const { m } = mirrorWith();
    assert.ok(m.apply(decode(at(snapshot({ tick: 1n, groups: [{ at: { list: [0, 1] }, versions: [1, 1], columns: [{ type: 1, values: f32(1, 2, 3, 4) }] }] }), offset))), m.error);
    assert.deepEqual(m.value({ index: 1, version: 1 }, 1), f32(3, 4), `offset ${offset}`);
    assert.ok(m.apply(decode(at(delta({ tick: 2n, updated: [{ type: 1, at: { list: [1, 0] }, values: f32(5, 6, 7, 8) }] }), offset))), m.error);
    assert.deepEqual(m.value({ index: 0, version: 1 }, 1), f32(7, 8), `offset ${offset}`);
    assert.equal(m.apply(decode(at(delta({ tick: 3n, updated: [{ type: 1, at: { list: [0, 1] }, values: f32(1, Infinity, 2, 2) }] }), offset))), false);
    assert.match(m.error, /invalid position value for 0:1: position\.y is not a finite number/);
    assert.deepEqual(m.value({ index: 0, version: 1 }, 1), f32(7, 8), 'a refused column writes nothing');
  }
});
