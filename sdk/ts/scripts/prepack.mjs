// Before npm pack / npm publish: the package's own copy of the schemas (scripts/schemas.mjs),
// then dist/ built afresh (nothing stale is packed), without source maps (scripts/bundle.mjs).
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { copy, root } from './schemas.mjs';

try {
  copy();
} catch (e) {
  console.error(`prepack: ${e.message}`);
  process.exit(1);
}
rmSync(join(root, 'dist'), { recursive: true, force: true });
const env = { ...process.env, ECSNET_SDK_PACK: '1' };
const npm = process.env.npm_execpath;
if (npm) execFileSync(process.execPath, [npm, 'run', 'build'], { cwd: root, env, stdio: 'inherit' });
else execFileSync('npm', ['run', 'build'], { cwd: root, env, stdio: 'inherit' });
