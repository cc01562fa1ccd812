// The client side of replication, with the C++ protocol::mirror's semantics
// (shared/protocol/src/mirror.cpp): entities by index and version from Snapshot and Delta
// messages, checked against the server's Checksum. Anything inconsistent is reported and the
// mirror waits for a fresh snapshot (the caller sends ResyncRequest with takeResyncReason()).
import { ChecksumHasher, Sum64 } from './checksum';
import type { Checksum, Column, Delta, Entity, EntityGroup, IndexSet, Snapshot } from './messages';
import {
  ComponentInfo, ComponentValue, Schema, columnBytes, invalidValue, isString, readValue, unpackValueOfBits, valueBits,
} from './schema';

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

type Value = Uint8Array | string;

// One type's values by entity index: an array rather than a Map, as the indices are small and
// mostly dense (a Map costs a hash per update).
class Store {
  private readonly slots: (Value | undefined)[] = [];

  get(index: number): Value | undefined { return index < this.slots.length ? this.slots[index] : undefined; }
  has(index: number): boolean { return this.get(index) !== undefined; }
  set(index: number, value: Value): void { this.slots[index] = value; }
  delete(index: number): void { if (index < this.slots.length) this.slots[index] = undefined; }
}

// The entities' versions by index: a Map (for its size and iteration) that answers lookups,
// which every update makes, from an array by index.
class Versions extends Map<number, number> {
  private readonly byIndex: (number | undefined)[] = [];

  override get(index: number): number | undefined {
    return index < this.byIndex.length ? this.byIndex[index] : undefined;
  }
  override has(index: number): boolean { return this.get(index) !== undefined; }
  override set(index: number, version: number): this {
    this.byIndex[index] = version;
    return super.set(index, version);
  }
  override delete(index: number): boolean {
    if (index < this.byIndex.length) this.byIndex[index] = undefined;
    return super.delete(index);
  }
  override clear(): void {
    this.byIndex.length = 0;
    super.clear();
  }
}

class State {
  versions = new Versions();
  stores: Store[] = [];

  constructor(types: number) {
    for (let i = 0; i < types; ++i) this.stores.push(new Store());
  }
  find(index: number): Entity | null {
    const version = this.versions.get(index);
    return version === undefined ? null : { index, version };
  }
}

const UINT32_END = 2 ** 32;

