// node golden_node.mjs MODULE.js RECORDING EXPECTED: the golden replay on the WebAssembly module
// in Node, compared line by line with the native build's (arena_golden replay).
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { replay, firstDifference } from './golden.mjs';

const [moduleJs, recordingPath, expectedPath] = process.argv.slice(2);
if (!expectedPath) {
  console.error('usage: node golden_node.mjs MODULE.js RECORDING EXPECTED');
  process.exit(2);
}
const factory = createRequire(import.meta.url)(resolve(moduleJs));
// The module's bytes handed over: its own loader would use Node 20's fetch, which cannot read a
// file (pitfalls.md).
const wasmPath = moduleJs.replace(/\.js$/, '.wasm');
const wasmBinary = readFileSync(wasmPath);
const started = performance.now();
const module = await factory({ wasmBinary });
const loaded = performance.now();
// ECSNET_GOLDEN_DUMP=<input tick>: the view's numbers after that update, to stderr (as
// arena_golden replay prints them), to see which value differs.
const dumpAt = Number(process.env.ECSNET_GOLDEN_DUMP ?? -1);
const dumped = [];
const lines = replay(module, new Uint8Array(readFileSync(recordingPath)), { dumpAt, dumped });
dumped.forEach((v, i) => console.error(`${i} ${v}`));
const ran = performance.now();
const expected = readFileSync(expectedPath, 'utf8').trimEnd().split('\n');
const diff = firstDifference(lines, expected);
console.log(`golden replay in Node ${process.version}: ${lines.length - 1} updates, module loaded in ` +
  `${(loaded - started).toFixed(1)} ms, replayed in ${(ran - loaded).toFixed(0)} ms (${wasmPath})`);
console.log(`last: ${lines.at(-2)}\n      ${lines.at(-1)}`);
if (diff) {
  console.error(`MISMATCH at line ${diff.line}:\n  wasm:   ${diff.actual}\n  native: ${diff.expected}`);
  process.exit(1);
}
console.log('every line equals the native build\'s');
