// webSocket() for Node (@ecsnet/client/node): the constructor given in the options, else the
// global WebSocket (Node >= 22), else the `ws` package (a dependency of @ecsnet/client),
// imported on first use only, so the browser entry never refers to it.
import type { Connector } from '../transport';
import { type WebSocketConstructor, type WebSocketTransportOptions, globalWebSocket, webSocketConnector } from './webSocket';

let loaded: WebSocketConstructor | undefined;
let loading: Promise<WebSocketConstructor> | undefined;

function loadWs(): WebSocketConstructor | Promise<WebSocketConstructor> {
  if (loaded !== undefined) return loaded;
  loading ??= import('ws').then((m: { default?: unknown; WebSocket?: unknown }) => {
    loaded = (m.WebSocket ?? m.default) as WebSocketConstructor;
    return loaded;
  }, (e: Error) => {
    loading = undefined;
    throw new Error(`this Node (${process.version}) has no global WebSocket and the ws package did not load ` +
      `(${e.message}): npm install ws, or use Node >= 22, or the TCP transport`);
  });
  return loading;
}

// A connection per binary WebSocket message; `url` is ws:// or wss://.
export function webSocket(url: string, options: WebSocketTransportOptions = {}): Connector {
  const Ctor = options.WebSocket ?? globalWebSocket();
  return webSocketConnector(url, Ctor !== undefined ? () => Ctor : loadWs);
}
