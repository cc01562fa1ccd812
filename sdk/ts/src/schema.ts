// The component types as Welcome describes them (docs/PROTOCOL.md, "Schema" and "Values"):
// checked like the C++ protocol::schema::make, and the bit-level codec of their values.

export enum FieldType {
  Bool = 2, Byte, UByte, Short, UShort, Int, UInt, Long, ULong, Float, Double,
}
export enum Writer { Server = 0, Owner = 1, Any = 2 }

export const MAX_COMPONENT_TYPES = 64;
export const MAX_FIELDS = 64;
export const MAX_STRING_BYTES = 4096;
const MAX_NAME_BYTES = 64;

export interface FieldInfo {
  readonly name: string;
  readonly type: FieldType;
  readonly bits: number;
  readonly min: number;
  readonly max: number;
  readonly step: number; // > 0: quantized
}

export interface ComponentInfo {
  readonly id: number;
  readonly name: string;
  readonly writer: Writer;
  readonly ownerOnly: boolean;
  readonly maxBytes: number; // > 0: a string type
  readonly fields: readonly FieldInfo[];
  readonly input: boolean;
  readonly replicated: boolean;
  readonly interpolated: boolean;
}

// A field's value: numbers, bigint for 64-bit integers, boolean for Bool.
export type FieldValue = number | bigint | boolean;
export type FixedValue = Record<string, FieldValue>;
export type ComponentValue = FixedValue | string;

export class SchemaError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SchemaError';
  }
}

// A component type the server does not have, asked for by name or wire id (a typo, another
// game's type, or a call before Welcome): `type` is what was asked, `known` the server's names.
export class UnknownComponentError extends TypeError {
  constructor(readonly type: string | number, readonly known: readonly string[]) {
    const what = typeof type === 'number' ? `id ${type}` : JSON.stringify(type);
    super(known.length === 0
      ? `unknown component type ${what}: the server's types are not known yet (no Welcome received)`
      : `unknown component type ${what}: the server's types are ${known.map((n, id) => `${n} (${id})`).join(', ')}`);
    this.name = 'UnknownComponentError';
  }
}

export function isString(info: ComponentInfo): boolean {
  return info.maxBytes > 0;
}
export function isQuantized(field: FieldInfo): boolean {
  return field.step !== 0;
}
export function valueBits(info: ComponentInfo): number {
  let bits = 0;
  for (const f of info.fields) bits += f.bits;
  return bits;
}
export function valueBytes(info: ComponentInfo): number {
  return (valueBits(info) + 7) >> 3;
}
export function columnBytes(info: ComponentInfo, count: number): number {
  return Math.ceil((valueBits(info) * count) / 8);
}

// C's round: halves away from zero.
export function roundHalfAway(x: number): number {
  return x < 0 ? -Math.floor(-x + 0.5) : Math.floor(x + 0.5);
}
export function quantizedSteps(min: number, max: number, step: number): number {
  return roundHalfAway((max - min) / step);
}
export function quantizedBits(steps: number): number {
  let bits = 1;
  while (bits < 64 && 2 ** bits - 1 < steps) ++bits;
  return bits;
}

export function naturalBits(type: FieldType): number {
  switch (type) {
    case FieldType.Bool: case FieldType.Byte: case FieldType.UByte: return 8;
    case FieldType.Short: case FieldType.UShort: return 16;
    case FieldType.Int: case FieldType.UInt: case FieldType.Float: return 32;
    default: return 64;
  }
}
const isFloat = (t: FieldType) => t === FieldType.Float || t === FieldType.Double;
const isSigned = (t: FieldType) =>
  t === FieldType.Byte || t === FieldType.Short || t === FieldType.Int || t === FieldType.Long;

function validName(name: string): boolean {
  return name.length >= 1 && name.length <= MAX_NAME_BYTES && /^[A-Za-z0-9_.-]+$/.test(name);
}

// The server's component types, by wire id; refused (SchemaError) when they break a rule of
// docs/PROTOCOL.md "Schema".
export class Schema {
  readonly types: readonly ComponentInfo[];
  private readonly byName = new Map<string, ComponentInfo>();

