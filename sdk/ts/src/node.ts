// @ecsnet/client/node: everything of the main entry point, plus the TCP transport (node:net).
export * from './index';
export { tcp } from './transports/tcp';
