// Where the observer connects and with what credential: the admin endpoint that served the page
// (ws(s)://<same host:port>/observe), the token from the URL fragment (#token=..., kept in
// sessionStorage and taken out of the address bar), and the resume key that keeps this tab the
// same owner across reloads when the server allows writes.
import { Session, webSocket } from '@ecsnet/client';

const TOKEN_KEY = 'ecsnet-inspector-token';
const RESUME_KEY = 'ecsnet-inspector-resume-key';

export interface ObserverTarget {
  readonly url: string;    // the WebSocket to observe through
  readonly token: string;  // '' when none
  readonly origin: string; // http(s)://host:port of /status and /clients
}

export function observerTarget(location: Location, history: History, storage: Storage): ObserverTarget {
  const fragment = new URLSearchParams(location.hash.replace(/^#/, ''));
  const fromFragment = fragment.get('token');
  if (fromFragment !== null) {
    storage.setItem(TOKEN_KEY, fromFragment);
    history.replaceState(null, '', location.pathname + location.search); // not left in the address bar
  }
  const token = storage.getItem(TOKEN_KEY) ?? '';
  // ?ws=ws://host:port/ watches through a game port instead (as an ordinary client).
  const override = new URLSearchParams(location.search).get('ws');
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  const url = override ?? `${scheme}://${location.host}/observe${token ? `?token=${encodeURIComponent(token)}` : ''}`;
  return { url, token, origin: location.origin };
}

export function connectObserver(target: ObserverTarget, storage: Storage): Promise<Session> {
  const stored = storage.getItem(RESUME_KEY);
  return Session.connect({
    transport: webSocket(target.url),
    name: 'inspector',
    resumeKey: stored ? Uint8Array.from(atob(stored), (c) => c.charCodeAt(0)) : null,
    onResumeKey: (key) => storage.setItem(RESUME_KEY, btoa(String.fromCharCode(...key))),
    // A 10,000-entity snapshot takes a while to arrive and decode in a busy tab.
    timeoutMs: 15_000,
  });
}

// GET a JSON document of the admin endpoint, with the token when there is one.
export async function fetchAdmin<T>(target: ObserverTarget, path: string): Promise<T> {
  const headers: Record<string, string> = target.token ? { Authorization: `Bearer ${target.token}` } : {};
  const response = await fetch(new URL(path, target.origin), { headers, cache: 'no-store' });
  if (!response.ok) {
    // The admin endpoint answers in one plain line; anything else (an HTML page) is cut short.
    const text = (await response.text()).replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim();
    throw new Error(`${path}: HTTP ${response.status}${text ? `: ${text.slice(0, 160)}` : ''}`);
  }
  return (await response.json()) as T;
}