  constructor(types: readonly ComponentInfo[]) {
    checkSchema(types);
    this.types = types;
    for (const t of types) this.byName.set(t.name, t);
  }

  get size(): number {
    return this.types.length;
  }
  // The type of that name or wire id, or undefined (to test for a type that may be missing).
  find(idOrName: number | string): ComponentInfo | undefined {
    return typeof idOrName === 'number' ? this.types[idOrName] : this.byName.get(idOrName);
  }
  // Like find, but throws an UnknownComponentError, which lists the server's types, for a
  // type the server does not have.
  get(idOrName: number | string): ComponentInfo {
    const info = this.find(idOrName);
    if (info === undefined) throw new UnknownComponentError(idOrName, this.names);
    return info;
  }
  // The type names by wire id.
  get names(): string[] {
    return this.types.map((t) => t.name);
  }
  equals(other: Schema): boolean {
    return JSON.stringify(this.types) === JSON.stringify(other.types);
  }
}

function checkSchema(types: readonly ComponentInfo[]): void {
  if (types.length > MAX_COMPONENT_TYPES) {
    throw new SchemaError(`schema lists ${types.length} component types, more than ${MAX_COMPONENT_TYPES}`);
  }
  const names = new Set<string>();
  types.forEach((t, id) => {
    const what = `component type ${id}`;
    if (t.id !== id) throw new SchemaError(`${what} has wire id ${t.id} (ids are positions)`);
    if (!validName(t.name)) throw new SchemaError(`${what} has an invalid name (1 to 64 of A-Z a-z 0-9 _ - .)`);
    if (names.has(t.name)) throw new SchemaError(`${what} repeats the name '${t.name}'`);
    names.add(t.name);
    const named = `component '${t.name}'`;
    if (t.writer !== Writer.Server && t.writer !== Writer.Owner && t.writer !== Writer.Any) {
      throw new SchemaError(`${named} has an unknown writer`);
    }
    if (t.input && t.writer !== Writer.Owner) throw new SchemaError(`${named} is an input type not written by its owner`);
    if (!t.replicated && !t.input) throw new SchemaError(`${named} is not replicated but is not an input type`);
    if (isString(t)) {
      if (t.input || t.interpolated) throw new SchemaError(`${named} is a string type marked input or interpolated`);
      if (t.fields.length > 0 || t.maxBytes > MAX_STRING_BYTES) {
        throw new SchemaError(`${named} is a string type with fields or a max_bytes outside 1..${MAX_STRING_BYTES}`);
      }
      return;
    }
    if (t.fields.length === 0 || t.fields.length > MAX_FIELDS) {
      throw new SchemaError(`${named} has ${t.fields.length} fields (a fixed-size type has 1 to ${MAX_FIELDS})`);
    }
    const fieldNames = new Set<string>();
    for (const f of t.fields) {
      const field = `${named} field '${f.name}'`;
      if (!validName(f.name) || fieldNames.has(f.name)) throw new SchemaError(`${named} has an invalid or repeated field name`);
      fieldNames.add(f.name);
      if (!(f.type >= FieldType.Bool && f.type <= FieldType.Double)) {
        throw new SchemaError(`${field} has unknown type id ${f.type}`);
      }
      if (isQuantized(f)) {
        if (!isFloat(f.type) || !(f.step > 0) || !Number.isFinite(f.step) || !Number.isFinite(f.min) ||
            !Number.isFinite(f.max) || !(f.max > f.min) || !((f.max - f.min) / f.step < 4294967295)) {
          throw new SchemaError(`${field} has an invalid quantization (floats only; finite min < max; step > 0; at most 2^32 - 1 steps)`);
        }
        const steps = quantizedSteps(f.min, f.max, f.step);
        const needed = quantizedBits(steps);
        if (f.bits !== needed) {
          throw new SchemaError(`${field} is quantized to ${steps} steps, which take ${needed} bits, not ${f.bits}`);
        }
      } else if (f.bits !== naturalBits(f.type)) {
        throw new SchemaError(`${field} takes ${f.bits} bits; unquantized fields take ${naturalBits(f.type)}`);
      }
    }
  });
}

