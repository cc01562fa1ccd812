// The page's connection to arena-server: one SDK Session at a time. The SDK resumes a lost
// connection by itself (state 'reconnecting'); when a session ends for good (the server was
// down longer than the SDK's reconnect window, or refused the join) a new one is opened after a
// growing delay, with the resume key kept in localStorage: the same ship while the server
// still holds it (its --reconnect-grace).
import { type Prediction, Session, webSocket } from '@ecsnet/client';

export type ConnectionState = 'connecting' | 'joined' | 'reconnecting' | 'waiting';

const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 5000;

// The server to join: ?server=ws://host:port overrides the host that served the page.
export function serverUrl(location: Location): string {
  const given = new URLSearchParams(location.search).get('server');
  if (given) return given;
  return `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/`;
}

// The resume key is this player's credential at one server: kept per server URL. Storage can be
// missing or refuse writes (private windows); the page then plays without resuming.
export class ResumeKeyStore {
  private readonly item: string;

  constructor(private readonly storage: Storage | null, url: string) {
    this.item = `ecsnet-arena-resume-key ${url}`;
  }

  load(): Uint8Array | null {
    try {
      const text = this.storage?.getItem(this.item);
      return text ? Uint8Array.from(atob(text), (c) => c.charCodeAt(0)) : null;
    } catch {
      return null;
    }
  }

  save(key: Uint8Array): void {
    try {
      this.storage?.setItem(this.item, btoa(String.fromCharCode(...key)));
    } catch {
      // not kept: a reload joins as a new player
    }
  }
}

export class Connection {
  session: Session | null = null;
  // Why the last connection ended; empty while none did.
  problem = '';
  private opening = false;
  private stopped = false;
  private retryAt = 0;
  private retryMs = FIRST_RETRY_MS;

  // `prediction`: kept across sessions (each Welcome starts it anew), or null.
  constructor(readonly url: string, private readonly keys: ResumeKeyStore, private readonly name: string,
              private readonly prediction: Prediction | null = null) {}

  get state(): ConnectionState {
    if (this.session === null) return this.opening ? 'connecting' : 'waiting';
    const s = this.session.state;
    return s === 'closed' ? 'waiting' : s;
  }

  // Once per frame: runs the session (its events fire in here), or opens the next one when due.
  update(nowMs: number): void {
    if (this.stopped) return;
    const s = this.session;
    if (s !== null) {
      s.update();
      if (s.state === 'joined') {
        this.retryMs = FIRST_RETRY_MS;
        this.problem = '';
      } else if (s.state === 'closed') {
        this.problem = s.closedReason;
        this.session = null;
        this.retryAt = nowMs + this.retryMs;
        this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS);
      }
      return;
    }
    if (!this.opening && nowMs >= this.retryAt) void this.open();
  }

  // Leaving the page: closed now, and no new connection until resume().
  close(): void {
    this.stopped = true;
    this.session?.close();
    this.session = null;
  }

  resume(): void {
    this.stopped = false;
    this.retryAt = 0;
  }

  private async open(): Promise<void> {
    this.opening = true;
    try {
      const session = await Session.connect({
        transport: webSocket(this.url),
        name: this.name,
        resumeKey: this.keys.load(),
        onResumeKey: (key) => this.keys.save(key),
        // A respawn moves a ship across the map in one tick: jump there, do not glide.
        interpolation: { snapDistance: 150 },
        ...(this.prediction === null ? {} : { prediction: this.prediction }),
      });
      session.events.disconnected = (reason) => { this.problem = reason; };
      if (this.stopped) session.close();
      else this.session = session;
    } catch (e) {
      this.problem = `cannot connect to ${this.url}: ${(e as Error).message}`;
      this.retryAt = performance.now() + this.retryMs;
      this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS);
    } finally {
      this.opening = false;
    }
  }
}
