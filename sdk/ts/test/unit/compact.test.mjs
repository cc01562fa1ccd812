// Protocol 6, the compact Input and InputAck (docs/PROTOCOL.md, "Protocol 6"): their bytes,
// when the session sends the compact Input instead of a full one, and how the frame reader,
// the transports and the session take the compact InputAck.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import * as flatbuffers from 'flatbuffers';
import * as cw from '../../dist/test/wire-client.js';
import {
  FrameReader, MalformedFrameError, PROTOCOL_VERSION, Session, decodeServerFrame, encodeCompactInput, encodeCompactInputAck,
  encodeInput, inputReference, tcp, webSocket,
} from '../../dist/ecsnet.node.js';
import { checksum, delta, f32, inputAck, snapshot, w, welcome } from '../support/frames.mjs';

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

// ---- the compact InputAck (server to client) ------------------------------------------------------

// A compact frame of `kind` around `body`, its prefix announcing `n` bytes.
function compactFrame(kind, body, n = body.length) {
  const frame = new Uint8Array(4 + body.length);
  new DataView(frame.buffer).setUint32(0, (0x80000000 | (kind << 24) | n) >>> 0, true);
  frame.set(body, 4);
  return frame;
}
const ack = (tick, appliedTick, lead = 0, late = 0, repeated = 0) => ({ tick, appliedTick, lead, late, repeated });
// The message the FlatBuffers InputAck of the same values decodes to.
const fullAck = (a) => decodeServerFrame(inputAck(a));
const U64 = 2n ** 64n - 1n;
const U32 = 2 ** 32 - 1;

test('compact InputAck: the bytes of a known ack', () => {
  const a = ack(300n, 298n, -2, 0, 5);
  const frame = encodeCompactInputAck(a);
  // 300 = ac 02; back 300 - 298 = 2; zigzag(-2) = 3; late 0; repeated 5: 6 bytes, kind 1
  assert.equal(hex(frame), hex([0x06, 0x00, 0x00, 0x81, 0xac, 0x02, 0x02, 0x03, 0x00, 0x05]));
  assert.equal(new DataView(frame.buffer).getUint32(0, true), 0x81000006);
  const m = decodeServerFrame(frame);
  assert.deepEqual(m, { kind: 'inputAck', ...a });
  assert.deepEqual(m, fullAck(a), 'the same message as the FlatBuffers InputAck');
  assert.equal(typeof m.tick, 'bigint');
  assert.equal(typeof m.appliedTick, 'bigint');
  assert.equal(typeof m.lead, 'number');
  // The spec's 11 bytes: a tick below 2^21, counts below 128.
  assert.equal(encodeCompactInputAck(ack(2n ** 21n - 1n, 2n ** 21n - 3n, 5, 127, 127)).length, 11);
  // The zigzag: 0, -1, 1, -2, ... are 0, 1, 2, 3, ...
  assert.deepEqual([0, -1, 1, -2, 2, 63, -64, 64].map((lead) => encodeCompactInputAck(ack(1n, 1n, lead))[6]),
    [0, 1, 2, 3, 4, 126, 127, 0x80]);
});

