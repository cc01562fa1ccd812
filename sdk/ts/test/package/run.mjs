// The npm package as a user gets it (ctest sdk_ts_package): `npm pack` of a copy of sdk/ts laid
// out like the repository (so its prepack copies the schemas and builds dist/ without touching
// the checkout's dist/, which the other tests read), the tarball's file list, an install into a
// scratch project outside the repository, the TypeScript example type-checked under
// moduleResolution node16, nodenext and bundler (and the CommonJS types), and the bots of
// examples/ run against a real ecsnet-server.
//   ECSNET_SERVER_BIN=../../build/asan/bin/ecsnet-server node test/package/run.mjs
// Needs npm ci in sdk/ts, flatc, and the npm registry or a warm npm cache (typescript, @types/node
// and the package's dependencies are installed with --prefer-offline). ECSNET_PACKAGE_KEEP=1
// keeps the temp dir (the tarball, the scratch project) to look at.
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { packCopy } from '../../scripts/pack.mjs';
import { SCHEMA_FILES as SCHEMAS } from '../../scripts/schemas.mjs';
import { serverBinary, startServer } from '../support/servers.mjs';

const sdk = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const repository = join(sdk, '..', '..');
const npm = process.env.ECSNET_NPM || 'npm';
const serverBin = serverBinary('ECSNET_SERVER_BIN');

let failures = 0;
function check(ok, what) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) ++failures;
  return ok;
}

// Runs a command to its end, at most timeoutMs (then killed by pid): { code, out, err }.
function run(command, args, { cwd, timeoutMs = 60_000, env } = {}) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    const timer = setTimeout(() => {
      err += `\n(killed after ${timeoutMs} ms)`;
      try { process.kill(child.pid, 'SIGKILL'); } catch { /* gone */ }
    }, timeoutMs);
    child.once('error', (e) => { clearTimeout(timer); resolve({ code: -1, out, err: `${err}${e.message}` }); });
    child.once('close', (code, signal) => { clearTimeout(timer); resolve({ code: code ?? signal, out, err }); });
  });
}

// Runs and requires exit 0, else stops the test with the output.
async function must(what, command, args, options) {
  const r = await run(command, args, options);
  if (r.code !== 0) throw new Error(`${what} failed (${command} ${args.join(' ')}: ${r.code}):\n${r.out}\n${r.err}`);
  return r;
}

const lockVersion = (name) =>
  JSON.parse(readFileSync(join(sdk, 'package-lock.json'), 'utf8')).packages[`node_modules/${name}`].version;

