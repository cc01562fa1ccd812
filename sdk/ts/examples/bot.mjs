// A Node bot for ecsnet-server's demo world: joins, counts what it sees, spawns an entity of its
// own, and leaves after a while.   node bot.mjs [tcp://127.0.0.1:7777 | ws://127.0.0.1:7779/] [seconds]
import { Session, tcp, webSocket } from '@ecsnet/client/node';

const server = new URL(process.argv[2] ?? 'tcp://127.0.0.1:7777');
const seconds = Number(process.argv[3] ?? 10);

const session = await Session.connect({
  // webSocket() uses Node's own WebSocket (Node >= 22) or the `ws` package (Node 20)
  transport: server.protocol === 'tcp:' ? tcp(server.hostname, Number(server.port)) : webSocket(server.href),
  name: 'bot-1',
  autoUpdate: 16,                              // update() every 16 ms; the events fire inside it
});
const { mirror } = session;
session.events.joined = async (welcome) => {
  const moving = mirror.entities().filter((e) => mirror.has(e, 'velocity')).length;
  console.log(`joined as client ${welcome.clientId}: ${mirror.size} entities, ${moving} moving`);
  const me = await session.spawn({ position: { x: 0, y: 0 }, velocity: { x: 5, y: 0 }, name: 'bot' });
  console.log(`spawned ${me.index}:${me.version}`);
  try {
    await session.remove(me, 'health');        // it has none
  } catch (e) {
    console.log(e.codeName, e.message);        // ComponentMissing entity 12:1 has no health
  }
};
session.events.checksum = (tick, matched) => matched || console.log(`desync at ${tick}, resyncing`);
session.events.disconnected = (reason, willReconnect) => {
  console.log(`disconnected: ${reason}${willReconnect ? ', reconnecting' : ''}`);
  if (!willReconnect) process.exitCode = 1;
};
setTimeout(() => {
  console.log(`leaving: ${mirror.size} entities, ${mirror.stats.checksumsMatched} checksums matched`);
  session.close();                             // ends the timer and the connection: node exits
}, seconds * 1000).unref();
