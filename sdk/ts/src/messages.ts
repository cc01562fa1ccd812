// Server messages decoded into plain objects (defensively: frame.ts), and client messages
// encoded; docs/PROTOCOL.md "Messages".
import * as flatbuffers from 'flatbuffers';
import * as wire from './generated/server_generated';
import * as cwire from './generated/client_generated';
import {
  MalformedFrameError, openFrame, DEFAULT_MAX_SERVER_FRAME_BYTES, FRAME_PREFIX_BYTES, compactKind, compactLength, compactPrefixWord,
  isCompactPrefix, readPrefix,
} from './frame';
import { ComponentInfo, FieldType, Schema, UnknownComponentError, Writer, isString, makeValue, packColumn, FixedValue } from './schema';

export const PROTOCOL_VERSION = 6;
// The first version whose server takes the compact Input (docs/PROTOCOL.md, "Protocol 6").
export const COMPACT_INPUT_VERSION = 6;
export const MAX_INPUT_TICKS = 16;
export const MAX_REASON_BYTES = 256;

export interface Entity {
  readonly index: number;
  readonly version: number;
}

export enum ErrorCode {
  None = 0, Malformed, InvalidValue, UnknownEntity, StaleVersion, NotOwner, ComponentMissing,
  EntityQuota, WorldFull, RateLimited, NotJoined, GameFailed, InputTooEarly, ReadOnly,
}
export function errorCodeName(code: number): string {
  return ErrorCode[code] ?? 'unknown error';
}

export interface IndexSet {
  readonly runs: readonly { first: number; count: number }[];
  readonly list: readonly number[];
}
export interface Column {
  readonly type: number;
  readonly at: IndexSet | null;
  // The column's bytes in place: a view into the frame it was decoded from (copy it to keep
  // it past a change to that frame's bytes).
  readonly values: Uint8Array | null;
  readonly strings: readonly string[] | null;
}
export interface EntityGroup {
  readonly at: IndexSet | null;
  readonly versions: readonly number[];
  readonly columns: readonly Column[];
}

export interface Welcome {
  readonly kind: 'welcome';
  readonly clientId: number;
  readonly protocolVersion: number;
  readonly tickRate: number;
  readonly currentTick: bigint;
  readonly checksumInterval: number;
  readonly resumeKey: Uint8Array;
  readonly playerId: string;
  readonly components: Schema;
  readonly interestRadius: number;
  readonly clientBudget: number;
}
export interface Snapshot {
  readonly kind: 'snapshot';
  readonly tick: bigint;
  readonly chunk: number;
  readonly chunkCount: number;
  readonly entityCount: number;
  readonly groups: readonly EntityGroup[];
}
export interface Delta {
  readonly kind: 'delta';
  readonly tick: bigint;
  readonly destroyed: readonly Entity[];
  readonly spawned: readonly EntityGroup[];
  readonly updated: readonly Column[];
  readonly removed: readonly Column[];
  readonly ownerOnly: boolean;
  readonly entered: readonly EntityGroup[];
  readonly left: readonly Entity[];
  // Which optional vectors were present (an owner-only Delta must have none of these).
  readonly hasSpawnsOrDestroys: boolean;
}
export interface CommandResult {
  readonly kind: 'commandResult';
  readonly requestId: number;
  readonly ok: boolean;
  readonly code: number;
  readonly message: string;
  readonly entity: Entity | null;
}
export interface Pong { readonly kind: 'pong'; readonly nonce: bigint; readonly tick: bigint }
export interface Checksum {
  readonly kind: 'checksum';
  readonly tick: bigint;
  readonly hash: bigint;
  readonly entityCount: number;
  readonly firstIndex: number;
  readonly endIndex: number;
  readonly excluded: readonly number[];
}
export interface Disconnect { readonly kind: 'disconnect'; readonly reason: string }
export interface InputAck {
  readonly kind: 'inputAck';
  readonly tick: bigint;
  readonly appliedTick: bigint;
  readonly lead: number;
  readonly late: number;
  readonly repeated: number;
}
export interface InputRejected {
  readonly kind: 'inputRejected';
  readonly firstTick: bigint;
  readonly code: number;
  readonly message: string;
  readonly refused: number;
}
export type ServerMessage = Welcome | Snapshot | Delta | CommandResult | Pong | Checksum |
  Disconnect | InputAck | InputRejected;

