// Component types by name wherever a wire id is taken (issue 39: has(e, 'position') was a silent
// false): the mirror, the session's reads, events and commands; an unknown type throws an
// UnknownComponentError naming it and listing the server's types.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as flatbuffers from 'flatbuffers';
import * as cw from '../../dist/test/wire-client.js';
import { ChecksumHasher, Interpolation, Mirror, Session, UnknownComponentError, decodeServerFrame, makeValue } from '../../dist/ecsnet.node.js';
import { delta, f32, i32, snapshot, welcome } from '../support/frames.mjs';

const hasher = await ChecksumHasher.create();
const known = 'owner (0), position (1), velocity (2), health (3), name (4), secret (5), packed (6), flag (7)';

// The demo types (support/frames.mjs): entity 0:1 with position and name, 1:1 with health.
function mirror() {
  const m = new Mirror(hasher);
  m.setSchema(decodeServerFrame(welcome()).components);
  assert.ok(m.apply(decodeServerFrame(snapshot({ tick: 10n, groups: [
    { at: { list: [0] }, versions: [1], columns: [{ type: 1, values: f32(3, 4) }, { type: 4, strings: ['bob'] }] },
    { at: { list: [1] }, versions: [1], columns: [{ type: 3, values: i32(-7) }] },
  ] }))), m.error);
  return m;
}
const e0 = { index: 0, version: 1 };
const e1 = { index: 1, version: 1 };

const unknown = (type) => (e) => {
  assert.ok(e instanceof UnknownComponentError && e instanceof TypeError, `${e.name}: ${e.message}`);
  assert.equal(e.type, type);
  assert.match(e.message, new RegExp(`unknown component type ${typeof type === 'number' ? `id ${type}` : `"${type}"`}`));
  assert.ok(e.message.includes(known), e.message);
  return true;
};

test('mirror.has, get, value and text take the type name as well as the wire id', () => {
  const m = mirror();
  assert.equal(m.has(e0, 'position'), true);
  assert.equal(m.has(e0, 1), true);
  assert.equal(m.has(e0, 'health'), false);
  assert.equal(m.has(e1, 'health'), true);
  assert.equal(m.has({ index: 0, version: 2 }, 'position'), false, 'another version');
  assert.deepEqual(m.get(e0, 'position'), { x: 3, y: 4 });
  assert.deepEqual(m.get(e0, 1), { x: 3, y: 4 });
  assert.equal(m.get(e1, 'position'), undefined);
  assert.deepEqual(m.value(e0, 'position'), f32(3, 4));
  assert.deepEqual(m.value(e0, 1), f32(3, 4));
  assert.equal(m.text(e0, 'name'), 'bob');
  assert.equal(m.text(e0, 4), 'bob');
  assert.equal(m.text(e1, 'name'), null);
});

