// What the browser test needs: ecsnet-server on free ports with its admin endpoint, ecsnet-client
// runs (each process ended by its pid), Debian's chromium through playwright-core, and bounded
// polling.
import { spawn } from 'node:child_process';
// Chromium and bounded polling: the same as the SDK's browser test (sdk/ts/test/browser).
export { CHROMIUM, launchChromium, pollUntil } from '../../sdk/ts/test/browser/support.mjs';

export function binary(variable, example) {
  const path = process.env[variable];
  if (!path) {
    throw new Error(`${variable} is not set: point it at the built binary (e.g. ${variable}=build/asan/bin/${example}); ` +
      'ctest sets it (inspector/CMakeLists.txt)');
  }
  return path;
}

// Resolves with { port, adminPort, stop(), log() } once the server logged both ports.
export function startServer(bin, args, { timeoutMs = 30_000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ['--bind', '127.0.0.1', '--port', '0', '--admin-port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    let port = 0;
    let adminPort = 0;
    let started = false;
    const stop = () => new Promise((done) => {
      if (child.exitCode !== null || child.signalCode !== null) return done();
      child.once('exit', () => done());
      process.kill(child.pid, 'SIGTERM');
      setTimeout(() => { if (child.exitCode === null && child.signalCode === null) process.kill(child.pid, 'SIGKILL'); }, 5000).unref();
    });
    const timer = setTimeout(() => {
      process.kill(child.pid, 'SIGKILL');
      reject(new Error(`${bin} did not start within ${timeoutMs} ms:\n${log}`));
    }, timeoutMs);
    const read = (chunk) => {
      log = (log + chunk).slice(-200_000);
      port ||= Number(/listening on 127\.0\.0\.1:(\d+)/.exec(log)?.[1] ?? 0);
      adminPort ||= Number(/admin endpoint on http:\/\/127\.0\.0\.1:(\d+)/.exec(log)?.[1] ?? 0);
      if (port && adminPort && !started) {
        started = true;
        clearTimeout(timer);
        resolve({ port, adminPort, pid: child.pid, stop, log: () => log });
      }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (!started) reject(new Error(`${bin} exited with ${code ?? signal}:\n${log}`));
    });
  });
}

// Runs ecsnet-client with --json; resolves with its JSON lines once it exits 0.
export function runClient(bin, args, { env = {}, timeoutMs = 30_000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ['--json', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => { out += c; });
    child.stderr.on('data', (c) => { err += c; });
    const timer = setTimeout(() => process.kill(child.pid, 'SIGKILL'), timeoutMs);
    child.once('error', (e) => { clearTimeout(timer); reject(e); });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code !== 0) {
        reject(new Error(`ecsnet-client ${args.join(' ')} ended with ${code ?? signal}:\n${out}\n${err}`));
        return;
      }
      resolve(out.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l)));
    });
  });
}

// Starts a long-running ecsnet-client (e.g. watch); { stop() } ends it by its pid.
export function startClient(bin, args) {
  const child = spawn(bin, args, { stdio: 'ignore' });
  const stop = () => new Promise((done) => {
    if (child.exitCode !== null || child.signalCode !== null) return done();
    child.once('exit', () => done());
    process.kill(child.pid, 'SIGKILL');
  });
  return { pid: child.pid, stop };
}

export async function getJson(url) {
  const response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status} ${await response.text()}`);
  return response.json();
}