// ---- decoding -----------------------------------------------------------------------------------

function indexSet(set: wire.IndexSet | null): IndexSet | null {
  if (set === null) return null;
  const runs: { first: number; count: number }[] = [];
  for (let i = 0, n = set.runsLength(); i < n; ++i) {
    const r = set.runs(i)!;
    runs.push({ first: r.first(), count: r.count() });
  }
  return { runs, list: uint32s(set.bb!, set.bb_pos, 6) };
}

function column(c: wire.Column): Column {
  const hasValues = c.bb!.__offset(c.bb_pos, 8) !== 0;
  const hasStrings = c.bb!.__offset(c.bb_pos, 10) !== 0;
  let strings: string[] | null = null;
  if (hasStrings) {
    strings = [];
    for (let i = 0, n = c.stringsLength(); i < n; ++i) strings.push(c.strings(i));
  }
  let values: Uint8Array | null = null;
  if (hasValues) {
    // one copy of the bytes; __vector_len has checked that they lie inside the frame
    const bb = c.bb!;
    const slot = c.bb_pos + bb.__offset(c.bb_pos, 8);
    const start = bb.__vector(slot);
    // A view, not a copy: allocating and copying an 80 KB column took 35 us in Chromium, a
    // fifth of applying its 10,000 values.
    values = bb.bytes().subarray(start, start + bb.__vector_len(slot));
  }
  return { type: c.type(), at: indexSet(c.at()), values, strings };
}

function columns(n: number, get: (i: number) => wire.Column | null): Column[] {
  const out: Column[] = [];
  for (let i = 0; i < n; ++i) out.push(column(get(i)!));
  return out;
}

function group(g: wire.EntityGroup): EntityGroup {
  return { at: indexSet(g.at()), versions: uint32s(g.bb!, g.bb_pos, 6), columns: columns(g.columnsLength(), (i) => g.columns(i)) };
}

// A table's [uint32] field (its vtable slot `slot`) read in one pass: element by element through
// the checked ByteBuffer was a tenth of a 10,000-entity snapshot's decode.
function uint32s(bb: flatbuffers.ByteBuffer, table: number, slot: number): number[] {
  const at = bb.__offset(table, slot);
  if (at === 0) return [];
  const n = bb.__vector_len(table + at);
  const start = bb.__vector(table + at);
  const bytes = bb.bytes();
  if (start < 0 || start + 4 * n > bytes.length) throw new MalformedFrameError(`a vector of ${n} uint32 at ${start} exceeds the frame`);
  const out = new Array<number>(n);
  for (let i = 0, p = start; i < n; ++i, p += 4) {
    out[i] = (bytes[p]! | (bytes[p + 1]! << 8) | (bytes[p + 2]! << 16) | (bytes[p + 3]! << 24)) >>> 0;
  }
  return out;
}

function groups(n: number, get: (i: number) => wire.EntityGroup | null): EntityGroup[] {
  const out: EntityGroup[] = [];
  for (let i = 0; i < n; ++i) out.push(group(get(i)!));
  return out;
}

function refs(n: number, get: (i: number) => wire.EntityRef | null): Entity[] {
  const out: Entity[] = [];
  for (let i = 0; i < n; ++i) {
    const r = get(i)!;
    out.push({ index: r.index(), version: r.version() });
  }
  return out;
}

