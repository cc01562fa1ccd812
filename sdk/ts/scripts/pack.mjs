// `npm pack` of a copy of sdk/ts laid out like the repository (stage/schemas, stage/sdk/client):
// its prepack copies the schemas and builds dist/ afresh there, so the checkout's dist/ (which
// the pages and the tests read, with source maps) is left alone.
//   node scripts/pack.mjs <out dir>   the tarball in <out dir>; prints its path
// The CMake build packs it (share/ecsnet/npm, installed by the -dev package); the packaging test
// (test/package/run.mjs) checks what it holds.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, sep } from 'node:path';
import { SCHEMA_FILES, repositorySchemas, root } from './schemas.mjs';

// Packs into `out` and returns npm pack's description of the tarball (filename, size,
// unpackedSize, entryCount, files) with `tarball`, its path, and `copy`, the packed copy of
// sdk/ts: kept when `stage` names where to make it, else removed.
export function packCopy(out, { npm = process.env.ECSNET_NPM || 'npm', timeoutMs = 180_000, stage: keep } = {}) {
  const tmp = mkdtempSync(join(tmpdir(), 'ecsnet-pack-'));
  try {
    const stage = keep ?? join(tmp, 'stage');
    const copy = join(stage, 'sdk', 'client');
    mkdirSync(join(stage, 'schemas'), { recursive: true });
    for (const f of SCHEMA_FILES) cpSync(join(repositorySchemas, f), join(stage, 'schemas', f));
    for (const entry of readdirSync(root)) {
      if (['node_modules', 'dist', 'test', 'bench', 'schemas'].includes(entry)) continue;
      cpSync(join(root, entry), join(copy, entry), { recursive: true, filter: (path) => !path.includes(`${sep}src${sep}generated`) });
    }
    symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'), 'dir');
    const packed = join(tmp, 'packed');
    mkdirSync(packed);
    const r = spawnSync(npm, ['pack', '--json', '--pack-destination', packed],
      { cwd: copy, encoding: 'utf8', timeout: timeoutMs, maxBuffer: 64 << 20 });
    if (r.status !== 0) throw new Error(`npm pack failed (${r.status ?? r.signal ?? r.error}):\n${r.stdout}\n${r.stderr}`);
    const info = JSON.parse(r.stdout.slice(r.stdout.search(/^\[\s*$/m)))[0]; // after the build's output
    mkdirSync(out, { recursive: true });
    const tarball = join(resolve(out), info.filename);
    renameSync(join(packed, info.filename), tarball);
    return { ...info, tarball, copy };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(root, 'scripts', 'pack.mjs')) {
  const out = process.argv[2];
  if (!out) {
    console.error('usage: node scripts/pack.mjs <out dir>');
    process.exit(2);
  }
  try {
    const info = packCopy(out);
    console.log(`${info.tarball}: ${info.size} bytes packed, ${info.unpackedSize} unpacked, ${info.entryCount} files`);
  } catch (e) {
    console.error(`pack: ${e.message}`);
    process.exit(1);
  }
}
