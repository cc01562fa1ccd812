// Protocol 6, the compact Input (docs/PROTOCOL.md, "Protocol 6"): its bytes, and when the
// session sends it instead of a full Input.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as flatbuffers from 'flatbuffers';
import * as cw from '../../dist/test/wire-client.js';
import {
  PROTOCOL_VERSION, Session, decodeServerFrame, encodeCompactInput, encodeInput, inputReference,
} from '../../dist/ecsnet.node.js';
import { f32, snapshot, w, welcome } from '../support/frames.mjs';

const F = w.FieldType;
// steer: 5 whole bytes; pilot: 5 + 9 + 8 = 22 bits (thrust 0..1 in 16ths, turn -1..1 in 128ths).
const types = [
  { name: 'owner', writer: 0, fields: [['client', F.UInt, 32]] },
  { name: 'position', fields: [['x', F.Float, 32], ['y', F.Float, 32]] },
  { name: 'steer', input: true, replicated: false, fields: [['turn', F.Float, 32], ['fire', F.Bool, 8]] },
  { name: 'pilot', input: true, replicated: false, fields: [['thrust', F.Float, 5, 0, 1, 1 / 16], ['turn', F.Float, 9, -1, 1, 1 / 128], ['fire', F.Bool, 8]] },
];
const schema = decodeServerFrame(welcome({ types })).components;
const ship = { index: 0, version: 1 };
const steer = { steer: { turn: 0.5, fire: true } };
const steerBytes = [0x00, 0x00, 0x00, 0x3f, 0x01];
const hex = (bytes) => Buffer.from(bytes).toString('hex');

// The fields of a compact frame, read as the spec lays them out.
function parseCompact(f) {
  const prefix = new DataView(f.buffer, f.byteOffset, f.byteLength).getUint32(0, true);
  let at = 4;
  const flags = f[at++];
  const leb = () => {
    const start = at;
    let v = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const b = f[at++];
      v |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return { value: v, bytes: at - start };
    }
  };
  const first = leb();
  const render = (flags & 0x10) !== 0 ? { back: leb(), fraction: f[at++] } : null;
  return {
    prefix, compact: (prefix & 0x80000000) !== 0, kind: (prefix >>> 24) & 0x7f, n: prefix & 0xffffff, flags,
    tickCount: (flags & 0x0f) + 1, firstTick: first.value, firstTickBytes: first.bytes, render, values: f.subarray(at),
  };
}

function fullInput(frame) {
  const m = cw.ClientMessage.getSizePrefixedRootAsClientMessage(new flatbuffers.ByteBuffer(frame));
  assert.equal(cw.ClientBody[m.bodyType()], 'Input');
  return m.body(new cw.Input());
}

test('compact Input: the bytes of one tick with a render tick', () => {
  const ref = inputReference(schema, ship, steer);
  assert.deepEqual(ref, { entity: ship, types: [2] });
  const frame = encodeCompactInput(schema, ref, ship, 300n, [steer], 298n, 0.5);
  // prefix 0x80000000 | 1 << 24 | 10; flags 0x10; 300 = ac 02; back 300 - 298 = 2; 0.5 = 128/256; the value
  assert.equal(hex(frame), hex([0x0a, 0x00, 0x00, 0x81, 0x10, 0xac, 0x02, 0x02, 0x80, ...steerBytes]));
  const c = parseCompact(frame);
  assert.equal(c.prefix, 0x8100000a);
  assert.equal(c.kind, 1);
  assert.equal(c.n, frame.length - 4);
  assert.equal(c.n, 1 + 2 + 1 + 1 + 5);
  assert.deepEqual(c.render, { back: { value: 2n, bytes: 1 }, fraction: 128 });
});

