// The canvas: every placed entity as a small square, one path per colour; zoom with the wheel,
// pan by dragging, click to select the nearest entity; the interest grid and the selected
// client's interest circle. Redrawn only when the world or the view changed.
import { Camera, pickNearest } from './camera';
import { type ColourMode, colourOf, palette } from './colour';
import type { WorldModel } from './world';

const BACKGROUND = '#11151c';
const GRID = 'rgba(255,255,255,0.07)';
const INTEREST = '#4fc3f7';
const SELECTED = '#ffffff';
const PICK_RADIUS = 12; // CSS pixels
const DRAG_THRESHOLD = 4;

export interface InterestCircle { x: number; y: number; radius: number }

export class WorldView {
  readonly camera = new Camera();
  colourMode: ColourMode = { by: 'owner' };
  selected = -1;                        // entity index
  interest: InterestCircle | null = null;
  gridCell = 0;                         // world units; 0: no grid
  draws = 0;

  private readonly ctx: CanvasRenderingContext2D;
  private drawnRevision = -1;
  private viewChanged = true;
  private fitted = false;
  private order = new Int32Array(0);
  private colours = new Uint8Array(0);
  private sorted = new Int32Array(0);

  constructor(private readonly canvas: HTMLCanvasElement, private readonly world: WorldModel,
              private readonly onPick: (index: number) => void) {
    this.ctx = canvas.getContext('2d', { alpha: false })!;
    new ResizeObserver(() => this.resize()).observe(canvas);
    this.resize();
    this.listen();
  }

  // Something the view shows changed outside the world (colours, selection, circle, grid).
  invalidate(): void { this.viewChanged = true; }

  fit(): void {
    this.fitted = this.camera.fit(this.world);
    this.viewChanged = true;
  }

  // Draws if anything changed; true when it drew.
  draw(): boolean {
    if (!this.fitted && this.world.count > 0) this.fit();
    if (!this.viewChanged && this.drawnRevision === this.world.revision) return false;
    this.viewChanged = false;
    this.drawnRevision = this.world.revision;
    const { ctx, camera } = this;
    const dpr = window.devicePixelRatio || 1;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = BACKGROUND;
    ctx.fillRect(0, 0, camera.width, camera.height);
    this.drawGrid();
    this.drawEntities();
    this.drawOverlays();
    ++this.draws;
    return true;
  }

  private drawGrid(): void {
    const { ctx, camera } = this;
    const cell = this.gridCell;
    if (!(cell > 0) || cell * camera.zoom < 6) return; // too dense to be worth drawing
    ctx.beginPath();
    const x0 = Math.floor(camera.worldX(0) / cell) * cell;
    const x1 = camera.worldX(camera.width);
    for (let x = x0; x <= x1; x += cell) {
      const sx = Math.round(camera.screenX(x)) + 0.5;
      ctx.moveTo(sx, 0);
      ctx.lineTo(sx, camera.height);
    }
    const y0 = Math.floor(camera.worldY(camera.height) / cell) * cell;
    const y1 = camera.worldY(0);
    for (let y = y0; y <= y1; y += cell) {
      const sy = Math.round(camera.screenY(y)) + 0.5;
      ctx.moveTo(0, sy);
      ctx.lineTo(camera.width, sy);
    }
    ctx.strokeStyle = GRID;
    ctx.lineWidth = 1;
    ctx.stroke();
  }