test('compact InputAck: edge values round-trip exactly', () => {
  const cases = [
    ack(0n, 0n),
    ack(1n, 0n), // applied 0 (none yet): back = tick
    ack(U64, 0n, 0, 0, 0),
    ack(U64, U64, 1, 2, 3),
    ack(U64, 1n, -1, U32, U32),
    ack(2n ** 53n + 1n, 2n ** 53n - 1n, -(2 ** 31), 0, U32), // past a double's integers
    ack(123456789n, 123456700n, 2 ** 31 - 1, U32, 0),
    ack(1000n, 999n, -(2 ** 31), 1, 128),
  ];
  for (const a of cases) {
    const m = decodeServerFrame(encodeCompactInputAck(a));
    assert.deepEqual(m, { kind: 'inputAck', ...a }, `${a.tick} ${a.appliedTick} ${a.lead}`);
    assert.deepEqual(m, fullAck(a));
  }
  // The largest: 10 + 10 + 5 + 5 + 5 bytes.
  const big = encodeCompactInputAck(ack(U64, 0n, -(2 ** 31), U32, U32));
  assert.equal(big.length, 4 + 35);
  assert.equal(hex(big.subarray(4, 14)), 'ffffffffffffffffff01');
  assert.equal(hex(big.subarray(24, 29)), 'ffffffff0f', 'zigzag(INT32_MIN) = 2^32 - 1');
  // Given an InputAck message itself (its kind is ignored).
  assert.deepEqual(decodeServerFrame(encodeCompactInputAck(fullAck(ack(7n, 6n, 3, 1, 0)))), fullAck(ack(7n, 6n, 3, 1, 0)));
  // As the C++ encoder: an applied tick above the tick goes as the tick (back 0).
  assert.deepEqual(decodeServerFrame(encodeCompactInputAck(ack(5n, 9n))), { kind: 'inputAck', ...ack(5n, 5n) });
  // Values outside their wire types are not encoded.
  for (const bad of [ack(-1n, 0n), ack(U64 + 1n, 0n), ack(5n, -1n), ack(5n, U64 + 1n), ack(5n, 5n, 2 ** 31), ack(5n, 5n, -(2 ** 31) - 1),
    ack(5n, 5n, 0.5), ack(5n, 5n, 0, -1), ack(5n, 5n, 0, U32 + 1), ack(5n, 5n, 0, 0, 1.5), ack(5n, 5n, 0, 0, NaN)]) {
    assert.throws(() => encodeCompactInputAck(bad), RangeError);
  }
});

test('compact InputAck: a body that does not decode exactly is a malformed frame', () => {
  const refused = (frame, pattern, maxFrameBytes) => assert.throws(() => decodeServerFrame(frame, maxFrameBytes),
    (e) => e instanceof MalformedFrameError && pattern.test(e.message), `${hex(frame)}: ${pattern}`);
  const ok = (body) => decodeServerFrame(compactFrame(1, body));
  assert.deepEqual(ok([5, 0, 0, 0, 0]), { kind: 'inputAck', ...ack(5n, 5n) });
  // an unknown kind (the kinds of each direction are their own: 1 is the InputAck here)
  for (const kind of [0, 2, 127]) refused(compactFrame(kind, [5, 0, 0, 0, 0]), new RegExp(`unknown compact frame kind ${kind}$`));
  // a LEB128 number longer than 10 bytes, past 2^64 - 1, or cut short
  const leb10 = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]; // 2^64 - 1
  assert.equal(ok([...leb10, 0, 0, 0, 0]).tick, U64);
  assert.equal(ok([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0, 0, 0, 0]).tick, 0n, '10 bytes, not minimal');
  const notLeb = /a field is not a LEB128 number of at most 64 bits/;
  refused(compactFrame(1, [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0, 0, 0, 0]), notLeb); // 11 bytes
  refused(compactFrame(1, [0, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x81, 0x00]), notLeb); // 11, the last field
  refused(compactFrame(1, [...leb10.slice(0, 9), 0x02, 0, 0, 0, 0]), notLeb); // 2^64
  refused(compactFrame(1, [...leb10.slice(0, 9), 0x7f, 0, 0, 0, 0]), notLeb);
  refused(compactFrame(1, [0xac]), notLeb); // cut inside the first
  refused(compactFrame(1, [5, 0, 0, 0]), notLeb); // four numbers
  refused(compactFrame(1, [5, 0, 0, 0, 0x80]), notLeb); // the fifth cut short
  refused(compactFrame(1, []), notLeb);
  // tick - applied_tick above tick
  assert.deepEqual(ok([5, 5, 0, 0, 0]), { kind: 'inputAck', ...ack(5n, 0n) });
  refused(compactFrame(1, [5, 6, 0, 0, 0]), /applied an input of a tick before tick 0/);
  refused(compactFrame(1, [0, 1, 0, 0, 0]), /applied an input of a tick before tick 0/);
  refused(compactFrame(1, [...leb10.slice(0, 9), 0x00, ...leb10, 0, 0, 0]), /applied an input of a tick before tick 0/);
  // lead's zigzag, late or repeated past 2^32 - 1
  const u32 = [0xff, 0xff, 0xff, 0xff, 0x0f];
  const past = [0x80, 0x80, 0x80, 0x80, 0x10]; // 2^32
  assert.deepEqual(ok([5, 0, ...u32, ...u32, ...u32]), { kind: 'inputAck', ...ack(5n, 5n, -(2 ** 31), U32, U32) });
  for (const at of [0, 1, 2]) {
    const fields = [u32, u32, u32];
    fields[at] = past;
    refused(compactFrame(1, [5, 0, ...fields.flat()]), /lead, late or repeated past 32 bits/);
    fields[at] = leb10;
    refused(compactFrame(1, [5, 0, ...fields.flat()]), /lead, late or repeated past 32 bits/);
  }
  // bytes after the fifth number
  refused(compactFrame(1, [5, 0, 0, 0, 0, 0]), /compact InputAck: 1 bytes after its fields/);
  refused(compactFrame(1, [5, 0, 0, 0, 0, 0x80, 0x01]), /compact InputAck: 2 bytes after its fields/);
  // a prefix whose length is not the frame's
  refused(compactFrame(1, [5, 0, 0, 0, 0], 6), /prefix does not match the frame/);
  refused(compactFrame(1, [5, 0, 0, 0, 0], 4), /prefix does not match the frame/);
  refused(compactFrame(1, [5, 0, 0, 0, 0], 0xffffff), /prefix does not match the frame/);
  const good = encodeCompactInputAck(ack(300n, 298n, -2, 0, 5));
  refused(good.subarray(0, good.length - 1), /prefix does not match the frame/);
  refused(new Uint8Array([...good, 0]), /prefix does not match the frame/);
  // a length over the limit
  refused(good, /a compact frame of 6 bytes, more than the limit of 5/, 5);
  assert.equal(decodeServerFrame(good, 6).kind, 'inputAck');
});