test('compact Input: first_tick and the render distance in LEB128, up to 2^64 - 1', () => {
  const ref = inputReference(schema, ship, steer);
  const cases = [
    [127n, [0x7f]],
    [128n, [0x80, 0x01]],
    [2n ** 21n - 1n, [0xff, 0xff, 0x7f]],
    [2n ** 21n, [0x80, 0x80, 0x80, 0x01]],
    [2n ** 64n - 1n, [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]],
  ];
  for (const [tick, leb] of cases) {
    const frame = encodeCompactInput(schema, ref, ship, tick, [steer]);
    assert.equal(hex(frame.subarray(4)), hex([0x00, ...leb, ...steerBytes]), `tick ${tick}`);
    assert.equal(parseCompact(frame).n, 1 + leb.length + 5);
    assert.equal(parseCompact(frame).firstTick, tick);
  }
  // The render distance: last tick 2^64 - 1, render tick 1.
  const far = parseCompact(encodeCompactInput(schema, ref, ship, 2n ** 64n - 1n, [steer], 1n, 0));
  assert.deepEqual(far.render, { back: { value: 2n ** 64n - 2n, bytes: 10 }, fraction: 0 });
  // What the server would refuse as Malformed is not encoded.
  assert.throws(() => encodeCompactInput(schema, ref, ship, 2n ** 64n, [steer]), RangeError);
  assert.throws(() => encodeCompactInput(schema, ref, ship, 2n ** 64n - 1n, [steer, steer]), RangeError);
  assert.throws(() => encodeCompactInput(schema, ref, ship, 0n, [steer]), RangeError);
  assert.throws(() => encodeCompactInput(schema, ref, ship, 10n, [steer], 11n, 0), RangeError);
});

test('compact Input: 16 ticks set the flags\' low bits to 15', () => {
  const ref = inputReference(schema, ship, steer);
  const ticks = Array.from({ length: 16 }, () => steer);
  const c = parseCompact(encodeCompactInput(schema, ref, ship, 1000n, ticks, 990n, 0.25));
  assert.equal(c.flags, 0x1f);
  assert.equal(c.tickCount, 16);
  assert.deepEqual(c.render, { back: { value: 1015n - 990n, bytes: 1 }, fraction: 64 });
  assert.equal(c.values.length, 16 * 5);
  assert.equal(parseCompact(encodeCompactInput(schema, ref, ship, 1000n, ticks)).flags, 0x0f);
  assert.throws(() => encodeCompactInput(schema, ref, ship, 1000n, [...ticks, steer]), RangeError);
});

test('compact Input: without a render tick bit 4 is clear and no render bytes follow', () => {
  const ref = inputReference(schema, ship, steer);
  for (const fraction of [0, 0.7]) {
    const frame = encodeCompactInput(schema, ref, ship, 300n, [steer, steer], 0n, fraction);
    const c = parseCompact(frame);
    assert.equal(c.flags, 0x01);
    assert.equal(c.render, null);
    assert.equal(c.n, 1 + 2 + 2 * 5);
    assert.equal(hex(c.values), hex([...steerBytes, ...steerBytes]));
  }
  // The fraction in 256ths, rounded down.
  const byte = (f) => parseCompact(encodeCompactInput(schema, ref, ship, 300n, [steer], 299n, f)).render.fraction;
  assert.deepEqual([0, 1 / 256, 0.0039, 0.5, 0.999, 255 / 256].map(byte), [0, 1, 0, 128, 255, 255]);
});

