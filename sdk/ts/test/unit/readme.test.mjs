// The README shows the files of examples/ verbatim (each after a `<!-- examples/NAME -->` line),
// so the examples the packaging test runs are the ones users read.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';

const root = new URL('../../', import.meta.url);
const readme = readFileSync(new URL('README.md', root), 'utf8');

test('every example is in the README verbatim, and every README example is a file', () => {
  const shown = [...readme.matchAll(/^<!-- (examples\/[^ ]+) -->\n```[a-z]*\n([\s\S]*?)^```$/gm)];
  const files = readdirSync(new URL('examples/', root)).map((f) => `examples/${f}`).sort();
  assert.deepEqual(shown.map((m) => m[1]).sort(), files);
  for (const [, file, text] of shown) assert.equal(text, readFileSync(new URL(file, root), 'utf8'), `${file} differs from its README block`);
});

test('the JavaScript example parses', () => {
  execFileSync(process.execPath, ['--check', new URL('examples/bot.mjs', root).pathname]);
});
