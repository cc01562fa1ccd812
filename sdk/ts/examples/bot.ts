// bot.mjs in TypeScript, with typed component values: get<T>() and sample<T>() type what they
// return (nothing checks T against the server's schema).
import { CommandError, Session, type Entity, tcp, webSocket } from '@ecsnet/client/node';

interface Position { x: number; y: number }

const server = new URL(process.argv[2] ?? 'tcp://127.0.0.1:7777');
const seconds = Number(process.argv[3] ?? 10);

const session = await Session.connect({
  transport: server.protocol === 'tcp:' ? tcp(server.hostname, Number(server.port)) : webSocket(server.href),
  name: 'bot-ts',
  autoUpdate: 16,
});
const { mirror } = session;
let me: Entity | null = null;

// The mirrored entity nearest to `at` that has a position, other than `self`.
function nearest(at: Position, self: Entity): Entity | null {
  let best: Entity | null = null;
  let bestDistance = Infinity;
  for (const e of mirror.entities()) {
    const p = mirror.get<Position>(e, 'position');
    const d = p === undefined || e.index === self.index ? Infinity : Math.hypot(p.x - at.x, p.y - at.y);
    if (d < bestDistance) [best, bestDistance] = [e, d];
  }
  return best;
}

session.events.joined = async (welcome) => {
  console.log(`joined as client ${welcome.clientId}: ${mirror.size} entities`);
  me = await session.spawn({ position: { x: 0, y: 0 }, velocity: { x: 5, y: 0 }, name: 'bot-ts' });
  try {
    await session.remove(me, 'health');
  } catch (e) {
    if (!(e instanceof CommandError)) throw e;
    console.log(e.codeName, e.message);
  }
};
session.events.disconnected = (reason, willReconnect) => {
  console.log(`disconnected: ${reason}${willReconnect ? ', reconnecting' : ''}`);
  if (!willReconnect) process.exitCode = 1;
};
setTimeout(() => {
  const at = me === null ? undefined : session.sample<Position>(me, 'position');
  const other = me === null || at === undefined ? null : nearest(at, me);
  console.log(`leaving at ${at?.x.toFixed(1)}, ${at?.y.toFixed(1)}; nearest entity ${other?.index ?? 'none'}`);
  session.close();
}, seconds * 1000).unref();
