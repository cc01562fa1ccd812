// What a session needs from a connection: whole frames in, whole frames out, in order.
export interface TransportHandlers {
  // The connection is up (Hello may be written).
  open(): void;
  // One whole server frame, 4-byte prefix included, in arrival order.
  frame(bytes: Uint8Array): void;
  // The connection ended or could not be made (`connecting`: before it was up). Called once.
  closed(reason: string, connecting: boolean): void;
}

export interface Transport {
  // Queues one whole client frame (prefix included).
  send(frame: Uint8Array): void;
  // Closes without further calls to the handlers.
  close(): void;
  // Bytes queued and not yet written.
  readonly bufferedAmount: number;
}

// Opens one connection attempt; `maxFrameBytes` bounds server frames. `protocolVersion`: the one
// the session's Hello names (PROTOCOL_VERSION when not given); from 6 on (COMPACT_INPUT_VERSION)
// the server may send compact frames, a prefix with its top bit set ("Protocol 6"), which the
// transport passes on as frames like any other.
export type Connector = (handlers: TransportHandlers, maxFrameBytes: number, protocolVersion?: number) => Transport;