// ---- bits: bit i of a value is bit i % 8 of byte i / 8 ----------------------------------------

export function readBits(bytes: Uint8Array, at: number, bits: number): bigint {
  let out = 0n;
  for (let i = 0; i < bits;) {
    const bit = at + i;
    const shift = bit & 7;
    const n = Math.min(8 - shift, bits - i);
    const part = (bytes[bit >> 3]! >> shift) & ((1 << n) - 1);
    out |= BigInt(part) << BigInt(i);
    i += n;
  }
  return out;
}

export function writeBits(bytes: Uint8Array, at: number, bits: number, value: bigint): void {
  for (let i = 0; i < bits;) {
    const bit = at + i;
    const shift = bit & 7;
    const n = Math.min(8 - shift, bits - i);
    const part = Number((value >> BigInt(i)) & BigInt((1 << n) - 1));
    bytes[bit >> 3] = (bytes[bit >> 3]! & ~(((1 << n) - 1) << shift)) | (part << shift);
    i += n;
  }
}

// Up to 32 bits at bit `at`, as a number (readBits without bigint, for the hot paths).
export function readSmallBits(bytes: Uint8Array, at: number, bits: number): number {
  const shift = at & 7;
  const span = shift + bits;
  if (span <= 32 && bits < 32) {
    // The bytes that hold them fit one 32-bit number: a byte at a time was most of the
    // mirror's time per update.
    const i = at >> 3;
    let v = bytes[i]!;
    if (span > 8) {
      v |= bytes[i + 1]! << 8;
      if (span > 16) {
        v |= bytes[i + 2]! << 16;
        if (span > 24) v |= bytes[i + 3]! << 24;
      }
    }
    return (v >>> shift) & ((1 << bits) - 1);
  }
  let out = 0;
  for (let i = 0; i < bits;) {
    const bit = at + i;
    const shift = bit & 7;
    const n = Math.min(8 - shift, bits - i);
    out |= ((bytes[bit >> 3]! >> shift) & ((1 << n) - 1)) << i;
    i += n;
  }
  return out >>> 0;
}

// Value i of a column, as canonical bytes (its bits, zero-padded to whole bytes); padding
// bits of the column are never read.
export function unpackValue(info: ComponentInfo, column: Uint8Array, i: number): Uint8Array {
  return unpackValueOfBits(valueBits(info), column, i);
}

// unpackValue for a type of `bits` bits: the fields lie back to back, so the value is the
// column's bits [i * bits, (i + 1) * bits) copied to bit 0.
export function unpackValueOfBits(bits: number, column: Uint8Array, i: number): Uint8Array {
  const size = (bits + 7) >> 3;
  if ((bits & 7) === 0) {
    return column.slice(i * size, i * size + size);
  }
  const out = new Uint8Array(size);
  const from = i * bits;
  for (let j = 0, left = bits; j < size; ++j, left -= 8) {
    out[j] = readSmallBits(column, from + j * 8, left < 8 ? left : 8);
  }
  return out;
}

