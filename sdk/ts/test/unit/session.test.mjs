// The session over an in-memory connection that the test plays the server on: generated
// frames in, the session's frames decoded with the generated client tables.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as flatbuffers from 'flatbuffers';
import * as cw from '../../dist/test/wire-client.js';
import { CommandError, ConnectionLostError, Session, ErrorCode } from '../../dist/ecsnet.node.js';
import { checksum, commandResult, delta, f32, snapshot, welcome } from '../support/frames.mjs';

const inputTypes = [
  { name: 'owner', writer: 0, fields: [['client', 8, 32]] },
  { name: 'position', fields: [['x', 11, 32], ['y', 11, 32]], interpolated: true },
  { name: 'steer', input: true, replicated: false, fields: [['turn', 11, 32], ['fire', 2, 8]] },
];

async function joinedSession({ types, now } = {}) {
  const wire = { sent: [], handlers: null, closed: false };
  let time = 0;
  const session = await Session.connect({
    transport: (handlers) => {
      wire.handlers = handlers;
      queueMicrotask(() => handlers.open());
      return { send: (f) => wire.sent.push(f), close: () => { wire.closed = true; }, bufferedAmount: 0 };
    },
    now: now ?? (() => time),
    reconnect: { enabled: false },
  });
  await new Promise((r) => setImmediate(r));
  wire.handlers.frame(welcome(types ? { types, tick: 100n } : { tick: 100n }));
  wire.handlers.frame(snapshot({ tick: 100n, groups: [{ at: { list: [0] }, versions: [1], columns: [{ type: 1, values: f32(0, 0) }] }] }));
  session.update();
  assert.equal(session.state, 'joined');
  return { session, wire, advance: (s) => { time += s; } };
}

function sentMessages(wire) {
  return wire.sent.map((f) => {
    const m = cw.ClientMessage.getSizePrefixedRootAsClientMessage(new flatbuffers.ByteBuffer(f));
    return { type: cw.ClientBody[m.bodyType()], m };
  });
}

test('the first frame is Hello with protocol 6, the name and the resume key', async () => {
  const key = new Uint8Array(32).fill(3);
  let hello;
  const session = await Session.connect({
    transport: (h) => { queueMicrotask(() => h.open()); return { send: (f) => { hello ??= f; }, close() {}, bufferedAmount: 0 }; },
    name: 'bot-1', resumeKey: key, connectToken: 'tok',
  });
  await new Promise((r) => setImmediate(r));
  const m = cw.ClientMessage.getSizePrefixedRootAsClientMessage(new flatbuffers.ByteBuffer(hello));
  const h = m.body(new cw.Hello());
  assert.equal(cw.ClientBody[m.bodyType()], 'Hello');
  assert.equal(h.protocolVersion(), 6);
  assert.equal(h.clientName(), 'bot-1');
  assert.deepEqual([...h.resumeKeyArray()], [...key]);
  assert.equal(h.connectToken(), 'tok');
  session.close();
});

test('commands resolve with their CommandResult and reject with typed errors', async () => {
  const { session, wire } = await joinedSession();
  const spawned = session.spawn({ position: { x: 1, y: 2 }, name: 'abc' });
  const refused = session.destroy({ index: 9, version: 1 });
  const sent = sentMessages(wire).filter((s) => s.type === 'Spawn' || s.type === 'Destroy');
  assert.deepEqual(sent.map((s) => s.type), ['Spawn', 'Destroy']);
  const spawnId = sent[0].m.body(new cw.Spawn()).requestId();
  const destroyId = sent[1].m.body(new cw.Destroy()).requestId();
  wire.handlers.frame(commandResult({ requestId: spawnId, entity: [4, 2] }));
  wire.handlers.frame(commandResult({ requestId: destroyId, ok: false, code: ErrorCode.UnknownEntity, message: 'entity 9:1 does not exist' }));
  session.update();
  assert.deepEqual(await spawned, { index: 4, version: 2 });
  await assert.rejects(refused, (e) => e instanceof CommandError && e.code === ErrorCode.UnknownEntity &&
    e.codeName === 'UnknownEntity' && e.message === 'entity 9:1 does not exist');
  await assert.rejects(session.set({ index: 0, version: 1 }, { nosuch: { x: 1 } }), TypeError);
  const lost = session.remove({ index: 0, version: 1 }, ['position']);
  wire.handlers.closed('server closed the connection', false);
  session.update();
  await assert.rejects(lost, ConnectionLostError);
  assert.equal(session.state, 'closed');
  await assert.rejects(session.spawn({}), ConnectionLostError);
});

