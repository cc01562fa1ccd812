// The keyboard as the ship's Pilot (games/arena arena.fbs): arrows or WASD to thrust and turn,
// space to fire, E (or Shift) for the laser. Keys are read by position (KeyboardEvent.code), so WASD works on any layout.
// (A type, not an interface: the SDK takes it as a plain record of fields.)
export type Pilot = {
  thrust: number; // 0 .. 1
  turn: number;   // -1 .. 1, +1 counter-clockwise
  fire: boolean;
  laser: boolean; // hits what the player saw: each Input carries the render tick (protocol 5)
};

const THRUST = new Set(['ArrowUp', 'KeyW']);
const LEFT = new Set(['ArrowLeft', 'KeyA']);
const RIGHT = new Set(['ArrowRight', 'KeyD']);
const FIRE = new Set(['Space']);
const LASER = new Set(['KeyE', 'ShiftLeft', 'ShiftRight']);
const GAME_KEYS = new Set([...THRUST, ...LEFT, ...RIGHT, ...FIRE, ...LASER]);

export class Keyboard {
  private readonly held = new Set<string>();

  constructor(target: Window) {
    target.addEventListener('keydown', (e) => {
      if (!GAME_KEYS.has(e.code) || e.ctrlKey || e.metaKey || e.altKey) return;
      e.preventDefault(); // no scrolling with arrows and space
      this.held.add(e.code);
    });
    target.addEventListener('keyup', (e) => { this.held.delete(e.code); });
    // A key released while the tab had no focus never sends keyup: stop, rather than thrust on.
    target.addEventListener('blur', () => this.held.clear());
  }

  pilot(): Pilot {
    const any = (keys: Set<string>) => [...keys].some((k) => this.held.has(k));
    return {
      thrust: any(THRUST) ? 1 : 0,
      turn: (any(LEFT) ? 1 : 0) - (any(RIGHT) ? 1 : 0),
      fire: any(FIRE),
      laser: any(LASER),
    };
  }
}
