// Builds server frames with the FlatBuffers builder and the generated tables, for unit tests.
import * as flatbuffers from 'flatbuffers';
import * as w from '../../dist/test/wire-server.js';
import { readFileSync } from 'node:fs';
import { FrameReader } from '../../dist/ecsnet.node.js';

export { w };

function finish(b, type, body) {
  const root = w.ServerMessage.createServerMessage(b, type, body);
  b.finishSizePrefixed(root, 'ECSS');
  return b.asUint8Array().slice();
}

// The demo game's schema plus a quantized type: owner 0, position 1, velocity 2, health 3,
// name 4 (string, 8 bytes), secret 5 (owner-only), packed 6 (two 19-bit quantized floats), flag 7.
export const demoTypes = [
  { name: 'owner', writer: 0, fields: [['client', w.FieldType.UInt, 32]] },
  { name: 'position', fields: [['x', w.FieldType.Float, 32], ['y', w.FieldType.Float, 32]], interpolated: true },
  { name: 'velocity', fields: [['x', w.FieldType.Float, 32], ['y', w.FieldType.Float, 32]] },
  { name: 'health', fields: [['value', w.FieldType.Int, 32]] },
  { name: 'name', maxBytes: 8 },
  { name: 'secret', ownerOnly: true, fields: [['code', w.FieldType.ULong, 64]] },
  { name: 'packed', fields: [['a', w.FieldType.Float, 19, -1024, 1024, 1 / 128], ['b', w.FieldType.Float, 19, -1024, 1024, 1 / 128]] },
  { name: 'flag', fields: [['on', w.FieldType.Bool, 8], ['level', w.FieldType.Short, 16]] },
];

export function welcome({ types = demoTypes, clientId = 7, tick = 100n, tickRate = 30, key = new Uint8Array(32).fill(9), interestRadius = 0,
                          protocolVersion = 4 } = {}) {
  const b = new flatbuffers.Builder(1024);
  const comps = types.map((t, id) => {
    const name = b.createString(t.name);
    let fields = 0;
    if (t.fields) {
      fields = w.ComponentType.createFieldsVector(b, t.fields.map(([n, type, bits, min = 0, max = 0, step = 0]) =>
        w.Field.createField(b, b.createString(n), type, bits, min, max, step)));
    }
    w.ComponentType.startComponentType(b);
    w.ComponentType.addId(b, t.id ?? id);
    w.ComponentType.addName(b, name);
    w.ComponentType.addWriter(b, t.writer ?? 1);
    w.ComponentType.addOwnerOnly(b, t.ownerOnly ?? false);
    w.ComponentType.addMaxBytes(b, t.maxBytes ?? 0);
    if (fields) w.ComponentType.addFields(b, fields);
    w.ComponentType.addInput(b, t.input ?? false);
    w.ComponentType.addReplicated(b, t.replicated ?? true);
    w.ComponentType.addInterpolated(b, t.interpolated ?? false);
    return w.ComponentType.endComponentType(b);
  });
  const vec = w.Welcome.createComponentsVector(b, comps);
  const keyVec = w.Welcome.createResumeKeyVector(b, key);
  w.Welcome.startWelcome(b);
  w.Welcome.addClientId(b, clientId);
  w.Welcome.addProtocolVersion(b, protocolVersion);
  w.Welcome.addTickRate(b, tickRate);
  w.Welcome.addCurrentTick(b, tick);
  w.Welcome.addChecksumInterval(b, 30);
  w.Welcome.addResumeKey(b, keyVec);
  w.Welcome.addComponents(b, vec);
  w.Welcome.addInterestRadius(b, interestRadius);
  return finish(b, w.ServerBody.Welcome, w.Welcome.endWelcome(b));
}

function indexSet(b, { runs = [], list = [] }) {
  w.IndexSet.startRunsVector(b, runs.length);
  for (const [first, count] of [...runs].reverse()) w.IndexRun.createIndexRun(b, first, count);
  const r = b.endVector();
  const l = w.IndexSet.createListVector(b, list);
  return w.IndexSet.createIndexSet(b, r, l);
}

// column: { type, at?: {runs, list}, values?: bytes, strings?: [] }
function column(b, c) {
  const at = c.at ? indexSet(b, c.at) : 0;
  const values = c.values ? w.Column.createValuesVector(b, c.values) : 0;
  const strings = c.strings ? w.Column.createStringsVector(b, c.strings.map((s) => b.createString(s))) : 0;
  w.Column.startColumn(b);
  w.Column.addType(b, c.type);
  if (at) w.Column.addAt(b, at);
  if (values) w.Column.addValues(b, values);
  if (strings) w.Column.addStrings(b, strings);
  return w.Column.endColumn(b);
}