test('a checksum mismatch sends one ResyncRequest and the next snapshot resumes', async () => {
  const { session, wire } = await joinedSession();
  wire.handlers.frame(delta({ tick: 101n }));
  wire.handlers.frame(checksum({ tick: 101n, hash: 5n, entityCount: 1 }));
  wire.handlers.frame(delta({ tick: 102n }));
  session.update();
  const resyncs = sentMessages(wire).filter((s) => s.type === 'ResyncRequest');
  assert.equal(resyncs.length, 1);
  assert.match(resyncs[0].m.body(new cw.ResyncRequest()).reason(), /checksum mismatch at tick 101/);
  wire.handlers.frame(snapshot({ tick: 110n }));
  wire.handlers.frame(delta({ tick: 111n }));
  session.update();
  assert.equal(session.mirror.tick, 111n);
  assert.equal(session.mirror.size, 0);
  session.close();
});

test('input: a button tapped between two ticks is sent for one tick; an analog wobble is not', async () => {
  const { session, wire, advance } = await joinedSession({ types: inputTypes });
  const ship = { index: 0, version: 1 };
  const inputs = () => sentMessages(wire).filter((s) => s.type === 'Input').map((s) => s.m.body(new cw.Input()));
  const bytes = (input) => Array.from(input.columns(0).valuesArray());
  session.setInput(ship, { steer: { turn: 0, fire: false } });
  session.update();
  const atRest = bytes(inputs()[0]);
  // Pressed and released between two ticks: no Input went out meanwhile.
  session.setInput(ship, { steer: { turn: 0, fire: true } });
  session.setInput(ship, { steer: { turn: 0, fire: false } });
  advance(1 / 30);
  session.update();
  assert.equal(inputs()[1].tickCount(), 1);
  assert.notDeepEqual(bytes(inputs()[1]), atRest, 'the press went out, for its tick');
  advance(1 / 30);
  session.update();
  assert.deepEqual(bytes(inputs()[2]), atRest, 'the release, from the next tick');
  // The stick moved and came back between two ticks: no button, nothing held back.
  session.setInput(ship, { steer: { turn: 0.5, fire: false } });
  session.setInput(ship, { steer: { turn: 0, fire: false } });
  advance(1 / 30);
  session.update();
  assert.deepEqual(bytes(inputs()[3]), atRest);
  session.close();
});