test('an unknown type name or id throws, naming it and listing the known types (never a silent false)', () => {
  const m = mirror();
  assert.throws(() => m.has(e0, 'postion'), unknown('postion'));
  assert.throws(() => m.has(e0, 8), unknown(8));
  assert.throws(() => m.get(e0, 'Position'), unknown('Position'));
  assert.throws(() => m.value(e0, 'nosuch'), unknown('nosuch'));
  assert.throws(() => m.text(e0, -1), unknown(-1));
  assert.throws(() => m.has({ index: 9, version: 9 }, 'nosuch'), unknown('nosuch'), 'even for an entity not mirrored');
  assert.throws(() => m.types.get('nosuch'), unknown('nosuch'));
  assert.equal(m.types.find('nosuch'), undefined, 'find() is the test for an optional type');
  const empty = new Mirror(hasher);
  assert.throws(() => empty.has(e0, 'position'), /unknown component type "position": the server's types are not known yet \(no Welcome received\)/);
});

test('mirror update and remove events carry the type name after the wire id', () => {
  const m = mirror();
  const log = [];
  m.events = {
    onUpdate: (e, type, name) => log.push(`update ${e.index} ${type} ${name}`),
    onRemove: (e, type, name) => log.push(`remove ${e.index} ${type} ${name}`),
  };
  assert.ok(m.apply(decodeServerFrame(delta({
    tick: 11n, updated: [{ type: 3, at: { list: [1] }, values: i32(5) }], removed: [{ type: 4, at: { list: [0] } }],
  }))), m.error);
  assert.ok(m.apply(decodeServerFrame(snapshot({ tick: 20n, groups: [
    { at: { list: [0] }, versions: [1], columns: [{ type: 1, values: f32(3, 5) }, { type: 4, strings: ['bob'] }] },
    { at: { list: [1] }, versions: [1] },
  ] }))), m.error);
  assert.deepEqual(log, ['update 1 3 health', 'remove 0 4 name', 'update 0 1 position', 'update 0 4 name', 'remove 1 3 health']);
});

// A joined session over an in-memory connection: entity 0:1 with position.
async function joinedSession() {
  const sent = [];
  let handlers;
  const session = await Session.connect({
    transport: (h) => {
      handlers = h;
      queueMicrotask(() => h.open());
      return { send: (f) => sent.push(f), close() {}, bufferedAmount: 0 };
    },
    now: () => 0,
    reconnect: { enabled: false },
  });
  await new Promise((r) => setImmediate(r));
  handlers.frame(welcome({ tick: 100n }));
  handlers.frame(snapshot({ tick: 100n, groups: [{ at: { list: [0] }, versions: [1], columns: [{ type: 1, values: f32(1, 2) }] }] }));
  session.update();
  assert.equal(session.state, 'joined');
  const messages = () => sent.map((f) => cw.ClientMessage.getSizePrefixedRootAsClientMessage(new flatbuffers.ByteBuffer(f)));
  return { session, handlers, messages };
}

test('session: sample and the updated/removed events by name; remove() takes one name, ids or a list', async () => {
  const { session, handlers, messages } = await joinedSession();
  assert.deepEqual(session.sample(e0, 'position'), { x: 1, y: 2 });
  assert.deepEqual(session.sample(e0, 1), { x: 1, y: 2 });
  assert.equal(session.sample(e0, 'health'), undefined);
  assert.throws(() => session.sample(e0, 'postion'), unknown('postion'));
  const events = [];
  session.events.updated = (e, type, name) => events.push(['updated', type, name]);
  session.events.removed = (e, type, name) => events.push(['removed', type, name]);
  handlers.frame(delta({ tick: 101n, updated: [{ type: 1, at: { list: [0] }, values: f32(2, 2) }] }));
  handlers.frame(delta({ tick: 102n, removed: [{ type: 1, at: { list: [0] } }] }));
  session.update();
  assert.deepEqual(events, [['updated', 1, 'position'], ['removed', 1, 'position']]);

  const pending = [session.remove(e0, 'health'), session.remove(e0, 2), session.remove(e0, ['name', 1])];
  const removes = messages().filter((m) => cw.ClientBody[m.bodyType()] === 'RemoveComponent')
    .map((m) => [...m.body(new cw.RemoveComponent()).typesArray()]);
  assert.deepEqual(removes, [[3], [2], [4, 1]]);
  await assert.rejects(session.remove(e0, ['health', 'helth']), unknown('helth'));
  await assert.rejects(session.set(e0, { postion: { x: 1, y: 1 } }), unknown('postion'));
  session.close();
  await Promise.allSettled(pending); // rejected by close(): never answered
});

test('session: spawn and set take a wire id written as a key ({ 1: {...} }) as well as the name', async () => {
  const { session, messages } = await joinedSession();
  const pending = session.spawn({ 1: { x: 5, y: 6 }, name: 'n' });
  const spawn = messages().find((m) => cw.ClientBody[m.bodyType()] === 'Spawn').body(new cw.Spawn());
  const types = Array.from({ length: spawn.componentsLength() }, (_, i) => spawn.components(i).type());
  assert.deepEqual(types.sort(), [1, 4]);
  await assert.rejects(session.spawn({ 99: { x: 1 } }), unknown('99'));
  session.close();
  await assert.rejects(pending, /closed by the client/);
});

test('Interpolation: record, sample and forget by name as by wire id', () => {
  const types = decodeServerFrame(welcome()).components;
  const h = new Interpolation(types);
  const e = { index: 3, version: 1 };
  h.onTick(10); h.record(e, 'position', makeValue(types.get('position'), { x: 0, y: 0 }));
  h.onTick(11); h.record(e, 1, makeValue(types.get(1), { x: 10, y: 0 }));
  assert.equal(h.sample(e, 'position', 10.5).x, 5);
  assert.equal(h.sample(e, 1, 10.5).x, 5);
  assert.equal(h.sample(e, 'health', 10.5), null, 'not interpolated: no history');
  assert.throws(() => h.sample(e, 'postion', 10.5), unknown('postion'));
  assert.throws(() => h.record(e, 'postion', new Uint8Array(8)), unknown('postion'));
  h.forget(e, 'position');
  assert.equal(h.sample(e, 1, 10.5), null);
});