const tmp = mkdtempSync(join(tmpdir(), 'ecsnet-package-'));
if (!relative(repository, tmp).startsWith('..')) throw new Error(`${tmp} is inside the repository ${repository}`);
let server = null;
// Interrupted (ctest's timeout, ^C) or its output cut (| head): the server and the temp dirs go too.
process.stdout.on('error', () => {});
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.once(signal, () => {
    if (server !== null) try { process.kill(server.process.pid, 'SIGKILL'); } catch { /* gone */ }
    rmSync(tmp, { recursive: true, force: true });
    process.exit(1);
  });
}
try {
  if (!existsSync(join(sdk, 'node_modules', 'esbuild'))) throw new Error(`run npm ci in ${sdk} first`);

  // ---- npm pack of a copy laid out like the repository (scripts/pack.mjs) ---------------------
  const stage = join(tmp, 'stage');
  const info = packCopy(join(tmp, 'packed'), { npm, stage });
  const { tarball, copy } = info;
  const files = info.files.map((f) => f.path).sort();
  console.log(`tarball ${info.filename}: ${info.size} bytes packed, ${info.unpackedSize} unpacked, ${info.entryCount} files`);
  for (const f of files) console.log(`  ${f}`);
  check(!existsSync(join(copy, 'schemas')), 'postpack removed the package\'s copy of the schemas (the repository has the originals)');

  const has = (path) => files.includes(path);
  check(!files.some((f) => /^(src|test|scripts|bench|node_modules)\//.test(f) || f.startsWith('dist/test/') ||
    f.startsWith('dist/types/generated/') || f.endsWith('.map')), 'no src/, test/, scripts/, node_modules/, dist/test/, generated tables or source maps');
  const maps = files.filter((f) => /\.c?js$/.test(f)).filter((f) => readFileSync(join(copy, f), 'utf8').includes('sourceMappingURL'));
  check(maps.length === 0, `no packed script refers to a source map it lacks ${maps.join(' ')}`);
  for (const f of ['package.json', 'README.md', 'dist/ecsnet.js', 'dist/ecsnet.cjs', 'dist/ecsnet.browser.js',
    'dist/ecsnet.node.js', 'dist/ecsnet.node.cjs', 'dist/types/index.d.ts', 'dist/types/index.d.cts',
    'dist/types/node.d.ts', 'dist/types/node.d.cts', 'examples/bot.mjs', 'examples/bot.ts',
    ...SCHEMAS.map((s) => `schemas/${s}`)]) {
    check(has(f), `the tarball has ${f}`);
  }
  if (existsSync(join(repository, 'LICENSE'))) check(has('LICENSE'), 'the tarball has LICENSE');

  // ---- generate.mjs: the package's copy first, the repository's second, else both named -------
  rmSync(join(stage, 'schemas'), { recursive: true });
  const none = await run(process.execPath, ['scripts/generate.mjs'], { cwd: copy });
  check(none.code === 1 && none.err.includes(join(copy, 'schemas')) && none.err.includes(join(stage, 'schemas')),
    `without schemas generate.mjs fails naming both places: ${none.err.trim()}`);
  mkdirSync(join(copy, 'schemas'));
  for (const f of SCHEMAS) cpSync(join(repository, 'schemas', f), join(copy, 'schemas', f));
  const own = await run(process.execPath, ['scripts/generate.mjs'], { cwd: copy, timeoutMs: 60_000 });
  check(own.code === 0 && existsSync(join(copy, 'src', 'generated', 'client_generated.ts')),
    `generate.mjs builds from the package's own schemas/ outside the repository ${own.err.trim()}`);

  // ---- a scratch project outside the repository -------------------------------------------------
  const project = join(tmp, 'project');
  mkdirSync(project);
  writeFileSync(join(project, 'package.json'), `${JSON.stringify({ name: 'scratch', private: true, type: 'module' }, null, 2)}\n`);
  await must('npm install', npm, ['install', '--prefer-offline', '--no-audit', '--no-fund', tarball,
    `typescript@${lockVersion('typescript')}`, `@types/node@${lockVersion('@types/node')}`], { cwd: project, timeoutMs: 240_000 });
  const installed = JSON.parse(readFileSync(join(project, 'node_modules', '@ecsnet', 'client', 'package.json'), 'utf8'));
  check(existsSync(join(project, 'node_modules', 'ws')) && installed.dependencies.ws !== undefined, 'ws is installed as a dependency');
  for (const f of ['bot.mjs', 'bot.ts']) cpSync(join(sdk, 'examples', f), join(project, f));
  // The CommonJS build and its types (.d.cts): a .cts file requires both entries.
  writeFileSync(join(project, 'check.cts'), [
    "import { Session, UnknownComponentError, tcp, webSocket } from '@ecsnet/client/node';",
    "import type { Mirror } from '@ecsnet/client';",
    'export const parts: [typeof Session.connect, typeof tcp, typeof webSocket, Mirror | null, string] =',
    '  [Session.connect, tcp, webSocket, null, new UnknownComponentError(\'x\', []).message];', ''].join('\n'));
  writeFileSync(join(project, 'check.cjs'), [
    "const { Session, webSocket } = require('@ecsnet/client/node');",
    "const { Mirror } = require('@ecsnet/client');",
    "if (typeof Mirror !== 'function') throw new Error('no Mirror in require(\"@ecsnet/client\")');",
    '(async () => {',
    '  const session = await Session.connect({ transport: webSocket(process.argv[2]), autoUpdate: 10, reconnect: { enabled: false } });',
    "  session.events.joined = () => { console.log(`cjs joined: ${session.mirror.size} entities`); session.close(); };",
    "  session.events.disconnected = (reason) => { console.log(`disconnected: ${reason}`); process.exitCode = 1; };",
    '})();', ''].join('\n'));
  const tsc = join(project, 'node_modules', '.bin', 'tsc');
  const base = { target: 'ES2022', lib: ['ES2022'], types: ['node'], strict: true, noUncheckedIndexedAccess: true,
    skipLibCheck: false, noEmit: true };
  const configs = {
    node16: { module: 'node16', moduleResolution: 'node16', files: ['bot.ts', 'check.cts'] },
    nodenext: { module: 'nodenext', moduleResolution: 'nodenext', files: ['bot.ts', 'check.cts'] },
    bundler: { module: 'esnext', moduleResolution: 'bundler', files: ['bot.ts'] },
  };
  for (const [name, { files: checked, ...options }] of Object.entries(configs)) {
    writeFileSync(join(project, `tsconfig.${name}.json`), JSON.stringify({ compilerOptions: { ...base, ...options }, files: checked }, null, 2));
    const r = await run(tsc, ['-p', `tsconfig.${name}.json`], { cwd: project, timeoutMs: 120_000 });
    check(r.code === 0, `tsc --noEmit, moduleResolution ${name}: ${checked.join(', ')}${r.code === 0 ? '' : `\n${r.out}${r.err}`}`);
  }
  await must('tsc (emit bot.ts)', tsc, ['-p', 'tsconfig.nodenext.json', '--noEmit', 'false', '--outDir', 'out'], { cwd: project, timeoutMs: 120_000 });

  // ---- the bots against a real server ------------------------------------------------------------
  server = await startServer(serverBin, ['--ws-port', '0', '--demo-entities', '20']);
  const tcpUrl = `tcp://127.0.0.1:${server.port}`;
  const wsUrl = `ws://127.0.0.1:${server.wsPort}/`;
  // Node 20 has no global WebSocket unless --experimental-websocket; Node >= 22 has one unless
  // --no-experimental-websocket: the bot runs over both the global one and the ws package.
  const major = Number(process.versions.node.split('.')[0]);
  const otherWebSocket = major >= 22 ? '--no-experimental-websocket' : '--experimental-websocket';
  const bots = [
    ['bot.mjs over TCP', ['bot.mjs', tcpUrl, '2']],
    [`bot.mjs over WebSocket (${major >= 22 ? 'the global WebSocket' : 'the ws package'})`, ['bot.mjs', wsUrl, '2']],
    [`bot.mjs over WebSocket (${major >= 22 ? 'the ws package' : 'the global WebSocket'})`, [otherWebSocket, 'bot.mjs', wsUrl, '2']],
    ['bot.ts (compiled by tsc) over WebSocket', ['out/bot.js', wsUrl, '2']],
  ];
  for (const [what, args] of bots) {
    const r = await run(process.execPath, args, { cwd: project, timeoutMs: 30_000 });
    const joined = /joined as client \d+: (\d+) entities/.exec(r.out);
    check(r.code === 0 && joined !== null && Number(joined[1]) >= 20 && /ComponentMissing entity \d+:\d+ has no health/.test(r.out) &&
      /leaving/.test(r.out), `${what}: joined, saw the entities, spawned, left${r.code === 0 ? '' : ` (exit ${r.code})`}\n    ${r.out.trim().replaceAll('\n', '\n    ')}${r.code === 0 ? '' : `\n${r.err}`}`);
  }
  const cjs = await run(process.execPath, ['check.cjs', wsUrl], { cwd: project, timeoutMs: 30_000 });
  check(cjs.code === 0 && /cjs joined: \d+ entities/.test(cjs.out), `require() of both entries, joined over WebSocket: ${cjs.out.trim()}${cjs.err}`);
} catch (e) {
  check(false, e.message);
} finally {
  if (server !== null) await server.stop();
  if (process.env.ECSNET_PACKAGE_KEEP) console.log(`kept ${tmp} (ECSNET_PACKAGE_KEEP)`);
  else rmSync(tmp, { recursive: true, force: true });
}
console.log(failures === 0 ? 'sdk_ts_package: all checks passed' : `sdk_ts_package: ${failures} check(s) failed`);
process.exit(failures === 0 ? 0 : 1);
