// The page in dist/: index.html, main.js and the SDK's browser bundle (one ESM file, no
// bundler needed). __NAME__-server serves dist/ with --web-root on its --ws-port.
import { copyFileSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const sdk = dirname(require.resolve('@ecsnet/client/package.json'));
mkdirSync('dist', { recursive: true });
copyFileSync(join(sdk, 'dist', 'ecsnet.browser.js'), join('dist', 'ecsnet.browser.js'));
for (const file of ['index.html', 'main.js']) copyFileSync(file, join('dist', file));
console.log('web/dist: index.html, main.js, ecsnet.browser.js');
