// The client side of replication, with the C++ protocol::mirror's semantics
// (shared/protocol/src/mirror.cpp): entities by index and version from Snapshot and Delta
// messages, checked against the server's Checksum. Anything inconsistent is reported and the
// mirror waits for a fresh snapshot (the caller sends ResyncRequest with takeResyncReason()).
import { ChecksumHasher, Sum64 } from './checksum';
import type { Checksum, Column, Delta, Entity, EntityGroup, IndexSet, Snapshot } from './messages';
import { ComponentInfo, ComponentValue, Schema, columnBytes, isString, readValue, valueBits } from './schema';
import { FixedStore, type Store, StringStore, Versions, indexSetSize, makeStore, wordAligned } from './stores';

export interface MirrorEvents {
  onSpawn?: (e: Entity) => void;
  // `type` is the wire id, `name` the type's name.
  onUpdate?: (e: Entity, type: number, name: string) => void;
  onRemove?: (e: Entity, type: number, name: string) => void;
  onDestroy?: (e: Entity) => void;
  onEnter?: (e: Entity) => void;
  onLeave?: (e: Entity) => void;
  onSnapshot?: (tick: bigint, entities: number) => void;
  onChecksum?: (tick: bigint, matched: boolean) => void;
}

export interface MirrorStats {
  snapshots: number;
  deltas: number;
  inconsistencies: number;
  checksumsMatched: number;
  checksumsMismatched: number;
  entered: number;
  left: number;
}

// The entities and their values: the live world, or a snapshot being assembled.
class State {
  readonly versions = new Versions();
  readonly stores: Store[];

  constructor(schema: Schema) {
    this.stores = schema.types.map(makeStore);
  }
  find(index: number): Entity | null {
    const version = this.versions.get(index);
    return version === undefined ? null : { index, version };
  }
}

// The indices of a set, or null when its counts (summed) exceed `limit` or a run wraps.
export function expandIndexSet(set: IndexSet | null, limit: number): number[] | null {
  if (indexSetSize(set, limit) < 0) return null;
  const out: number[] = [];
  if (set === null) return out;
  for (const run of set.runs) for (let i = 0; i < run.count; ++i) out.push(run.first + i);
  for (const index of set.list) out.push(index);
  return out;
}

export const sameEntity = (a: Entity | null, b: Entity | null): boolean =>
  a !== null && b !== null && a.index === b.index && a.version === b.version;
export const entityName = (e: Entity): string => `${e.index}:${e.version}`;

export class Mirror {
  events: MirrorEvents = {};
  readonly stats: MirrorStats = { snapshots: 0, deltas: 0, inconsistencies: 0, checksumsMatched: 0, checksumsMismatched: 0, entered: 0, left: 0 };
  error = '';

  private schema: Schema = new Schema([]);
  private live = new State(this.schema);
  private indices = new Uint32Array(64); // a column's entity indices, reused (writeIndices)
  private highest = -1;                   // the highest of them
  private staging: State | null = null;
  private stagingTick = 0n;
  private stagingNextChunk = 0;
  private stagingChunkCount = 0;
  private stagingEntityCount = 0;
  private ready_ = false;
  private awaitingResync = false;
  private resyncReported = false;
  private resyncReason = '';
  private tick_ = 0n;
  private eventTick_ = 0n;
  private applying = false;
  private active: MirrorEvents = {};

  constructor(private readonly hasher: ChecksumHasher, readonly maxIndex = 2 ** 24 - 1) {}

  // The server's component types; a different schema empties the mirror.
  setSchema(schema: Schema): void {
    if (schema.equals(this.schema) && this.live.stores.length === schema.size) return;
    this.schema = schema;
    this.live = new State(schema);
    this.staging = null;
    this.ready_ = false;
    this.awaitingResync = false;
    this.resyncReported = false;
  }
  get types(): Schema { return this.schema; }
  get ready(): boolean { return this.ready_ && !this.awaitingResync; }
  get tick(): bigint { return this.tick_; }
  // The tick of the message whose changes are being reported (tick outside events).
  get eventTick(): bigint { return this.applying ? this.eventTick_ : this.tick_; }
  get size(): number { return this.live.versions.size; }

