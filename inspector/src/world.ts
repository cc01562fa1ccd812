// The world as the page draws it: positions, owners and component sets in typed arrays by
// entity index, kept up to date from the SDK mirror's events (one entity, one type at a time),
// plus the list of live indices. The mirror stays the truth for values; this is its index.
import type { ComponentInfo, Entity, Mirror, Schema } from '@ecsnet/client';
import { type NumberReader, numberReader, positionTypes } from './fields';

export type MirrorView = Pick<Mirror, 'types' | 'value' | 'text' | 'get' | 'has' | 'find' | 'entities' | 'tick' | 'eventTick' | 'size'>;

const COUNT_LOG_LIMIT = 4096;

export class WorldModel {
  // By entity index.
  versions = new Uint32Array(0);
  xs = new Float64Array(0);
  ys = new Float64Array(0);
  placed = new Uint8Array(0);  // 1: has the position type
  owners = new Uint32Array(0); // 0: the server's (no owner)
  private maskLow = new Uint32Array(0); // bit t: has component type t (t < 32)
  private maskHigh = new Uint32Array(0); // t - 32
  private slots = new Int32Array(0);    // position in `live`, or -1

  // The live indices, unordered: live[0 .. count).
  live = new Int32Array(0);
  count = 0;

  // Bumped by any change (the canvas redraws), and by spawns, destroys, component additions
  // and removals (the table re-filters).
  revision = 0;
  membershipRevision = 0;

  positionCandidates: ComponentInfo[] = [];
  private positionType_ = -1;
  private readX: NumberReader | null = null;
  private readY: NumberReader | null = null;
  private ownerType = -1;
  private readOwner: NumberReader | null = null;
  private schema: Schema | null = null;
  private countLog: { tick: number; count: number }[] = [];

  // Called for every change of a live entity's components (the selected entity's panel).
  onEntityChanged: ((index: number) => void) | null = null;

  constructor(readonly mirror: MirrorView) {}

  get positionType(): number { return this.positionType_; }
  get types(): readonly ComponentInfo[] { return this.mirror.types.types; }

  // ---- the mirror's events ------------------------------------------------------------------

  added(e: Entity): void {
    this.followSchema();
    const i = e.index;
    this.reserve(i);
    if (this.slots[i]! < 0) {
      this.slots[i] = this.count;
      this.live[this.count++] = i;
    }
    this.versions[i] = e.version;
    this.readAll(e);
    ++this.revision;
    ++this.membershipRevision;
    this.logCount();
    this.onEntityChanged?.(i);
  }

  updated(e: Entity, type: number): void {
    this.followSchema();
    const i = e.index;
    if (!this.isLive(e)) return;
    if (!this.has(i, type)) {
      this.setBit(i, type, true);
      ++this.membershipRevision;
    }
    if (type === this.positionType_) this.readPosition(e);
    else if (type === this.ownerType) this.owners[i] = this.readOwnerOf(e);
    ++this.revision;
    this.onEntityChanged?.(i);
  }

  removed(e: Entity, type: number): void {
    this.followSchema();
    const i = e.index;
    if (!this.isLive(e)) return;
    this.setBit(i, type, false);
    if (type === this.positionType_) this.placed[i] = 0;
    else if (type === this.ownerType) this.owners[i] = 0;
    ++this.revision;
    ++this.membershipRevision;
    this.onEntityChanged?.(i);
  }

  gone(e: Entity): void {
    const i = e.index;
    if (!this.isLive(e)) return;
    const at = this.slots[i]!;
    const last = this.live[--this.count]!;
    this.live[at] = last;
    this.slots[last] = at;
    this.slots[i] = -1;
    this.versions[i] = 0;
    this.placed[i] = 0;
    this.owners[i] = 0;
    this.maskLow[i] = 0;
    this.maskHigh[i] = 0;
    ++this.revision;
    ++this.membershipRevision;
    this.logCount();
    this.onEntityChanged?.(i);
  }

  // Everything again from the mirror (after a join, or to check the index against it).
  rebuild(): void {
    this.reset(this.mirror.types);
    for (const e of this.mirror.entities()) this.added(e);
  }

  // ---- reading ------------------------------------------------------------------------------

  isLive(e: Entity): boolean {
    return e.index >= 0 && e.index < this.versions.length && this.versions[e.index] === e.version && e.version !== 0;
  }
  entityAt(index: number): Entity | null {
    const version = index >= 0 && index < this.versions.length ? this.versions[index]! : 0;
    return version === 0 ? null : { index, version };
  }
  has(index: number, type: number): boolean {
    if (index >= this.maskLow.length || type < 0) return false;
    return type < 32 ? ((this.maskLow[index]! >>> type) & 1) === 1 : ((this.maskHigh[index]! >>> (type - 32)) & 1) === 1;
  }

