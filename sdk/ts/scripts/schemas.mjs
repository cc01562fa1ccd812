// Where the FlatBuffers schemas come from: the package's own copy (sdk/ts/schemas, made when the
// package is packed, git-ignored; what an unpacked @ecsnet/client builds from) first, the
// repository's ../../schemas second.
//   node scripts/schemas.mjs copy    refresh the package's copy from the repository (prepack)
//   node scripts/schemas.mjs clean   remove the package's copy, if the repository has the originals (postpack)
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const SCHEMA_FILES = ['common.fbs', 'client.fbs', 'server.fbs', 'state.fbs'];
export const packageSchemas = join(root, 'schemas');
export const repositorySchemas = join(root, '..', '..', 'schemas');

const complete = (dir) => SCHEMA_FILES.every((f) => existsSync(join(dir, f)));
const same = (a, b) => readFileSync(a).equals(readFileSync(b));

// The directory to generate from; throws naming both places when neither has the schemas, and
// when the package's copy is stale (it differs from the repository's).
export function findSchemas() {
  if (complete(packageSchemas)) {
    if (complete(repositorySchemas)) {
      const stale = SCHEMA_FILES.filter((f) => !same(join(packageSchemas, f), join(repositorySchemas, f)));
      if (stale.length > 0) {
        throw new Error(`${join(packageSchemas, stale[0])} differs from ${join(repositorySchemas, stale[0])}: ` +
          `${packageSchemas} is the copy npm pack makes; refresh it (node scripts/schemas.mjs copy) or delete it`);
      }
    }
    return packageSchemas;
  }
  if (complete(repositorySchemas)) return repositorySchemas;
  throw new Error(`the FlatBuffers schemas (${SCHEMA_FILES.join(', ')}) are neither in ${packageSchemas} ` +
    `(the package's copy, made by npm pack) nor in ${repositorySchemas} (the ecsnet repository's): build in ` +
    'sdk/ts of an ecsnet checkout, or in an unpacked @ecsnet/client package');
}

export function copy() {
  if (!complete(repositorySchemas)) {
    if (complete(packageSchemas)) return; // an unpacked package: its copy is the source
    findSchemas(); // throws the message naming both places
  }
  mkdirSync(packageSchemas, { recursive: true });
  for (const f of SCHEMA_FILES) copyFileSync(join(repositorySchemas, f), join(packageSchemas, f));
  console.log(`schemas: copied ${SCHEMA_FILES.join(', ')} from ${relative(root, repositorySchemas)} into ${relative(root, packageSchemas) || '.'}`);
}

export function clean() {
  if (complete(repositorySchemas)) rmSync(packageSchemas, { recursive: true, force: true });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    const command = process.argv[2];
    if (command === 'copy') copy();
    else if (command === 'clean') clean();
    else throw new Error('usage: node scripts/schemas.mjs copy|clean');
  } catch (e) {
    console.error(`schemas: ${e.message}`);
    process.exit(1);
  }
}
