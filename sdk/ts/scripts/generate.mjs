// Generates the FlatBuffers TypeScript into src/generated (not committed) from the package's
// schemas/ (an unpacked package) or the repository's ../../schemas (scripts/schemas.mjs).
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { findSchemas, root } from './schemas.mjs';

const out = join(root, 'src', 'generated');
const flatc = process.env.FLATC ?? '/usr/bin/flatc';

if (!existsSync(flatc)) {
  console.error(`flatc not found at ${flatc}: install Debian's flatbuffers-compiler ` +
    '(apt-get install flatbuffers-compiler) or set FLATC to its path');
  process.exit(1);
}
let schemas;
try {
  schemas = findSchemas();
} catch (e) {
  console.error(`generate: ${e.message}`);
  process.exit(1);
}
rmSync(out, { recursive: true, force: true });
execFileSync(flatc, ['--ts', '--gen-all', '-o', out,
  join(schemas, 'client.fbs'), join(schemas, 'server.fbs')], { stdio: 'inherit' });