function schemaOf(w: wire.Welcome): Schema {
  const types: ComponentInfo[] = [];
  const n = w.componentsLength();
  if (n > 64) throw new MalformedFrameError(`schema lists ${n} component types, more than 64`);
  for (let i = 0; i < n; ++i) {
    const t = w.components(i)!;
    const fields = [];
    const fieldCount = t.fieldsLength();
    if (fieldCount > 64) throw new MalformedFrameError(`component type ${i} has more than 64 fields`);
    for (let k = 0; k < fieldCount; ++k) {
      const f = t.fields(k)!;
      fields.push({ name: f.name() ?? '', type: f.type() as number as FieldType, bits: f.bits(), min: f.min(), max: f.max(), step: f.step() });
    }
    types.push({
      id: t.id(), name: t.name() ?? '', writer: t.writer() as number as Writer, ownerOnly: t.ownerOnly(),
      maxBytes: t.maxBytes(), fields, input: t.input(), replicated: t.replicated(), interpolated: t.interpolated(),
    });
  }
  return new Schema(types); // SchemaError when it breaks a rule
}

function finite(x: number, what: string): number {
  if (!Number.isFinite(x)) throw new MalformedFrameError(`${what} is not a finite number`);
  return x;
}

// Decodes one whole server frame (prefix included). Throws MalformedFrameError (or
// SchemaError for a Welcome whose schema breaks the rules); never reads outside the frame.
// A frame whose prefix has its top bit set is a compact one (protocol 6: the compact InputAck),
// decoded to the same InputAck as the FlatBuffers one; a full frame is always shorter than 2^31.
export function decodeServerFrame(frame: Uint8Array, maxFrameBytes = DEFAULT_MAX_SERVER_FRAME_BYTES): ServerMessage {
  if (frame.length >= FRAME_PREFIX_BYTES && isCompactPrefix(readPrefix(frame))) {
    return decodeCompactServerFrame(frame, maxFrameBytes);
  }
  const bb = openFrame(frame, 'ECSS', maxFrameBytes);
  try {
    return decodeBody(wire.ServerMessage.getSizePrefixedRootAsServerMessage(bb));
  } catch (e) {
    if (e instanceof MalformedFrameError || (e instanceof Error && e.name === 'SchemaError')) throw e;
    throw new MalformedFrameError(`cannot decode the frame: ${(e as Error).message}`);
  }
}

// The server's compact kinds (protocol 6); the client's are its own (COMPACT_INPUT_KIND).
const COMPACT_INPUT_ACK_KIND = 1;
const MAX_U32 = 0xffffffffn;

// Unsigned LEB128 at bytes[at...]: at most 10 bytes and no bit past 2^64 - 1; null when it is
// cut short or breaks either (C++: take_leb128). Returns the value and where the next begins.
function takeLeb128(bytes: Uint8Array, at: number): { value: bigint; next: number } | null {
  let value = 0n;
  for (let i = 0; i < 10 && at + i < bytes.length; ++i) {
    const byte = bytes[at + i]!;
    const part = byte & 0x7f;
    if (i === 9 && part > 1) return null; // past 64 bits
    value |= BigInt(part) << BigInt(7 * i);
    if ((byte & 0x80) === 0) return { value, next: at + i + 1 };
  }
  return null;
}

// A whole compact server frame (prefix included, its top bit set) as the message it carries
// (C++: decode_compact_server_frame); MalformedFrameError for an unknown kind or a body that
// does not decode exactly.
function decodeCompactServerFrame(frame: Uint8Array, maxFrameBytes: number): ServerMessage {
  if (frame.length < FRAME_PREFIX_BYTES) throw new MalformedFrameError('compact frame without its prefix');
  const word = readPrefix(frame);
  const n = compactLength(word);
  if (!isCompactPrefix(word) || n !== frame.length - FRAME_PREFIX_BYTES) {
    throw new MalformedFrameError(`compact frame prefix does not match the frame: it announces ${n} bytes, the frame has ${frame.length - FRAME_PREFIX_BYTES}`);
  }
  if (n > maxFrameBytes) {
    throw new MalformedFrameError(`a compact frame of ${n} bytes, more than the limit of ${maxFrameBytes}`);
  }
  const kind = compactKind(word);
  if (kind !== COMPACT_INPUT_ACK_KIND) throw new MalformedFrameError(`unknown compact frame kind ${kind}`);
  const fields: bigint[] = [];
  let at = FRAME_PREFIX_BYTES;
  for (let i = 0; i < 5; ++i) {
    const taken = takeLeb128(frame, at);
    if (taken === null) throw new MalformedFrameError('compact InputAck: a field is not a LEB128 number of at most 64 bits');
    fields.push(taken.value);
    at = taken.next;
  }
  const [tick, back, zigzag, late, repeated] = fields as [bigint, bigint, bigint, bigint, bigint];
  if (at !== frame.length) throw new MalformedFrameError(`compact InputAck: ${frame.length - at} bytes after its fields`);
  if (back > tick) throw new MalformedFrameError('InputAck applied an input of a tick before tick 0');
  if (zigzag > MAX_U32 || late > MAX_U32 || repeated > MAX_U32) {
    throw new MalformedFrameError('compact InputAck: lead, late or repeated past 32 bits');
  }
  const z = Number(zigzag);
  return {
    kind: 'inputAck', tick, appliedTick: tick - back, lead: (z >>> 1) ^ -(z & 1),
    late: Number(late), repeated: Number(repeated),
  };
}

