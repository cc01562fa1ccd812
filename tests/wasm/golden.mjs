// The golden replay on a WebAssembly prediction module (arena_golden.cpp writes the recording and
// prints the native lines): the same calls, the same lines. Runs in Node and in a page.

const OPS = { end: 0, configure: 1, frame: 2, track: 3, input: 4, update: 5 };

// FNV-1a, 32 bits, over the doubles' bytes, as arena_golden.cpp computes it.
function digest(bytes, h) {
  for (let i = 0; i < bytes.length; ++i) h = Math.imul(h ^ bytes[i], 16777619) >>> 0;
  return h;
}

const hex = (h) => h.toString(16).padStart(8, '0');

// `module`: the instantiated Emscripten module; `recording`: a Uint8Array. Returns the lines; with
// { time: true } the update calls' times instead, in microseconds: { replays, steps } (an update
// that reported an event replayed).
// { dumpAt: tick }: the view's numbers after the update to that input tick go to `dumped`.
export function replay(module, recording, { time = false, dumpAt = -1, dumped = [] } = {}) {
  const replays = [];
  const steps = [];
  const view = new DataView(recording.buffer, recording.byteOffset, recording.byteLength);
  let at = 0;
  const u8 = () => view.getUint8(at++);
  const u32 = () => { const v = view.getUint32(at, true); at += 4; return v; };
  const f64 = () => { const v = view.getFloat64(at, true); at += 8; return v; };
  const bytes = () => { const n = u32(); const b = recording.subarray(at, at + n); at += n; return b; };
  const check = (ok, what) => {
    if (!ok) throw new Error(`${what}: ${module.UTF8ToString(module._ecsnet_error())}`);
  };
  // Memory may grow at any call: views over it are made after each call that reads.
  const scratch = module._malloc(16);
  const doublesAt = (ptr, count) => new Uint8Array(module.HEAPU8.buffer, ptr, count * 8);
  const lines = [];
  for (let kind = u8(); kind !== OPS.end; kind = u8()) {
    if (kind === OPS.configure) {
      const text = new TextDecoder().decode(bytes());
      const count = u32();
      const options = module._malloc(Math.max(count, 1) * 8);
      for (let i = 0; i < count; ++i) new Float64Array(module.HEAPU8.buffer, options, count)[i] = f64();
      const textBytes = module.lengthBytesUTF8(text) + 1;
      const textPtr = module._malloc(textBytes);
      module.stringToUTF8(text, textPtr, textBytes);
      check(module._ecsnet_configure(textPtr, options, count), 'configure');
      module._free(textPtr);
      module._free(options);
    } else if (kind === OPS.frame) {
      const frame = bytes();
      const ptr = module._ecsnet_frame_buffer(frame.length);
      module.HEAPU8.set(frame, ptr);
      check(module._ecsnet_receive(frame.length), 'receive');
    } else if (kind === OPS.track) {
      const index = u32();
      check(module._ecsnet_track(index, u32()), 'track');
    } else if (kind === OPS.input) {
      const tick = f64();
      const index = u32();
      const version = u32();
      for (let n = u32(); n > 0; --n) {
        const type = u32();
        const value = bytes();
        const ptr = module._malloc(Math.max(value.length, 1));
        module.HEAPU8.set(value, ptr);
        check(module._ecsnet_input_value(type, ptr, value.length), 'input value');
        module._free(ptr);
      }
      check(module._ecsnet_set_input(tick, index, version), 'set input');
    } else if (kind === OPS.update) {
      const tick = f64();
      const elapsed = f64();
      const started = performance.now();
      check(module._ecsnet_update(tick, elapsed), 'update');
      if (time) {
        const took = (performance.now() - started) * 1000;
        module._ecsnet_events(scratch);
        (module.HEAPU32[scratch >> 2] > 0 ? replays : steps).push(took);
        continue;
      }
      const viewPtr = module._ecsnet_view(scratch);
      const views = module.HEAPU32[scratch >> 2];
      const eventPtr = module._ecsnet_events(scratch);
      const events = module.HEAPU32[scratch >> 2];
      const h = digest(doublesAt(eventPtr, events), digest(doublesAt(viewPtr, views), 2166136261));
      if (tick === dumpAt) dumped.push(...new Float64Array(module.HEAPU8.buffer, viewPtr, views));
      lines.push(`${tick} ${views} ${events} ${hex(h)}`);
    } else {
      throw new Error(`unknown record ${kind} at byte ${at - 1}`);
    }
  }
  if (time) {
    module._free(scratch);
    return { replays, steps };
  }
  const statsPtr = module._ecsnet_stats();
  const stats = new Float64Array(module.HEAPU8.buffer, statsPtr, 17);
  lines.push(`stats ${stats[2]} ${stats[3]} ${stats[10]} ${stats[11]} ${stats[12]} ${hex(digest(doublesAt(statsPtr, 17), 2166136261))}`);
  module._free(scratch);
  return lines;
}

// The first line where `actual` and `expected` differ, or null.
export function firstDifference(actual, expected) {
  const n = Math.max(actual.length, expected.length);
  for (let i = 0; i < n; ++i) {
    if (actual[i] !== expected[i]) return { line: i + 1, actual: actual[i] ?? '(none)', expected: expected[i] ?? '(none)' };
  }
  return null;
}