  takeResyncReason(): string | null {
    if (!this.awaitingResync || this.resyncReported) return null;
    this.resyncReported = true;
    return this.resyncReason;
  }

  find(index: number): Entity | null { return this.live.find(index); }
  contains(e: Entity): boolean { return this.live.versions.get(e.index) === e.version; }

  // Every method below takes the component type by name ('position') or by wire id, and throws
  // an UnknownComponentError (a TypeError listing the server's types) for a type the server
  // does not have: test for an optional one with `types.find(name)`.

  // Whether e is mirrored and has the type.
  has(e: Entity, type: string | number): boolean {
    const id = this.schema.get(type).id;
    return this.contains(e) && this.live.stores[id]!.has(e.index);
  }
  // Canonical bytes of a fixed-size value (a copy), or null.
  value(e: Entity, type: string | number): Uint8Array | null {
    const store = this.live.stores[this.schema.get(type).id]!;
    return this.contains(e) && store instanceof FixedStore ? store.view(e.index)?.slice() ?? null : null;
  }
  // A string type's value, or null.
  text(e: Entity, type: string | number): string | null {
    const store = this.live.stores[this.schema.get(type).id]!;
    return this.contains(e) && store instanceof StringStore ? store.get(e.index) ?? null : null;
  }
  // e's value of a type, decoded: an object of its fields (64-bit integers as bigint) or a
  // string; undefined when e does not have it. T only types the result (nothing checks it
  // against the schema): mirror.get<{ x: number; y: number }>(e, 'position').
  get<T extends object | string = ComponentValue>(e: Entity, type: string | number): T | undefined {
    const info = this.schema.get(type);
    if (!this.contains(e)) return undefined;
    const store = this.live.stores[info.id]!;
    if (store instanceof StringStore) return store.get(e.index) as T | undefined;
    const v = store.view(e.index);
    return v === undefined ? undefined : readValue(info, v) as T;
  }
  // Every mirrored entity, in index order.
  entities(): Entity[] {
    const out: Entity[] = [];
    this.live.versions.forEach((index, version) => out.push({ index, version }));
    return out;
  }

  checksum(): bigint {
    const sum = new Sum64();
    this.live.versions.forEach((index) => this.addEntityTerms(sum, 1, index));
    return sum.value;
  }

  // Applies a Snapshot, Delta or Checksum. False: inconsistent (or waiting for a snapshot);
  // `error` says why.
  apply(message: Snapshot | Delta | Checksum): boolean {
    if (this.applying) {
      this.error = 'apply() called from a mirror event: messages are applied one at a time';
      return false;
    }
    this.applying = true;
    this.active = { ...this.events };
    try {
      switch (message.kind) {
        case 'snapshot': return this.applySnapshot(message);
        case 'delta': return this.applyDelta(message);
        case 'checksum': return this.applyChecksum(message);
      }
    } finally {
      this.applying = false;
    }
  }

  private inconsistent(why: string): false {
    ++this.stats.inconsistencies;
    this.error = why;
    this.resyncReason = why;
    this.awaitingResync = true;
    this.resyncReported = false;
    this.staging = null;
    return false;
  }

  // Checks a column's shape for `count` entities; the type, or null after inconsistent().
  private checkColumn(column: Column, count: number, where: string): ComponentInfo | null {
    const info = this.schema.find(column.type);
    if (info === undefined) {
      this.inconsistent(`${where} column of unknown component type ${column.type}`);
      return null;
    }
    if (!info.replicated) {
      this.inconsistent(`${where} column of ${info.name}, which the schema says is not replicated`);
      return null;
    }
    const name = `${where} column ${info.name}`;
    if (isString(info)) {
      if (column.values !== null || (column.strings?.length ?? 0) !== count) {
        this.inconsistent(`${name} does not hold one string per entity`);
        return null;
      }
      for (const s of column.strings ?? []) {
        if (utf8Length(s, info.maxBytes) > info.maxBytes) {
          this.inconsistent(`${name} holds a string that is not UTF-8 of at most ${info.maxBytes} bytes`);
          return null;
        }
      }
      return info;
    }
    const expected = columnBytes(info, count);
    if (column.strings !== null || column.values === null || column.values.length !== expected) {
      this.inconsistent(`${name} has ${column.values?.length ?? 0} bytes of values for ${count} entities; ${expected} expected`);
      return null;
    }
    return info;
  }

