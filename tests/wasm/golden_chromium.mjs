// node golden_chromium.mjs MODULE.js RECORDING EXPECTED: the golden replay on the WebAssembly
// module in Debian's headless chromium, compared line by line with the native build's.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium, serveStatic } from '../../sdk/ts/test/browser/support.mjs';
import { firstDifference } from './golden.mjs';

const [moduleJs, recording, expectedPath] = process.argv.slice(2);
if (!expectedPath) {
  console.error('usage: node golden_chromium.mjs MODULE.js RECORDING EXPECTED');
  process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
const site = await serveStatic({
  '/golden.html': join(here, 'golden.html'), '/golden.mjs': join(here, 'golden.mjs'),
  '/module.js': moduleJs, '/module.wasm': moduleJs.replace(/\.js$/, '.wasm'), '/recording.bin': recording,
});
const browser = await launchChromium();
let failed = false;
try {
  const page = await browser.newPage();
  page.on('pageerror', (e) => console.error(`page error: ${e.message}`));
  await page.goto(`${site.origin}/golden.html`, { timeout: 30_000 });
  const result = await page.evaluate(() => window.golden());
  const expected = readFileSync(expectedPath, 'utf8').trimEnd().split('\n');
  const diff = firstDifference(result.lines, expected);
  console.log(`golden replay in ${browser.version()}: ${result.lines.length - 1} updates, module loaded in ` +
    `${result.loadMs.toFixed(1)} ms, replayed in ${result.replayMs.toFixed(0)} ms`);
  console.log(`last: ${result.lines.at(-2)}\n      ${result.lines.at(-1)}`);
  if (diff) {
    console.error(`MISMATCH at line ${diff.line}:\n  wasm:   ${diff.actual}\n  native: ${diff.expected}`);
    failed = true;
  } else {
    console.log('every line equals the native build\'s');
  }
} finally {
  await browser.close();
  await site.close();
}
process.exit(failed ? 1 : 0);