// welcome, a compact ack, a full ack, a delta, a compact ack, a checksum, a compact ack of 35 bytes.
function mixedStream() {
  const frames = [
    welcome({ protocolVersion: 6 }),
    encodeCompactInputAck(ack(300n, 298n, -2, 0, 5)),
    inputAck(ack(301n, 300n, 1)),
    delta({ tick: 301n }),
    encodeCompactInputAck(ack(302n, 0n, 4, 1, 0)),
    checksum({ tick: 302n, hash: 7n, entityCount: 0 }),
    encodeCompactInputAck(ack(U64, 0n, -(2 ** 31), U32, U32)),
  ];
  return { frames, all: Buffer.concat(frames.map((f) => Buffer.from(f))) };
}
const kinds = ['welcome', 'inputAck', 'inputAck', 'delta', 'inputAck', 'checksum', 'inputAck'];

test('frame reader (compact): full and compact frames cut from a stream at any boundary', () => {
  const { frames, all } = mixedStream();
  const read = (chunks) => {
    const reader = new FrameReader(1 << 20, true);
    const out = [];
    for (const c of chunks) {
      reader.feed(new Uint8Array(c));
      for (let f = reader.next(); f !== null; f = reader.next()) out.push(f);
    }
    return out;
  };
  const expect = frames.map(hex);
  for (const size of [1, 2, 3, 5, 7, 11, all.length]) {
    const chunks = [];
    for (let at = 0; at < all.length; at += size) chunks.push(all.subarray(at, at + size));
    assert.deepEqual(read(chunks).map(hex), expect, `chunks of ${size}`);
  }
  // Every cut in two, and every cut in three around the compact frames' prefixes and bodies.
  for (let cut = 0; cut <= all.length; ++cut) assert.deepEqual(read([all.subarray(0, cut), all.subarray(cut)]).map(hex), expect, `cut at ${cut}`);
  let start = frames[0].length;
  for (const i of [1, 4, 6]) {
    for (let a = start - 3; a <= start + frames[i].length + 3; ++a) {
      for (let b = a; b <= start + frames[i].length + 4 && b <= all.length; ++b) {
        assert.deepEqual(read([all.subarray(0, a), all.subarray(a, b), all.subarray(b)]).map(hex), expect, `cuts at ${a}, ${b}`);
      }
    }
    start += frames[i].length + (i === 1 ? frames[2].length + frames[3].length : i === 4 ? frames[5].length : 0);
  }
  assert.deepEqual(read([all]).map((f) => decodeServerFrame(f).kind), kinds);
  // Not a frame until its last byte is in.
  const reader = new FrameReader(1 << 20, true);
  const ackFrame = frames[1];
  reader.feed(ackFrame.subarray(0, ackFrame.length - 1));
  assert.equal(reader.next(), null);
  reader.feed(ackFrame.subarray(ackFrame.length - 1));
  assert.equal(hex(reader.next()), hex(ackFrame));
  assert.equal(reader.next(), null);
});

