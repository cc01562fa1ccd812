// Bundles the SDK with esbuild (the generated FlatBuffers imports have no .js suffix, so the
// sources are not runnable as emitted by tsc): per entry point one ESM file and one CommonJS file.
//   dist/ecsnet.js, .cjs         @ecsnet/client: everything inside (flatbuffers, hash-wasm)
//   dist/ecsnet.browser.js       the same for <script type="module"> (platform browser)
//   dist/ecsnet.node.js, .cjs    @ecsnet/client/node: its npm dependencies stay imports
import { build } from 'esbuild';

// Source maps in the repository's builds only: npm pack builds without (scripts/prepack.mjs sets
// ECSNET_SDK_PACK), as they would triple the package's size.
const common = { bundle: true, target: 'es2022', sourcemap: !process.env.ECSNET_SDK_PACK, logLevel: 'warning' };
const esm = { ...common, format: 'esm' };
const cjs = { ...common, format: 'cjs' };
const neutral = { platform: 'neutral', mainFields: ['module', 'main'] };
const node = { platform: 'node', packages: 'external' };
await Promise.all([
  build({ ...esm, ...neutral, entryPoints: ['src/index.ts'], outfile: 'dist/ecsnet.js' }),
  build({ ...cjs, ...neutral, entryPoints: ['src/index.ts'], outfile: 'dist/ecsnet.cjs' }),
  build({ ...esm, entryPoints: ['src/index.ts'], outfile: 'dist/ecsnet.browser.js', platform: 'browser' }),
  build({ ...esm, ...node, entryPoints: ['src/node.ts'], outfile: 'dist/ecsnet.node.js' }),
  build({ ...cjs, ...node, entryPoints: ['src/node.ts'], outfile: 'dist/ecsnet.node.cjs' }),
  // For the unit tests only (not exported, not packed): the generated tables, to build frames.
  build({ ...esm, ...node, entryPoints: ['src/generated/server_generated.ts'], outfile: 'dist/test/wire-server.js' }),
  build({ ...esm, ...node, entryPoints: ['src/generated/client_generated.ts'], outfile: 'dist/test/wire-client.js' }),
]);
