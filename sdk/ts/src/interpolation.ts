// Snapshot interpolation with the C++ SDK's algorithm (shared/client/src/interpolation.cpp,
// docs/CLIENT.md "Interpolation"): a short history of the values of the types the schema marks
// interpolated, sampled at a fractional render tick.
//
// The server sends a value only when it changes, so a value recorded at tick b after one at
// tick a held from a until b - 1 and moved during the last tick: sample() interpolates between
// b - 1 and b. A value that appears, or moves further than snapDistance in one tick, jumps.
// Past the newest tick received, a value that was moving is extrapolated along its last step
// for at most maxExtrapolation ticks.
import type { Entity } from './messages';
import { ComponentInfo, FieldType, FieldValue, FixedValue, Schema, isString, readValue, valueBytes } from './schema';

export interface InterpolationOptions {
  history: number;
  maxExtrapolation: number;
  snapDistance: number;
}
export const defaultInterpolationOptions: InterpolationOptions = { history: 16, maxExtrapolation: 3, snapDistance: 0 };

interface Point { tick: number; jump: boolean; value: Uint8Array }
interface History { version: number; points: Point[] }
interface SpanAt { from: Point; to: Point | null; t: number }

function blend(info: ComponentInfo, from: FixedValue, to: FixedValue, t: number): FixedValue {
  const out: FixedValue = {};
  for (const f of info.fields) {
    const a = from[f.name]!;
    const b = to[f.name]!;
    if (typeof a === 'boolean') {
      out[f.name] = t < 1 ? a : b;
    } else if (f.type === FieldType.Float || f.type === FieldType.Double) {
      const v = Number(a) + (Number(b) - Number(a)) * t;
      out[f.name] = f.type === FieldType.Float ? Math.fround(v) : v;
    } else {
      const v = Number(a) + (Number(b) - Number(a)) * t;
      const rounded = Math.trunc(v < 0 ? v - 0.5 : v + 0.5);
      out[f.name] = typeof a === 'bigint' ? BigInt(rounded) : rounded;
    }
  }
  return out;
}

export class Interpolation {
  readonly options: InterpolationOptions;
  private tick_ = 0;
  private readonly histories = new Map<string, History>();

  constructor(readonly types: Schema, options: Partial<InterpolationOptions> = {}) {
    const o = { ...defaultInterpolationOptions, ...options };
    if (o.history < 2) throw new RangeError('interpolation: the history must hold at least 2 values');
    if (!(o.maxExtrapolation >= 0) || !(o.snapDistance >= 0)) {
      throw new RangeError('interpolation: maxExtrapolation and snapDistance are numbers >= 0');
    }
    this.options = o;
  }

  private static key(index: number, type: number): string { return `${index}/${type}`; }

  // The values recorded next are those of `tick`.
  onTick(tick: number): void { this.tick_ = tick; }
  get tick(): number { return this.tick_; }
  get size(): number { return this.histories.size; }

  // e's value of `type` (a name or wire id, as everywhere below) as of the current tick; ignored
  // for a type not interpolated. A type the server does not have throws an UnknownComponentError.
  record(e: Entity, type: string | number, value: Uint8Array): void {
    const info = this.types.get(type);
    if (!info.interpolated || isString(info) || value.length !== valueBytes(info)) return;
    const key = Interpolation.key(e.index, info.id);
    let h = this.histories.get(key);
    if (h === undefined) {
      h = { version: e.version, points: [] };
      this.histories.set(key, h);
    }
    if (h.version !== e.version) {
      h.version = e.version;
      h.points = [];
    }
    const last = h.points[h.points.length - 1];
    if (last !== undefined && last.tick === this.tick_) {
      last.value = value.slice(); // twice in one tick
      return;
    }
    const jump = last === undefined || (this.options.snapDistance > 0 && this.movedTooFar(info, last.value, value));
    h.points.push({ tick: this.tick_, jump, value: value.slice() });
    while (h.points.length > this.options.history) h.points.shift();
  }

  appeared(e: Entity): void { this.forget(e); }
  forget(e: Entity, type?: string | number): void {
    if (type !== undefined) {
      this.histories.delete(Interpolation.key(e.index, this.types.get(type).id));
      return;
    }
    for (let t = 0; t < this.types.size; ++t) this.histories.delete(Interpolation.key(e.index, t));
  }
  clear(): void { this.histories.clear(); }

  private movedTooFar(info: ComponentInfo, from: Uint8Array, to: Uint8Array): boolean {
    const a = readValue(info, from);
    const b = readValue(info, to);
    return info.fields.some((f) => typeof a[f.name] !== 'boolean' &&
      Math.abs(Number(b[f.name]) - Number(a[f.name])) > this.options.snapDistance);
  }

  private locate(e: Entity, type: number, renderTick: number): SpanAt | null {
    const h = this.histories.get(Interpolation.key(e.index, type));
    if (h === undefined || h.version !== e.version || h.points.length === 0) return null;
    const points = h.points;
    if (!(renderTick > points[0]!.tick)) return { from: points[0]!, to: null, t: 0 }; // NaN too
    const k = points.findIndex((p) => p.tick >= renderTick);
    if (k < 0) {
      const last = points[points.length - 1]!;
      const newest = this.tick_;
      if (renderTick <= newest || points.length < 2) return { from: last, to: null, t: 0 };
      // Frames are late. A value that moved in the newest tick goes on along that step.
      const before = points[points.length - 2]!;
      if (last.tick !== this.tick_ || last.jump || before.tick + 1 !== last.tick) return { from: last, to: null, t: 0 };
      return { from: before, to: last, t: 1 + Math.min(renderTick - newest, this.options.maxExtrapolation) };
    }
    const to = points[k]!;
    const from = points[k - 1]!;
    const start = to.tick - 1; // it held `from` until then
    if (renderTick >= to.tick) return { from: to, to: null, t: 0 };
    if (to.jump || renderTick <= start) return { from, to: null, t: 0 };
    return { from, to, t: renderTick - start };
  }

  // The fields of e's `type` at renderTick (numbers interpolated, integers rounded, bools
  // step), or null when none was recorded.
  sample(e: Entity, type: string | number, renderTick: number): FixedValue | null {
    const info = this.types.get(type);
    const at = this.locate(e, info.id, renderTick);
    if (at === null) return null;
    const from = readValue(info, at.from.value);
    if (at.to === null || at.t === 0) return from;
    return blend(info, from, readValue(info, at.to.value), at.t);
  }
}

export type { FieldValue };