  // The entity count after the last change at or before `tick`, or null when that tick is
  // not known here (ahead of the mirror, or older than what is kept).
  countAt(tick: number): number | null {
    if (tick > Number(this.mirror.tick)) return null;
    for (let k = this.countLog.length - 1; k >= 0; --k) {
      if (this.countLog[k]!.tick <= tick) return this.countLog[k]!.count;
    }
    return null;
  }

  // Chooses the type that places entities (a type id among positionCandidates).
  setPositionType(type: number): void {
    const info = this.positionCandidates.find((t) => t.id === type);
    this.positionType_ = info?.id ?? -1;
    this.readX = info ? numberReader(info, 'x') : null;
    this.readY = info ? numberReader(info, 'y') : null;
    for (let k = 0; k < this.count; ++k) this.readPosition(this.entityAt(this.live[k]!)!);
    ++this.revision;
  }

  // ---- internals ----------------------------------------------------------------------------

  private followSchema(): void {
    if (this.mirror.types !== this.schema) this.reset(this.mirror.types);
  }

  private reset(schema: Schema): void {
    const chosen = this.schema?.find(this.positionType_)?.name;
    this.schema = schema;
    this.versions.fill(0);
    this.placed.fill(0);
    this.owners.fill(0);
    this.maskLow.fill(0);
    this.maskHigh.fill(0);
    this.slots.fill(-1);
    this.count = 0;
    this.countLog = [];
    this.positionCandidates = positionTypes(schema.types);
    const keep = this.positionCandidates.find((t) => t.name === chosen) ?? this.positionCandidates[0];
    this.positionType_ = keep?.id ?? -1;
    this.readX = keep ? numberReader(keep, 'x') : null;
    this.readY = keep ? numberReader(keep, 'y') : null;
    const owner = schema.find('owner');
    this.ownerType = owner?.id ?? -1;
    this.readOwner = owner ? numberReader(owner, owner.fields[0]?.name ?? '') : null;
    ++this.revision;
    ++this.membershipRevision;
  }

  private reserve(index: number): void {
    if (index < this.versions.length) return;
    let size = Math.max(1024, this.versions.length);
    while (size <= index) size *= 2;
    const grow = <T extends Uint32Array | Float64Array | Uint8Array | Int32Array>(a: T, make: (n: number) => T, fill = 0): T => {
      const b = make(size);
      if (fill !== 0) b.fill(fill);
      b.set(a);
      return b;
    };
    this.versions = grow(this.versions, (n) => new Uint32Array(n));
    this.xs = grow(this.xs, (n) => new Float64Array(n));
    this.ys = grow(this.ys, (n) => new Float64Array(n));
    this.placed = grow(this.placed, (n) => new Uint8Array(n));
    this.owners = grow(this.owners, (n) => new Uint32Array(n));
    this.maskLow = grow(this.maskLow, (n) => new Uint32Array(n));
    this.maskHigh = grow(this.maskHigh, (n) => new Uint32Array(n));
    this.slots = grow(this.slots, (n) => new Int32Array(n), -1);
    this.live = grow(this.live, (n) => new Int32Array(n));
  }

  private setBit(index: number, type: number, on: boolean): void {
    const mask = type < 32 ? this.maskLow : this.maskHigh;
    const bit = (1 << (type & 31)) >>> 0;
    mask[index] = on ? (mask[index]! | bit) >>> 0 : (mask[index]! & ~bit) >>> 0;
  }

  private readAll(e: Entity): void {
    const i = e.index;
    this.maskLow[i] = 0;
    this.maskHigh[i] = 0;
    for (const t of this.mirror.types.types) if (this.mirror.has(e, t.id)) this.setBit(i, t.id, true);
    this.readPosition(e);
    this.owners[i] = this.readOwnerOf(e);
  }

  private readPosition(e: Entity): void {
    const v = this.positionType_ >= 0 ? this.mirror.value(e, this.positionType_) : null;
    if (v === null || this.readX === null || this.readY === null) {
      this.placed[e.index] = 0;
      return;
    }
    this.xs[e.index] = this.readX(v);
    this.ys[e.index] = this.readY(v);
    this.placed[e.index] = 1;
  }

  private readOwnerOf(e: Entity): number {
    const v = this.ownerType >= 0 ? this.mirror.value(e, this.ownerType) : null;
    return v === null || this.readOwner === null ? 0 : this.readOwner(v);
  }

  private logCount(): void {
    const tick = Number(this.mirror.eventTick);
    const last = this.countLog[this.countLog.length - 1];
    if (last !== undefined && last.tick === tick) {
      last.count = this.count;
      return;
    }
    if (last !== undefined && last.tick > tick) this.countLog = []; // a snapshot from before: start again
    this.countLog.push({ tick, count: this.count });
    if (this.countLog.length > COUNT_LOG_LIMIT) this.countLog.splice(0, COUNT_LOG_LIMIT / 4);
  }
}
