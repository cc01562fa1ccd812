// Bundles the SDK with esbuild (the generated FlatBuffers imports have no .js suffix, so the
// sources are not runnable as emitted by tsc): one ESM file per entry point.
import { build } from 'esbuild';

const common = { bundle: true, format: 'esm', target: 'es2022', sourcemap: true, logLevel: 'warning' };
await build({ ...common, entryPoints: ['src/index.ts'], outfile: 'dist/ecsnet.js', platform: 'neutral', mainFields: ['module', 'main'] });
await build({ ...common, entryPoints: ['src/index.ts'], outfile: 'dist/ecsnet.browser.js', platform: 'browser' });
await build({ ...common, entryPoints: ['src/node.ts'], outfile: 'dist/ecsnet.node.js', platform: 'node', packages: 'external' });
// For the unit tests only (not exported): the generated server tables, to build frames.
await build({ ...common, entryPoints: ['src/generated/server_generated.ts'], outfile: 'dist/test/wire-server.js', platform: 'node', packages: 'external' });
await build({ ...common, entryPoints: ['src/generated/client_generated.ts'], outfile: 'dist/test/wire-client.js', platform: 'node', packages: 'external' });
