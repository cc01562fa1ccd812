// The Checksum terms (docs/PROTOCOL.md, "Checksum"), XXH3-64 with seed 0 from hash-wasm, summed
// modulo 2^64 as bigint.
import { createXXHash3, type IHasher } from 'hash-wasm';

const MASK64 = (1n << 64n) - 1n;

// hash-wasm's hasher loads its WebAssembly asynchronously, once; hashing is synchronous after.
export class ChecksumHasher {
  private readonly header = new Uint8Array(12);
  private readonly view = new DataView(this.header.buffer);

  private constructor(private readonly hasher: IHasher) {}

  static async create(): Promise<ChecksumHasher> {
    return new ChecksumHasher(await createXXHash3(0, 0));
  }

  private digest(): bigint {
    const bytes = this.hasher.digest('binary'); // big-endian
    let out = 0n;
    for (const b of bytes) out = (out << 8n) | BigInt(b);
    return out;
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

  xxh3(data: Uint8Array): bigint {
    this.hasher.init();
    this.hasher.update(data);
    return this.digest();
  }
}

export function add64(a: bigint, b: bigint): bigint {
  return (a + b) & MASK64;
}
export function sub64(a: bigint, b: bigint): bigint {
  return (a - b) & MASK64;
}
