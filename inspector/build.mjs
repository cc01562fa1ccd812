// Builds the page into ${ECSNET_WEB_OUT:-dist}: index.html, inspector.css and one bundled
// inspector.js (the SDK included; nothing fetched from elsewhere at run time).
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const sdkDist = join(here, '../sdk/ts/dist/ecsnet.js');
if (!existsSync(join(here, 'node_modules/esbuild'))) {
  console.error(`inspector: run npm ci in ${here} first (its node_modules is missing)`);
  process.exit(1);
}
if (!existsSync(sdkDist)) {
  console.error(`inspector: the SDK is not built (${sdkDist} is missing): run npm ci and npm run build in sdk/ts`);
  process.exit(1);
}
const { build } = await import('esbuild');

const out = resolve(process.env.ECSNET_WEB_OUT ?? join(here, 'dist'));
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [join(here, 'src/main.ts')],
  outfile: join(out, 'inspector.js'),
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  minify: true,
  sourcemap: true,
  logLevel: 'warning',
});
copyFileSync(join(here, 'index.html'), join(out, 'index.html'));
copyFileSync(join(here, 'inspector.css'), join(out, 'inspector.css'));
console.log(`inspector: built into ${out}`);