  // Whether every value of a checked column is acceptable; false after inconsistent().
  // `why(i, reason)` says what is wrong with value i.
  private valuesValid(info: ComponentInfo, column: Column, count: number, why: (i: number, reason: string) => string): boolean {
    const store = this.live.stores[info.id];
    if (!(store instanceof FixedStore)) return true;
    const values = valuesOf(store, column);
    const bad = store.layout.firstInvalid(values, count);
    return bad < 0 || this.inconsistent(why(bad, store.layout.invalid(values, bad)!));
  }

  // The set's indices into this.indices (its size, from indexSetSize, given), and the
  // highest of them into this.highest (-1: none).
  private writeIndices(set: IndexSet | null, count: number): Uint32Array {
    if (this.indices.length < count) this.indices = new Uint32Array(Math.max(count, 2 * this.indices.length));
    const out = this.indices;
    let highest = -1;
    if (set !== null) {
      let i = 0;
      for (const run of set.runs) {
        for (let k = 0; k < run.count; ++k) out[i++] = run.first + k;
        if (run.count > 0 && run.first + run.count - 1 > highest) highest = run.first + run.count - 1;
      }
      const list = set.list;
      for (let k = 0; k < list.length; ++k) {
        const index = list[k]!;
        out[i++] = index;
        if (index > highest) highest = index;
      }
    }
    this.highest = highest;
    return out;
  }

  // Spawns a group's entities into `target`; how many, or null after inconsistent(). Nothing
  // changes unless all of it is consistent.
  private applyGroup(target: State, group: EntityGroup, notify: ((e: Entity) => void) | undefined): number | null {
    const versions = group.versions;
    const count = indexSetSize(group.at, Math.min(versions.length, this.maxIndex + 1));
    if (count < 0) {
      this.inconsistent(`entity group lists too many entities: more than its ${versions.length} versions`);
      return null;
    }
    if (count !== versions.length) {
      this.inconsistent(`entity group has ${count} entities but ${versions.length} versions`);
      return null;
    }
    const indices = this.writeIndices(group.at, count);
    for (let i = 0; i < count; ++i) {
      const index = indices[i]!;
      if (index > this.maxIndex) { this.inconsistent(`entity index ${index} above the limit`); return null; }
      if (versions[i] === 0) { this.inconsistent(`entity ${index} has the null version 0`); return null; }
      const there = target.find(index);
      if (there !== null) {
        this.inconsistent(`spawn of ${index}:${versions[i]} over live entity ${entityName(there)}`);
        return null;
      }
    }
    if (group.columns.length > this.schema.size) {
      this.inconsistent('entity group has more columns than there are component types');
      return null;
    }
    const types = new Set<number>();
    for (const column of group.columns) {
      const info = this.checkColumn(column, count, 'spawn');
      if (info === null) return null;
      if (types.has(info.id)) { this.inconsistent(`entity group has two columns of ${info.name}`); return null; }
      types.add(info.id);
      if (!this.valuesValid(info, column, count, (_, reason) => `invalid spawn value: ${reason}`)) return null;
    }
    for (let i = 0; i < count; ++i) {
      if (target.versions.has(indices[i]!)) {
        // Listed twice: take back the ones set, which were not live (checked above).
        for (let k = 0; k < i; ++k) target.versions.delete(indices[k]!);
        this.inconsistent(`entity group lists index ${indices[i]} twice`);
        return null;
      }
      target.versions.set(indices[i]!, versions[i]!);
    }
    for (const column of group.columns) {
      const store = target.stores[column.type]!;
      if (store instanceof StringStore) {
        for (let i = 0; i < count; ++i) store.set(indices[i]!, column.strings![i]!);
      } else {
        store.setColumn(indices, count, valuesOf(store, column), this.highest);
      }
    }
    if (notify) {
      // A copy: an event may not apply a message, but it may read the mirror.
      for (const index of indices.slice(0, count)) notify(target.find(index)!);
    }
    return count;
  }

