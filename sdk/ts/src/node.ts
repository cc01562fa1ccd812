// @ecsnet/client/node: everything of the main entry point, plus the TCP transport (node:net),
// and a webSocket() that needs no constructor passed (the global one of Node >= 22, else `ws`).
export * from './index';
export { tcp } from './transports/tcp';
export { webSocket } from './transports/nodeWebSocket';
