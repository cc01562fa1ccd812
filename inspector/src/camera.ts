// World units to canvas pixels: the world's y grows upwards, the screen's downwards.
import type { WorldModel } from './world';

export const MIN_ZOOM = 1e-4;
export const MAX_ZOOM = 1e4;

export class Camera {
  centreX = 0;
  centreY = 0;
  zoom = 0.25; // pixels per world unit
  width = 1;   // canvas size in CSS pixels
  height = 1;

  screenX(x: number): number { return (x - this.centreX) * this.zoom + this.width / 2; }
  screenY(y: number): number { return this.height / 2 - (y - this.centreY) * this.zoom; }
  worldX(sx: number): number { return (sx - this.width / 2) / this.zoom + this.centreX; }
  worldY(sy: number): number { return (this.height / 2 - sy) / this.zoom + this.centreY; }

  // Zooms by `factor`, keeping the world point under (sx, sy) where it is.
  zoomAt(sx: number, sy: number, factor: number): void {
    const wx = this.worldX(sx);
    const wy = this.worldY(sy);
    this.zoom = Math.min(MAX_ZOOM, Math.max(MIN_ZOOM, this.zoom * factor));
    this.centreX = wx - (sx - this.width / 2) / this.zoom;
    this.centreY = wy - (this.height / 2 - sy) / this.zoom;
  }

  panBy(dxPixels: number, dyPixels: number): void {
    this.centreX -= dxPixels / this.zoom;
    this.centreY += dyPixels / this.zoom;
  }

  // Shows every placed entity, with a margin; false when none is placed.
  fit(world: WorldModel): boolean {
    let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
    for (let k = 0; k < world.count; ++k) {
      const i = world.live[k]!;
      if (!world.placed[i]) continue;
      const x = world.xs[i]!, y = world.ys[i]!;
      if (x < minX) minX = x;
      if (x > maxX) maxX = x;
      if (y < minY) minY = y;
      if (y > maxY) maxY = y;
    }
    if (minX > maxX) return false;
    const spanX = Math.max(maxX - minX, 1);
    const spanY = Math.max(maxY - minY, 1);
    this.centreX = (minX + maxX) / 2;
    this.centreY = (minY + maxY) / 2;
    this.zoom = Math.min(MAX_ZOOM, Math.max(MIN_ZOOM, 0.9 * Math.min(this.width / spanX, this.height / spanY)));
    return true;
  }
}

// The live entity drawn nearest to (sx, sy), within `radius` pixels, or -1.
export function pickNearest(world: WorldModel, camera: Camera, sx: number, sy: number, radius: number): number {
  let best = -1;
  let bestDistance = radius * radius;
  for (let k = 0; k < world.count; ++k) {
    const i = world.live[k]!;
    if (!world.placed[i]) continue;
    const dx = camera.screenX(world.xs[i]!) - sx;
    const dy = camera.screenY(world.ys[i]!) - sy;
    const d = dx * dx + dy * dy;
    if (d <= bestDistance) {
      bestDistance = d;
      best = i;
    }
  }
  return best;
}
