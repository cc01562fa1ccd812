// The arena in a browser tab: joins the server that served the page (or ?server=ws://host:port),
// flies the player's ship with the keyboard, draws the view on a canvas. window.arena exposes
// the page's state to tests (games/arena/web/README.md).
import type { Entity } from '@ecsnet/client';
import { Connection, ResumeKeyStore, serverUrl } from './connection';
import { Keyboard } from './controls';
import { Hud } from './hud';
import { loadPrediction } from './prediction';
import { cameraOn, drawOffscreenMarks, drawScene } from './render';
import { type Scene, type Vec, ShipStatus, findOwnShip, readScene, readStats } from './world';

const canvas = document.getElementById('view') as HTMLCanvasElement;
const ctx = canvas.getContext('2d')!;
const url = serverUrl(location);
const params = new URLSearchParams(location.search);
const { prediction, why: predictionOff } = await loadPrediction(params);
let lastCorrection: number | null = null;
// The latest mispredictions, for a test's message or the console: which type, at which tick.
const recentMispredictions: { tick: number; type: string; error: number }[] = [];
if (prediction !== null) {
  prediction.onMisprediction = (m) => {
    lastCorrection = m.error;
    recentMispredictions.push({ tick: m.tick, type: m.type, error: m.error });
    if (recentMispredictions.length > 16) recentMispredictions.shift();
  };
}
const connection = new Connection(url, new ResumeKeyStore(globalThis.localStorage ?? null, url), params.get('name') || 'browser',
  prediction);
const keyboard = new Keyboard(window);
const hud = new Hud(document);

let myShip: Entity | null = null;
let scene: Scene = { ships: [], asteroids: [], bullets: [], me: null };
let centre: Vec = { x: 0, y: 0 };
let frames = 0;
let lastStep = 0;
let notice = ''; // shown while joined

function fitCanvas(): void {
  const ratio = window.devicePixelRatio || 1;
  canvas.width = Math.round(window.innerWidth * ratio);
  canvas.height = Math.round(window.innerHeight * ratio);
}

// Runs the connection and sends the keyboard's Pilot: each frame, and from a timer while the
// tab is hidden (no animation frames then, but the server still needs to hear that keys are up).
function step(now: number): void {
  lastStep = now;
  connection.update(now);
  const session = connection.session;
  if (session === null || session.state !== 'joined') return;
  myShip = findOwnShip(session, myShip);
  if (myShip === null) return;
  try {
    // Stamped by the SDK for every tick that falls due (docs/ARENA.md, "Input").
    session.setInput(myShip, { pilot: keyboard.pilot() });
  } catch (e) {
    // The server's types have no pilot: not an arena-server.
    notice = `cannot steer: ${(e as Error).message}`;
  }
}

function frame(now: number): void {
  requestAnimationFrame(frame); // first: a frame that throws does not end the loop
  step(now);
  ++frames;
  const session = connection.session;
  const joined = session !== null && session.state === 'joined';
  scene = joined ? readScene(session, myShip) : { ships: [], asteroids: [], bullets: [], me: null };
  if (scene.me !== null) centre = scene.me.at;
  const camera = cameraOn(canvas, centre);
  drawScene(ctx, camera, scene, keyboard.pilot().thrust > 0, now);
  drawOffscreenMarks(ctx, camera, scene);
  const rtt = session?.serverTime.rtt ?? null;
  hud.update({
    state: connection.state,
    problem: connection.problem,
    stats: joined ? readStats(session, myShip) : null,
    wrecked: scene.me?.status === ShipStatus.Wrecked,
    notice,
    ships: scene.ships.length,
    pingMs: rtt === null ? null : rtt * 1000,
    server: url,
    prediction: {
      on: prediction !== null, why: predictionOff, checks: prediction?.stats.checks ?? 0,
      mispredictions: prediction?.stats.mispredictions ?? 0, lastCorrection,
    },
  });
}

// What a test (or a curious player, in the console) reads.
const arena = {
  get ready(): boolean { return connection.state === 'joined' && myShip !== null; },
  get state(): string { return connection.state; },
  get connected(): boolean { return connection.state === 'joined'; },
  get problem(): string { return connection.problem; },
  get server(): string { return url; },
  get clientId(): number { return connection.session?.clientId ?? 0; },
  get frames(): number { return frames; },
  // The player's ship at the mirror's latest tick (not interpolated), or null.
  myShip(): { index: number; version: number; x: number; y: number; status: number } | null {
    const session = connection.session;
    if (session === null || myShip === null || !session.mirror.contains(myShip)) return null;
    const p = session.mirror.get(myShip, 'position') as { x: number; y: number } | undefined;
    const s = session.mirror.get(myShip, 'ship') as { status: number } | undefined;
    if (p === undefined) return null;
    return { index: myShip.index, version: myShip.version, x: p.x, y: p.y, status: s?.status ?? 0 };
  },
  shipCount(): number { return scene.ships.length; },
  // The own ship as the last frame drew it (predicted, or interpolated with ?prediction=off).
  drawn(): { x: number; y: number; angle: number } | null {
    return scene.me === null ? null : { x: scene.me.at.x, y: scene.me.at.y, angle: scene.me.angle };
  },
  score(): number | null { return this.stats()?.score ?? null; },
  stats() { return connection.session === null ? null : readStats(connection.session, myShip); },
  pingMs(): number | null {
    const rtt = connection.session?.serverTime.rtt ?? null;
    return rtt === null ? null : rtt * 1000;
  },
  // The prediction: off (and why), or its statistics and the predicted tick against the server's.
  prediction() {
    const session = connection.session;
    return prediction === null ? { on: false, why: predictionOff } : {
      on: true, stats: { ...prediction.stats }, tick: prediction.tick, serverTick: Number(session?.mirror.tick ?? 0n),
      pending: prediction.spawnsPending().length, tracked: myShip !== null && prediction.tracks(myShip), lastCorrection,
      recentMispredictions: [...recentMispredictions],
      // What the server said of this client's inputs: a late or repeated one is a tick the
      // server ran on other input than the prediction did.
      inputs: { late: session?.lastInputAck?.late ?? 0, repeated: session?.lastInputAck?.repeated ?? 0 },
    };
  },
};
(window as unknown as { arena: typeof arena }).arena = arena;

fitCanvas();
window.addEventListener('resize', fitCanvas);
// Leaving (reload, close): tell the server at once instead of letting the connection time out.
window.addEventListener('pagehide', () => connection.close());
window.addEventListener('pageshow', (e) => { if (e.persisted) connection.resume(); }); // back from the page cache
setInterval(() => {
  const now = performance.now();
  if (now - lastStep > 200) step(now);
}, 250);
requestAnimationFrame(frame);
