// The inspector page: joins as an observer, keeps the world model in step with the SDK mirror,
// and runs one requestAnimationFrame loop (apply what arrived, draw, refresh the table and the
// selected entity). window.ecsnetInspector exposes its figures (README.md "For tests and
// measurements").
import type { ComponentValues, Session } from '@ecsnet/client';
import { Commands, describeError, parseValues } from './commands';
import { connectObserver, observerTarget } from './connection';
import { ByteRate, FrameTimes } from './metrics';
import { EntityPanel } from './panel';
import { type PageChecksums, StatsPanel } from './stats';
import { EntityTable } from './table';
import { WorldView } from './view';
import { WorldModel } from './world';

const $ = <T extends HTMLElement>(selector: string): T => document.querySelector<T>(selector)!;

function fail(message: string): never {
  $('#banner').textContent = message;
  $('#banner').hidden = false;
  throw new Error(message);
}

let resolveReady: () => void = () => {};
let rejectReady: (e: Error) => void = () => {};
const ready = new Promise<void>((resolve, reject) => { resolveReady = resolve; rejectReady = reject; });
ready.catch(() => {}); // reported in the banner; a test awaiting it sees the rejection

const target = observerTarget(location, history, sessionStorage);
let session: Session;
try {
  session = await connectObserver(target, sessionStorage);
} catch (e) {
  rejectReady(e as Error);
  fail(`cannot start: ${(e as Error).message}`);
}
const commands = new Commands(session);
const world = new WorldModel(session.mirror);
const frames = new FrameTimes();
const observerRate = new ByteRate();
let firstDrawMs = -1;
let isReady = false;
let writes: boolean | null = null;

const selectEntity = (index: number) => {
  view.selected = index;
  view.invalidate();
  table.reveal(index);
  panel.select(index);
};
const view = new WorldView($<HTMLCanvasElement>('#world'), world, selectEntity);
const table = new EntityTable($('#table'), world, selectEntity);
const panel = new EntityPanel($('#entity'), world, commands);

const checksums = (): PageChecksums => {
  const m = session.mirror.stats;
  return { matched: m.checksumsMatched, mismatched: m.checksumsMismatched, resyncs: Math.max(0, m.snapshots - 1), lastTick, lastMatched };
};
let lastTick = 0;
let lastMatched: boolean | null = null;

const stats = new StatsPanel($('#stats'), target,
  () => ({ checksums: checksums(), observerBytesPerSecond: observerRate.perSecond }),
  (s) => {
    const allowed = s.inspector?.writes ?? false;
    if (allowed !== writes) {
      writes = allowed;
      setWrites(allowed);
    }
    const cell = s.interest?.enabled ? s.interest.cell_size : 0;
    if (cell !== view.gridCell) {
      view.gridCell = cell;
      view.invalidate();
    }
  },
  (circle) => { view.interest = circle; view.invalidate(); });

// ---- the mirror's events into the world model ---------------------------------------------------

world.onEntityChanged = (index) => panel.changed(index);
session.events = {
  spawned: (e) => world.added(e),
  entered: (e) => world.added(e),
  updated: (e, type) => world.updated(e, type),
  removed: (e, type) => world.removed(e, type),
  destroyed: (e) => world.gone(e),
  left: (e) => world.gone(e),
  checksum: (tick, matched) => { lastTick = Number(tick); lastMatched = matched; },
  joined: () => { setupToolbar(); view.invalidate(); $('#banner').hidden = true; },
  reconnected: () => { setupToolbar(); view.invalidate(); $('#banner').hidden = true; },
  disconnected: (reason, willReconnect) => {
    $('#banner').textContent = willReconnect ? `${reason}; reconnecting...` : `${reason} (reload the page to try again)`;
    $('#banner').hidden = false;
    if (!isReady) rejectReady(new Error(reason));
  },
};

// ---- toolbar: position type, colours, fit ------------------------------------------------------

function setupToolbar(): void {
  const position = $<HTMLSelectElement>('#position-type');
  position.replaceChildren(...world.positionCandidates.map((t) => new Option(t.name, String(t.id))));
  position.value = String(world.positionType);
  const colour = $<HTMLSelectElement>('#colour-by');
  const chosen = colour.value;
  colour.replaceChildren(new Option('colour by owner', 'owner'),
    ...world.types.filter((t) => t.replicated && t.name !== 'owner').map((t) => new Option(`colour: with ${t.name}`, String(t.id))));
  colour.value = [...colour.options].some((o) => o.value === chosen) ? chosen : 'owner';
}
$<HTMLSelectElement>('#position-type').addEventListener('change', (ev) => {
  world.setPositionType(Number((ev.target as HTMLSelectElement).value));
  view.fit();
});
$<HTMLSelectElement>('#colour-by').addEventListener('change', (ev) => {
  const v = (ev.target as HTMLSelectElement).value;
  view.colourMode = v === 'owner' ? { by: 'owner' } : { by: 'component', type: Number(v) };
  view.invalidate();
});
$('#fit').addEventListener('click', () => view.fit());

