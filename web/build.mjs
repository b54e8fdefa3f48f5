// build.mjs — builds web/src into web/dist, the files the daemon embeds
// (scripts/embed.c) and serves: app-HASH.js (our code + uPlot, minified),
// app-HASH.css, icon-HASH.svg, licenses-HASH.txt, index.html (the shell that
// names them), and NAME.gz beside each text file worth compressing.
//
// Names carry a content hash, so the daemon can let browsers cache them for
// good. The output is reproducible: the same sources and lockfile give the
// same bytes. index.html records a hash of the sources (sources.mjs); the
// browser test checks it.
//
//   cd web && npm ci && npm run build

import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';
import { sourcesHash } from './sources.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const src = join(here, 'src');
const dist = join(here, 'dist');

const short = (buf) => createHash('sha256').update(buf).digest('hex').slice(0, 10);

async function build() {
  rmSync(dist, { recursive: true, force: true });
  mkdirSync(dist);

  const uplotPkg = JSON.parse(readFileSync(join(here, 'node_modules/uplot/package.json'), 'utf8'));
  const licenses = Buffer.from(
    'Third-party software in the banditd dashboard\n\n' +
      `uPlot ${uplotPkg.version} (${uplotPkg.license})\n\n` +
      readFileSync(join(here, 'node_modules/uplot/LICENSE'), 'utf8'),
  );
  const licensesName = `licenses-${short(licenses)}.txt`;
  writeFileSync(join(dist, licensesName), licenses);

  const icon = readFileSync(join(src, 'icon.svg'));
  const iconName = `icon-${short(icon)}.svg`;
  writeFileSync(join(dist, iconName), icon);

  const banner = `/*! banditd dashboard. Includes uPlot ${uplotPkg.version} (MIT): /static/${licensesName} */`;
  const result = await esbuild.build({
    entryPoints: [join(src, 'app.js'), join(src, 'app.css')],
    outdir: dist,
    entryNames: '[name]-[hash]',
    bundle: true,
    minify: true,
    format: 'iife',
    target: ['chrome100', 'firefox100', 'safari15'],
    legalComments: 'none',
    banner: { js: banner, css: banner },
    metafile: true,
    logLevel: 'warning',
  });
  const outputs = {};
  for (const [out, meta] of Object.entries(result.metafile.outputs)) {
    if (meta.entryPoint) outputs[meta.entryPoint.split('/').pop()] = out.split('/').pop();
  }

  const shell = readFileSync(join(src, 'index.html'), 'utf8')
    .replace('{{sources}}', sourcesHash())
    .replace('{{app.js}}', outputs['app.js'])
    .replace('{{app.css}}', outputs['app.css'])
    .replace('{{icon.svg}}', iconName)
    .replace('{{licenses}}', licensesName);
  if (shell.includes('{{')) throw new Error('index.html: a placeholder was left unfilled');
  writeFileSync(join(dist, 'index.html'), shell);

  // gzip twins, only where they save something worth a second copy.
  for (const name of readdirSync(dist).sort()) {
    if (!/\.(js|css|html|svg|txt)$/.test(name)) continue;
    const body = readFileSync(join(dist, name));
    const gz = gzipSync(body, { level: 9 });
    if (gz.length < body.length * 0.9) writeFileSync(join(dist, `${name}.gz`), gz);
  }
  for (const name of readdirSync(dist).sort()) console.log(`web/dist/${name}\t${statSync(join(dist, name)).size}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await build();
