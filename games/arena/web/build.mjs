// Bundles the page into ${ECSNET_WEB_OUT:-dist}: index.html, arena.css and one arena.js (the SDK
// inside it: nothing is fetched from anywhere but the server that serves the page).
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = resolve(here, process.env.ECSNET_WEB_OUT || 'dist');
const sdk = join(here, 'node_modules/@ecsnet/client/dist/ecsnet.js');

let esbuild;
try {
  esbuild = await import('esbuild');
} catch {
  console.error(`esbuild is not installed: run npm ci in ${here}`);
  process.exit(1);
}
if (!existsSync(sdk)) {
  console.error(`the TypeScript SDK is not built (${sdk} is missing): run npm ci and npm run build in sdk/ts, then npm ci here`);
  process.exit(1);
}

mkdirSync(out, { recursive: true });
await esbuild.build({
  absWorkingDir: here,
  entryPoints: ['src/main.ts'],
  outfile: join(out, 'arena.js'),
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  minify: true,
  sourcemap: true,
  logLevel: 'warning',
});
for (const file of ['index.html', 'arena.css']) copyFileSync(join(here, file), join(out, file));
console.log(`arena page built into ${out}`);
