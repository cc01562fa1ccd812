// Makes tsc's declarations (dist/types) resolvable under every moduleResolution: relative
// specifiers get their file extension (node16/nodenext require it in ESM), and each X.d.ts gets
// an X.d.cts twin for the CommonJS build (the `require` condition), whose specifiers end in
// .cjs. The FlatBuffers tables' declarations are dropped: no public type refers to them.
import { existsSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const types = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'types');
rmSync(join(types, 'generated'), { recursive: true, force: true });

const files = [];
const walk = (dir) => {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (name.endsWith('.d.ts')) files.push(path);
  }
};
walk(types);

const specifier = /(\bfrom\s*|\bimport\s*\(\s*)(['"])(\.\.?\/[^'"]*)\2/g;
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  const withExtension = (ext) => text.replace(specifier, (all, before, quote, spec) => {
    const base = join(dirname(file), spec);
    const target = existsSync(`${base}.d.ts`) ? `${spec}${ext}`
      : existsSync(join(base, 'index.d.ts')) ? `${spec}/index${ext}` : null;
    if (target === null) {
      throw new Error(`types: ${relative(types, file)} imports ${spec}, which has no declaration file`);
    }
    return `${before}${quote}${target}${quote}`;
  });
  writeFileSync(file, withExtension('.js'));
  writeFileSync(file.replace(/\.d\.ts$/, '.d.cts'), withExtension('.cjs'));
}