// ---- spawn ----------------------------------------------------------------------------------------

function setWrites(allowed: boolean): void {
  for (const el of document.querySelectorAll<HTMLButtonElement | HTMLTextAreaElement>('#spawn button, #spawn textarea')) {
    el.disabled = !allowed;
  }
  $('#spawn .hint').textContent = allowed ? '' : 'read-only: start the server with --inspector-writes to spawn, set and destroy';
  panel.enable(allowed);
}
setWrites(false);

// The values typed in, plus the position at the view's centre when they give none.
function spawnValues(text: string): ComponentValues {
  const values = parseValues(text);
  const position = world.types.find((t) => t.id === world.positionType);
  if (position && values[position.name] === undefined) {
    const at: Record<string, number> = {};
    for (const f of position.fields) at[f.name] = 0;
    at.x = view.camera.centreX;
    at.y = view.camera.centreY;
    values[position.name] = at;
  }
  return values;
}
$('#spawn-button').addEventListener('click', () => {
  const result = $('#spawn .result');
  result.className = 'result';
  let values: ComponentValues;
  try {
    values = spawnValues($<HTMLTextAreaElement>('#spawn-values').value);
  } catch (e) {
    result.className = 'result error';
    result.textContent = describeError(e);
    return;
  }
  result.textContent = 'spawning...';
  commands.spawn(values).then(
    (entity) => {
      result.textContent = `spawned ${entity}`;
      selectEntity(Number(entity.split(':')[0])); // shown once its spawn arrives, if not yet
    },
    (e) => { result.className = 'result error'; result.textContent = describeError(e); });
});

// ---- the loop -------------------------------------------------------------------------------------

let headerShown = -Infinity;
let lastFrame = performance.now();

function showHeader(now: number): void {
  if (now - headerShown < 250) return;
  headerShown = now;
  const ms = frames.frameMs();
  const c = checksums();
  $('#state').textContent = session.state;
  $('#tick').textContent = `tick ${session.mirror.tick}`;
  $('#count').textContent = `${world.count} entities`;
  $('#checksum').textContent = c.mismatched > 0 ? `checksum: ${c.mismatched} mismatched` : c.matched > 0 ? 'checksum OK' : 'checksum: waiting';
  $('#checksum').className = c.mismatched > 0 ? 'bad' : c.matched > 0 ? 'good' : '';
  $('#fps').textContent = `${frames.fps(now).toFixed(0)} fps, ${ms.average.toFixed(1)} ms/frame (p95 ${ms.p95.toFixed(1)})`;
}

function frame(): void {
  const start = performance.now();
  lastFrame = start;
  session.update();
  observerRate.sample(session.stats.bytesReceived, start);
  const drawn = view.draw();
  table.refresh(start);
  panel.render();
  showHeader(start);
  if (drawn && firstDrawMs < 0 && session.state === 'joined') {
    firstDrawMs = performance.now();
    isReady = true;
    resolveReady();
  }
  frames.record(start, performance.now() - start);
  requestAnimationFrame(frame);
}
requestAnimationFrame(frame);
// A hidden tab gets no animation frames: keep the connection served.
setInterval(() => {
  if (performance.now() - lastFrame > 500 && session.state !== 'closed') session.update();
}, 500);
stats.start();

// ---- for tests and measurements -------------------------------------------------------------------

const entityByText = (text: string) => {
  const m = /^(\d+):(\d+)$/.exec(text);
  return m === null ? null : { index: Number(m[1]), version: Number(m[2]) };
};

Object.assign(window, {
  ecsnetInspector: {
    ready,
    get isReady() { return isReady; },
    state: () => session.state,
    closedReason: () => session.closedReason,
    entityCount: () => world.count,
    entityCountAt: (tick: number) => world.countAt(tick),
    tick: () => Number(session.mirror.tick),
    hasEntity: (text: string) => { const e = entityByText(text); return e !== null && world.isLive(e); },
    checksumOk: () => { const c = checksums(); return c.matched > 0 && c.mismatched === 0; },
    checksums,
    fps: () => frames.fps(performance.now()),
    frameMs: () => frames.frameMs(),
    framesDrawn: () => view.draws,
    firstDrawMs: () => (firstDrawMs < 0 ? null : firstDrawMs),
    observerBytesPerSecond: () => observerRate.perSecond,
    writesAllowed: () => writes,
    interestCircle: () => view.interest,
    gridCell: () => view.gridCell,
    select: (text: string) => { const e = entityByText(text); if (e && world.isLive(e)) selectEntity(e.index); },
    spawn: (values: ComponentValues = {}) => commands.spawn(values),
    destroy: (entity: string) => commands.destroy(entity),
    set: (entity: string, values: ComponentValues) => commands.set(entity, values),
    remove: (entity: string, types: string[]) => commands.remove(entity, types),
  },
});