function decodeBody(m: wire.ServerMessage): ServerMessage {
  const type = m.bodyType();
  switch (type) {
    case wire.ServerBody.Welcome: {
      const w = m.body(new wire.Welcome()) as wire.Welcome;
      const key = new Uint8Array(w.resumeKeyLength());
      for (let i = 0; i < key.length; ++i) key[i] = w.resumeKey(i)!;
      return {
        kind: 'welcome', clientId: w.clientId(), protocolVersion: w.protocolVersion(),
        tickRate: finite(w.tickRate(), 'tick_rate'), currentTick: w.currentTick(),
        checksumInterval: w.checksumInterval(), resumeKey: key, playerId: w.playerId() ?? '',
        components: schemaOf(w), interestRadius: finite(w.interestRadius(), 'interest_radius'),
        clientBudget: w.clientBudget(),
      };
    }
    case wire.ServerBody.Snapshot: {
      const s = m.body(new wire.Snapshot()) as wire.Snapshot;
      return {
        kind: 'snapshot', tick: s.tick(), chunk: s.chunk(), chunkCount: s.chunkCount(),
        entityCount: s.entityCount(), groups: groups(s.groupsLength(), (i) => s.groups(i)),
      };
    }
    case wire.ServerBody.Delta: {
      const d = m.body(new wire.Delta()) as wire.Delta;
      const present = (slot: number) => d.bb!.__offset(d.bb_pos, slot) !== 0;
      return {
        kind: 'delta', tick: d.tick(),
        destroyed: refs(d.destroyedLength(), (i) => d.destroyed(i)),
        spawned: groups(d.spawnedLength(), (i) => d.spawned(i)),
        updated: columns(d.updatedLength(), (i) => d.updated(i)),
        removed: columns(d.removedLength(), (i) => d.removed(i)),
        ownerOnly: d.ownerOnly(),
        entered: groups(d.enteredLength(), (i) => d.entered(i)),
        left: refs(d.leftLength(), (i) => d.left(i)),
        // vtable slots: destroyed 6, spawned 8, entered 16, left 18
        hasSpawnsOrDestroys: present(6) || present(8) || present(16) || present(18),
      };
    }
    case wire.ServerBody.CommandResult: {
      const r = m.body(new wire.CommandResult()) as wire.CommandResult;
      const e = r.entity();
      return {
        kind: 'commandResult', requestId: r.requestId(), ok: r.ok(), code: r.code(),
        message: r.message() ?? '', entity: e === null ? null : { index: e.index(), version: e.version() },
      };
    }
    case wire.ServerBody.Pong: {
      const p = m.body(new wire.Pong()) as wire.Pong;
      return { kind: 'pong', nonce: p.nonce(), tick: p.tick() };
    }
    case wire.ServerBody.Checksum: {
      const c = m.body(new wire.Checksum()) as wire.Checksum;
      const excluded: number[] = [];
      for (let i = 0, n = c.excludedLength(); i < n; ++i) excluded.push(c.excluded(i)!);
      return {
        kind: 'checksum', tick: c.tick(), hash: c.hash(), entityCount: c.entityCount(),
        firstIndex: c.firstIndex(), endIndex: c.endIndex(), excluded,
      };
    }
    case wire.ServerBody.Disconnect: {
      const d = m.body(new wire.Disconnect()) as wire.Disconnect;
      return { kind: 'disconnect', reason: d.reason() ?? '' };
    }
    case wire.ServerBody.InputAck: {
      const a = m.body(new wire.InputAck()) as wire.InputAck;
      return {
        kind: 'inputAck', tick: a.tick(), appliedTick: a.appliedTick(), lead: a.lead(),
        late: a.late(), repeated: a.repeated(),
      };
    }
    case wire.ServerBody.InputRejected: {
      const r = m.body(new wire.InputRejected()) as wire.InputRejected;
      return { kind: 'inputRejected', firstTick: r.firstTick(), code: r.code(), message: r.message() ?? '', refused: r.refused() };
    }
    default:
      throw new MalformedFrameError(`unknown server message type ${type}`);
  }
}

