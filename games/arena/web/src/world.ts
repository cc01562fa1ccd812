// What the page shows, read from the session's mirror (docs/ARENA.md, "Components"): ships,
// asteroids and bullets at their interpolated positions for the render tick, and the player's
// own ship and Stats (owner-only: nobody else's are sent). With prediction, the own ship and its
// bullets are drawn as predicted (session.rendered), and the bullets the server has not shown
// yet beside them.
import type { Entity, Session } from '@ecsnet/client';

export interface Vec { x: number; y: number }

export enum ShipStatus { Flying = 0, Shielded = 1, Wrecked = 2 }

export interface ShipView {
  entity: Entity;
  at: Vec;
  angle: number; // radians, counter-clockwise from +x
  status: ShipStatus;
  mine: boolean;
}
export interface AsteroidView { entity: Entity; at: Vec; size: number }
export interface BulletView { at: Vec; mine: boolean }
export interface Stats { score: number; ammo: number; deaths: number }

export interface Scene {
  ships: ShipView[];
  asteroids: AsteroidView[];
  bullets: BulletView[];
  me: ShipView | null;
}

type Fields = Record<string, number | bigint | boolean>;
const field = (v: unknown, name: string): number => Number((v as Fields)[name]);

// The ship this player owns: the entity with `ship` whose owner is this client (docs/ARENA.md,
// "Players"). `last` is tried first, the whole mirror only when it is not ours any more.
export function findOwnShip(session: Session, last: Entity | null): Entity | null {
  const m = session.mirror;
  const mine = (e: Entity) => m.get(e, 'ship') !== undefined && field(m.get(e, 'owner'), 'client') === session.clientId;
  if (last !== null && mine(last)) return last;
  return m.entities().find(mine) ?? null;
}

export function readStats(session: Session, ship: Entity | null): Stats | null {
  const v = ship === null ? undefined : session.mirror.get(ship, 'stats');
  return v === undefined ? null : { score: field(v, 'score'), ammo: field(v, 'ammo'), deaths: field(v, 'deaths') };
}

export function readScene(session: Session, myShip: Entity | null): Scene {
  const m = session.mirror;
  const types = m.types;
  const id = (name: string) => types.find(name)?.id ?? -1;
  const ship = id('ship');
  const asteroid = id('asteroid');
  const bullet = id('bullet');
  const position = id('position');
  const scene: Scene = { ships: [], asteroids: [], bullets: [], me: null };
  if (position < 0) return scene; // not the arena's schema
  const renderTick = session.renderTick;
  for (const e of m.entities()) {
    const predicted = session.predictor?.tracks(e) ?? false;
    const p = predicted ? session.rendered(e, position) : session.sample(e, position, renderTick);
    if (p === undefined) continue;
    const at = { x: field(p, 'x'), y: field(p, 'y') };
    if (ship >= 0 && m.has(e, ship)) {
      const h = predicted ? session.rendered(e, 'heading') : session.sample(e, 'heading', renderTick);
      const mine = myShip !== null && e.index === myShip.index && e.version === myShip.version;
      const view: ShipView = {
        entity: e, at, mine,
        angle: h === undefined ? 0 : Math.atan2(field(h, 'y'), field(h, 'x')),
        status: field(m.get(e, ship), 'status') as ShipStatus,
      };
      scene.ships.push(view);
      if (mine) scene.me = view;
    } else if (asteroid >= 0 && m.has(e, asteroid)) {
      scene.asteroids.push({ entity: e, at, size: field(m.get(e, asteroid), 'size') });
    } else if (bullet >= 0 && m.has(e, bullet)) {
      scene.bullets.push({ at, mine: field(m.get(e, bullet), 'shooter') === session.clientId });
    }
  }
  const prediction = session.predictor;
  for (const spawn of prediction?.spawnsPending() ?? []) {
    const p = prediction!.rendered(spawn, 'position');
    if (p !== undefined) scene.bullets.push({ at: { x: field(p, 'x'), y: field(p, 'y') }, mine: true });
  }
  return scene;
}
