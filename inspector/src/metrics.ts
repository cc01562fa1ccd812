// The page's own figures: frames per second, main-thread milliseconds per frame, bytes per
// second of the observer connection.

export interface FrameMs { average: number; p95: number; frames: number }

// The last `capacity` frames: when each started and how long its work took.
export class FrameTimes {
  private readonly starts: Float64Array;
  private readonly durations: Float64Array;
  private next = 0;
  private filled = 0;
  total = 0;

  constructor(readonly capacity = 240) {
    this.starts = new Float64Array(capacity);
    this.durations = new Float64Array(capacity);
  }

  record(startMs: number, durationMs: number): void {
    this.starts[this.next] = startMs;
    this.durations[this.next] = durationMs;
    this.next = (this.next + 1) % this.capacity;
    this.filled = Math.min(this.filled + 1, this.capacity);
    ++this.total;
  }

  // Frames per second over the last `windowMs` before `nowMs`.
  fps(nowMs: number, windowMs = 1000): number {
    let frames = 0;
    let oldest = nowMs;
    for (let k = 0; k < this.filled; ++k) {
      const t = this.starts[k]!;
      if (t > nowMs - windowMs && t <= nowMs) {
        ++frames;
        oldest = Math.min(oldest, t);
      }
    }
    if (frames < 2) return frames;
    // frames - 1 intervals between the first and the last start, rescaled
    return ((frames - 1) * 1000) / Math.max(nowMs - oldest, 1);
  }

  frameMs(): FrameMs {
    if (this.filled === 0) return { average: 0, p95: 0, frames: 0 };
    const recent = Array.from(this.durations.subarray(0, this.filled)).sort((a, b) => a - b);
    const average = recent.reduce((s, d) => s + d, 0) / recent.length;
    const p95 = recent[Math.min(recent.length - 1, Math.ceil(0.95 * recent.length) - 1)]!;
    return { average, p95, frames: recent.length };
  }
}

// Bytes per second from a growing byte counter, over the last completed window.
export class ByteRate {
  private windowStart = -1;
  private bytesAtStart = 0;
  private rate = 0;

  constructor(private readonly windowMs = 1000) {}

  sample(totalBytes: number, nowMs: number): void {
    if (this.windowStart < 0) {
      this.windowStart = nowMs;
      this.bytesAtStart = totalBytes;
      return;
    }
    const elapsed = nowMs - this.windowStart;
    if (elapsed < this.windowMs) return;
    this.rate = ((totalBytes - this.bytesAtStart) * 1000) / elapsed;
    this.windowStart = nowMs;
    this.bytesAtStart = totalBytes;
  }

  get perSecond(): number { return this.rate; }
}