  private applySnapshot(s: Snapshot): boolean {
    if (s.chunk === 0) {
      this.staging = new State(this.schema);
      this.stagingTick = s.tick;
      this.stagingNextChunk = 0;
      this.stagingChunkCount = s.chunkCount;
      this.stagingEntityCount = s.entityCount;
    }
    if (this.staging === null || s.chunk !== this.stagingNextChunk || s.tick !== this.stagingTick ||
        s.chunkCount !== this.stagingChunkCount || s.chunkCount === 0) {
      return this.inconsistent(`snapshot chunk ${s.chunk}/${s.chunkCount} of tick ${s.tick} out of sequence`);
    }
    for (const g of s.groups) {
      if (this.applyGroup(this.staging, g, undefined) === null) return false;
    }
    if (++this.stagingNextChunk < this.stagingChunkCount) return true;
    const next = this.staging;
    this.staging = null;
    if (next.versions.size !== this.stagingEntityCount) {
      return this.inconsistent(`snapshot announced ${this.stagingEntityCount} entities but carried ${next.versions.size}`);
    }
    this.eventTick_ = this.stagingTick;
    const before = this.live;
    const onDestroy = this.active.onDestroy;
    if (onDestroy) {
      const gone: Entity[] = [];
      before.versions.forEach((index, version) => { if (next.versions.get(index) !== version) gone.push({ index, version }); });
      for (const e of gone) onDestroy(e);
    }
    this.live = next;
    this.tick_ = this.stagingTick;
    this.ready_ = true;
    this.awaitingResync = false;
    ++this.stats.snapshots;
    const live: [number, number][] = [];
    if (this.active.onSpawn || this.active.onUpdate || this.active.onRemove) {
      next.versions.forEach((index, version) => live.push([index, version]));
    }
    this.reportSnapshotDifferences(before, live);
    this.active.onSnapshot?.(this.tick_, this.live.versions.size);
    return true;
  }

  private reportSnapshotDifferences(before: State, live: [number, number][]): void {
    const kept = (index: number, version: number) => before.versions.get(index) === version;
    if (this.active.onSpawn) {
      for (const [index, version] of live) if (!kept(index, version)) this.active.onSpawn({ index, version });
    }
    const onUpdate = this.active.onUpdate;
    if (onUpdate) {
      for (let id = 0; id < this.live.stores.length; ++id) {
        const was = before.stores[id];
        const is = this.live.stores[id]!;
        for (const [index, version] of live) {
          if (!is.has(index) || !kept(index, version)) continue;
          if (was === undefined || !sameAt(is, was, index)) onUpdate({ index, version }, id, this.schema.types[id]!.name);
        }
      }
    }
    const onRemove = this.active.onRemove;
    if (onRemove) {
      for (let id = 0; id < this.live.stores.length; ++id) {
        const was = before.stores[id];
        const is = this.live.stores[id]!;
        for (const [index, version] of live) {
          if (kept(index, version) && was?.has(index) && !is.has(index)) onRemove({ index, version }, id, this.schema.types[id]!.name);
        }
      }
    }
  }