test('input: one Input per due tick, a slow frame batches the missed ticks (16 at most)', async () => {
  const { session, wire, advance } = await joinedSession({ types: inputTypes });
  assert.throws(() => session.setInput({ index: 0, version: 1 }, { position: { x: 1, y: 1 } }), /not one of the server's input types/);
  session.setInput({ index: 0, version: 1 }, { steer: { turn: 0.5, fire: true } });
  const inputs = () => sentMessages(wire).filter((s) => s.type === 'Input').map((s) => s.m.body(new cw.Input()));
  session.update();
  const first = inputs();
  assert.equal(first.length, 1);
  assert.equal(first[0].tickCount(), 1);
  const t0 = Number(first[0].firstTick());
  assert.equal(t0, session.lastInputTick);
  session.update(); // same time: this tick's input is sent already
  assert.equal(inputs().length, 1);
  advance(4 / 30); // a slow frame: 4 ticks later
  session.update();
  const second = inputs()[1];
  assert.equal(Number(second.firstTick()), t0 + 1);
  assert.equal(second.tickCount(), 4);
  advance(2); // 60 ticks later: only the newest 16
  wire.handlers.frame(delta({ tick: 101n }));
  session.update();
  const third = inputs()[2];
  assert.equal(third.tickCount(), 16);
  assert.equal(Number(third.firstTick()) + 15, session.lastInputTick);
  session.clearInput();
  advance(1 / 30);
  session.update();
  assert.equal(inputs().length, 3);
  session.close();
});

test('input (protocol 5): each Input carries the render tick the player saw when the input changed', async () => {
  const { session, wire, advance } = await joinedSession({ types: inputTypes });
  const ship = { index: 0, version: 1 };
  const inputs = () => sentMessages(wire).filter((s) => s.type === 'Input').map((s) => s.m.body(new cw.Input()));
  session.setInput(ship, { steer: { turn: 0, fire: false } });
  session.update();
  const shownAtPress = session.renderTick;
  session.setInput(ship, { steer: { turn: 0, fire: true } });
  advance(3 / 30); // the next Input goes out three ticks later: it still names the press's screen
  session.update();
  const pressed = inputs().at(-1);
  const sentTick = Number(pressed.renderTick()) + pressed.renderFraction();
  assert.ok(Math.abs(sentTick - shownAtPress) < 1e-6, `render tick ${sentTick}, shown at the press ${shownAtPress}`);
  assert.ok(pressed.renderFraction() >= 0 && pressed.renderFraction() < 1);
  assert.ok(pressed.renderTick() <= pressed.firstTick() + BigInt(pressed.tickCount()) - 1n, 'never after the last tick');
  // Held: the render tick as it goes.
  advance(1 / 30);
  session.update();
  const held = inputs().at(-1);
  assert.ok(Math.abs(Number(held.renderTick()) + held.renderFraction() - session.renderTick) < 1e-6);
  session.close();
});

test('webSocket(): the browser entry asks for a constructor where there is none', async () => {
  const { webSocket } = await import('../../dist/ecsnet.js');
  assert.equal(globalThis.WebSocket, undefined, 'Node 20 has no stable global WebSocket');
  assert.throws(() => webSocket('ws://127.0.0.1:1/'), /import webSocket from @ecsnet\/client\/node .*pass one in the options/);
});

test('webSocket() of the node entry needs no constructor: the global one when there is one, else ws', async () => {
  const { webSocket } = await import('../../dist/ecsnet.node.js');
  // Node 20: the `ws` package, imported on first use; port 1 refuses the connection.
  const closed = await new Promise((resolve) => {
    webSocket('ws://127.0.0.1:1/')({ open() {}, frame() {}, closed: (reason, connecting) => resolve({ reason, connecting }) }, 1 << 20);
  });
  assert.deepEqual(closed, { reason: 'cannot connect to ws://127.0.0.1:1/', connecting: true });
  // A global WebSocket (Node >= 22) is used when present.
  const made = [];
  globalThis.WebSocket = class { constructor(url) { made.push(url); this.readyState = 0; this.bufferedAmount = 0; } close() {} };
  try {
    const t = webSocket('ws://example.invalid/')({ open() {}, frame() {}, closed() {} }, 1 << 20);
    assert.deepEqual(made, ['ws://example.invalid/']);
    t.close();
  } finally {
    delete globalThis.WebSocket;
  }
});

test('the browser bundles never refer to ws or node: modules', async () => {
  const { readFileSync } = await import('node:fs');
  for (const file of ['ecsnet.js', 'ecsnet.browser.js', 'ecsnet.cjs']) {
    const text = readFileSync(new URL(`../../dist/${file}`, import.meta.url), 'utf8');
    assert.doesNotMatch(text, /["']ws["']|["']node:/, file);
  }
});
