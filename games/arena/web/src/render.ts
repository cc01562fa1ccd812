// The scene on a 2D canvas, the camera on the player's ship. World y points up (the arena's
// turn +1 is counter-clockwise): screen y is flipped. One pass per frame, nothing kept per entity.
import { type AsteroidView, type Scene, type ShipView, ShipStatus, type Vec } from './world';

// Radii from the arena's rules (games/arena/include/ecsnet/arena/components.hpp, rules).
const SHIP_RADIUS = 14;
const asteroidRadius = (size: number) => (size <= 1 ? 12 : size === 2 ? 24 : 40);

// World units across the shorter side of the canvas.
const VIEW_SPAN = 900;
const GRID = 100;

const COLOURS = {
  background: '#05070d',
  grid: 'rgba(120, 150, 200, 0.08)',
  mine: '#4de3ff',
  others: '#ffb347',
  wreck: '#6b7280',
  shield: 'rgba(160, 220, 255, 0.55)',
  asteroid: '#a8a29e',
  bulletMine: '#b7f7ff',
  bulletOthers: '#ffd9a0',
  flame: '#ff7a3d',
};

export interface Camera { centre: Vec; scale: number; width: number; height: number }

export function cameraOn(canvas: HTMLCanvasElement, centre: Vec): Camera {
  const width = canvas.width;
  const height = canvas.height;
  return { centre, scale: Math.min(width, height) / VIEW_SPAN, width, height };
}

function toScreen(c: Camera, p: Vec): Vec {
  return { x: c.width / 2 + (p.x - c.centre.x) * c.scale, y: c.height / 2 - (p.y - c.centre.y) * c.scale };
}

function visible(c: Camera, s: Vec, margin: number): boolean {
  return s.x > -margin && s.y > -margin && s.x < c.width + margin && s.y < c.height + margin;
}

export function drawScene(ctx: CanvasRenderingContext2D, c: Camera, scene: Scene, thrusting: boolean, timeMs: number): void {
  ctx.fillStyle = COLOURS.background;
  ctx.fillRect(0, 0, c.width, c.height);
  drawGrid(ctx, c);
  for (const a of scene.asteroids) drawAsteroid(ctx, c, a);
  for (const b of scene.bullets) {
    const s = toScreen(c, b.at);
    if (!visible(c, s, 4)) continue;
    ctx.fillStyle = b.mine ? COLOURS.bulletMine : COLOURS.bulletOthers;
    ctx.beginPath();
    ctx.arc(s.x, s.y, Math.max(2, 3 * c.scale), 0, Math.PI * 2);
    ctx.fill();
  }
  for (const ship of scene.ships) drawShip(ctx, c, ship, ship.mine && thrusting, timeMs);
}

function drawGrid(ctx: CanvasRenderingContext2D, c: Camera): void {
  const halfW = c.width / 2 / c.scale;
  const halfH = c.height / 2 / c.scale;
  ctx.strokeStyle = COLOURS.grid;
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (let x = Math.ceil((c.centre.x - halfW) / GRID) * GRID; x <= c.centre.x + halfW; x += GRID) {
    const s = toScreen(c, { x, y: 0 }).x;
    ctx.moveTo(s, 0);
    ctx.lineTo(s, c.height);
  }
  for (let y = Math.ceil((c.centre.y - halfH) / GRID) * GRID; y <= c.centre.y + halfH; y += GRID) {
    const s = toScreen(c, { x: 0, y }).y;
    ctx.moveTo(0, s);
    ctx.lineTo(c.width, s);
  }
  ctx.stroke();
}

