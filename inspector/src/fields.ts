// Reading one numeric field of a canonical value without building the whole object: the SDK's
// readValue goes through bigint per field, too slow for 10,000 positions 30 times a second.
import { type ComponentInfo, FieldType, isString } from '@ecsnet/client';

export type NumberReader = (value: Uint8Array) => number;

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
const f64 = new Float64Array(1);
const u32x2 = new Uint32Array(f64.buffer);

// Up to 32 bits starting at bit `at` (bit i of a value is bit i % 8 of byte i / 8), unsigned.
export function bitsAt(bytes: Uint8Array, at: number, bits: number): number {
  let out = 0;
  for (let i = 0; i < bits;) {
    const bit = at + i;
    const shift = bit & 7;
    const n = Math.min(8 - shift, bits - i);
    out += ((bytes[bit >> 3]! >> shift) & ((1 << n) - 1)) * 2 ** i;
    i += n;
  }
  return out;
}

// A reader of `type.field` as a number (64-bit integers lose precision above 2^53), or null
// when the type has no such numeric field.
export function numberReader(info: ComponentInfo, field: string): NumberReader | null {
  if (isString(info)) return null;
  let at = 0;
  for (const f of info.fields) {
    if (f.name !== field) {
      at += f.bits;
      continue;
    }
    const from = at;
    if (f.step > 0) {
      const { min, step } = f;
      const round = f.type === FieldType.Float ? Math.fround : (x: number) => x;
      return (v) => round(min + bitsAt(v, from, f.bits) * step);
    }
    switch (f.type) {
      case FieldType.Float: return (v) => { u32[0] = bitsAt(v, from, 32); return f32[0]!; };
      case FieldType.Double: return (v) => {
        u32x2[0] = bitsAt(v, from, 32);
        u32x2[1] = bitsAt(v, from + 32, 32);
        return f64[0]!;
      };
      case FieldType.Bool: case FieldType.UByte: case FieldType.UShort: case FieldType.UInt:
        return (v) => bitsAt(v, from, f.bits);
      case FieldType.Byte: case FieldType.Short: case FieldType.Int: {
        const sign = 2 ** (f.bits - 1);
        return (v) => { const raw = bitsAt(v, from, f.bits); return raw >= sign ? raw - 2 * sign : raw; };
      }
      case FieldType.ULong: return (v) => bitsAt(v, from, 32) + bitsAt(v, from + 32, 32) * 2 ** 32;
      case FieldType.Long: return (v) => {
        const high = bitsAt(v, from + 32, 32);
        return bitsAt(v, from, 32) + (high >= 2 ** 31 ? high - 2 ** 32 : high) * 2 ** 32;
      };
    }
    return null;
  }
  return null;
}

// The types that can place an entity: numeric fields x and y; `position` (any case) first.
export function positionTypes(types: readonly ComponentInfo[]): ComponentInfo[] {
  const placeable = types.filter((t) => t.replicated && numberReader(t, 'x') !== null && numberReader(t, 'y') !== null);
  const preferred = (t: ComponentInfo) => (t.name.toLowerCase() === 'position' ? 0 : 1);
  return placeable.sort((a, b) => preferred(a) - preferred(b) || a.id - b.id);
}
