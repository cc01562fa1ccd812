// The Checksum terms (docs/PROTOCOL.md, "Checksum"), XXH3-64 with seed 0 from hash-wasm, summed
// modulo 2^64 (Sum64).
import { createXXHash3, type IHasher } from 'hash-wasm';

const utf8 = new TextEncoder();
const TWO32 = 2 ** 32;

// hash-wasm's hasher loads its WebAssembly asynchronously, once; hashing is synchronous after.
export class ChecksumHasher {
  private readonly header = new Uint8Array(12);
  private readonly view = new DataView(this.header.buffer);

  private scratch = new Uint8Array(64);
  private scratchView = new DataView(this.scratch.buffer);

  private constructor(private readonly hasher: IHasher) {}

  static async create(): Promise<ChecksumHasher> {
    return new ChecksumHasher(await createXXHash3(0, 0));
  }

  private digest(): bigint {
    const bytes = this.hasher.digest('binary'); // 8 bytes, big-endian
    return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getBigUint64(0, false);
  }

  // XXH3_64bits(index_u32_le || version_u32_le)
  entityTerm(index: number, version: number): bigint {
    this.view.setUint32(0, index, true);
    this.view.setUint32(4, version, true);
    this.hasher.init();
    this.hasher.update(this.header.subarray(0, 8));
    return this.digest();
  }

  // XXH3_64bits(wire_id_u32_le || index_u32_le || version_u32_le || value): canonical bytes,
  // or a string's UTF-8 bytes.
  componentTerm(wireId: number, index: number, version: number, value: Uint8Array): bigint {
    this.view.setUint32(0, wireId, true);
    this.view.setUint32(4, index, true);
    this.view.setUint32(8, version, true);
    this.hasher.init();
    this.hasher.update(this.header);
    this.hasher.update(value);
    return this.digest();
  }

  // Adds (sign 1) or subtracts (sign -1) the entity term to `sum`: entityTerm without bigint.
  addEntityTerm(sum: Sum64, sign: 1 | -1, index: number, version: number): void {
    this.view.setUint32(0, index, true);
    this.view.setUint32(4, version, true);
    this.hasher.init();
    this.hasher.update(this.header.subarray(0, 8));
    sum.addDigest(this.hasher.digest('binary'), sign);
  }

  // The same for a component term; a string value is hashed as its UTF-8 bytes.
  addComponentTerm(sum: Sum64, sign: 1 | -1, wireId: number, index: number, version: number, value: Uint8Array | string): void {
    const most = 12 + (typeof value === 'string' ? value.length * 3 : value.length);
    if (this.scratch.length < most) {
      this.scratch = new Uint8Array(Math.max(most, 2 * this.scratch.length));
      this.scratchView = new DataView(this.scratch.buffer);
    }
    this.scratchView.setUint32(0, wireId, true);
    this.scratchView.setUint32(4, index, true);
    this.scratchView.setUint32(8, version, true);
    let length = 12;
    if (typeof value === 'string') {
      length += utf8.encodeInto(value, this.scratch.subarray(12)).written;
    } else {
      this.scratch.set(value, 12);
      length += value.length;
    }
    this.hasher.init();
    this.hasher.update(this.scratch.subarray(0, length)); // one call: each costs more than the hashing
    sum.addDigest(this.hasher.digest('binary'), sign);
  }

  xxh3(data: Uint8Array): bigint {
    this.hasher.init();
    this.hasher.update(data);
    return this.digest();
  }
}

// A sum modulo 2^64 of XXH3 digests, kept in two 32-bit halves: bigint arithmetic per term
// costs more than the hash.
export class Sum64 {
  private high = 0;
  private low = 0;

  // Adds (sign 1) or subtracts (sign -1) an 8-byte big-endian digest.
  addDigest(digest: Uint8Array, sign: 1 | -1): void {
    const high = ((digest[0]! << 24) | (digest[1]! << 16) | (digest[2]! << 8) | digest[3]!) >>> 0;
    const low = ((digest[4]! << 24) | (digest[5]! << 16) | (digest[6]! << 8) | digest[7]!) >>> 0;
    const l = this.low + sign * low; // -(2^32 - 1) .. 2^33 - 2: the carry is -1, 0 or 1
    this.low = l >>> 0;
    this.high = (this.high + sign * high + Math.floor(l / TWO32)) >>> 0;
  }
  get value(): bigint {
    return (BigInt(this.high) << 32n) | BigInt(this.low);
  }
}