test('compact Input: refused when the entity or the input types (or their order) differ from the reference', () => {
  const both = { steer: steer.steer, pilot: { thrust: 1, turn: -0.25, fire: false } };
  const ref = inputReference(schema, ship, both);
  assert.deepEqual(ref.types, [2, 3]);
  encodeCompactInput(schema, ref, ship, 5n, [both]);
  encodeCompactInput(schema, { entity: ship, types: ['steer', 'pilot'] }, ship, 5n, [both]); // names work too
  assert.throws(() => encodeCompactInput(schema, ref, { index: 0, version: 2 }, 5n, [both]), TypeError);
  assert.throws(() => encodeCompactInput(schema, ref, { index: 1, version: 1 }, 5n, [both]), TypeError);
  assert.throws(() => encodeCompactInput(schema, ref, ship, 5n, [{ pilot: both.pilot, steer: both.steer }]), TypeError);
  assert.throws(() => encodeCompactInput(schema, ref, ship, 5n, [steer]), TypeError);
  assert.throws(() => encodeCompactInput(schema, ref, ship, 5n, [{ ...both, position: { x: 1, y: 1 } }]), TypeError);
});

test('compact Input: its values are the full Input\'s column bytes, column after column', () => {
  const ticks = [0, 1, 2, 3, 4].map((i) => ({
    pilot: { thrust: i / 16, turn: -1 + i * 0.3, fire: i % 2 === 1 },
    steer: { turn: i - 2.5, fire: i === 3 },
  }));
  const ref = inputReference(schema, ship, ticks[0]);
  assert.deepEqual(ref.types, [3, 2]);
  const input = fullInput(encodeInput(schema, ship, 77n, ticks, 75n, 0.125));
  const columns = Array.from({ length: input.columnsLength() }, (_, i) => input.columns(i));
  assert.deepEqual(columns.map((c) => c.type()), ref.types);
  assert.equal(columns[0].valuesLength(), Math.ceil((22 * 5) / 8), '22-bit values back to back, padded once');
  const compact = parseCompact(encodeCompactInput(schema, ref, ship, 77n, ticks, 75n, 0.125));
  assert.equal(hex(compact.values), hex(Buffer.concat(columns.map((c) => c.valuesArray()))));
  assert.equal(compact.firstTick, BigInt(input.firstTick()));
  assert.equal(compact.tickCount, input.tickCount());
  assert.deepEqual(compact.render, { back: { value: 81n - 75n, bytes: 1 }, fraction: input.renderFraction() * 256 });
});

// A session over in-memory connections, each new one made when the session reconnects.
async function joined({ protocolVersion = PROTOCOL_VERSION } = {}) {
  const wire = { sent: [], handlers: null, connections: 0 };
  let time = 0;
  const session = await Session.connect({
    transport: (handlers) => {
      wire.handlers = handlers;
      ++wire.connections;
      queueMicrotask(() => handlers.open());
      return { send: (f) => wire.sent.push(f), close() {}, bufferedAmount: 0 };
    },
    now: () => time,
  });
  const join = async (tick) => {
    await new Promise((r) => setImmediate(r));
    wire.handlers.frame(welcome({ types, tick, protocolVersion }));
    wire.handlers.frame(snapshot({ tick, groups: [{ at: { list: [0] }, versions: [1], columns: [{ type: 1, values: f32(0, 0) }] }] }));
    session.update();
    assert.equal(session.state, 'joined');
  };
  await join(100n);
  const inputs = () => wire.sent.filter((f) => (f[3] & 0x80) !== 0 || cw.ClientBody[
    cw.ClientMessage.getSizePrefixedRootAsClientMessage(new flatbuffers.ByteBuffer(f)).bodyType()] === 'Input');
  // 'full' or 'compact', for each Input sent so far
  const forms = () => inputs().map((f) => ((f[3] & 0x80) !== 0 ? 'compact' : 'full'));
  return { session, wire, join, inputs, forms, advance: (s) => { time += s; } };
}

