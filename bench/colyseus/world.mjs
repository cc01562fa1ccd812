// The Colyseus side of ecsnet's moving-entity workload: the demo game of ecsnet-server
// --demo-entities N (games/demo/src/game.cpp) as a Colyseus room state. Each entity has the
// demo's components as schema fields: Position (x, y float32), Velocity (vx, vy float32) and
// Name ("demo-<i>"), keyed by its id in a MapSchema. Every tick moves every entity by
// velocity * dt and bounces it off the edges of [-E, E]^2; velocity only changes at a bounce.
import { schema, t } from "@colyseus/schema";

export const Entity = schema({
  x: t.float32(),
  y: t.float32(),
  vx: t.float32(),
  vy: t.float32(),
  name: t.string(),
});

export const WorldState = schema({
  entities: t.map(Entity),
});

// Mulberry32: seeded, so every run starts from the same world. ecsnet uses std::mt19937_64 with
// the same distributions; the values differ, the workload (uniform positions, speeds in
// [-20, 20] per axis) does not.
function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let r = Math.imul(a ^ (a >>> 15), 1 | a);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
}

export function spawnEntities(state, count, halfExtent, seed = 1) {
  const random = mulberry32(seed);
  const uniform = (lo, hi) => Math.fround(lo + (hi - lo) * random());
  for (let i = 0; i < count; ++i) {
    state.entities.set(
      String(i),
      new Entity({
        x: uniform(-halfExtent, halfExtent),
        y: uniform(-halfExtent, halfExtent),
        vx: uniform(-20, 20),
        vy: uniform(-20, 20),
        name: `demo-${i}`,
      }),
    );
  }
}

// The demo's movement system, field for field (games/demo/src/game.cpp, add_systems).
export function moveEntities(state, dt, halfExtent) {
  const outside = (v) => v < -halfExtent || v > halfExtent;
  const clamp = (v) => Math.min(Math.max(v, -halfExtent), halfExtent);
  state.entities.forEach((e) => {
    if (e.vx === 0 && e.vy === 0 && !outside(e.x) && !outside(e.y)) {
      return;
    }
    // Math.fround: the stored value is what a float32 field holds, as in ecsnet's float Position.
    const x = Math.fround(e.x + e.vx * dt);
    const y = Math.fround(e.y + e.vy * dt);
    if (!outside(x) && !outside(y)) {
      e.x = x;
      e.y = y;
      return;
    }
    const flipX = (x < -halfExtent && e.vx < 0) || (x > halfExtent && e.vx > 0);
    const flipY = (y < -halfExtent && e.vy < 0) || (y > halfExtent && e.vy > 0);
    e.x = clamp(x);
    e.y = clamp(y);
    if (flipX) e.vx = -e.vx;
    if (flipY) e.vy = -e.vy;
  });
}