// ---- encoding -----------------------------------------------------------------------------------

export interface Hello {
  protocolVersion?: number;
  clientName?: string;
  authToken?: string;
  resumeKey?: Uint8Array | null;
  connectToken?: string;
}

// Component values to send, by type name (or wire id): { position: { x: 1, y: 2 }, name: 'bob' }.
export type ComponentValues = Record<string, FixedValue | string>;

// The type a ComponentValues key names: a type name, else a wire id written in decimal.
function typeOfKey(schema: Schema, key: string): ComponentInfo {
  const info = schema.find(key) ?? (/^(0|[1-9][0-9]*)$/.test(key) ? schema.find(Number(key)) : undefined);
  if (info === undefined) throw new UnknownComponentError(key, schema.names);
  return info;
}

function finishClient(builder: flatbuffers.Builder, type: cwire.ClientBody, body: flatbuffers.Offset): Uint8Array {
  const root = cwire.ClientMessage.createClientMessage(builder, type, body);
  builder.finishSizePrefixed(root, 'ECSC');
  return builder.asUint8Array().slice();
}

export function encodeHello(h: Hello): Uint8Array {
  const b = new flatbuffers.Builder(256);
  const name = b.createString(h.clientName ?? '');
  const auth = h.authToken ? b.createString(h.authToken) : 0;
  const key = h.resumeKey ? cwire.Hello.createResumeKeyVector(b, h.resumeKey) : 0;
  const token = h.connectToken ? b.createString(h.connectToken) : 0;
  cwire.Hello.startHello(b);
  cwire.Hello.addProtocolVersion(b, h.protocolVersion ?? PROTOCOL_VERSION);
  cwire.Hello.addClientName(b, name);
  if (auth) cwire.Hello.addAuthToken(b, auth);
  if (key) cwire.Hello.addResumeKey(b, key);
  if (token) cwire.Hello.addConnectToken(b, token);
  return finishClient(b, cwire.ClientBody.Hello, cwire.Hello.endHello(b));
}

// The values of one type packed as its column carries them: strings one per value, fixed-size
// values bit-packed back to back ("Columns"). Spawn, SetComponent and both Input forms.
function packValues(info: ComponentInfo, name: string, all: readonly (FixedValue | string)[]): Uint8Array | string[] {
  if (isString(info)) {
    return all.map((v) => {
      if (typeof v !== 'string') throw new TypeError(`'${name}' is a string type: give a string`);
      return v;
    });
  }
  return packColumn(info, all.map((v) => {
    if (typeof v !== 'object') throw new TypeError(`'${name}' takes an object of its fields`);
    return makeValue(info, v);
  }));
}