// group: { at: {runs, list}, versions: [], columns: [] }
function group(b, g) {
  const at = indexSet(b, g.at);
  const versions = w.EntityGroup.createVersionsVector(b, g.versions);
  const cols = w.EntityGroup.createColumnsVector(b, (g.columns ?? []).map((c) => column(b, c)));
  return w.EntityGroup.createEntityGroup(b, at, versions, cols);
}

export function snapshot({ tick, chunk = 0, chunkCount = 1, entityCount, groups = [] }) {
  const b = new flatbuffers.Builder(1024);
  const gs = w.Snapshot.createGroupsVector(b, groups.map((g) => group(b, g)));
  w.Snapshot.startSnapshot(b);
  w.Snapshot.addTick(b, tick);
  w.Snapshot.addChunk(b, chunk);
  w.Snapshot.addChunkCount(b, chunkCount);
  w.Snapshot.addEntityCount(b, entityCount ?? groups.reduce((n, g) => n + g.versions.length, 0));
  w.Snapshot.addGroups(b, gs);
  return finish(b, w.ServerBody.Snapshot, w.Snapshot.endSnapshot(b));
}

function refs(b, start, list) {
  start(b, list.length);
  for (const [index, version] of [...list].reverse()) w.EntityRef.createEntityRef(b, index, version);
  return b.endVector();
}

export function delta({ tick, destroyed, spawned, updated, removed, ownerOnly = false, entered, left }) {
  const b = new flatbuffers.Builder(1024);
  const o = {
    destroyed: destroyed && refs(b, w.Delta.startDestroyedVector, destroyed),
    left: left && refs(b, w.Delta.startLeftVector, left),
    spawned: spawned && w.Delta.createSpawnedVector(b, spawned.map((g) => group(b, g))),
    entered: entered && w.Delta.createEnteredVector(b, entered.map((g) => group(b, g))),
    updated: updated && w.Delta.createUpdatedVector(b, updated.map((c) => column(b, c))),
    removed: removed && w.Delta.createRemovedVector(b, removed.map((c) => column(b, c))),
  };
  w.Delta.startDelta(b);
  w.Delta.addTick(b, tick);
  if (o.destroyed) w.Delta.addDestroyed(b, o.destroyed);
  if (o.spawned) w.Delta.addSpawned(b, o.spawned);
  if (o.updated) w.Delta.addUpdated(b, o.updated);
  if (o.removed) w.Delta.addRemoved(b, o.removed);
  if (ownerOnly) w.Delta.addOwnerOnly(b, true);
  if (o.entered) w.Delta.addEntered(b, o.entered);
  if (o.left) w.Delta.addLeft(b, o.left);
  return finish(b, w.ServerBody.Delta, w.Delta.endDelta(b));
}

export function checksum({ tick, hash, entityCount, excluded }) {
  const b = new flatbuffers.Builder(128);
  const ex = excluded ? w.Checksum.createExcludedVector(b, excluded) : 0;
  w.Checksum.startChecksum(b);
  w.Checksum.addTick(b, tick);
  w.Checksum.addHash(b, hash);
  w.Checksum.addEntityCount(b, entityCount);
  if (ex) w.Checksum.addExcluded(b, ex);
  return finish(b, w.ServerBody.Checksum, w.Checksum.endChecksum(b));
}

export function commandResult({ requestId, ok = true, code = 0, message = '', entity }) {
  const b = new flatbuffers.Builder(128);
  const m = b.createString(message);
  w.CommandResult.startCommandResult(b);
  w.CommandResult.addRequestId(b, requestId);
  w.CommandResult.addOk(b, ok);
  w.CommandResult.addCode(b, code);
  w.CommandResult.addMessage(b, m);
  if (entity) w.CommandResult.addEntity(b, w.EntityRef.createEntityRef(b, entity[0], entity[1]));
  return finish(b, w.ServerBody.CommandResult, w.CommandResult.endCommandResult(b));
}

export function inputAck({ tick, appliedTick, lead = 0, late = 0, repeated = 0 }) {
  const b = new flatbuffers.Builder(64);
  return finish(b, w.ServerBody.InputAck, w.InputAck.createInputAck(b, tick, appliedTick, lead, late, repeated));
}

export function f32(...xs) {
  return new Uint8Array(new Float32Array(xs).buffer);
}
export function i32(...xs) {
  return new Uint8Array(new Int32Array(xs).buffer);
}

// The frames of a recorded stream file of test/frames/.
export function recorded(file) {
  const reader = new FrameReader(undefined, true); // recorded with the SDK's Hello (protocol 6)
  reader.feed(new Uint8Array(readFileSync(new URL(`../frames/${file}`, import.meta.url))));
  const out = [];
  for (let f = reader.next(); f !== null; f = reader.next()) out.push(f);
  return out;
}
