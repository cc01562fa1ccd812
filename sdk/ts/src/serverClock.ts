// The client's estimate of the server's tick: the algorithm of the C++ server_clock
// (shared/client/src/server_clock.cpp, docs/PROTOCOL.md "Server time"). Times are seconds of a
// monotonic clock, passed in, so that it is tested with simulated time.

export interface ServerClockOptions {
  rate: number;             // ticks per second (Welcome.tick_rate)
  minRenderDelay: number;   // ticks behind the arriving frames, at least
  maxRenderDelay: number;   // ... and at most
  snapTicks: number;        // a larger error is corrected at once, not eased
  maxSpeedChange: number;   // easing: at most 10 % faster or slower
}

export const defaultServerClockOptions: ServerClockOptions = {
  rate: 30, minRenderDelay: 2, maxRenderDelay: 10, snapTicks: 8, maxSpeedChange: 0.1,
};

const SMOOTHING = 1 / 16;
const SAMPLES_TO_SNAP = 3;
const MAX_MARGIN_EXTRA = 30;
const ROOMY_FOR = 2;

export class ServerClock {
  readonly options: ServerClockOptions;
  private epoch = 0;
  private started = false;
  private offset = 0;
  private jitter_ = 0;
  private farSamples = 0;
  private shown = 0;
  private delayShown = 0; // the eased render delay (renderTick = shown - this)
  private shownAt = 0;
  private srtt = 0;
  private rttvar = 0;
  private haveRtt = false;
  private marginExtra = 0;
  private marginChanged = -Infinity;
  private roomySince = 0;
  private roomy = false;

  constructor(options: Partial<ServerClockOptions> = {}) {
    const o = { ...defaultServerClockOptions, ...options };
    if (!(o.rate > 0) || !Number.isFinite(o.rate)) throw new RangeError('ServerClock: the tick rate must be a positive number');
    if (!(o.minRenderDelay >= 0) || !(o.maxRenderDelay >= o.minRenderDelay) || !(o.snapTicks > 0) ||
        !(o.maxSpeedChange > 0 && o.maxSpeedChange < 1)) {
      throw new RangeError('ServerClock: needs 0 <= minRenderDelay <= maxRenderDelay, snapTicks > 0 and 0 < maxSpeedChange < 1');
    }
    this.options = o;
  }

  // Welcome: the server had run `tick` when it sent it.
  onWelcome(tick: number, received: number): void { this.sample(tick, received); }
  // A Snapshot's last chunk or a Delta of `tick`.
  onTick(tick: number, received: number): void { this.sample(tick, received); }

  private seconds(t: number): number { return t - this.epoch; }
  private oneWayTicks(): number { return this.srtt * 0.5 * this.options.rate; }

  private sample(tick: number, received: number): void {
    if (!this.started) {
      this.started = true;
      this.epoch = received;
      this.offset = tick;
      this.shown = tick;
      this.shownAt = received;
      this.delayShown = this.renderDelay;
      return;
    }
    const d = tick - this.options.rate * this.seconds(received);
    const error = d - this.offset;
    if (Math.abs(error) > this.options.snapTicks) {
      // One late frame is jitter; several in a row are a new timeline.
      if (++this.farSamples >= SAMPLES_TO_SNAP) {
        this.offset = d;
        this.jitter_ = 0;
        this.farSamples = 0;
      }
      return;
    }
    this.farSamples = 0;
    this.offset += error * SMOOTHING;
    this.jitter_ += (Math.abs(error) - this.jitter_) * SMOOTHING;
  }

  onPong(sent: number, received: number): void {
    const r = Math.max(0, received - sent);
    if (!this.haveRtt) {
      this.haveRtt = true;
      this.srtt = r;
      this.rttvar = r / 2;
      return;
    }
    this.rttvar = 0.75 * this.rttvar + 0.25 * Math.abs(this.srtt - r);
    this.srtt = 0.875 * this.srtt + 0.125 * r;
  }

  onInputAck(lead: number, received: number): void {
    // A change shows in the acks a round trip later: one change per round trip at most.
    const roundTrip = Math.max(this.srtt, 1 / this.options.rate);
    const mayChange = received - this.marginChanged >= roundTrip;
    if (lead < 0) {
      this.roomy = false;
      if (mayChange && this.marginExtra < MAX_MARGIN_EXTRA) {
        this.marginExtra += 1;
        this.marginChanged = received;
      }
      return;
    }
    if (lead > this.inputMargin() + 2) {
      if (!this.roomy) {
        this.roomy = true;
        this.roomySince = received;
      } else if (received - this.roomySince >= ROOMY_FOR && mayChange && this.marginExtra > 0) {
        this.marginExtra = Math.max(0, this.marginExtra - 1);
        this.marginChanged = received;
        this.roomySince = received;
      }
      return;
    }
    this.roomy = false;
  }

  // Moves the estimate to `now`, easing it towards what the samples say; never backwards.
  advance(now: number): void {
    if (!this.started) return;
    const dt = Math.max(0, now - this.shownAt);
    this.shownAt = Math.max(this.shownAt, now);
    const target = this.offset + this.options.rate * this.seconds(now);
    const predicted = this.shown + this.options.rate * dt;
    const error = target - predicted;
    if (Math.abs(error) > this.options.snapTicks) {
      this.shown = target;
      this.delayShown = this.renderDelay;
      return;
    }
    const limit = this.options.maxSpeedChange * this.options.rate * dt;
    this.shown = predicted + Math.min(Math.max(error, -limit), limit);
    // The delay eases at the same rate, so the rendered tick never runs backwards when the
    // jitter estimate rises (C++ server_clock::advance).
    this.delayShown += Math.min(Math.max(this.renderDelay - this.delayShown, -limit), limit);
  }

  get synchronized(): boolean { return this.started; }
  get serverTick(): number { return this.shown + this.oneWayTicks(); }
  get arrivalTick(): number { return this.shown; }
  // Eased towards renderDelay as fast as the estimate may change: never backwards but on a snap.
  get renderTick(): number { return this.shown - this.delayShown; }
  get inputTick(): number {
    const arrives = this.serverTick + this.oneWayTicks() + this.inputMargin();
    return Math.floor(Math.max(0, Math.floor(arrives))) + 1;
  }
  get renderDelay(): number {
    return Math.min(Math.max(1 + 3 * this.jitter_, this.options.minRenderDelay), this.options.maxRenderDelay);
  }
  inputMargin(): number {
    const spread = Math.max(2 * this.jitter_, 2 * this.rttvar * this.options.rate);
    return 1 + spread + this.marginExtra;
  }
  get jitter(): number { return this.jitter_; }
  // Smoothed round trip in seconds, or null before the first Pong.
  get rtt(): number | null { return this.haveRtt ? this.srtt : null; }
  get rate(): number { return this.options.rate; }
}