function addColumn(b: flatbuffers.Builder, info: ComponentInfo, packed: Uint8Array | string[]): flatbuffers.Offset {
  const vec = packed instanceof Uint8Array ? cwire.Column.createValuesVector(b, packed)
    : cwire.Column.createStringsVector(b, packed.map((t) => b.createString(t)));
  cwire.Column.startColumn(b);
  cwire.Column.addType(b, info.id);
  if (packed instanceof Uint8Array) cwire.Column.addValues(b, vec); else cwire.Column.addStrings(b, vec);
  return cwire.Column.endColumn(b);
}

// One column per type with exactly one value each (Spawn, SetComponent); throws an
// UnknownComponentError (a TypeError) for an unknown type, a server-written one is left to
// the server to refuse.
function valueColumns(b: flatbuffers.Builder, schema: Schema, values: ComponentValues): flatbuffers.Offset {
  const offsets = Object.keys(values).map((name) => {
    const info = typeOfKey(schema, name);
    return addColumn(b, info, packValues(info, name, [values[name]!]));
  });
  return cwire.Spawn.createComponentsVector(b, offsets);
}

export function encodeSpawn(schema: Schema, requestId: number, values: ComponentValues): Uint8Array {
  const b = new flatbuffers.Builder(256);
  const cols = valueColumns(b, schema, values);
  cwire.Spawn.startSpawn(b);
  cwire.Spawn.addRequestId(b, requestId);
  cwire.Spawn.addComponents(b, cols);
  return finishClient(b, cwire.ClientBody.Spawn, cwire.Spawn.endSpawn(b));
}

export function encodeDestroy(requestId: number, entity: Entity): Uint8Array {
  const b = new flatbuffers.Builder(64);
  cwire.Destroy.startDestroy(b);
  cwire.Destroy.addRequestId(b, requestId);
  cwire.Destroy.addEntity(b, cwire.EntityRef.createEntityRef(b, entity.index, entity.version));
  return finishClient(b, cwire.ClientBody.Destroy, cwire.Destroy.endDestroy(b));
}

export function encodeSet(schema: Schema, requestId: number, entity: Entity, values: ComponentValues): Uint8Array {
  const b = new flatbuffers.Builder(256);
  const cols = valueColumns(b, schema, values);
  cwire.SetComponent.startSetComponent(b);
  cwire.SetComponent.addRequestId(b, requestId);
  cwire.SetComponent.addEntity(b, cwire.EntityRef.createEntityRef(b, entity.index, entity.version));
  cwire.SetComponent.addComponents(b, cols);
  return finishClient(b, cwire.ClientBody.SetComponent, cwire.SetComponent.endSetComponent(b));
}

export function encodeRemove(schema: Schema, requestId: number, entity: Entity, types: readonly (string | number)[]): Uint8Array {
  const b = new flatbuffers.Builder(64);
  const ids = cwire.RemoveComponent.createTypesVector(b, types.map((t) => schema.get(t).id));
  cwire.RemoveComponent.startRemoveComponent(b);
  cwire.RemoveComponent.addRequestId(b, requestId);
  cwire.RemoveComponent.addEntity(b, cwire.EntityRef.createEntityRef(b, entity.index, entity.version));
  cwire.RemoveComponent.addTypes(b, ids);
  return finishClient(b, cwire.ClientBody.RemoveComponent, cwire.RemoveComponent.endRemoveComponent(b));
}

export function encodePing(nonce: bigint): Uint8Array {
  const b = new flatbuffers.Builder(32);
  return finishClient(b, cwire.ClientBody.Ping, cwire.Ping.createPing(b, nonce));
}

export function encodeResyncRequest(reason: string): Uint8Array {
  const b = new flatbuffers.Builder(64);
  let text = reason;
  while (new TextEncoder().encode(text).length > MAX_REASON_BYTES) text = text.slice(0, -1);
  const s = b.createString(text);
  return finishClient(b, cwire.ClientBody.ResyncRequest, cwire.ResyncRequest.createResyncRequest(b, s));
}

export function encodeFocus(x: number, y: number): Uint8Array {
  if (!Number.isFinite(x) || !Number.isFinite(y)) throw new TypeError('Focus needs finite coordinates');
  const b = new flatbuffers.Builder(32);
  return finishClient(b, cwire.ClientBody.Focus, cwire.Focus.createFocus(b, x, y));
}

