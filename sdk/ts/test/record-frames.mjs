// Re-records the binary fixtures of test/frames/ from real servers (npm run record-frames, with
// ECSNET_SERVER_BIN and ECSNET_ARENA_SERVER_BIN set). Each file is a stream of whole frames as
// the server sent them, from Welcome to the first Checksum after a few Deltas.
import { createConnection } from 'node:net';
import { writeFileSync } from 'node:fs';
import { FrameReader, decodeServerFrame, encodeHello, encodeSpawn } from '../dist/ecsnet.node.js';
import { serverBinary, startServer } from './support/servers.mjs';

async function record(binary, args, file, afterWelcome) {
  const server = await startServer(binary, args);
  try {
    const frames = await new Promise((resolve, reject) => {
      const socket = createConnection({ host: '127.0.0.1', port: server.port });
      const reader = new FrameReader(undefined, true); // the Hello names protocol 6
      const out = [];
      let deltas = 0;
      const timer = setTimeout(() => { socket.destroy(); reject(new Error('no Checksum within 10 s')); }, 10_000);
      socket.on('connect', () => socket.write(encodeHello({ clientName: 'recorder' })));
      socket.on('error', reject);
      socket.on('data', (chunk) => {
        reader.feed(new Uint8Array(chunk));
        for (let f = reader.next(); f !== null; f = reader.next()) {
          const m = decodeServerFrame(f);
          out.push(f);
          if (m.kind === 'welcome') afterWelcome?.(socket, m);
          if (m.kind === 'delta' && !m.ownerOnly) ++deltas;
          if (m.kind === 'checksum' && deltas >= 3) {
            clearTimeout(timer);
            socket.destroy();
            resolve(out);
            return;
          }
        }
      });
    });
    const bytes = Buffer.concat(frames.map((f) => Buffer.from(f)));
    writeFileSync(new URL(`frames/${file}`, import.meta.url), bytes);
    console.log(`${file}: ${frames.length} frames, ${bytes.length} bytes`);
  } finally {
    await server.stop();
  }
}

await record(serverBinary('ECSNET_SERVER_BIN'), ['--demo-entities', '3', '--checksum-interval', '5'], 'demo-stream.bin',
  (socket, welcome) => socket.write(encodeSpawn(welcome.components, 1,
    { position: { x: 1.5, y: -2 }, velocity: { x: 3, y: 0 }, health: { value: -7 }, name: 'héllo' })));
await record(serverBinary('ECSNET_ARENA_SERVER_BIN'), ['--checksum-interval', '5'], 'arena-stream.bin');
