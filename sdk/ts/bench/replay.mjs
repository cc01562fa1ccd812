// The SDK's decode time for a recorded stream of server frames, the same code in Node and in a
// browser: `sdk` is the SDK module (dist/ecsnet.node.js, or dist/ecsnet.browser.js in a page).
// No imports, so a page can load this file as it is.

// A recording is whole frames back to back, each with its 4-byte little-endian length prefix.
export function splitFrames(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const frames = [];
  for (let at = 0; at < bytes.length;) {
    if (at + 4 > bytes.length) throw new Error(`recording: a length prefix cut at byte ${at}`);
    const end = at + 4 + view.getUint32(at, true);
    if (end > bytes.length) throw new Error(`recording: a frame cut at byte ${at}`);
    frames.push(bytes.subarray(at, end));
    at = end;
  }
  return frames;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// Replays the recording's Deltas into a fresh mirror `passes` times (the first `warmup` passes
// not counted), timing per pass (1) decodeServerFrame alone and (2) decodeServerFrame followed by
// Mirror.apply, over all the Deltas in one timed block (a timer reading per Delta would be
// coarse in a browser), and (3) the Snapshot's frames decoded and applied to a new mirror
// (setSchema included). Checksum frames are left out of the timed passes; an untimed pass first
// applies them all and fails unless every one matched, so the timed passes build a right world.
export async function measureDecode(sdk, bytes, { passes = 20, warmup = 5 } = {}) {
  if (!(passes > warmup && warmup >= 0)) throw new RangeError('passes must exceed warmup');
  const frames = splitFrames(bytes);
  const kinds = frames.map((f) => sdk.decodeServerFrame(f).kind);
  if (kinds[0] !== 'welcome') throw new Error('recording: the first frame is not Welcome');
  const welcome = sdk.decodeServerFrame(frames[0]);
  const firstDelta = kinds.indexOf('delta');
  if (firstDelta < 0) throw new Error('recording: no Delta');
  const deltaFrames = frames.filter((_, i) => i >= firstDelta && kinds[i] === 'delta');
  const hasher = await sdk.ChecksumHasher.create();

  const joined = () => {
    const mirror = new sdk.Mirror(hasher);
    mirror.setSchema(welcome.components);
    for (let i = 1; i < firstDelta; ++i) {
      if (kinds[i] === 'snapshot' && !mirror.apply(sdk.decodeServerFrame(frames[i]))) throw new Error(`snapshot: ${mirror.error}`);
    }
    if (!mirror.ready) throw new Error('recording: no complete Snapshot before the first Delta');
    return mirror;
  };

  const checked = joined();
  for (let i = firstDelta; i < frames.length; ++i) {
    if (kinds[i] !== 'delta' && kinds[i] !== 'checksum') continue;
    if (!checked.apply(sdk.decodeServerFrame(frames[i]))) throw new Error(`replay: ${checked.error}`);
  }
  if (checked.stats.checksumsMatched < 1) throw new Error('recording: no Checksum after the first Delta to verify the replay');

  // Entities updated per Delta (distinct indices over its update columns).
  let moving = 0;
  for (const f of deltaFrames) {
    const updated = new Set();
    for (const c of sdk.decodeServerFrame(f).updated) for (const i of sdk.expandIndexSet(c.at, Infinity) ?? []) updated.add(i);
    moving += updated.size;
  }

  const decodeMs = [];
  const applyMs = [];
  const snapshotMs = [];
  let sink = 0;
  for (let pass = 0; pass < passes; ++pass) {
    let t = performance.now();
    for (const f of deltaFrames) sink += sdk.decodeServerFrame(f).updated.length;
    const decoded = performance.now() - t;
    t = performance.now();
    const mirror = joined();
    const snapshot = performance.now() - t;
    t = performance.now();
    for (const f of deltaFrames) {
      if (!mirror.apply(sdk.decodeServerFrame(f))) throw new Error(`pass ${pass}: ${mirror.error}`);
    }
    const applied = performance.now() - t;
    if (pass >= warmup) {
      decodeMs.push(decoded / deltaFrames.length);
      applyMs.push(applied / deltaFrames.length);
      snapshotMs.push(snapshot);
    }
  }
  if (sink === 0) throw new Error('the Deltas update nothing');
  return {
    entities: checked.size,
    deltas: deltaFrames.length,
    movingPerDelta: moving / deltaFrames.length,
    bytesPerDelta: deltaFrames.reduce((n, f) => n + f.length, 0) / deltaFrames.length,
    checksumsMatched: checked.stats.checksumsMatched,
    passes: passes - warmup,
    decodeMs: { median: median(decodeMs), min: Math.min(...decodeMs) },
    decodeApplyMs: { median: median(applyMs), min: Math.min(...applyMs) },
    snapshotMs: { median: median(snapshotMs), min: Math.min(...snapshotMs) },
  };
}
