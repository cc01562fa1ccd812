// __NAME__ in a browser: joins over WebSocket (the page's own host and port), steers the
// player's entity with the arrow keys or WASD and draws every entity at the render tick.
import { Session, webSocket } from './ecsnet.browser.js';

const fieldHalfSize = 500;  // include/__NAME__/components.hpp
const canvas = document.getElementById('view');
const ctx = canvas.getContext('2d');
const status = document.getElementById('status');

const session = await Session.connect({
  transport: webSocket(`ws://${location.host}/`),
  name: 'browser',
});
session.events.disconnected = (reason, willReconnect) => {
  status.textContent = `disconnected: ${reason}${willReconnect ? ' (reconnecting)' : ''}`;
};

const held = new Set();
addEventListener('keydown', (e) => held.add(e.key.toLowerCase()));
addEventListener('keyup', (e) => held.delete(e.key.toLowerCase()));
const axis = (minus, plus) => (plus.some((k) => held.has(k)) ? 1 : 0) - (minus.some((k) => held.has(k)) ? 1 : 0);

// The player's own entity: the server makes it when this client joins (events.owned tells of
// it a tick after `joined`); ownedEntities() lists what this client owns.
const mine = () => session.ownedEntities().find((e) => session.mirror.has(e, 'position')) ?? null;

function frame() {
  session.update();  // applies what arrived, sends the input due
  const me = session.state === 'joined' ? mine() : null;
  if (me !== null) {
    session.setInput(me, { move: { x: axis(['arrowleft', 'a'], ['arrowright', 'd']),
                                   y: axis(['arrowdown', 's'], ['arrowup', 'w']) } });
  }
  const scale = canvas.width / (2 * fieldHalfSize);
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  for (const e of session.mirror.entities()) {
    const p = session.sample(e, 'position');  // interpolated between the server's ticks
    if (!p) continue;
    const isMe = me !== null && e.index === me.index && e.version === me.version;
    ctx.fillStyle = isMe ? '#4f4' : '#f84';
    ctx.beginPath();
    ctx.arc((p.x + fieldHalfSize) * scale, (fieldHalfSize - p.y) * scale, isMe ? 8 : 6, 0, 2 * Math.PI);
    ctx.fill();
  }
  status.textContent = `${session.state}: ${session.mirror.size} players; arrows or WASD move yours (green)`;
  if (session.state !== 'closed') requestAnimationFrame(frame);
}
requestAnimationFrame(frame);
