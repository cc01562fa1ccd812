// The text around the canvas: the player's Stats, ships in view, ping and the connection's
// state. Written to the DOM only when a value changes.
import type { ConnectionState } from './connection';
import type { Stats } from './world';

export interface HudValues {
  state: ConnectionState;
  problem: string;
  stats: Stats | null;
  wrecked: boolean;
  notice: string; // shown while joined
  ships: number;
  pingMs: number | null;
  server: string;
  prediction: PredictionHud;
}

// ?prediction=off compares: the HUD says which, and how often and how far the prediction was
// corrected (a misprediction's size: the distance between the predicted and the server's
// values, in arena units).
export interface PredictionHud {
  on: boolean;
  why: string; // when off
  checks: number;
  mispredictions: number;
  lastCorrection: number | null;
}

const STATE_TEXT: Record<ConnectionState, string> = {
  connecting: 'connecting',
  joined: 'connected',
  reconnecting: 'reconnecting',
  waiting: 'offline, retrying',
};

export class Hud {
  private readonly shown = new Map<HTMLElement, string>();

  constructor(private readonly root: Document) {}

  update(v: HudValues): void {
    this.text('score', v.stats ? String(v.stats.score) : '-');
    this.text('ammo', v.stats ? String(v.stats.ammo) : '-');
    this.text('deaths', v.stats ? String(v.stats.deaths) : '-');
    this.text('ships', String(v.ships));
    this.text('ping', v.pingMs === null ? '-' : `${Math.round(v.pingMs)} ms`);
    this.text('state', STATE_TEXT[v.state]);
    const p = v.prediction;
    this.text('predict-state', p.on ? 'on' : p.why);
    this.attribute('prediction', 'data-on', p.on ? 'yes' : 'no');
    this.text('mispredictions', p.on ? `${p.mispredictions} / ${p.checks}` : '-');
    this.text('correction', p.on && p.lastCorrection !== null ? p.lastCorrection.toFixed(2) : '-');
    this.attribute('status', 'data-state', v.state);
    const banner = v.state === 'joined'
      ? (v.notice || (v.wrecked ? 'Wrecked: back in a few seconds' : ''))
      : v.state === 'connecting' ? `Connecting to ${v.server}`
      : `${STATE_TEXT[v.state]}${v.problem ? `: ${v.problem}` : ''}`;
    this.text('banner', banner);
    this.attribute('banner', 'data-shown', banner === '' ? 'no' : 'yes');
  }

  private element(id: string): HTMLElement | null { return this.root.getElementById(id); }

  private text(id: string, value: string): void {
    const e = this.element(id);
    if (e === null || this.shown.get(e) === value) return;
    this.shown.set(e, value);
    e.textContent = value;
  }

  private attribute(id: string, name: string, value: string): void {
    const e = this.element(id);
    if (e !== null && e.getAttribute(name) !== value) e.setAttribute(name, value);
  }
}