// The indices of a set, or null when its counts (summed) exceed `limit` or a run wraps.
export function expandIndexSet(set: IndexSet | null, limit: number): number[] | null {
  if (set === null) return [];
  let total = set.list.length;
  for (const run of set.runs) {
    if (run.first + run.count > UINT32_END) return null;
    total += run.count;
    if (total > limit) return null;
  }
  if (total > limit) return null;
  const out: number[] = [];
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
  private live = new State(0);
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
    this.live = new State(schema.size);
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
  // Canonical bytes of a fixed-size value, or null.
  value(e: Entity, type: string | number): Uint8Array | null {
    const id = this.schema.get(type).id;
    const v = this.contains(e) ? this.live.stores[id]!.get(e.index) : undefined;
    return v instanceof Uint8Array ? v : null;
  }
  // A string type's value, or null.
  text(e: Entity, type: string | number): string | null {
    const id = this.schema.get(type).id;
    const v = this.contains(e) ? this.live.stores[id]!.get(e.index) : undefined;
    return typeof v === 'string' ? v : null;
  }
  // e's value of a type, decoded: an object of its fields (64-bit integers as bigint) or a
  // string; undefined when e does not have it. T only types the result (nothing checks it
  // against the schema): mirror.get<{ x: number; y: number }>(e, 'position').
  get<T extends object | string = ComponentValue>(e: Entity, type: string | number): T | undefined {
    const info = this.schema.get(type);
    if (!this.contains(e)) return undefined;
    const v = this.live.stores[info.id]!.get(e.index);
    if (v === undefined) return undefined;
    return (typeof v === 'string' ? v : readValue(info, v)) as T;
  }
  // Every mirrored entity, in index order.
  entities(): Entity[] {
    return [...this.live.versions.entries()].sort((a, b) => a[0] - b[0]).map(([index, version]) => ({ index, version }));
  }

  checksum(): bigint {
    const sum = new Sum64();
    for (const index of this.live.versions.keys()) this.addEntityTerms(sum, 1, index);
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
        if (new TextEncoder().encode(s).length > info.maxBytes) {
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

  // Values of a checked column, validated: null after inconsistent().
  private columnValues(info: ComponentInfo, column: Column, count: number, what: (i: number) => string): Value[] | null {
    const out: Value[] = [];
    const bits = valueBits(info);
    for (let i = 0; i < count; ++i) {
      if (isString(info)) {
        out.push(column.strings![i]!);
        continue;
      }
      const value = unpackValueOfBits(bits, column.values!, i);
      const why = invalidValue(info, value);
      if (why !== null) {
        this.inconsistent(`invalid ${what(i)} value: ${why}`);
        return null;
      }
      out.push(value);
    }
    return out;
  }

  private applyGroup(target: State, group: EntityGroup, notify: ((e: Entity) => void) | undefined): number[] | null {
    const versions = group.versions;
    const indices = expandIndexSet(group.at, Math.min(versions.length, this.maxIndex + 1));
    if (indices === null) {
      this.inconsistent(`entity group lists too many entities: more than its ${versions.length} versions`);
      return null;
    }
    if (indices.length !== versions.length) {
      this.inconsistent(`entity group has ${indices.length} entities but ${versions.length} versions`);
      return null;
    }
    const seen = new Set<number>();
    for (let i = 0; i < indices.length; ++i) {
      const index = indices[i]!;
      if (index > this.maxIndex) { this.inconsistent(`entity index ${index} above the limit`); return null; }
      if (versions[i] === 0) { this.inconsistent(`entity ${index} has the null version 0`); return null; }
      const there = target.find(index);
      if (there !== null) {
        this.inconsistent(`spawn of ${index}:${versions[i]} over live entity ${entityName(there)}`);
        return null;
      }
      if (seen.has(index)) { this.inconsistent(`entity group lists index ${index} twice`); return null; }
      seen.add(index);
    }
    if (group.columns.length > this.schema.size) {
      this.inconsistent('entity group has more columns than there are component types');
      return null;
    }
    const columns: [ComponentInfo, Value[]][] = [];
    const types = new Set<number>();
    for (const column of group.columns) {
      const info = this.checkColumn(column, indices.length, 'spawn');
      if (info === null) return null;
      if (types.has(info.id)) { this.inconsistent(`entity group has two columns of ${info.name}`); return null; }
      types.add(info.id);
      const values = this.columnValues(info, column, indices.length, () => 'spawn');
      if (values === null) return null;
      columns.push([info, values]);
    }
    indices.forEach((index, i) => target.versions.set(index, versions[i]!));
    for (const [info, values] of columns) {
      const store = target.stores[info.id]!;
      indices.forEach((index, i) => store.set(index, values[i]!));
    }
    if (notify) for (const index of indices) notify(target.find(index)!);
    return indices;
  }

  private applySnapshot(s: Snapshot): boolean {
    if (s.chunk === 0) {
      this.staging = new State(this.schema.size);
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
    const byIndex = (m: Versions) => [...m.entries()].sort((a, b) => a[0] - b[0]);
    if (this.active.onDestroy) {
      for (const [index, version] of byIndex(before.versions)) {
        if (next.versions.get(index) !== version) this.active.onDestroy({ index, version });
      }
    }
    this.live = next;
    this.tick_ = this.stagingTick;
    this.ready_ = true;
    this.awaitingResync = false;
    ++this.stats.snapshots;
    this.reportSnapshotDifferences(before, byIndex(next.versions));
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
          const v = is.get(index);
          if (v === undefined || !kept(index, version)) continue;
          const old = was?.get(index);
          if (old === undefined || !sameValue(old, v)) onUpdate({ index, version }, id, this.schema.types[id]!.name);
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
      this.stats.entered += added.length;
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
      const count = isString(known) ? (column.strings?.length ?? 0)
        : column.values === null || bits === 0 ? 0 : Math.floor((column.values.length * 8) / bits);
      const indices = expandIndexSet(column.at, count);
      if (indices === null) return this.inconsistent('update column lists more entities than it has values');
      const info = this.checkColumn(column, indices.length, 'update');
      if (info === null) return false;
      const store = this.live.stores[info.id]!;
      const versions = this.live.versions;
      const strings = isString(info) ? column.strings! : null;
      const bytes = column.values!;
      const onUpdate = this.active.onUpdate;
      for (let i = 0; i < indices.length; ++i) {
        const index = indices[i]!;
        const version = versions.get(index);
        if (version === undefined) return this.inconsistent(`update of ${info.name} for unknown entity index ${index}`);
        let value: Value;
        if (strings !== null) {
          value = strings[i]!;
        } else {
          value = unpackValueOfBits(bits, bytes, i);
          const why = invalidValue(info, value);
          if (why !== null) return this.inconsistent(`invalid ${info.name} value for ${entityName({ index, version })}: ${why}`);
        }
        store.set(index, value);
        if (onUpdate !== undefined) this.active.onUpdate!({ index, version }, info.id, info.name);
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
    for (const index of this.live.versions.keys()) {
      if (!inRange(index)) continue;
      this.addEntityTerms(sum, 1, index);
      ++entities;
    }
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
      const v = stores[id]!.get(index);
      if (v !== undefined) this.hasher.addComponentTerm(sum, sign, id, index, version, v);
    }
  }
}


function sameValue(a: Value, b: Value): boolean {
  if (typeof a === 'string' || typeof b === 'string') return a === b;
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