const MAX_TICK = (1n << 64n) - 1n;

// What both Input forms check and pack: the ticks, the render tick, and a column per input type
// of ticks[0] (in its key order), each with one value per tick.
function inputColumns(schema: Schema, firstTick: bigint, ticks: readonly ComponentValues[], renderTick: bigint,
                      renderFraction: number): { info: ComponentInfo; values: Uint8Array }[] {
  if (ticks.length < 1 || ticks.length > MAX_INPUT_TICKS) throw new RangeError(`an Input holds 1 to ${MAX_INPUT_TICKS} ticks`);
  const lastTick = firstTick + BigInt(ticks.length) - 1n;
  if (firstTick < 1n || lastTick > MAX_TICK) throw new RangeError(`an Input's ticks are 1 to 2^64 - 1, not ${firstTick} to ${lastTick}`);
  if (!(renderFraction >= 0 && renderFraction < 1)) throw new RangeError(`an Input's render fraction is in [0, 1), not ${renderFraction}`);
  if (renderTick < 0n) throw new RangeError(`an Input's render tick is 0 (not given) or more, not ${renderTick}`);
  if (renderTick > lastTick) throw new RangeError(`an Input's render tick ${renderTick} is after its last tick ${lastTick}`);
  return Object.keys(ticks[0]!).map((name) => {
    const info = typeOfKey(schema, name);
    if (!info.input) {
      const inputs = schema.types.filter((t) => t.input).map((t) => t.name);
      throw new TypeError(`'${name}' is not one of the server's input types (${inputs.join(', ') || 'it has none'})`);
    }
    // input types are fixed-size (the schema refuses a string one)
    return { info, values: packValues(info, name, ticks.map((v) => v[name]!)) as Uint8Array };
  });
}

// One Input for `ticks.length` consecutive ticks from firstTick (1 to 16), each tick's values
// by input type name; and (protocol 5) the render tick the player saw, a whole tick and the
// fraction towards the next in [0, 1), never after the last tick (0: not given).
export function encodeInput(schema: Schema, entity: Entity, firstTick: bigint, ticks: readonly ComponentValues[],
                            renderTick = 0n, renderFraction = 0): Uint8Array {
  const packed = inputColumns(schema, firstTick, ticks, renderTick, renderFraction);
  const b = new flatbuffers.Builder(256);
  const cols = cwire.Input.createColumnsVector(b, packed.map((c) => addColumn(b, c.info, c.values)));
  cwire.Input.startInput(b);
  cwire.Input.addEntity(b, cwire.EntityRef.createEntityRef(b, entity.index, entity.version));
  cwire.Input.addFirstTick(b, firstTick);
  cwire.Input.addTickCount(b, ticks.length);
  cwire.Input.addColumns(b, cols);
  cwire.Input.addRenderTick(b, renderTick);
  cwire.Input.addRenderFraction(b, renderFraction);
  return finishClient(b, cwire.ClientBody.Input, cwire.Input.endInput(b));
}

// What a compact Input leaves out (protocol 6): the entity and the input types, in column
// order, of the last full Input sent on the connection.
export interface InputReference {
  readonly entity: Entity;
  readonly types: readonly (string | number)[]; // names or wire ids
}

// The reference a full Input of these values for `entity` sets: its column types as wire ids.
export function inputReference(schema: Schema, entity: Entity, values: ComponentValues): InputReference {
  return { entity: { index: entity.index, version: entity.version }, types: Object.keys(values).map((k) => typeOfKey(schema, k).id) };
}

export function sameInputReference(schema: Schema, a: InputReference, b: InputReference): boolean {
  const id = (t: string | number) => (typeof t === 'number' ? t : typeOfKey(schema, t).id);
  return a.entity.index === b.entity.index && a.entity.version === b.entity.version &&
    a.types.length === b.types.length && a.types.every((t, i) => id(t) === id(b.types[i]!));
}

const COMPACT_INPUT_KIND = 1;
const MAX_COMPACT_BODY_BYTES = (1 << 24) - 1;