// A lumpy outline, the same for an entity every frame (from its index).
function drawAsteroid(ctx: CanvasRenderingContext2D, c: Camera, a: AsteroidView): void {
  const r = asteroidRadius(a.size) * c.scale;
  const s = toScreen(c, a.at);
  if (!visible(c, s, r)) return;
  const corners = 7 + a.size * 2;
  let seed = (a.entity.index * 2654435761 + a.entity.version) >>> 0;
  ctx.strokeStyle = COLOURS.asteroid;
  ctx.fillStyle = 'rgba(168, 162, 158, 0.12)';
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  for (let i = 0; i < corners; ++i) {
    seed = (seed * 1103515245 + 12345) >>> 0;
    const k = r * (0.78 + 0.3 * ((seed >>> 8) / 0xffffff));
    const t = (i / corners) * Math.PI * 2;
    const x = s.x + Math.cos(t) * k;
    const y = s.y + Math.sin(t) * k;
    if (i === 0) ctx.moveTo(x, y);
    else ctx.lineTo(x, y);
  }
  ctx.closePath();
  ctx.fill();
  ctx.stroke();
}

function drawShip(ctx: CanvasRenderingContext2D, c: Camera, ship: ShipView, thrusting: boolean, timeMs: number): void {
  const r = Math.max(SHIP_RADIUS * c.scale, 6);
  const s = toScreen(c, ship.at);
  if (!visible(c, s, r * 2)) return;
  const wrecked = ship.status === ShipStatus.Wrecked;
  const colour = wrecked ? COLOURS.wreck : ship.mine ? COLOURS.mine : COLOURS.others;
  ctx.save();
  ctx.translate(s.x, s.y);
  ctx.rotate(-ship.angle); // world counter-clockwise is screen counter-clockwise with y flipped
  if (thrusting && !wrecked) {
    ctx.fillStyle = COLOURS.flame;
    ctx.beginPath();
    ctx.moveTo(-r * 0.7, -r * 0.35);
    ctx.lineTo(-r * (1.2 + 0.3 * Math.sin(timeMs / 40)), 0);
    ctx.lineTo(-r * 0.7, r * 0.35);
    ctx.fill();
  }
  ctx.strokeStyle = colour;
  ctx.fillStyle = wrecked ? 'rgba(107, 114, 128, 0.2)' : ship.mine ? 'rgba(77, 227, 255, 0.25)' : 'rgba(255, 179, 71, 0.25)';
  ctx.lineWidth = 2;
  if (wrecked) ctx.setLineDash([3, 4]);
  ctx.beginPath();
  ctx.moveTo(r, 0);
  ctx.lineTo(-r * 0.8, -r * 0.7);
  ctx.lineTo(-r * 0.45, 0);
  ctx.lineTo(-r * 0.8, r * 0.7);
  ctx.closePath();
  ctx.fill();
  ctx.stroke();
  ctx.restore();
  if (ship.status === ShipStatus.Shielded) {
    ctx.strokeStyle = COLOURS.shield;
    ctx.lineWidth = 2;
    ctx.globalAlpha = 0.6 + 0.4 * Math.sin(timeMs / 120);
    ctx.beginPath();
    ctx.arc(s.x, s.y, r * 1.6, 0, Math.PI * 2);
    ctx.stroke();
    ctx.globalAlpha = 1;
  }
  if (ship.mine) {
    ctx.fillStyle = colour;
    ctx.font = '11px system-ui, sans-serif';
    ctx.textAlign = 'center';
    ctx.fillText(wrecked ? 'wrecked' : 'you', s.x, s.y + r * 1.6 + 14);
  }
}

// Ships out of view: a small mark on the edge, pointing at them.
export function drawOffscreenMarks(ctx: CanvasRenderingContext2D, c: Camera, scene: Scene): void {
  for (const ship of scene.ships) {
    const s = toScreen(c, ship.at);
    if (ship.mine || visible(c, s, 0)) continue;
    const dx = s.x - c.width / 2;
    const dy = s.y - c.height / 2;
    const k = Math.min((c.width / 2 - 12) / Math.abs(dx || 1), (c.height / 2 - 12) / Math.abs(dy || 1));
    ctx.fillStyle = ship.status === ShipStatus.Wrecked ? COLOURS.wreck : COLOURS.others;
    ctx.save();
    ctx.translate(c.width / 2 + dx * k, c.height / 2 + dy * k);
    ctx.rotate(Math.atan2(dy, dx));
    ctx.beginPath();
    ctx.moveTo(8, 0);
    ctx.lineTo(-6, -5);
    ctx.lineTo(-6, 5);
    ctx.fill();
    ctx.restore();
  }
}
