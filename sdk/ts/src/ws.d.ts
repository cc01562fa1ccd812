// The `ws` package as the Node entry uses it (imported on first use; not in the shipped types).
declare module 'ws' {
  const WebSocket: unknown;
  export default WebSocket;
  export { WebSocket };
}