function writeLeb128(out: number[], value: bigint): void {
  do {
    const low = Number(value & 0x7fn);
    value >>= 7n;
    out.push(value === 0n ? low : low | 0x80);
  } while (value !== 0n);
}

// The compact Input (protocol 6) of what encodeInput would send, for a connection whose last
// full Input set `reference`. Throws a TypeError when the entity or the input types (or their
// order) differ from the reference: that needs a full Input. The render fraction goes in 256ths,
// rounded down.
export function encodeCompactInput(schema: Schema, reference: InputReference, entity: Entity, firstTick: bigint,
                                   ticks: readonly ComponentValues[], renderTick = 0n, renderFraction = 0): Uint8Array {
  const packed = inputColumns(schema, firstTick, ticks, renderTick, renderFraction);
  if (!sameInputReference(schema, reference, inputReference(schema, entity, ticks[0]!))) {
    throw new TypeError('a compact Input needs the entity and input types, in order, of the last full Input: send a full one');
  }
  const head: number[] = [(ticks.length - 1) | (renderTick > 0n ? 0x10 : 0)];
  writeLeb128(head, firstTick);
  if (renderTick > 0n) {
    writeLeb128(head, firstTick + BigInt(ticks.length) - 1n - renderTick);
    head.push(Math.min(Math.max(Math.floor(renderFraction * 256), 0), 255));
  }
  const n = head.length + packed.reduce((sum, c) => sum + c.values.length, 0);
  if (n > MAX_COMPACT_BODY_BYTES) throw new RangeError(`a compact Input of ${n} bytes, more than 2^24 - 1`);
  const frame = new Uint8Array(4 + n);
  new DataView(frame.buffer).setUint32(0, (0x80000000 | (COMPACT_INPUT_KIND << 24) | n) >>> 0, true);
  frame.set(head, 4);
  let at = 4 + head.length;
  for (const c of packed) {
    frame.set(c.values, at);
    at += c.values.length;
  }
  return frame;
}

// What the server sends a client of protocol 6 or later for an InputAck: a compact frame of kind
// 1 (prefix included), five unsigned LEB128 numbers: tick, tick - appliedTick, lead zigzagged,
// late, repeated (C++: encode_compact_input_ack; an appliedTick above tick is sent as tick). For
// tests and third parties: the SDK only receives it. Throws a RangeError for a value outside its
// wire type (ticks: 0 to 2^64 - 1; lead: a 32-bit integer; late, repeated: 0 to 2^32 - 1).
export function encodeCompactInputAck(ack: Omit<InputAck, 'kind'>): Uint8Array {
  const { tick, appliedTick, lead, late, repeated } = ack;
  if (tick < 0n || tick > MAX_TICK || appliedTick < 0n || appliedTick > MAX_TICK) {
    throw new RangeError(`an InputAck's ticks are 0 to 2^64 - 1, not ${tick} and ${appliedTick}`);
  }
  if (!Number.isInteger(lead) || lead < -0x80000000 || lead > 0x7fffffff) throw new RangeError(`an InputAck's lead is a 32-bit integer, not ${lead}`);
  for (const [name, v] of [['late', late], ['repeated', repeated]] as const) {
    if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) throw new RangeError(`an InputAck's ${name} is 0 to 2^32 - 1, not ${v}`);
  }
  const body: number[] = [];
  writeLeb128(body, tick);
  writeLeb128(body, tick - (appliedTick < tick ? appliedTick : tick));
  writeLeb128(body, BigInt(((lead << 1) ^ (lead >> 31)) >>> 0)); // zigzag: a small lead either way is one byte
  writeLeb128(body, BigInt(late));
  writeLeb128(body, BigInt(repeated));
  const frame = new Uint8Array(FRAME_PREFIX_BYTES + body.length);
  new DataView(frame.buffer).setUint32(0, compactPrefixWord(COMPACT_INPUT_ACK_KIND, body.length), true);
  frame.set(body, FRAME_PREFIX_BYTES);
  return frame;
}
