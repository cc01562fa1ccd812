// The WebSocket transport: every binary message is exactly one frame, prefix included.
import { frameLength } from '../frame';
import { COMPACT_INPUT_VERSION, PROTOCOL_VERSION } from '../messages';
import type { Connector, Transport, TransportHandlers } from '../transport';

// The part of the WebSocket API used here: the browser's, or the `ws` package's in Node.
export interface WebSocketLike {
  binaryType: string;
  readonly readyState: number;
  readonly bufferedAmount: number;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  send(data: Uint8Array): void;
  close(code?: number, reason?: string): void;
}
export type WebSocketConstructor = new (url: string) => WebSocketLike;

export interface WebSocketTransportOptions {
  // Defaults to globalThis.WebSocket (browsers, Node >= 22). @ecsnet/client/node's webSocket()
  // falls back to the `ws` package where there is none (Node 20).
  WebSocket?: WebSocketConstructor;
}

// The global WebSocket (browsers, Node >= 22), if any.
export function globalWebSocket(): WebSocketConstructor | undefined {
  return (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
}

// A connection per binary WebSocket message; `url` is ws:// or wss://.
export function webSocket(url: string, options: WebSocketTransportOptions = {}): Connector {
  const Ctor = options.WebSocket ?? globalWebSocket();
  if (Ctor === undefined) {
    throw new TypeError('no WebSocket here: in Node import webSocket from @ecsnet/client/node (it uses the `ws` package ' +
      'on Node 20), or pass one in the options (webSocket(url, { WebSocket })), or use the TCP transport of @ecsnet/client/node');
  }
  return webSocketConnector(url, () => Ctor);
}

// The connector of webSocket(): `load` gives the WebSocket constructor at once, or a promise of
// it (the Node entry imports `ws` on first use); a promise that fails ends the attempt with its
// message, as a connection that could not be made.
export function webSocketConnector(url: string, load: () => WebSocketConstructor | Promise<WebSocketConstructor>): Connector {
  return (handlers: TransportHandlers, maxFrameBytes: number, protocolVersion = PROTOCOL_VERSION): Transport => {
    const compact = protocolVersion >= COMPACT_INPUT_VERSION; // a compact frame is one message too
    let opened = false;
    let done = false;
    let socket: WebSocketLike | null = null;
    const drop = () => {
      if (socket === null) return;
      socket.onopen = socket.onmessage = socket.onclose = socket.onerror = null;
      try { socket.close(); } catch { /* already closing */ }
    };
    const end = (reason: string) => {
      if (done) return;
      done = true;
      drop();
      handlers.closed(reason, !opened);
    };
    const start = (Ctor: WebSocketConstructor) => {
      if (done) return;
      const s = new Ctor(url);
      socket = s;
      s.binaryType = 'arraybuffer';
      s.onopen = () => {
        opened = true;
        handlers.open();
      };
      s.onmessage = (ev) => {
        if (done) return;
        if (!(ev.data instanceof ArrayBuffer)) {
          end('the server sent a WebSocket message that is not binary');
          return;
        }
        const bytes = new Uint8Array(ev.data);
        try {
          if (bytes.length < 4 || frameLength(bytes, maxFrameBytes, compact) !== bytes.length - 4) {
            end('the server sent a WebSocket message that is not exactly one frame');
            return;
          }
        } catch (e) {
          end((e as Error).message);
          return;
        }
        handlers.frame(bytes);
      };
      s.onerror = () => end(opened ? 'WebSocket error' : `cannot connect to ${url}`);
      s.onclose = (ev) => end(opened ? `server closed the connection${ev.reason ? `: ${ev.reason}` : ''}`
        : `cannot connect to ${url} (WebSocket closed with code ${ev.code})`);
    };
    const Ctor = load();
    if (Ctor instanceof Promise) {
      Ctor.then((c) => {
        try {
          start(c);
        } catch (e) {
          end(`cannot connect to ${url}: ${(e as Error).message}`);
        }
      }, (e: Error) => end(`cannot connect to ${url}: ${e.message}`));
    } else {
      start(Ctor);
    }
    return {
      send(frame) { if (!done && socket !== null && socket.readyState === 1) socket.send(frame); },
      close() {
        if (done) return;
        done = true;
        drop();
      },
      get bufferedAmount() { return socket?.bufferedAmount ?? 0; },
    };
  };
}
