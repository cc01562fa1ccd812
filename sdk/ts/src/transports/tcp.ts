// The TCP transport (Node only: node:net): the byte stream split into frames by their length
// prefix, a frame over the limit refused before its body is read.
import { createConnection } from 'node:net';
import { FrameReader } from '../frame';
import { COMPACT_INPUT_VERSION, PROTOCOL_VERSION } from '../messages';
import type { Connector, Transport, TransportHandlers } from '../transport';

export function tcp(host: string, port: number): Connector {
  return (handlers: TransportHandlers, maxFrameBytes: number, protocolVersion = PROTOCOL_VERSION): Transport => {
    const reader = new FrameReader(maxFrameBytes, protocolVersion >= COMPACT_INPUT_VERSION);
    const endpoint = `${host}:${port}`;
    let opened = false;
    let done = false;
    const socket = createConnection({ host, port });
    socket.setNoDelay(true);
    const end = (reason: string) => {
      if (done) return;
      done = true;
      socket.destroy();
      handlers.closed(reason, !opened);
    };
    socket.on('connect', () => {
      opened = true;
      handlers.open();
    });
    socket.on('data', (chunk: Buffer) => {
      if (done) return;
      reader.feed(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length));
      try {
        for (let frame = reader.next(); frame !== null && !done; frame = reader.next()) handlers.frame(frame);
      } catch (e) {
        end((e as Error).message);
      }
    });
    socket.on('error', (e: NodeJS.ErrnoException) =>
      end(opened ? e.message : `cannot connect to ${endpoint}: ${e.code ?? e.message}`));
    socket.on('close', () => end(opened ? 'server closed the connection' : `cannot connect to ${endpoint}`));
    return {
      send(frame) { if (!done) socket.write(frame); },
      close() {
        if (done) return;
        done = true;
        socket.destroy();
      },
      get bufferedAmount() { return socket.writableLength; },
    };
  };
}
