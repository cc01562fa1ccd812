import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { FrameReader, MalformedFrameError, decodeServerFrame, encodeHello } from '../../dist/ecsnet.node.js';
import { recorded, welcome } from '../support/frames.mjs';

const golden = new URL('../../../../tests/protocol/golden/', import.meta.url);

test('the reader splits a byte stream into frames across any chunking', () => {
  const frames = recorded('demo-stream.bin');
  const all = Buffer.concat(frames.map((f) => Buffer.from(f)));
  for (const size of [1, 3, 7, 64, all.length]) {
    const reader = new FrameReader();
    const out = [];
    for (let at = 0; at < all.length; at += size) {
      reader.feed(new Uint8Array(all.subarray(at, at + size)));
      for (let f = reader.next(); f !== null; f = reader.next()) out.push(f);
    }
    assert.deepEqual(out.map((f) => Buffer.from(f).toString('hex')), frames.map((f) => Buffer.from(f).toString('hex')));
  }
});

test('a length over the limit is refused before the body arrives', () => {
  const reader = new FrameReader(1000);
  reader.feed(new Uint8Array([0xe9, 0x03, 0, 0])); // 1001
  assert.throws(() => reader.next(), MalformedFrameError);
});

test('every golden server frame of the C++ tests decodes', () => {
  const names = readdirSync(golden).filter((n) => n.startsWith('server_') && n.endsWith('.bin'));
  assert.ok(names.length >= 10);
  for (const name of names) {
    const m = decodeServerFrame(new Uint8Array(readFileSync(new URL(name, golden))));
    assert.ok(typeof m.kind === 'string', name);
  }
  const w = decodeServerFrame(new Uint8Array(readFileSync(new URL('server_welcome.bin', golden))));
  assert.deepEqual(w.components.types.map((t) => t.name).slice(0, 6), ['owner', 'position', 'velocity', 'health', 'lifetime', 'name']);
});

test('malformed frames are refused with MalformedFrameError', () => {
  const good = welcome();
  assert.throws(() => decodeServerFrame(good.subarray(0, good.length - 1)), MalformedFrameError); // prefix mismatch
  assert.throws(() => decodeServerFrame(encodeHello({ clientName: 'x' })), MalformedFrameError); // ECSC, not ECSS
  assert.throws(() => decodeServerFrame(new Uint8Array([4, 0, 0, 0, 1, 2, 3, 4])), MalformedFrameError);
  const lying = good.slice();
  lying[4] = 0xf0; // root offset far outside the frame
  assert.throws(() => decodeServerFrame(lying), MalformedFrameError);
});

test('mutated frames decode or throw a typed error, never anything else', () => {
  const frames = [...recorded('demo-stream.bin'), ...recorded('arena-stream.bin')];
  let seed = 12345;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  let refused = 0;
  for (let i = 0; i < 3000; ++i) {
    const frame = frames[i % frames.length].slice();
    for (let k = 0; k < 1 + (i % 4); ++k) frame[4 + Math.floor(random() * (frame.length - 4))] = Math.floor(random() * 256);
    try {
      decodeServerFrame(frame);
    } catch (e) {
      assert.ok(e.name === 'MalformedFrameError' || e.name === 'SchemaError', `${e.name}: ${e.message}`);
      ++refused;
    }
  }
  assert.ok(refused > 100, `only ${refused} of 3000 mutations refused`);
});