// Packs canonical values back to back into a column.
export function packColumn(info: ComponentInfo, values: readonly Uint8Array[]): Uint8Array {
  const bits = valueBits(info);
  const out = new Uint8Array(columnBytes(info, values.length));
  values.forEach((value, i) => {
    if ((bits & 7) === 0) {
      out.set(value.subarray(0, bits >> 3), (i * bits) >> 3);
    } else {
      writeBits(out, i * bits, bits, readBits(value, 0, bits));
    }
  });
  return out;
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
const f64 = new Float64Array(1);
const u64 = new BigUint64Array(f64.buffer);

function fieldFromBits(f: FieldInfo, raw: bigint): FieldValue {
  if (isQuantized(f)) {
    const v = f.min + Number(raw) * f.step;
    return f.type === FieldType.Float ? Math.fround(v) : v;
  }
  switch (f.type) {
    case FieldType.Bool: return raw !== 0n;
    case FieldType.Byte: case FieldType.Short: case FieldType.Int:
      return Number(BigInt.asIntN(f.bits, raw));
    case FieldType.UByte: case FieldType.UShort: case FieldType.UInt: return Number(raw);
    case FieldType.Long: return BigInt.asIntN(64, raw);
    case FieldType.ULong: return raw;
    case FieldType.Float: u32[0] = Number(raw); return f32[0]!;
    default: u64[0] = raw; return f64[0]!;
  }
}

// The fields of a canonical value, by name.
export function readValue(info: ComponentInfo, value: Uint8Array): FixedValue {
  const out: FixedValue = {};
  let at = 0;
  for (const f of info.fields) {
    out[f.name] = fieldFromBits(f, readBits(value, at, f.bits));
    at += f.bits;
  }
  return out;
}

// Why a canonical value is not acceptable (a non-finite float, a quantized value beyond its
// range), or null.
export function invalidValue(info: ComponentInfo, value: Uint8Array): string | null {
  let at = 0;
  for (const f of info.fields) {
    if (isQuantized(f)) {
      // a quantized field takes at most 32 bits (at most 2^32 - 1 steps: checkSchema)
      if (readSmallBits(value, at, f.bits) > quantizedSteps(f.min, f.max, f.step)) return `${info.name}.${f.name} is beyond its quantized range`;
    } else if (f.type === FieldType.Float) {
      if (readSmallBits(value, at + 23, 8) === 0xff) return `${info.name}.${f.name} is not a finite number`;
    } else if (f.type === FieldType.Double) {
      if (readSmallBits(value, at + 52, 11) === 0x7ff) return `${info.name}.${f.name} is not a finite number`;
    }
    at += f.bits;
  }
  return null;
}

function fieldBits(f: FieldInfo, value: FieldValue | undefined): bigint | null {
  if (value === undefined) return null;
  if (isFloat(f.type)) {
    const d = typeof value === 'boolean' ? NaN : Number(value);
    if (!Number.isFinite(d)) return null;
    if (isQuantized(f)) {
      const q = roundHalfAway((d - f.min) / f.step);
      if (q < 0 || q > quantizedSteps(f.min, f.max, f.step)) return null;
      return BigInt(q);
    }
    if (f.type === FieldType.Float) {
      if (Math.abs(d) > 3.4028234663852886e38) return null;
      f32[0] = d;
      return BigInt(u32[0]!);
    }
    f64[0] = d;
    return u64[0]!;
  }
  if (f.type === FieldType.Bool) {
    if (typeof value === 'boolean') return value ? 1n : 0n;
    return value === 0 || value === 1 || value === 0n || value === 1n ? BigInt(value) : null;
  }
  if (typeof value === 'boolean' || (typeof value === 'number' && !Number.isInteger(value))) return null;
  const v = BigInt(value);
  const bits = BigInt(f.bits);
  if (isSigned(f.type)) {
    if (v < -(1n << (bits - 1n)) || v > (1n << (bits - 1n)) - 1n) return null;
    return BigInt.asUintN(f.bits, v);
  }
  return v < 0n || v > (1n << bits) - 1n ? null : v;
}

// The canonical bytes of a fixed-size value given by field name; throws a TypeError naming
// the field that is missing or does not fit.
export function makeValue(info: ComponentInfo, fields: FixedValue): Uint8Array {
  if (isString(info)) throw new TypeError(`'${info.name}' is a string type`);
  const out = new Uint8Array(valueBytes(info));
  let at = 0;
  for (const f of info.fields) {
    const bits = fieldBits(f, fields[f.name]);
    if (bits === null) {
      const range = isQuantized(f) ? ` quantized to the range ${f.min} to ${f.max}` : '';
      throw new TypeError(`value ${String(fields[f.name])} does not fit ${info.name}.${f.name}, a ${FieldType[f.type]}${range}`);
    }
    writeBits(out, at, f.bits, bits);
    at += f.bits;
  }
  return out;
}
