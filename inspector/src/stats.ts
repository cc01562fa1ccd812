// The server's figures, polled from the admin endpoint (/status, /clients) once a second, and
// the page's own checksum record; a click on a client shows its interest circle.
import { type ObserverTarget, fetchAdmin } from './connection';
import type { InterestCircle } from './view';

export interface Status {
  tick?: number;
  entities?: number;
  clients?: number;
  observers?: number;
  tick_rate?: number;
  tick_ms?: { p50: number; p99: number; max: number; window_ticks: number };
  bytes_out_per_s?: number;
  bytes_in_per_s?: number;
  inspector?: { writes: boolean; token: boolean };
  interest?: { enabled: boolean; cell_size: number; radius: number; budget_bytes_per_tick: number };
  stats?: { dropped_frames?: number; resyncs?: number };
}

export interface ClientInfo {
  session: number;
  owner: number;
  player: string;
  name: string;
  transport: string;
  address: string;
  observer: boolean;
  joined_tick: number;
  bytes_out: number;
  bytes_in: number;
  bytes_out_per_s: number;
  budget_bytes_per_s: number;
  dropped_frames: number;
  resyncs: number;
  interest: InterestCircle | null;
  view_entities: number;
}

export interface PageChecksums { matched: number; mismatched: number; resyncs: number; lastTick: number; lastMatched: boolean | null }

const POLL_MS = 1000;

export function formatRate(bytesPerSecond: number | undefined): string {
  if (bytesPerSecond === undefined || !Number.isFinite(bytesPerSecond)) return '\u2013';
  if (bytesPerSecond >= 1e6) return `${(bytesPerSecond / 1e6).toFixed(2)} MB/s`;
  if (bytesPerSecond >= 1e3) return `${(bytesPerSecond / 1e3).toFixed(1)} kB/s`;
  return `${Math.round(bytesPerSecond)} B/s`;
}

const show = (v: number | string | undefined | null, unit = ''): string => (v === undefined || v === null ? '\u2013' : `${v}${unit}`);

export class StatsPanel {
  status: Status | null = null;
  clients: ClientInfo[] = [];
  error = '';
  selectedSession = -1;

  private readonly figures: HTMLElement;
  private readonly clientRows: HTMLElement;
  private readonly problem: HTMLElement;
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(root: HTMLElement, private readonly target: ObserverTarget,
              private readonly page: () => { checksums: PageChecksums; observerBytesPerSecond: number },
              private readonly onStatus: (s: Status) => void,
              private readonly onInterest: (circle: InterestCircle | null) => void) {
    this.figures = root.querySelector('.figures')!;
    this.clientRows = root.querySelector('.clients tbody')!;
    this.problem = root.querySelector('.problem')!;
    this.clientRows.addEventListener('click', (ev) => {
      const row = (ev.target as HTMLElement).closest<HTMLElement>('tr[data-session]');
      if (!row) return;
      const session = Number(row.dataset.session);
      this.selectedSession = this.selectedSession === session ? -1 : session;
      this.renderClients();
      this.onInterest(this.selectedInterest());
    });
  }

  start(): void {
    const poll = async () => {
      await this.poll();
      this.timer = setTimeout(poll, POLL_MS);
    };
    void poll();
  }

  stop(): void {
    if (this.timer !== null) clearTimeout(this.timer);
  }

  private async poll(): Promise<void> {
    const errors: string[] = [];
    try {
      this.status = await fetchAdmin<Status>(this.target, '/status');
      this.onStatus(this.status);
    } catch (e) {
      errors.push(`status: ${(e as Error).message}`);
    }
    try {
      this.clients = (await fetchAdmin<{ clients: ClientInfo[] }>(this.target, '/clients')).clients ?? [];
      this.onInterest(this.selectedInterest());
    } catch (e) {
      errors.push(`clients: ${(e as Error).message}`);
    }
    this.error = errors.join('; ');
    this.render();
  }

  private selectedInterest(): InterestCircle | null {
    return this.clients.find((c) => c.session === this.selectedSession)?.interest ?? null;
  }

  render(): void {
    const s = this.status;
    const { checksums, observerBytesPerSecond } = this.page();
    const checksum = checksums.mismatched > 0 ? `${checksums.mismatched} mismatched`
      : checksums.matched > 0 ? `OK (${checksums.matched})` : 'waiting';
    const rows: [string, string][] = [
      ['tick', show(s?.tick)],
      ['tick time p50 / p99', s?.tick_ms ? `${s.tick_ms.p50.toFixed(2)} / ${s.tick_ms.p99.toFixed(2)} ms` : '\u2013'],
      ['tick rate', show(s?.tick_rate, ' Hz')],
      ['clients', show(s?.clients)],
      ['observers', show(s?.observers)],
      ['entities (server)', show(s?.entities)],
      ['bytes out', formatRate(s?.bytes_out_per_s)],
      ['bytes in', formatRate(s?.bytes_in_per_s)],
      ['dropped frames', show(s?.stats?.dropped_frames)],
      ['resyncs (server)', show(s?.stats?.resyncs)],
      ['checksum (this page)', checksum],
      ['resyncs (this page)', String(checksums.resyncs)],
      ['this observer', formatRate(observerBytesPerSecond)],
      ['writes', s?.inspector ? (s.inspector.writes ? 'allowed' : 'read-only') : '\u2013'],
    ];
    this.figures.replaceChildren(...rows.flatMap(([k, v]) => {
      const dt = document.createElement('dt');
      dt.textContent = k;
      const dd = document.createElement('dd');
      dd.textContent = v;
      if (k.startsWith('checksum')) dd.className = checksums.mismatched > 0 ? 'bad' : checksums.matched > 0 ? 'good' : '';
      return [dt, dd];
    }));
    this.problem.textContent = this.error;
    this.renderClients();
  }

  private renderClients(): void {
    this.clientRows.replaceChildren(...this.clients.map((c) => {
      const tr = document.createElement('tr');
      tr.dataset.session = String(c.session);
      tr.className = c.session === this.selectedSession ? 'selected' : '';
      tr.title = `${c.transport} ${c.address}, joined at tick ${c.joined_tick}${c.interest ? ': click to show its interest circle' : ''}`;
      const budget = c.budget_bytes_per_s > 0 ? c.budget_bytes_per_s : 0;
      const use = budget > 0 ? Math.min(1, c.bytes_out_per_s / budget) : 0;
      const cells = [
        `${c.name || c.player || '(unnamed)'}${c.observer ? ' (observer)' : ''}`,
        String(c.owner),
        `${formatRate(c.bytes_out_per_s)}${budget > 0 ? ` / ${formatRate(budget)}` : ''}`,
        String(c.dropped_frames),
        String(c.resyncs),
        c.interest ? String(c.view_entities) : 'all',
      ];
      tr.replaceChildren(...cells.map((text, k) => {
        const td = document.createElement('td');
        td.textContent = text;
        if (k === 2 && budget > 0) {
          const bar = td.appendChild(document.createElement('div'));
          bar.className = 'budget';
          bar.style.width = `${(use * 100).toFixed(0)}%`;
        }
        return td;
      }));
      return tr;
    }));
  }
}
