// Starts ecsnet-server / arena-server on a free port (127.0.0.1) and ends them by pid.
import { spawn } from 'node:child_process';

export function serverBinary(variable) {
  const path = process.env[variable];
  if (!path) {
    throw new Error(`${variable} is not set: point it at the built binary ` +
      `(e.g. ${variable}=build/asan/bin/${variable === 'ECSNET_SERVER_BIN' ? 'ecsnet-server' : 'arena-server'}); ` +
      'ctest sets it (sdk/ts/CMakeLists.txt)');
  }
  return path;
}

// Resolves with { port, wsPort, process, stop() } once the server logged its ports.
export function startServer(binary, args = [], { timeoutMs = 20_000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, ['--bind', '127.0.0.1', '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    let port = 0;
    let wsPort = 0;
    const wantsWs = args.includes('--ws-port');
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`${binary} did not start within ${timeoutMs} ms:\n${log}`)); }, timeoutMs);
    const stop = () => new Promise((done) => {
      if (child.exitCode !== null || child.signalCode !== null) return done();
      child.once('exit', () => done());
      process.kill(child.pid, 'SIGTERM');
      setTimeout(() => { if (child.exitCode === null) process.kill(child.pid, 'SIGKILL'); }, 5000).unref();
    });
    const read = (chunk) => {
      log += chunk;
      port ||= Number(/listening on 127\.0\.0\.1:(\d+)/.exec(log)?.[1] ?? 0);
      wsPort ||= Number(/WebSocket listening on 127\.0\.0\.1:(\d+)/.exec(log)?.[1] ?? 0);
      if (port && (!wantsWs || wsPort)) {
        clearTimeout(timer);
        child.stdout.removeAllListeners('data');
        child.stderr.removeAllListeners('data');
        child.stdout.resume();
        child.stderr.resume();
        resolve({ port, wsPort, process: child, stop, log: () => log });
      }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.once('exit', (code) => { clearTimeout(timer); if (!port) reject(new Error(`${binary} exited with ${code}:\n${log}`)); });
  });
}
