// What the browser test needs around the page: arena-server on free ports, Debian's chromium
// through playwright-core, the C++ client's shell as a second player that reads the server's
// world, and bounded polling. Every process is ended by its pid.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
// Chromium and bounded polling: the same as the SDK's browser test (sdk/ts/test/browser).
export { CHROMIUM, launchChromium, pollUntil } from '../../../../sdk/ts/test/browser/support.mjs';

export function requiredBinary(variable, example) {
  const path = process.env[variable];
  if (!path) {
    throw new Error(`${variable} is not set: point it at the built binary (e.g. ${variable}=build/asan/bin/${example}); ` +
      'ctest sets it (games/arena/web/CMakeLists.txt)');
  }
  return path;
}

const alive = (child) => child.exitCode === null && child.signalCode === null;

// Ends a child by its pid: SIGTERM, then SIGKILL after `graceMs`; resolves once it has exited.
export function stopChild(child, graceMs = 5000) {
  return new Promise((done) => {
    if (!alive(child)) return done();
    const timer = setTimeout(() => { if (alive(child)) process.kill(child.pid, 'SIGKILL'); }, graceMs);
    child.once('exit', () => { clearTimeout(timer); done(); });
    process.kill(child.pid, 'SIGTERM');
  });
}

// arena-server on 127.0.0.1, TCP and WebSocket ports chosen by the system; resolves with
// { port, wsPort, child, log(), stop() } once both are logged.
export function startArenaServer(binary, args, { timeoutMs = 20_000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, ['--bind', '127.0.0.1', '--port', '0', '--ws-port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    let done = false;
    const timer = setTimeout(() => {
      if (done) return;
      done = true;
      process.kill(child.pid, 'SIGKILL');
      reject(new Error(`${binary} did not start within ${timeoutMs} ms:\n${log}`));
    }, timeoutMs);
    const read = (chunk) => {
      log = (log + chunk).slice(-64 * 1024);
      const port = Number(/(?<!WebSocket )listening on 127\.0\.0\.1:(\d+)/.exec(log)?.[1] ?? 0);
      const wsPort = Number(/WebSocket listening on 127\.0\.0\.1:(\d+)/.exec(log)?.[1] ?? 0);
      if (!done && port && wsPort) {
        done = true;
        clearTimeout(timer);
        resolve({ port, wsPort, child, log: () => log, stop: () => stopChild(child) });
      }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.once('error', (e) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      reject(new Error(`cannot run ${binary}: ${e.message}`));
    });
    child.once('exit', (code, signal) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      reject(new Error(`${binary} exited with ${code ?? signal}:\n${log}`));
    });
  });
}

// `ecsnet-client --json shell`: a player of its own (the arena gives it a ship) whose mirror
// stays live; list() asks for the world as the server sends it to this client.
export class CppShell {
  static start(binary, port, env) {
    const child = spawn(binary, ['--port', String(port), '--json', '--name', 'cpp-player', 'shell'],
      { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    return new CppShell(child);
  }

  constructor(child) {
    this.child = child;
    this.lines = [];
    this.waiters = [];
    this.stderr = '';
    child.stderr.on('data', (c) => { this.stderr = (this.stderr + c).slice(-16 * 1024); });
    child.once('error', (e) => { this.stderr += `cannot run it: ${e.message}`; });
    child.stdin.on('error', () => {}); // it exited: list() reports that
    createInterface({ input: child.stdout }).on('line', (line) => {
      this.lines.push(line);
      for (const w of [...this.waiters]) w();
    });
    child.once('exit', () => { for (const w of [...this.waiters]) w(); });
  }

  // The entities this client holds, as printed by `list` ({"event":"entity", ...} lines), and
  // the list's summary line.
  async list(timeoutMs = 10_000) {
    if (!alive(this.child)) throw new Error(`ecsnet-client shell has exited (${this.child.exitCode ?? this.child.signalCode}): ${this.stderr}`);
    const from = this.lines.length;
    this.child.stdin.write('list\n');
    const end = Date.now() + timeoutMs;
    for (;;) {
      const objects = this.lines.slice(from).map((l) => JSON.parse(l));
      const summary = objects.find((o) => o.event === 'list');
      if (summary) return { entities: objects.filter((o) => o.event === 'entity'), summary };
      const error = objects.find((o) => o.event === 'error' || o.error !== undefined);
      if (error) throw new Error(`ecsnet-client list failed: ${JSON.stringify(error)}`);
      if (!alive(this.child) || Date.now() > end) {
        throw new Error(`no list from ecsnet-client within ${timeoutMs} ms: ${this.lines.slice(from).join('\n')} ${this.stderr}`);
      }
      await new Promise((r) => {
        const timer = setTimeout(r, 200);
        this.waiters.push(() => { clearTimeout(timer); r(); });
      });
      this.waiters = [];
    }
  }

  stop() { return stopChild(this.child); }
}
