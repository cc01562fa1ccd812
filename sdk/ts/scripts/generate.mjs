// Generates the FlatBuffers TypeScript of ../../schemas into src/generated (not committed).
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const schemas = join(root, '..', '..', 'schemas');
const out = join(root, 'src', 'generated');
const flatc = process.env.FLATC ?? '/usr/bin/flatc';

if (!existsSync(flatc)) {
  console.error(`flatc not found at ${flatc}: install Debian's flatbuffers-compiler ` +
    '(apt-get install flatbuffers-compiler) or set FLATC to its path');
  process.exit(1);
}
rmSync(out, { recursive: true, force: true });
execFileSync(flatc, ['--ts', '--gen-all', '-o', out,
  join(schemas, 'client.fbs'), join(schemas, 'server.fbs')], { stdio: 'inherit' });
