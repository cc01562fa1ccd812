// The mirror's storage (mirror.ts): entity versions and each type's values in flat typed arrays
// by entity index, written in place from a message's columns. Applying an update allocates
// nothing: no value object, no array of indices (issue 42.5: decode + apply within 5x the C++
// mirror per entity).
import type { IndexSet } from './messages';
import { type ComponentInfo, FieldType, isQuantized, isString, quantizedSteps, readSmallBits, valueBits } from './schema';

// Grows `a` to hold index `index`: doubling, so n writes in index order cost O(n).
function grown<T extends Uint8Array | Uint32Array>(a: T, index: number, make: (n: number) => T): T {
  if (index < a.length) return a;
  const next = make(Math.max(index + 1, 2 * a.length, 64));
  next.set(a);
  return next;
}

// The live entities' versions by index; 0 is no entity (the protocol has no version 0).
export class Versions {
  private byIndex = new Uint32Array(0);
  private count = 0;
  private end = 0; // above the highest index ever set

  get size(): number { return this.count; }
  get(index: number): number | undefined {
    const v = index < this.byIndex.length ? this.byIndex[index]! : 0;
    return v === 0 ? undefined : v;
  }
  has(index: number): boolean { return index < this.byIndex.length && this.byIndex[index] !== 0; }
  set(index: number, version: number): void {
    this.byIndex = grown(this.byIndex, index, (n) => new Uint32Array(n));
    if (this.byIndex[index] === 0) ++this.count;
    this.byIndex[index] = version;
    if (index >= this.end) this.end = index + 1;
  }
  delete(index: number): boolean {
    if (!this.has(index)) return false;
    this.byIndex[index] = 0;
    --this.count;
    return true;
  }
  // Each live entity, in index order.
  forEach(fn: (index: number, version: number) => void): void {
    const a = this.byIndex;
    for (let i = 0; i < this.end; ++i) if (a[i] !== 0) fn(i, a[i]!);
  }
}

// How a fixed-size type's values lie in a column, and what makes one invalid (a non-finite
// float, a quantized value beyond its range): compiled once per schema.
export class ValueLayout {
  readonly bits: number;
  readonly size: number; // bytes of a canonical value
  // Per checked field, in typed arrays (the check runs for every value applied): its bit
  // offset in the value and width, and either the largest valid reading (a quantized field) or
  // the reading that is not finite (a float's exponent, all ones).
  private readonly checks: number;
  private readonly at: Int32Array;
  private readonly width: Int32Array;
  private readonly limit: Float64Array;
  private readonly exponent: Uint8Array; // 1: limit is the non-finite exponent
  private readonly what: string[] = [];

  constructor(info: ComponentInfo) {
    this.bits = valueBits(info);
    this.size = (this.bits + 7) >> 3;
    const found: [number, number, number, number][] = [];
    let at = 0;
    for (const f of info.fields) {
      if (isQuantized(f)) {
        found.push([at, f.bits, quantizedSteps(f.min, f.max, f.step), 0]);
        this.what.push(`${info.name}.${f.name} is beyond its quantized range`);
      } else if (f.type === FieldType.Float) {
        found.push([at + 23, 8, 0xff, 1]);
        this.what.push(`${info.name}.${f.name} is not a finite number`);
      } else if (f.type === FieldType.Double) {
        found.push([at + 52, 11, 0x7ff, 1]);
        this.what.push(`${info.name}.${f.name} is not a finite number`);
      }
      at += f.bits;
    }
    this.checks = found.length;
    this.at = Int32Array.from(found, (c) => c[0]);
    this.width = Int32Array.from(found, (c) => c[1]);
    this.limit = Float64Array.from(found, (c) => c[2]);
    this.exponent = Uint8Array.from(found, (c) => c[3]);
    // Whole 32-bit words, every check a float's or double's exponent inside one word (a
    // Position of two floats): a column is then checked and copied a word at a time.
    const wordChecks = found.map(([bit, bits, , exponent]) => (exponent === 1 && (bit >> 5) === ((bit + bits - 1) >> 5) ? bit : -1));
    this.words = (this.bits & 31) === 0 && wordChecks.every((bit) => bit >= 0) ? this.bits >> 5 : 0;
    this.wordAt = Int32Array.from(wordChecks, (bit) => bit >> 5);
    this.wordMask = Uint32Array.from(found, ([bit, bits]) => ((2 ** bits - 1) * 2 ** (bit & 31)) >>> 0);
  }

  // 32-bit words a value, when the word path applies (see the constructor); else 0.
  readonly words: number;
  private readonly wordAt: Int32Array;
  private readonly wordMask: Uint32Array;

  // The first of values 0..count-1 of `column` that is not acceptable, or -1.
  firstInvalid(column: Uint8Array, count: number): number {
    if (this.checks === 0) return -1;
    if (this.words > 0 && (column.byteOffset & 3) === 0) {
      const w = new Uint32Array(column.buffer, column.byteOffset, count * this.words);
      for (let i = 0, base = 0; i < count; ++i, base += this.words) {
        for (let k = 0; k < this.checks; ++k) {
          const mask = this.wordMask[k]!;
          if ((w[base + this.wordAt[k]!]! & mask) === mask) return i;
        }
      }
      return -1;
    }
    for (let i = 0; i < count; ++i) if (this.invalid(column, i) !== null) return i;
    return -1;
  }