  private applyDelta(d: Delta): boolean {
    if (this.awaitingResync) {
      this.error = 'waiting for a snapshot after an inconsistency';
      return false;
    }
    if (!this.ready_) return this.inconsistent('delta before the first snapshot');
    if (d.ownerOnly) return this.applyOwnerOnly(d);
    if (d.tick !== this.tick_ + 1n) return this.inconsistent(`tick gap: delta for tick ${d.tick} after tick ${this.tick_}`);
    this.eventTick_ = d.tick;
    for (const ref of d.destroyed) {
      const e = this.live.find(ref.index);
      if (e === null || e.version !== ref.version) {
        return this.inconsistent(`destroy of ${entityName(ref)} but the mirror has ${e === null ? 'nothing' : entityName(e)} there`);
      }
      this.active.onDestroy?.(e);
      this.forget(e);
    }
    for (const ref of d.left) {
      const e = this.live.find(ref.index);
      if (e === null || e.version !== ref.version) {
        return this.inconsistent(`leave of ${entityName(ref)} but the mirror has ${e === null ? 'nothing' : entityName(e)} there`);
      }
      this.active.onLeave?.(e);
      this.forget(e);
      ++this.stats.left;
    }
    for (const g of d.spawned) if (this.applyGroup(this.live, g, this.active.onSpawn) === null) return false;
    for (const g of d.entered) {
      const added = this.applyGroup(this.live, g, this.active.onEnter);
      if (added === null) return false;
      this.stats.entered += added;
    }
    if (!this.applyUpdates(d.updated) || !this.applyRemovals(d.removed)) return false;
    this.tick_ = d.tick;
    ++this.stats.deltas;
    return true;
  }

  private applyOwnerOnly(d: Delta): boolean {
    if (d.tick !== this.tick_) return this.inconsistent(`owner-only delta for tick ${d.tick} at tick ${this.tick_}`);
    if (d.hasSpawnsOrDestroys) return this.inconsistent('owner-only delta with spawns, destroys, entries or leaves');
    for (const c of [...d.updated, ...d.removed]) {
      const info = this.schema.find(c.type);
      if (info !== undefined && !info.ownerOnly) return this.inconsistent(`owner-only delta carries ${info.name}, which every client receives`);
    }
    this.eventTick_ = d.tick;
    return this.applyUpdates(d.updated) && this.applyRemovals(d.removed);
  }

  private applyUpdates(columns: readonly Column[]): boolean {
    for (const column of columns) {
      const known = this.schema.find(column.type);
      if (known === undefined) return this.inconsistent(`update column of unknown component type ${column.type}`);
      if (!known.replicated) return this.inconsistent(`update column of ${known.name}, which the schema says is not replicated`);
      const bits = valueBits(known);
      const most = isString(known) ? (column.strings?.length ?? 0)
        : column.values === null || bits === 0 ? 0 : Math.floor((column.values.length * 8) / bits);
      const count = indexSetSize(column.at, most);
      if (count < 0) return this.inconsistent('update column lists more entities than it has values');
      const info = this.checkColumn(column, count, 'update');
      if (info === null) return false;
      const indices = this.writeIndices(column.at, count);
      const store = this.live.stores[info.id]!;
      const versions = this.live.versions;
      const onUpdate = this.active.onUpdate;
      if (store instanceof StringStore) {
        const strings = column.strings!;
        for (let i = 0; i < count; ++i) {
          const index = indices[i]!;
          const version = versions.get(index);
          if (version === undefined) return this.inconsistent(`update of ${info.name} for unknown entity index ${index}`);
          store.set(index, strings[i]!);
          if (onUpdate !== undefined) onUpdate({ index, version }, info.id, info.name);
        }
        continue;
      }
      // The whole column is checked before any of it is written.
      for (let i = 0; i < count; ++i) {
        if (!versions.has(indices[i]!)) return this.inconsistent(`update of ${info.name} for unknown entity index ${indices[i]}`);
      }
      const why = (i: number, reason: string) => `invalid ${info.name} value for ${entityName(this.live.find(indices[i]!)!)}: ${reason}`;
      if (!this.valuesValid(info, column, count, why)) return false;
      store.setColumn(indices, count, valuesOf(store, column), this.highest);
      if (onUpdate !== undefined) {
        for (const index of indices.slice(0, count)) onUpdate(this.live.find(index)!, info.id, info.name);
      }
    }
    return true;
  }