test('frame reader: a compact length is judged against the limit; without compact the prefix is a length over it', () => {
  const frame = encodeCompactInputAck(ack(300n, 298n, -2, 0, 5)); // 6 bytes of body
  const limited = new FrameReader(5, true);
  limited.feed(frame.subarray(0, 4)); // refused before the body arrives
  assert.throws(() => limited.next(), (e) => e instanceof MalformedFrameError && /a compact frame of 6 bytes, more than the limit of 5/.test(e.message));
  const exact = new FrameReader(6, true);
  exact.feed(frame);
  assert.equal(hex(exact.next()), hex(frame));
  // A length of 2^31 or more, as before protocol 6 (and the default, as the C++ frame_reader).
  for (const reader of [new FrameReader(), new FrameReader(1 << 20, false)]) {
    assert.equal(reader.compact, false);
    reader.feed(frame);
    assert.throws(() => reader.next(), (e) => e instanceof MalformedFrameError && /a frame of 2164260870 bytes, more than the limit/.test(e.message));
  }
});

test('tcp transport: a version 6 connection passes compact frames on; an older one refuses them', async () => {
  const { frames, all } = mixedStream();
  const server = createServer((socket) => {
    // in pieces that cut the compact frames
    let at = 0;
    const next = () => {
      if (at >= all.length) return;
      socket.write(all.subarray(at, at + 5));
      at += 5;
      setImmediate(next);
    };
    next();
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address();
  try {
    const run = (version, expected) => new Promise((resolve) => {
      const got = [];
      let t;
      const handlers = {
        open() {},
        frame(f) {
          got.push(f);
          if (got.length === expected) { t.close(); resolve({ got }); }
        },
        closed(reason) { resolve({ got, reason }); },
      };
      t = version === undefined ? tcp('127.0.0.1', port)(handlers, 1 << 20) : tcp('127.0.0.1', port)(handlers, 1 << 20, version);
    });
    for (const version of [6, undefined]) { // the SDK's version when not given
      const { got, reason } = await run(version, frames.length);
      assert.equal(reason, undefined);
      assert.deepEqual(got.map(hex), frames.map(hex));
    }
    const old = await run(5, frames.length);
    assert.deepEqual(old.got.map(hex), [hex(frames[0])]);
    assert.match(old.reason, /a frame of 2164260870 bytes, more than the limit of 1048576/);
  } finally {
    server.close();
  }
});

test('webSocket transport: a compact frame is one message; before version 6 it is refused', () => {
  const run = (version, message) => {
    const socket = {};
    const Fake = class { constructor() { Object.assign(this, { readyState: 1, bufferedAmount: 0, close() {} }); socket.s = this; } };
    const got = [];
    let reason;
    const handlers = { open() {}, frame: (f) => got.push(f), closed: (r) => { reason = r; } };
    const connector = webSocket('ws://example.invalid/', { WebSocket: Fake });
    if (version === undefined) connector(handlers, 1 << 20); else connector(handlers, 1 << 20, version);
    socket.s.onopen();
    socket.s.onmessage({ data: message.slice().buffer });
    return { got, reason };
  };
  const frame = encodeCompactInputAck(ack(300n, 298n, -2, 0, 5));
  for (const version of [6, 7, undefined]) assert.deepEqual(run(version, frame), { got: [frame], reason: undefined });
  assert.deepEqual(run(5, frame), { got: [], reason: 'a frame of 2164260870 bytes, more than the limit of 1048576' });
  const longer = new Uint8Array([...frame, 0]);
  assert.deepEqual(run(6, longer), { got: [], reason: 'the server sent a WebSocket message that is not exactly one frame' });
  assert.deepEqual(run(6, frame.subarray(0, frame.length - 1)), { got: [], reason: 'the server sent a WebSocket message that is not exactly one frame' });
});

// A prediction that records the frames the session hands it.
function fakePrediction() {
  return {
    frames: [], tick: 0,
    receive(f) { this.frames.push(f); return true; },
    track() { return true; }, untrack() {}, tracks() { return false; }, setInput() {}, update() {}, rendered() { return undefined; },
  };
}

test('session (protocol 6): a compact InputAck is the InputAck, counted, and handed to the prediction as it came', async () => {
  const prediction = fakePrediction();
  let version;
  const wire = { handlers: null };
  let time = 0;
  const session = await Session.connect({
    transport: (handlers, maxFrameBytes, protocolVersion) => {
      wire.handlers = handlers;
      version = protocolVersion;
      queueMicrotask(() => handlers.open());
      return { send() {}, close() {}, bufferedAmount: 0 };
    },
    now: () => time, prediction, reconnect: { enabled: false },
  });
  await new Promise((r) => setImmediate(r));
  assert.equal(version, 6, 'the transport is told the version of the Hello');
  wire.handlers.frame(welcome({ types, tick: 100n, protocolVersion: 6 }));
  wire.handlers.frame(snapshot({ tick: 100n }));
  session.update();
  assert.equal(session.state, 'joined');
  const handed = prediction.frames.length;
  const framesBefore = session.stats.framesReceived;
  const bytesBefore = session.stats.bytesReceived;

  const a = ack(101n, 99n, 3, 1, 2);
  const frame = encodeCompactInputAck(a);
  wire.handlers.frame(frame);
  session.update();
  assert.deepEqual(session.lastInputAck, fullAck(a));
  assert.equal(session.ackedInputTick, 99n);
  assert.equal(session.stats.framesReceived, framesBefore + 1);
  assert.equal(session.stats.bytesReceived, bytesBefore + frame.length);
  // Every frame, the ack included: the frame after a Delta tells the module that tick is whole.
  assert.equal(prediction.frames.length, handed + 1, 'the prediction hears every frame');
  assert.deepEqual(prediction.frames.at(-1), frame);

  // Full and compact acks alike, in arrival order.
  wire.handlers.frame(inputAck(ack(102n, 101n, 0)));
  wire.handlers.frame(encodeCompactInputAck(ack(103n, 0n, -1)));
  session.update();
  assert.deepEqual(session.lastInputAck, { kind: 'inputAck', ...ack(103n, 0n, -1) });
  assert.equal(session.stats.framesReceived, framesBefore + 3);
  wire.handlers.frame(delta({ tick: 104n }));
  session.update();
  assert.equal(prediction.frames.length, handed + 4, 'the three acks and the delta, in order');
  assert.equal(session.state, 'joined');
  session.close();
});

test('session (protocol 6): the clock takes a compact ack\'s lead as a full one\'s', async () => {
  // A negative lead widens the input margin; the same acks, full or compact, move it alike.
  const margins = async (compact) => {
    const { session, wire, advance } = await joined();
    const before = session.serverTime.inputMargin();
    for (let i = 0; i < 4; ++i) {
      advance(0.5);
      const a = ack(101n + BigInt(i), 100n, -2 - i, 0, 0);
      wire.handlers.frame(compact ? encodeCompactInputAck(a) : inputAck(a));
      session.update();
    }
    const after = session.serverTime.inputMargin();
    const last = session.lastInputAck;
    session.close();
    return { before, after, last };
  };
  const compact = await margins(true);
  const full = await margins(false);
  assert.ok(compact.after > compact.before, `margin ${compact.before} -> ${compact.after}`);
  assert.deepEqual(compact, full);
});

test('session (protocol 6): a malformed compact frame closes the session', async () => {
  const bad = [
    compactFrame(2, [5, 0, 0, 0, 0]),
    compactFrame(1, [5, 6, 0, 0, 0]),
    compactFrame(1, [5, 0, 0, 0, 0, 0]),
    compactFrame(1, [5, 0, 0, 0, 0], 6),
  ];
  for (const frame of bad) {
    const { session, wire } = await joined();
    let reason;
    session.events.disconnected = (r, willReconnect) => { reason = { r, willReconnect }; };
    wire.handlers.frame(frame);
    session.update();
    assert.equal(session.state, 'closed', hex(frame));
    assert.match(session.closedReason, /^the server sent a malformed frame: /);
    assert.deepEqual(reason, { r: session.closedReason, willReconnect: false });
    assert.equal(session.lastInputAck, null);
  }
});