  // Why value i of `column` is not acceptable, or null.
  invalid(column: Uint8Array, i: number): string | null {
    const from = i * this.bits;
    for (let k = 0; k < this.checks; ++k) {
      const v = readSmallBits(column, from + this.at[k]!, this.width[k]!);
      if (this.exponent[k] === 1 ? v === this.limit[k] : v > this.limit[k]!) return this.what[k]!;
    }
    return null;
  }

  // Copies value i of `column` to `out` at byte `to`, as canonical bytes (its bits from bit 0,
  // the last byte zero-padded).
  copy(column: Uint8Array, i: number, out: Uint8Array, to: number): void {
    const size = this.size;
    if ((this.bits & 7) === 0) {
      const from = i * size;
      for (let j = 0; j < size; ++j) out[to + j] = column[from + j]!;
      return;
    }
    const from = i * this.bits;
    for (let j = 0, left = this.bits; j < size; ++j, left -= 8) {
      out[to + j] = readSmallBits(column, from + j * 8, left < 8 ? left : 8);
    }
  }
}

// A fixed-size type's values, `size` bytes each, back to back by entity index, and whether each
// index has one.
export class FixedStore {
  private bytes = new Uint8Array(0);
  private words: Uint32Array | null = null; // the same bytes, when the layout has words
  private present = new Uint8Array(0);

  constructor(readonly layout: ValueLayout) {}

  // Room for index `index`.
  private reserve(index: number): void {
    if (index < this.present.length) return;
    this.present = grown(this.present, index, (n) => new Uint8Array(n));
    const bytes = new Uint8Array(this.present.length * this.layout.size);
    bytes.set(this.bytes);
    this.bytes = bytes;
    this.words = this.layout.words > 0 ? new Uint32Array(bytes.buffer) : null;
  }

  // Values 0..count-1 of `column` (checked already) become the values at indices[0..count-1],
  // the highest of which is `highest`.
  setColumn(indices: Uint32Array, count: number, column: Uint8Array, highest: number): void {
    if (count === 0) return;
    this.reserve(highest);
    const present = this.present;
    const n = this.layout.words;
    const words = this.words;
    if (words !== null && (column.byteOffset & 3) === 0) {
      const from = new Uint32Array(column.buffer, column.byteOffset, count * n);
      for (let i = 0; i < count; ++i) {
        const index = indices[i]!;
        for (let k = 0, to = index * n, at = i * n; k < n; ++k) words[to + k] = from[at + k]!;
        present[index] = 1;
      }
      return;
    }
    const size = this.layout.size;
    for (let i = 0; i < count; ++i) {
      const index = indices[i]!;
      this.layout.copy(column, i, this.bytes, index * size);
      present[index] = 1;
    }
  }

  has(index: number): boolean { return index < this.present.length && this.present[index] === 1; }
  delete(index: number): void { if (index < this.present.length) this.present[index] = 0; }
  // The value's bytes in place: valid until the next change to this store.
  view(index: number): Uint8Array | undefined {
    if (!this.has(index)) return undefined;
    const size = this.layout.size;
    return this.bytes.subarray(index * size, index * size + size);
  }
  sameAt(index: number, other: FixedStore): boolean {
    if (this.has(index) !== other.has(index)) return false;
    if (!this.has(index)) return true;
    const size = this.layout.size;
    for (let j = index * size, end = j + size; j < end; ++j) if (this.bytes[j] !== other.bytes[j]) return false;
    return true;
  }
}

// A string type's values by entity index.
export class StringStore {
  private readonly slots: (string | undefined)[] = [];

  has(index: number): boolean { return this.get(index) !== undefined; }
  get(index: number): string | undefined { return index < this.slots.length ? this.slots[index] : undefined; }
  set(index: number, value: string): void { this.slots[index] = value; }
  delete(index: number): void { if (index < this.slots.length) this.slots[index] = undefined; }
  sameAt(index: number, other: StringStore): boolean { return this.get(index) === other.get(index); }
}

export type Store = FixedStore | StringStore;

export function makeStore(info: ComponentInfo): Store {
  return isString(info) ? new StringStore() : new FixedStore(new ValueLayout(info));
}

let alignScratch = new Uint8Array(0);

// `column` at a 4-byte boundary, as the word path reads it (a column is a view into its frame,
// which may lie anywhere): itself, or a copy in a buffer reused from call to call, valid until
// the next call.
export function wordAligned(column: Uint8Array): Uint8Array {
  if ((column.byteOffset & 3) === 0) return column;
  if (alignScratch.length < column.length) alignScratch = new Uint8Array(Math.max(column.length, 2 * alignScratch.length));
  const out = alignScratch.subarray(0, column.length);
  out.set(column);
  return out;
}

const UINT32_END = 2 ** 32;

// How many indices a set lists, or -1 when more than `limit` or a run wraps past 2^32 - 1.
export function indexSetSize(set: IndexSet | null, limit: number): number {
  if (set === null) return 0;
  let total = set.list.length;
  if (total > limit) return -1;
  for (const run of set.runs) {
    if (run.first + run.count > UINT32_END) return -1;
    total += run.count;
    if (total > limit) return -1;
  }
  return total;
}

// Calls fn(index, i) for each index of the set, i counting from 0 (runs first, then the list,
// as the protocol orders the values); stops at, and returns, the first false.
export function eachIndex(set: IndexSet | null, fn: (index: number, i: number) => boolean): boolean {
  if (set === null) return true;
  let i = 0;
  for (const run of set.runs) {
    for (let k = 0; k < run.count; ++k) if (!fn(run.first + k, i++)) return false;
  }
  for (const index of set.list) if (!fn(index, i++)) return false;
  return true;
}
