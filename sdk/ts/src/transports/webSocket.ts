// The WebSocket transport: every binary message is exactly one frame, prefix included.
import { frameLength } from '../frame';
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
  // Defaults to globalThis.WebSocket; in Node 20 pass the `ws` package's WebSocket.
  WebSocket?: WebSocketConstructor;
}

export function webSocket(url: string, options: WebSocketTransportOptions = {}): Connector {
  const Ctor = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (Ctor === undefined) {
    throw new TypeError('no WebSocket here: pass one in the options (in Node 20: `import WebSocket from "ws"` ' +
      'and webSocket(url, { WebSocket })), or use the TCP transport of @ecsnet/client/node');
  }
  return (handlers: TransportHandlers, maxFrameBytes: number): Transport => {
    let opened = false;
    let done = false;
    const socket = new Ctor(url);
    socket.binaryType = 'arraybuffer';
    const end = (reason: string) => {
      if (done) return;
      done = true;
      socket.onopen = socket.onmessage = socket.onclose = socket.onerror = null;
      try { socket.close(); } catch { /* already closing */ }
      handlers.closed(reason, !opened);
    };
    socket.onopen = () => {
      opened = true;
      handlers.open();
    };
    socket.onmessage = (ev) => {
      if (done) return;
      if (!(ev.data instanceof ArrayBuffer)) {
        end('the server sent a WebSocket message that is not binary');
        return;
      }
      const bytes = new Uint8Array(ev.data);
      try {
        if (bytes.length < 4 || frameLength(bytes, maxFrameBytes) !== bytes.length - 4) {
          end('the server sent a WebSocket message that is not exactly one frame');
          return;
        }
      } catch (e) {
        end((e as Error).message);
        return;
      }
      handlers.frame(bytes);
    };
    socket.onerror = () => end(opened ? 'WebSocket error' : `cannot connect to ${url}`);
    socket.onclose = (ev) => end(opened ? `server closed the connection${ev.reason ? `: ${ev.reason}` : ''}`
      : `cannot connect to ${url} (WebSocket closed with code ${ev.code})`);
    return {
      send(frame) { if (!done && socket.readyState === 1) socket.send(frame); },
      close() {
        if (done) return;
        done = true;
        socket.onopen = socket.onmessage = socket.onclose = socket.onerror = null;
        try { socket.close(); } catch { /* already closing */ }
      },
      get bufferedAmount() { return socket.bufferedAmount; },
    };
  };
}
