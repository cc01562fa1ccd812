// Frames (docs/PROTOCOL.md, "Frames"): a 4-byte little-endian length, then a size-prefixed
// FlatBuffer. JavaScript has no FlatBuffers verifier, so frames are read through a byte buffer
// that refuses every read outside the frame ("Receiving without a verifier").
import * as flatbuffers from 'flatbuffers';

export const FRAME_PREFIX_BYTES = 4;
export const DEFAULT_MAX_SERVER_FRAME_BYTES = 64 * 1024 * 1024;

// A frame the server sent that cannot be read: the connection is closed, never a crash.
export class MalformedFrameError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MalformedFrameError';
  }
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

// A ByteBuffer whose reads throw MalformedFrameError past the frame's end, whose vectors must
// lie inside it, and whose strings must be valid UTF-8.
export class StrictByteBuffer extends flatbuffers.ByteBuffer {
  private readonly size: number;

  constructor(bytes: Uint8Array) {
    super(bytes);
    this.size = bytes.length;
  }

  private check(offset: number, bytes: number): void {
    if (!(offset >= 0 && offset + bytes <= this.size)) {
      throw new MalformedFrameError(`read of ${bytes} bytes at ${offset} outside the ${this.size}-byte frame`);
    }
  }

  override readUint8(offset: number): number {
    this.check(offset, 1);
    return super.readUint8(offset);
  }
  override readUint16(offset: number): number {
    this.check(offset, 2);
    return super.readUint16(offset);
  }
  override readInt32(offset: number): number {
    this.check(offset, 4);
    return super.readInt32(offset);
  }
  override __vector_len(offset: number): number {
    const length = super.__vector_len(offset);
    const data = super.__vector(offset);
    // Each element takes at least one byte: the length cannot announce more than the frame.
    if (length < 0 || data + length > this.size) {
      throw new MalformedFrameError(`a vector of ${length} elements at ${data} exceeds the frame`);
    }
    return length;
  }
  override __string(offset: number, encoding?: flatbuffers.Encoding): string | Uint8Array {
    const start = offset + this.readInt32(offset);
    const length = this.readInt32(start);
    this.check(start + 4, length);
    const bytes = this.bytes().subarray(start + 4, start + 4 + length);
    if (encoding === flatbuffers.Encoding.UTF8_BYTES) {
      return bytes;
    }
    if (length <= SHORT_STRING && isAscii(bytes)) {
      // A short ASCII string (an entity's name) without a TextDecoder call, whose cost per call
      // was most of a 10,000-entity snapshot's decode in Chromium. ASCII is valid UTF-8.
      return String.fromCharCode.apply(null, bytes as unknown as number[]);
    }
    try {
      return strictUtf8.decode(bytes);
    } catch {
      throw new MalformedFrameError('a string is not valid UTF-8');
    }
  }
}

const SHORT_STRING = 64;

function isAscii(bytes: Uint8Array): boolean {
  for (let i = 0; i < bytes.length; ++i) if (bytes[i]! >= 0x80) return false;
  return true;
}

// Splits a byte stream into frames (each returned with its prefix), refusing a length above
// the limit before the body is read or allocated. `compact` (a connection whose Hello named
// protocol 6 or later): a prefix with its top bit set is a compact frame whose length is its low
// 24 bits ("Protocol 6"); otherwise such a prefix is a length of 2^31 or more, over any limit.
export class FrameReader {
  private chunks: Uint8Array[] = [];
  private buffered = 0;

  constructor(readonly maxFrameBytes: number = DEFAULT_MAX_SERVER_FRAME_BYTES, readonly compact: boolean = false) {}

  feed(bytes: Uint8Array): void {
    if (bytes.length > 0) {
      this.chunks.push(bytes);
      this.buffered += bytes.length;
    }
  }

  // The next whole frame, or null until more bytes arrive. Throws MalformedFrameError for a
  // length over the limit.
  next(): Uint8Array | null {
    if (this.buffered < FRAME_PREFIX_BYTES) {
      return null;
    }
    const length = frameLength(this.peek(FRAME_PREFIX_BYTES), this.maxFrameBytes, this.compact);
    if (this.buffered < FRAME_PREFIX_BYTES + length) {
      return null;
    }
    return this.take(FRAME_PREFIX_BYTES + length);
  }

  private peek(n: number): Uint8Array {
    const first = this.chunks[0]!;
    if (first.length >= n) {
      return first.subarray(0, n);
    }
    const out = new Uint8Array(n);
    let filled = 0;
    for (const chunk of this.chunks) {
      const part = chunk.subarray(0, n - filled);
      out.set(part, filled);
      filled += part.length;
      if (filled === n) break;
    }
    return out;
  }

  private take(n: number): Uint8Array {
    const out = new Uint8Array(n);
    let filled = 0;
    while (filled < n) {
      const chunk = this.chunks[0]!;
      const part = chunk.subarray(0, n - filled);
      out.set(part, filled);
      filled += part.length;
      if (part.length === chunk.length) {
        this.chunks.shift();
      } else {
        this.chunks[0] = chunk.subarray(part.length);
      }
    }
    this.buffered -= n;
    return out;
  }
}

// The 4-byte little-endian word that starts a frame.
export function readPrefix(prefix: Uint8Array): number {
  return (prefix[0]! | (prefix[1]! << 8) | (prefix[2]! << 16) | (prefix[3]! << 24)) >>> 0;
}

// Protocol 6: a prefix with its top bit set starts a compact frame, its kind in bits 24-30 and
// its body length in bits 0-23 (docs/PROTOCOL.md, "Protocol 6"). Each direction has its own kinds.
export function isCompactPrefix(word: number): boolean {
  return (word & 0x80000000) !== 0;
}
export function compactKind(word: number): number {
  return (word >>> 24) & 0x7f;
}
export function compactLength(word: number): number {
  return word & 0xffffff;
}
export function compactPrefixWord(kind: number, length: number): number {
  return (0x80000000 | ((kind & 0x7f) << 24) | (length & 0xffffff)) >>> 0;
}

// The body length a frame's prefix announces; throws when it exceeds the limit. `compact`: a
// prefix with its top bit set is a compact frame's (FrameReader).
export function frameLength(prefix: Uint8Array, maxFrameBytes: number, compact = false): number {
  const word = readPrefix(prefix);
  const length = compact && isCompactPrefix(word) ? compactLength(word) : word;
  if (length > maxFrameBytes) {
    throw new MalformedFrameError(`a ${length === word ? '' : 'compact '}frame of ${length} bytes, more than the limit of ${maxFrameBytes}`);
  }
  return length;
}

// Checks one whole frame (as a WebSocket message carries it): the prefix matches its length,
// within the limit, and the file identifier is `identifier`. Returns a buffer positioned at the
// root, ready for getSizePrefixedRoot...
export function openFrame(frame: Uint8Array, identifier: string, maxFrameBytes: number): StrictByteBuffer {
  if (frame.length < FRAME_PREFIX_BYTES + 8) {
    throw new MalformedFrameError(`a frame of ${frame.length} bytes is too short`);
  }
  const length = frameLength(frame, maxFrameBytes);
  if (length !== frame.length - FRAME_PREFIX_BYTES) {
    throw new MalformedFrameError(`the prefix announces ${length} bytes, the frame has ${frame.length - FRAME_PREFIX_BYTES}`);
  }
  for (let i = 0; i < 4; ++i) {
    if (frame[8 + i] !== identifier.charCodeAt(i)) {
      throw new MalformedFrameError(`the frame's identifier is not ${identifier}`);
    }
  }
  return new StrictByteBuffer(frame);
}