test('session (protocol 6): a full Input first, then compact ones until the entity or the types change', async () => {
  const { session, inputs, forms, advance } = await joined();
  const tick = () => { advance(1 / 30); session.update(); };
  session.setInput(ship, steer);
  session.update();
  tick();
  tick();
  assert.deepEqual(forms(), ['full', 'compact', 'compact']);
  const [full, c1, c2] = inputs();
  const first = fullInput(full).firstTick();
  assert.deepEqual([parseCompact(c1).firstTick, parseCompact(c2).firstTick], [first + 1n, first + 2n]);
  assert.equal(hex(parseCompact(c1).values), hex(steerBytes));

  session.setInput({ index: 1, version: 1 }, steer); // another entity
  tick();
  tick();
  assert.deepEqual(forms().slice(3), ['full', 'compact']);
  assert.equal(fullInput(inputs()[3]).entity().index(), 1);

  session.setInput({ index: 1, version: 1 }, { pilot: { thrust: 0.5, turn: 0, fire: false } }); // a type more
  tick();
  tick();
  assert.deepEqual(forms().slice(5), ['full', 'compact']);
  assert.equal(fullInput(inputs()[5]).columnsLength(), 2);

  session.clearInput();
  session.setInput({ index: 1, version: 1 }, { pilot: { thrust: 0.5, turn: 0, fire: false }, ...steer }); // the same types, reordered
  tick();
  tick();
  assert.deepEqual(forms().slice(7), ['full', 'compact']);
  assert.equal(fullInput(inputs()[7]).columns(0).type(), 3);

  const sent = inputs();
  assert.equal(session.stats.inputFramesSent, sent.length);
  assert.equal(session.stats.compactInputFramesSent, forms().filter((f) => f === 'compact').length);
  assert.equal(session.stats.inputTicksSent, sent.length, 'one tick each');
  session.close();
});

test('session (protocol 6): a new connection starts with a full Input again', async () => {
  const { session, wire, join, forms, advance } = await joined();
  session.setInput(ship, steer);
  session.update();
  advance(1 / 30);
  session.update();
  assert.deepEqual(forms(), ['full', 'compact']);
  wire.handlers.closed('connection reset', false);
  session.update();
  assert.equal(session.state, 'reconnecting');
  advance(0.2);
  session.update();
  assert.equal(wire.connections, 2);
  await join(106n);
  advance(1 / 30);
  session.update();
  assert.deepEqual(forms(), ['full', 'compact', 'full', 'compact']);
  const bytes = wire.sent.reduce((sum, f) => sum + f.length, 0);
  assert.equal(session.stats.bytesSent, bytes, 'both forms counted');
  session.close();
});

test('session (protocol 6): the render fraction goes in 256ths, in both forms', async () => {
  // Off the tick grid, and a full Input now and then (the entity changes): fractions of both forms.
  const fractions = async (protocolVersion) => {
    const { session, inputs, advance } = await joined({ protocolVersion });
    for (let i = 0; i < 12; ++i) {
      session.setInput({ index: i % 4 === 0 ? i : 0, version: 1 }, steer);
      advance(0.0437);
      session.update();
    }
    session.close();
    return inputs().map((f) => ((f[3] & 0x80) !== 0 ? ['compact', parseCompact(f).render.fraction / 256] : ['full', fullInput(f).renderFraction()]));
  };
  const v6 = await fractions(6);
  for (const form of ['full', 'compact']) {
    const of = v6.filter(([f]) => f === form).map(([, x]) => x);
    assert.ok(of.some((x) => x > 0), `a ${form} Input with a fraction`);
    for (const x of of) assert.equal(x * 256, Math.floor(x * 256), `${form}: ${x} is not in 256ths`);
  }
  // Version 5 keeps the float's resolution.
  assert.ok((await fractions(5)).some(([, x]) => x * 256 !== Math.floor(x * 256)));
});

test('session: a server that answers in version 5 gets full Inputs only', async () => {
  const { session, forms, advance } = await joined({ protocolVersion: 5 });
  session.setInput(ship, steer);
  session.update();
  for (let i = 0; i < 3; ++i) {
    advance(1 / 30);
    session.update();
  }
  assert.deepEqual(forms(), ['full', 'full', 'full', 'full']);
  assert.equal(session.stats.compactInputFramesSent, 0);
  session.close();
});