  // Buckets the visible entities by colour (a counting sort), then one path and fill per colour.
  private drawEntities(): void {
    const { ctx, camera, world } = this;
    const colours = palette(this.colourMode);
    if (this.order.length < world.count) {
      this.order = new Int32Array(world.live.length);
      this.colours = new Uint8Array(world.live.length);
      this.sorted = new Int32Array(world.live.length);
    }
    const counts = new Int32Array(colours.length + 1);
    const w = camera.width, h = camera.height;
    let visible = 0;
    for (let k = 0; k < world.count; ++k) {
      const i = world.live[k]!;
      if (!world.placed[i]) continue;
      const sx = camera.screenX(world.xs[i]!), sy = camera.screenY(world.ys[i]!);
      if (sx < -4 || sy < -4 || sx > w + 4 || sy > h + 4) continue;
      const c = colourOf(world, i, this.colourMode);
      this.order[visible] = i;
      this.colours[visible++] = c;
      counts[c + 1]! += 1;
    }
    for (let c = 1; c < counts.length; ++c) counts[c]! += counts[c - 1]!;
    const starts = counts.slice(0, colours.length);
    const sorted = this.sorted;
    for (let k = 0; k < visible; ++k) sorted[counts[this.colours[k]!]!++] = this.order[k]!;
    const size = camera.zoom >= 2 ? 5 : 3;
    const half = size / 2;
    for (let c = 0; c < colours.length; ++c) {
      const from = starts[c]!, to = c + 1 < colours.length ? starts[c + 1]! : visible;
      if (from === to) continue;
      ctx.beginPath();
      for (let k = from; k < to; ++k) {
        const i = sorted[k]!;
        ctx.rect(camera.screenX(world.xs[i]!) - half, camera.screenY(world.ys[i]!) - half, size, size);
      }
      ctx.fillStyle = colours[c]!;
      ctx.fill();
    }
  }

  private drawOverlays(): void {
    const { ctx, camera, world } = this;
    if (this.interest !== null) {
      const { x, y, radius } = this.interest;
      ctx.beginPath();
      ctx.arc(camera.screenX(x), camera.screenY(y), Math.max(radius * camera.zoom, 2), 0, 2 * Math.PI);
      ctx.strokeStyle = INTEREST;
      ctx.lineWidth = 2;
      ctx.stroke();
    }
    const s = this.selected;
    if (s >= 0 && world.entityAt(s) !== null && world.placed[s]) {
      ctx.beginPath();
      ctx.arc(camera.screenX(world.xs[s]!), camera.screenY(world.ys[s]!), 8, 0, 2 * Math.PI);
      ctx.strokeStyle = SELECTED;
      ctx.lineWidth = 2;
      ctx.stroke();
    }
  }

  private resize(): void {
    const dpr = window.devicePixelRatio || 1;
    const width = Math.max(1, this.canvas.clientWidth);
    const height = Math.max(1, this.canvas.clientHeight);
    this.canvas.width = Math.round(width * dpr);
    this.canvas.height = Math.round(height * dpr);
    this.camera.width = width;
    this.camera.height = height;
    this.viewChanged = true;
  }

  private listen(): void {
    const canvas = this.canvas;
    canvas.addEventListener('wheel', (ev) => {
      ev.preventDefault();
      const r = canvas.getBoundingClientRect();
      this.camera.zoomAt(ev.clientX - r.left, ev.clientY - r.top, Math.exp(-ev.deltaY * 0.0015));
      this.viewChanged = true;
    }, { passive: false });
    let drag: { x: number; y: number; moved: boolean } | null = null;
    canvas.addEventListener('pointerdown', (ev) => {
      drag = { x: ev.clientX, y: ev.clientY, moved: false };
      canvas.setPointerCapture(ev.pointerId);
    });
    canvas.addEventListener('pointermove', (ev) => {
      if (drag === null) return;
      const dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
      if (!drag.moved && Math.hypot(dx, dy) < DRAG_THRESHOLD) return;
      drag.moved = true;
      this.camera.panBy(dx, dy);
      drag.x = ev.clientX;
      drag.y = ev.clientY;
      this.viewChanged = true;
    });
    canvas.addEventListener('pointerup', (ev) => {
      const wasClick = drag !== null && !drag.moved;
      drag = null;
      if (!wasClick) return;
      const r = canvas.getBoundingClientRect();
      this.onPick(pickNearest(this.world, this.camera, ev.clientX - r.left, ev.clientY - r.top, PICK_RADIUS));
    });
  }
}
