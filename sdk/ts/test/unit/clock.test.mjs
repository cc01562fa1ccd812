import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Interpolation, ServerClock, decodeServerFrame, makeValue } from '../../dist/ecsnet.node.js';
import { welcome } from '../support/frames.mjs';

// A server ticking at 30 Hz from tick 1000 at time 0; frames arrive `oneWay` seconds later.
function simulate(clock, { oneWay, seconds, jitter = () => 0, frame = 1 / 60, ping = true }) {
  const rate = clock.rate;
  let next = 0;
  let t = 0;
  let pingAt = 0;
  clock.onWelcome(1000, oneWay);
  for (; t < seconds; t += frame) {
    while (next / rate + oneWay + jitter(next) <= t) {
      clock.onTick(1000 + next, next / rate + oneWay + jitter(next));
      ++next;
    }
    if (ping && t >= pingAt) {
      clock.onPong(t - 2 * oneWay, t);
      pingAt = t + 1;
    }
    clock.advance(t);
  }
  return 1000 + rate * (t - frame); // the server's true tick at the last advance
}

test('server clock: with 50 ms one way and no jitter, within 0.25 ticks after 3 s', () => {
  const clock = new ServerClock({ rate: 30 });
  const truth = simulate(clock, { oneWay: 0.05, seconds: 3 });
  assert.ok(Math.abs(clock.serverTick - truth) < 0.25, `${clock.serverTick} vs ${truth}`);
  assert.ok(Math.abs(clock.arrivalTick - (truth - 1.5)) < 0.25);
  assert.equal(clock.renderDelay, 2); // clamp(1 + 3 j, 2, 10) with j = 0
  assert.ok(Math.abs(clock.rtt - 0.1) < 1e-9);
  const expected = Math.floor(clock.serverTick + 30 * 0.05 + clock.inputMargin()) + 1;
  assert.equal(clock.inputTick, expected);
  assert.ok(clock.inputTick > truth + 1.5, 'an input stamped now arrives before its tick');
});

test('server clock: RFC 6298 smoothing, snap after three far samples, never backwards', () => {
  const clock = new ServerClock({ rate: 10 });
  clock.onPong(0, 0.2);
  assert.equal(clock.rtt, 0.2);
  clock.onPong(1, 1.1); // R = 0.1
  assert.ok(Math.abs(clock.rtt - (0.875 * 0.2 + 0.125 * 0.1)) < 1e-12);
  clock.onWelcome(100, 0);
  clock.advance(1);
  const before = clock.arrivalTick;
  assert.ok(Math.abs(before - 110) < 1e-9);
  for (let i = 0; i < 2; ++i) clock.onTick(50, 1 + i * 0.01); // far: ignored twice
  clock.advance(1.05);
  assert.ok(clock.arrivalTick >= before);
  clock.onTick(50, 1.03); // the third in a row sets the timeline
  clock.advance(1.1);
  assert.ok(Math.abs(clock.arrivalTick - (50 + 10 * 0.07)) < 1e-6, `${clock.arrivalTick}`);
});

test('server clock: the render tick never runs backwards when late frames raise the jitter', () => {
  // Frames of a 30 Hz server, 50 ms one way; ticks 61-63 are held until 100 ms after tick 63
  // was due (5 to 3 ticks late: a stall within the snap distance) and the frames after them
  // queue behind (C++'s
  // ServerClock.RenderTickNeverRunsBackwardsWhenTheJitterRises is the same case).
  const normal = (n) => n / 30 + 0.05;
  const stallEnd = normal(63) + 0.1;
  const arrival = (n) => (n >= 61 ? Math.max(normal(n), stallEnd) : normal(n));
  const clock = new ServerClock({ rate: 30 });
  clock.onWelcome(1000, normal(0));
  let next = 1;
  let before = 0;
  let peak = 0;
  let last = -Infinity;
  let backwards = 0;
  for (let t = normal(0); t < 8; t += 1 / 60) { // rendering at 60 Hz
    while (arrival(next) <= t) { clock.onTick(1000 + next, arrival(next)); ++next; }
    if (next <= 61) before = clock.renderDelay;
    peak = Math.max(peak, clock.renderDelay);
    clock.advance(t);
    if (clock.renderTick < last) ++backwards;
    last = clock.renderTick;
  }
  assert.equal(backwards, 0);
  assert.ok(peak > before + 0.5, `the late frames did not raise the jitter: ${before} -> ${peak}`);
  assert.ok(Math.abs(clock.arrivalTick - clock.renderTick - clock.renderDelay) < 0.25,
    `${clock.arrivalTick - clock.renderTick} vs ${clock.renderDelay}`);
});

test('server clock: late inputs raise the margin once per round trip', () => {
  const clock = new ServerClock({ rate: 30 });
  clock.onWelcome(0, 0);
  const base = clock.inputMargin();
  clock.onInputAck(-2, 1);
  clock.onInputAck(-2, 1.01); // within the same round trip (1 / rate here)
  assert.equal(clock.inputMargin(), base + 1);
  clock.onInputAck(-1, 2);
  assert.equal(clock.inputMargin(), base + 2);
});

test('interpolation: between b - 1 and b, jumps on appearance, bounded extrapolation', () => {
  const types = decodeServerFrame(welcome()).components;
  const position = types.get('position');
  const h = new Interpolation(types);
  const e = { index: 3, version: 1 };
  const at = (tick, x) => { h.onTick(tick); h.record(e, 1, makeValue(position, { x, y: 0 })); };
  at(10, 0);
  at(11, 10);
  at(15, 20); // held 10 from 11 to 14, moved during tick 15
  assert.deepEqual(h.sample(e, 1, 9), { x: 0, y: 0 });
  assert.equal(h.sample(e, 1, 10.5).x, 5);
  assert.equal(h.sample(e, 1, 13).x, 10);
  assert.equal(h.sample(e, 1, 14.25).x, 12.5);
  assert.equal(h.sample(e, 1, 16).x, 20, 'newest tick 15: a value unchanged since stands still');
  h.onTick(16);
  h.record(e, 1, makeValue(position, { x: 30, y: 0 }));
  assert.equal(h.sample(e, 1, 17).x, 40, 'one tick late: extrapolated along the last step');
  assert.equal(h.sample(e, 1, 100).x, 60, 'at most 3 ticks');
  assert.equal(h.sample({ index: 3, version: 2 }, 1, 12), null, 'another version has no history');
  h.forget(e);
  assert.equal(h.sample(e, 1, 12), null);
  const snappy = new Interpolation(types, { snapDistance: 5 });
  snappy.onTick(1); snappy.record(e, 1, makeValue(position, { x: 0, y: 0 }));
  snappy.onTick(2); snappy.record(e, 1, makeValue(position, { x: 100, y: 0 }));
  assert.equal(snappy.sample(e, 1, 1.5).x, 0, 'a move beyond snapDistance jumps');
});