  private applyRemovals(columns: readonly Column[]): boolean {
    for (const column of columns) {
      const info = this.schema.find(column.type);
      if (info === undefined) return this.inconsistent(`removal column of unknown component type ${column.type}`);
      if (!info.replicated) return this.inconsistent(`removal column of ${info.name}, which the schema says is not replicated`);
      if (column.values !== null || column.strings !== null) return this.inconsistent(`removal column ${info.name} carries values`);
      const indices = expandIndexSet(column.at, this.live.versions.size);
      if (indices === null) return this.inconsistent(`removal column ${info.name} lists more entities than exist`);
      const store = this.live.stores[info.id]!;
      for (const index of indices) {
        const e = this.live.find(index);
        if (e === null || !store.has(index)) return this.inconsistent(`removal of ${info.name} that entity index ${index} does not have`);
        store.delete(index);
        this.active.onRemove?.(e, info.id, info.name);
      }
    }
    return true;
  }

  private forget(e: Entity): void {
    for (const store of this.live.stores) store.delete(e.index);
    this.live.versions.delete(e.index);
  }

  private applyChecksum(c: Checksum): boolean {
    if (!this.ready || c.tick !== this.tick_) return true; // not comparable now
    if (c.firstIndex >= c.endIndex) return this.inconsistent('Checksum covers an empty index range');
    const inRange = (index: number) => index >= c.firstIndex && index < c.endIndex;
    const sum = new Sum64();
    let entities = 0;
    this.live.versions.forEach((index) => {
      if (!inRange(index)) return;
      this.addEntityTerms(sum, 1, index);
      ++entities;
    });
    for (let i = 1; i < c.excluded.length; ++i) {
      if (c.excluded[i]! <= c.excluded[i - 1]!) return this.inconsistent('Checksum excludes indices out of order or twice');
    }
    for (const index of c.excluded) {
      if (inRange(index) && this.live.versions.has(index)) {
        this.addEntityTerms(sum, -1, index);
        --entities;
      }
    }
    const matched = sum.value === c.hash && entities === c.entityCount;
    if (matched) ++this.stats.checksumsMatched; else ++this.stats.checksumsMismatched;
    this.eventTick_ = c.tick;
    this.active.onChecksum?.(c.tick, matched);
    return matched || this.inconsistent(`checksum mismatch at tick ${c.tick} (desync)`);
  }

  // Adds (sign 1) or subtracts (sign -1) the terms of the entity at `index` to `sum`.
  private addEntityTerms(sum: Sum64, sign: 1 | -1, index: number): void {
    const version = this.live.versions.get(index);
    if (version === undefined) return;
    this.hasher.addEntityTerm(sum, sign, index, version);
    const stores = this.live.stores;
    for (let id = 0; id < stores.length; ++id) {
      const store = stores[id]!;
      const v = store instanceof StringStore ? store.get(index) : store.view(index);
      if (v !== undefined) this.hasher.addComponentTerm(sum, sign, id, index, version, v);
    }
  }
}

// The UTF-8 length of s, counted without encoding it (a TextEncoder per string was a third of
// a snapshot's time); stops counting past `limit`. A lone surrogate counts 3, as the encoder
// writes U+FFFD for it.
function utf8Length(s: string, limit: number): number {
  if (s.length * 3 <= limit) return s.length; // any string this short fits
  let bytes = 0;
  for (let i = 0; i < s.length && bytes <= limit; ++i) {
    const c = s.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      ++i;
    } else bytes += 3;
  }
  return bytes;
}

// A checked column's values as the store reads them fastest: at a 4-byte boundary when its
// layout has the word path (a copy valid until the next call, see wordAligned).
function valuesOf(store: FixedStore, column: Column): Uint8Array {
  return store.layout.words > 0 ? wordAligned(column.values!) : column.values!;
}

// Whether two stores of one type hold the same value (or none) at index.
function sameAt(a: Store, b: Store, index: number): boolean {
  if (a instanceof StringStore) return b instanceof StringStore && a.sameAt(index, b);
  return b instanceof FixedStore && a.sameAt(index, b);
}
