// sources.mjs — the hash of what web/dist is built from (src/, build.mjs,
// sources.mjs, package-lock.json). build.mjs writes it into index.html; the
// browser test recomputes it, so a change to src/ that was not rebuilt and
// committed fails the tests. No dependencies: the test imports it as is.

import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

function files(dir) {
  return readdirSync(dir)
    .sort()
    .flatMap((n) => (statSync(join(dir, n)).isDirectory() ? files(join(dir, n)) : [join(dir, n)]));
}

export function sourcesHash(root = here) {
  const h = createHash('sha256');
  const list = [...files(join(root, 'src')), ...['build.mjs', 'sources.mjs', 'package-lock.json'].map((f) => join(root, f))];
  for (const f of list) {
    h.update(relative(root, f).split('\\').join('/'));
    h.update('\0');
    // Line endings as committed, whatever a checkout did to them.
    h.update(readFileSync(f, 'utf8').replace(/\r\n/g, '\n'));
    h.update('\0');
  }
  return `sha256:${h.digest('hex')}`;
}
