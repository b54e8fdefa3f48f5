// dashboard.mjs — the dashboard in a real browser (Debian's chromium, driven
// by playwright-core) against a real daemon on a free port with a throwaway
// database. Prints TAP ("ok N - ..."), one line per check, then "1..N";
// exits non-zero when a check failed.
//
// What it does: builds three experiments through the API (one driven to a
// confidence stop, a two-bandit one to its budget, one left running), then
// checks the served files and headers, the list page, the experiment pages
// (stop sentence, charts drawn, tables, accessibility labels; arms named
// after colours drawn in them, the 1 − ρ̄ line where its legend says, no
// stop badge in red, the goal's card — target δ or the budget's use —,
// the export buttons), live refresh with ETags, polling paused in a hidden
// tab, pause/resume/stop, create-from-form, the API key in sessionStorage,
// a phone-sized viewport, a blinded trial through a read key (totals, no
// arm, no δᶜ) and an unblinded one (arms; its reads recorded), and that the
// console stayed clean. Screenshots: $TEST_OUT/dashboard.png
// (the stopped experiment), dashboard-multi.png, dashboard-list.png and
// dashboard-phone.png.
//
// Env: BANDITD_BIN (default build/banditd), CHROMIUM (default
// /usr/bin/chromium), TEST_OUT (default tests/out).

import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const BIN = resolve(root, process.env.BANDITD_BIN || 'build/banditd');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const OUT = resolve(root, process.env.TEST_OUT || 'tests/out');
mkdirSync(OUT, { recursive: true });

const { decision, fmtInt, fmtProb, logAxisFloor, planSentence } = await import(join(root, 'web/src/format.js'));
const { armColours } = await import(join(root, 'web/src/colours.js'));
const { sourcesHash } = await import(join(root, 'web/sources.mjs'));

// --- TAP ---------------------------------------------------------------------------
let count = 0;
let failed = 0;
function ok(cond, name, diag) {
  count++;
  if (cond) {
    console.log(`ok ${count} - ${name}`);
  } else {
    failed++;
    console.log(`not ok ${count} - ${name}`);
    if (diag !== undefined) for (const l of String(typeof diag === 'string' ? diag : JSON.stringify(diag)).split('\n')) console.log(`# ${l}`);
  }
  return cond;
}
// A check that throws counts as a failure, and the run goes on.
async function check(name, fn) {
  try {
    const r = await fn();
    if (r === undefined || r === true) return ok(true, name);
    return ok(false, name, r);
  } catch (e) {
    return ok(false, name, e && e.stack ? e.stack : String(e));
  }
}

// --- daemon --------------------------------------------------------------------------
const work = mkdtempSync(join(tmpdir(), 'banditd-web-'));
let daemon = null;
let daemonErr = '';
async function startDaemon() {
  daemon = spawn(BIN, ['--listen', '127.0.0.1:0', '--db', join(work, 't.db')], { stdio: ['ignore', 'pipe', 'pipe'] });
  daemon.stderr.on('data', (d) => { daemonErr += d; });
  return new Promise((res, rej) => {
    let buf = '';
    const t = setTimeout(() => rej(new Error(`daemon did not say where it listens: ${daemonErr}`)), 15000);
    daemon.stdout.on('data', (d) => {
      buf += d;
      const m = buf.match(/listening on (\S+)/);
      if (m) {
        clearTimeout(t);
        res(`http://${m[1]}`);
      }
    });
    daemon.on('exit', (code) => rej(new Error(`daemon exited (${code}): ${daemonErr}`)));
  });
}
function stopDaemon() {
  return new Promise((res) => {
    if (!daemon || daemon.exitCode !== null) return res(daemon ? daemon.exitCode : null);
    const t = setTimeout(() => daemon.kill('SIGKILL'), 15000);
    daemon.once('exit', (code, sig) => {
      clearTimeout(t);
      res(code ?? sig);
    });
    daemon.kill('SIGTERM');
  });
}

let U = '';
async function call(method, path, body, headers = {}) {
  const r = await fetch(U + path, {
    method,
    headers: { ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { /* not JSON */ }
  if (!r.ok && r.status !== 304) throw new Error(`${method} ${path}: ${r.status} ${text}`);
  return { status: r.status, headers: r.headers, json, text };
}

// A GET through node:http: headers as sent, body as received (fetch would
// add and decode Accept-Encoding on its own).
async function rawGet(path, headers) {
  const { request } = await import('node:http');
  return new Promise((res, rej) => {
    request(`${U}${path}`, { headers }, (r) => {
      const parts = [];
      r.on('data', (d) => parts.push(d));
      r.on('end', () => res({ status: r.statusCode, headers: r.headers, body: Buffer.concat(parts) }));
    }).on('error', rej).end();
  });
}

// Bernoulli rewards from a fixed-seed generator (LCG): the same run each time.
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
}

// Assign in batches and reward each assignment, until the experiment stops
// (the assignment answer says "exploit") or maxPulls.
async function drive(id, p, seed, maxPulls, body = {}) {
  const rnd = rng(seed);
  let pulls = 0;
  while (pulls < maxPulls) {
    const a = (await call('POST', `/v1/experiments/${id}/assignments`, { count: 25, ...body })).json.assignments;
    if (a.length === 0 || a[0].exploit) break;
    await call('POST', `/v1/experiments/${id}/rewards`, {
      rewards: a.map((x) => ({ assignment_id: x.id, reward: rnd() < p[x.arm] ? 1 : 0 })),
    });
    pulls += a.length;
  }
  return (await call('GET', `/v1/experiments/${id}/status`)).json;
}

// --- colours --------------------------------------------------------------------------

// Hue (degrees), saturation and lightness (0–1) of a CSS colour: #rrggbb,
// rgb() or rgba().
function rgbOf(css) {
  const m = String(css).match(/^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i);
  if (m) return m.slice(1).map((x) => parseInt(x, 16));
  const n = String(css).match(/rgba?\(\s*(\d+)[,\s]+(\d+)[,\s]+(\d+)/);
  return n ? n.slice(1).map(Number) : [0, 0, 0];
}
function hsl(css) {
  const [r, g, b] = rgbOf(css).map((v) => v / 255);
  const max = Math.max(r, g, b);
  const min = Math.min(r, g, b);
  const l = (max + min) / 2;
  const d = max - min;
  if (d === 0) return { h: 0, s: 0, l };
  const sat = d / (1 - Math.abs(2 * l - 1));
  let h = max === r ? ((g - b) / d) % 6 : max === g ? (b - r) / d + 2 : (r - g) / d + 4;
  h *= 60;
  return { h: h < 0 ? h + 360 : h, s: sat, l };
}
// Colour families as a reader would name them (hue ranges; greys are none).
const FAMILY = {
  red: (c) => hsl(c).s > 0.35 && (hsl(c).h < 15 || hsl(c).h > 345),
  green: (c) => hsl(c).s > 0.35 && hsl(c).h > 75 && hsl(c).h < 165,
  blue: (c) => hsl(c).s > 0.35 && hsl(c).h > 190 && hsl(c).h < 250,
};
// Red-ish in the wide sense (vermilion, a pink alert background): what a
// reader takes for "danger".
const reddish = (c) => hsl(c).s > 0.25 && (hsl(c).h < 30 || hsl(c).h > 330);

// A probability as fmtProb writes it ("0.00024", "2.4×10⁻⁵", "1"), first number only.
function parseProb(text) {
  const sup = { '⁻': '-', '⁰': '0', '¹': '1', '²': '2', '³': '3', '⁴': '4', '⁵': '5', '⁶': '6', '⁷': '7', '⁸': '8', '⁹': '9' };
  const m = String(text).match(/^([0-9.]+)(?:×10([⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+))?/);
  if (!m) return NaN;
  return m[2] ? Number(`${m[1]}e${[...m[2]].map((c) => sup[c]).join('')}`) : Number(m[1]);
}

// --- checks without a browser --------------------------------------------------------

function formatChecks() {
  const base = { state: 'stopped', stopped: true, pulls: 1204, pending: 0, budget: null, policy: 'adapt', m: 1, delta: 0.05, epsilon: 0, bandits_done: 1 };
  const bandit = (over) => ({ id: 'default', recommended: ['green'], delta_c: 0.031, rho: 0.99, done: true, arms: [], ...over });
  const say = (over, b = [bandit()]) => decision({ ...base, ...over, bandits: b }).headline;
  const dcStop = { rule: 'delta_c', proven: true, fires_when: 'evidence <= threshold', evidence: 0.031, threshold: 0.05, error_bound: 0.031, fired: true };
  ok(say({ stop_reason: 'delta_c' }, [bandit({ stop: dcStop })]) === 'Stopped by the δᶜ rule after 1,204 pulls: green is the best arm with δᶜ = 0.031 ≤ 0.05.',
    'words: δᶜ stop, the rule named', say({ stop_reason: 'delta_c' }, [bandit({ stop: dcStop })]));
  ok(say({ stop_reason: 'delta_c', m: 2 }, [bandit({ recommended: ['green', 'blue'], stop: dcStop })]) === 'Stopped by the δᶜ rule after 1,204 pulls: green and blue are the best 2 arms with δᶜ = 0.031 ≤ 0.05.',
    'words: top-m stop names every recommended arm');
  ok(/within ε = 0\.02/.test(say({ stop_reason: 'delta_c', epsilon: 0.02 }, [bandit({ stop: dcStop })])), 'words: ε is stated when the goal has one');
  // Issue 12: a stopped track-and-stop whose δᶜ is 0.77 says what its own rule (the proven GLR) showed, not δᶜ.
  const tas = { stop_reason: 'policy', policy: 'track-and-stop', pulls: 87 };
  const tasStop = { rule: 'policy', proven: true, fires_when: 'evidence > threshold', evidence: 3.8, threshold: 3.689, error_bound: 0.045, fired: true };
  const tasSay = decision({ ...base, ...tas, bandits: [bandit({ delta_c: 0.77, stop: tasStop })] });
  ok(tasSay.headline === "Stopped by the track-and-stop policy's rule after 87 pulls: green is the best arm with an error bound of 0.045 ≤ 0.05 (GLR = 3.8 > 3.69)." &&
      tasSay.tone === 'stopped' && !/0\.77/.test(tasSay.headline),
    'words: a track-and-stop stop shows its own rule\'s evidence and bound, not δᶜ', tasSay);
  // A stop by ρ̄ (no proof) is not called conclusive when δᶜ is not.
  const rhoStop = { rule: 'rho', proven: false, fires_when: 'evidence >= threshold', evidence: 0.957, threshold: 0.95, error_bound: null, fired: true };
  const rhoSay = decision({ ...base, stop_reason: 'rho', policy: 'gcp', bandits: [bandit({ delta_c: 0.83, stop: rhoStop })] });
  ok(rhoSay.headline === 'Stopped by ρ̄ ≥ τ, a rule without proof, after 1,204 pulls (ρ̄ = 0.957 ≥ τ = 0.95): green leads with δᶜ = 0.83 > 0.05: not proven at δ = 0.05.' &&
      rhoSay.tone === 'inconclusive', 'words: a ρ̄ stop says it has no proof and is not conclusive', rhoSay);
  ok(say({ stop_reason: 'budget', budget: 700, pulls: 700 }, [bandit({ delta_c: 0.21, done: false })]) ===
      'Stopped: the budget of 700 pulls is spent; green leads with δᶜ = 0.21 > 0.05: the best guess, not conclusive at δ = 0.05.',
    'words: budget stop short of δ says it is not conclusive');
  ok(say({ stop_reason: 'budget', budget: 700, pulls: 700 }).startsWith('Stopped: the budget of 700 pulls is spent; green is the best arm with δᶜ = 0.031 ≤ 0.05'),
    'words: budget stop that reached δ says so');
  ok(say({ stop_reason: 'manual', pulls: 312 }, [bandit({ delta_c: 0.31, done: false })]) === 'Stopped by hand after 312 pulls: green leads with δᶜ = 0.31 > 0.05: not conclusive yet.',
    'words: manual stop');
  ok(/^Stopped by the lucb1 policy's rule after 1,204 pulls: green is the best arm with an error bound of 0.05 ≤ 0.05\.$/.test(say({ stop_reason: 'policy', policy: 'lucb1' },
    [bandit({ stop: { rule: 'policy', proven: true, fires_when: null, evidence: null, threshold: null, error_bound: 0.05, fired: true } })])), 'words: the policy\'s own rule');
  ok(/^Paused after 1,204 pulls: no new assignments are handed out\. Green leads with δᶜ = 0\.31; it stops at δᶜ ≤ 0\.05\.$/.test(
    say({ state: 'paused', stopped: false, stop_reason: null }, [bandit({ delta_c: 0.31, done: false })])), 'words: paused',
  say({ state: 'paused', stopped: false, stop_reason: null }, [bandit({ delta_c: 0.31, done: false })]));
  const noRule = { rule: 'none', proven: false, fires_when: null, evidence: null, threshold: null, error_bound: null, fired: false };
  ok(say({ state: 'running', stopped: false, stop_reason: null, budget: 2000 }, [bandit({ delta_c: 0.31, done: false, stop: noRule })]) ===
      'Running: green leads with δᶜ = 0.31 after 1,204 pulls; it stops after 2,000 pulls (796 to go).', 'words: running with a budget');
  ok(say({ state: 'running', stopped: false, stop_reason: null, budget: 2000 }, [bandit({ delta_c: 0.31, done: false })]) ===
      'Running: green leads with δᶜ = 0.31 after 1,204 pulls; it stops after 2,000 pulls (796 to go), or earlier by the δᶜ rule.',
    'words: running with a budget as a cap on a confidence rule');
  const multi = decision({ ...base, stop_reason: 'budget', budget: 300, pulls: 300, bandits_done: 1,
    bandits: [bandit({ id: 'a' }), bandit({ id: 'b', recommended: ['x'], delta_c: 0.4, done: false })] });
  ok(multi.headline === 'Stopped: the budget of 300 pulls is spent; 1 of 2 bandits proven at δ = 0.05.' && multi.details.length === 2 &&
      multi.details[0] === 'a: done, green is the best arm (δᶜ = 0.031 ≤ 0.05).' &&
      multi.details[1] === 'b: still sampling, x leads (δᶜ = 0.4 > 0.05).', 'words: multi-bandit budget stop, one line per bandit', multi);
  const spent = decision({ ...base, stop_reason: 'budget', budget: 300, pulls: 300, bandits_done: 2,
    bandits: [bandit({ id: 'a' }), bandit({ id: 'b', recommended: ['x'], delta_c: 0.4, done: true })] });
  ok(spent.details[1] === 'b: done, x leads (δᶜ = 0.4 > 0.05: not conclusive).', 'words: a bandit done without reaching δ is not called decided', spent);
  // Goal type control: the decisions against the control, not a best arm.
  const ctlStop = { rule: 'control', proven: true, fires_when: 'evidence <= threshold', evidence: 0, threshold: 0, error_bound: 0.05, fired: true };
  const vsArm = (id, decision, lower, upper) => ({ id, vs_control: { difference: (lower + upper) / 2, lower, upper, decision, decided_at: 900 } });
  const ctlArms = [{ id: 'placebo', control: true }, vsArm('a', 'superior', 0.12, 0.3), vsArm('b', 'futile', -0.2, 0.04)];
  const sup = decision({ ...base, stop_reason: 'superiority', policy: 'vs-control', bandits: [bandit({ recommended: ['a'], stop: ctlStop, arms: ctlArms })] });
  ok(sup.headline === 'Stopped for superiority after 1,204 pulls: a beats placebo by more than the margin; b does not.' && sup.tone === 'stopped' &&
      sup.details[0] === 'a − placebo = 0.21, anytime interval 0.12 to 0.3: superior.', 'words: a superiority stop names the arms against the control', sup);
  const fut = decision({ ...base, stop_reason: 'futility', policy: 'vs-control',
    bandits: [bandit({ recommended: ['placebo'], stop: ctlStop, arms: [ctlArms[0], vsArm('a', 'futile', -0.1, 0.05), ctlArms[2]] })] });
  ok(fut.headline === 'Stopped for futility after 1,204 pulls: no arm beats the control by the margin.' && fut.tone === 'stopped', 'words: a futility stop', fut);
  const openCtl = decision({ ...base, state: 'running', stopped: false, stop_reason: null, policy: 'vs-control',
    bandits: [bandit({ done: false, stop: { ...ctlStop, evidence: 1, error_bound: null, fired: false }, arms: [ctlArms[0], ctlArms[2], vsArm('a', 'open', -0.1, 0.4)] })] });
  ok(openCtl.headline === 'Running: 1 of 2 comparisons with the control decided after 1,204 pulls (b does not; a still open).', 'words: a running comparison with control', openCtl);
  ok(fmtProb(0.0503, 0.05) === '0.0503' && fmtProb(0.0499, 0.05) === '0.0499' && fmtProb(0.05, 0.05) === '0.05' && fmtProb(0.0334, 0.05) === '0.033',
    'fmtProb: digits enough to read the comparison with δ right', [fmtProb(0.0503, 0.05), fmtProb(0.0499, 0.05), fmtProb(0.05, 0.05)]);
  ok(fmtInt(1204) === '1,204' && fmtProb(3.2e-6) === '3.2×10⁻⁶', 'fmtInt groups thousands; tiny δᶜ as a power of ten');
  const ax = logAxisFloor(0.05, [0.5, 0.032], [0.3, 0.00024]);
  const zero = logAxisFloor(0.05, [0.5, 0.032], [0.3, 0]);
  const tiny = logAxisFloor(0.05, [0.5, 0.032], [0.3, 1e-9]);
  ok(ax.floor <= 0.00024 && !ax.clipped && zero.clipped && tiny.clipped && tiny.floor === 1e-6,
    'log axis floor: below the smallest 1 − ρ̄ too; a 0 or a value under 10⁻⁶ is marked clipped', { ax, zero, tiny });
  const rgb = armColours(['red', 'green', 'blue']);
  ok(FAMILY.red(rgb[0]) && FAMILY.green(rgb[1]) && FAMILY.blue(rgb[2]), 'arm colours: arms named red, green, blue are drawn red, green, blue', rgb);
  const [control, red] = armColours(['control', 'red']);
  const [control2, blueBtn] = armColours(['control', 'Blue button']);
  ok(FAMILY.red(red) && !reddish(control) && FAMILY.blue(blueBtn) && !FAMILY.blue(control2) && hsl(control2).h > 0,
    'arm colours: another arm never takes the colour an arm is named after', { control, red, control2, blueBtn });
  const twins = armColours(['red', 'Red button', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i']);
  ok(FAMILY.red(twins[0]) && reddish(twins[1]) && twins[0] !== twins[1] && twins.slice(2).every((c) => !reddish(c) && hsl(c).l < 0.8),
    'arm colours: two arms naming one colour get two shades of it; the rest none of it, none near white', twins);
}

async function staticChecks() {
  const shell = await call('GET', '/');
  await check('GET / is the HTML shell with a CSP, revalidated (no-cache + ETag)', () =>
    (shell.headers.get('content-type') || '').startsWith('text/html') && shell.text.includes('id="app"') &&
    (shell.headers.get('content-security-policy') || '').includes("script-src 'self'") &&
    shell.headers.get('cache-control') === 'no-cache' && /^"[0-9a-f]+(-gz)?"$/.test(shell.headers.get('etag') || '') ||
    Object.fromEntries(shell.headers));
  await check('GET / with If-None-Match answers 304', async () => {
    const r = await fetch(`${U}/`, { headers: { 'If-None-Match': shell.headers.get('etag') } });
    return r.status === 304 || `status ${r.status}`;
  });
  await check('web/dist is built from the current web/src (rebuild: cd web && npm ci && npm run build)', () => {
    const want = sourcesHash(join(root, 'web'));
    const m = readFileSync(join(root, 'web/dist/index.html'), 'utf8').match(/name="banditd-sources" content="([^"]+)"/);
    return (m && m[1] === want) || `dist says ${m && m[1]}, sources hash to ${want}`;
  });
  const js = shell.text.match(/\/static\/(app-[A-Z0-9]+\.js)/)[1];
  const css = shell.text.match(/\/static\/(app-[A-Z0-9]+\.css)/)[1];
  const plain = await fetch(`${U}/static/${js}`, { headers: { 'Accept-Encoding': 'identity' } });
  const plainBody = Buffer.from(await plain.arrayBuffer());
  await check('a script asset: JavaScript type, cached for good, with an ETag', () =>
    (plain.headers.get('content-type') || '').startsWith('text/javascript') && plain.headers.get('cache-control').includes('immutable') &&
    plain.headers.get('etag') && plain.headers.get('x-content-type-options') === 'nosniff' && plainBody.length > 20000 ||
    Object.fromEntries(plain.headers));
  await check('the same asset gzip-encoded when accepted, equal once decoded', async () => {
    const raw = await rawGet(`/static/${js}`, { 'Accept-Encoding': 'gzip, deflate' });
    return (raw.headers['content-encoding'] === 'gzip' && raw.headers.vary === 'Accept-Encoding' &&
      raw.headers.etag !== plain.headers.get('etag') && gunzipSync(raw.body).equals(plainBody)) || raw.headers;
  });
  await check('Accept-Encoding q-values: gzip;q=0 and *;q=0 refuse it (gzip;q=0 over *), q=0.5 and * take it', async () => {
    const enc = async (ae) => (await rawGet(`/static/${js}`, { 'Accept-Encoding': ae })).headers['content-encoding'] || 'identity';
    const got = [await enc('gzip;q=0'), await enc('br, *;q=0'), await enc('br, gzip;q=0.5'), await enc('*'), await enc('identity'),
      await enc('*, gzip;q=0'), await enc('GZIP;q=1.0')];
    return JSON.stringify(got) === JSON.stringify(['identity', 'identity', 'gzip', 'gzip', 'identity', 'identity', 'gzip']) || got;
  });
  await check('If-None-Match: a list with weak tags matches (RFC 9110 weak comparison)', async () => {
    const tag = plain.headers.get('etag');
    const r = await rawGet(`/static/${js}`, { 'Accept-Encoding': 'identity', 'If-None-Match': `"nope", W/${tag}` });
    const miss = await rawGet(`/static/${js}`, { 'Accept-Encoding': 'identity', 'If-None-Match': '"nope"' });
    return (r.status === 304 && miss.status === 200) || [r.status, miss.status];
  });
  await check('a stylesheet asset: text/css; 304 for its ETag', async () => {
    const r = await fetch(`${U}/static/${css}`);
    const again = await fetch(`${U}/static/${css}`, { headers: { 'If-None-Match': r.headers.get('etag') } });
    return ((r.headers.get('content-type') || '').startsWith('text/css') && again.status === 304) || `${r.headers.get('content-type')} ${again.status}`;
  });
  await check('an unknown asset is a 404 problem', async () => {
    const r = await fetch(`${U}/static/app-NOPE.js`);
    return (r.status === 404 && (r.headers.get('content-type') || '').startsWith('application/problem+json')) || `${r.status}`;
  });
  await check('GET /experiments/{id} is the same shell', async () => {
    const r = await fetch(`${U}/experiments/whatever`);
    return (r.status === 200 && (await r.text()) === shell.text) || `${r.status}`;
  });
}

// --- browser ----------------------------------------------------------------------------

const consoleProblems = [];
function watch(page, label) {
  page.on('console', (m) => {
    // This test reads chart pixels back (canvasPixels), which Chromium
    // advises against: that advice is about the test, not the page.
    if (m.type() === 'warning' && m.text().includes('willReadFrequently')) return;
    if (m.type() === 'error' || m.type() === 'warning') consoleProblems.push(`${label} console.${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => consoleProblems.push(`${label} page error: ${e.message}`));
  page.on('requestfailed', (r) => {
    // A poll in flight when the test navigates away is cancelled: ERR_ABORTED
    // of an API GET. Anything else that fails is a fault.
    const f = r.failure()?.errorText || '';
    if (f === 'net::ERR_ABORTED' && r.method() === 'GET' && r.url().includes('/v1/')) return;
    consoleProblems.push(`${label} request failed: ${r.method()} ${r.url()} ${f}`);
  });
  page.on('response', (r) => {
    if (r.status() >= 400) consoleProblems.push(`${label} HTTP ${r.status()} ${r.url()}`);
  });
}

// Pixels of a canvas whose colour is within tol of rgb (chart lines drawn).
async function canvasPixels(page, selector, rgb, tol = 40) {
  return page.$$eval(`${selector} canvas`, (cs, [col, t]) => cs.map((c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let any = 0;
    let hit = 0;
    for (let i = 0; i < d.length; i += 4) {
      if (d[i + 3] > 0) any++;
      if (col && d[i + 3] > 200 && Math.abs(d[i] - col[0]) < t && Math.abs(d[i + 1] - col[1]) < t && Math.abs(d[i + 2] - col[2]) < t) hit++;
    }
    return { w: c.width, h: c.height, any, hit };
  }), [rgb, tol]);
}

async function browserChecks(browser, ids) {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1 });
  const page = await ctx.newPage();
  watch(page, 'desktop');

  // The stopped experiment: the decision, the charts, the tables.
  const st = (await call('GET', `/v1/experiments/${ids.stopped}/status`)).json;
  await page.goto(`${U}/experiments/${ids.stopped}`);
  await page.waitForFunction(() => document.querySelector('#decision')?.textContent.startsWith('Stopped'), null, { timeout: 10000 }).catch(() => {});
  const sentence = (await page.textContent('#decision')) || '';
  await check('stopped experiment: the stop decision in words, with the API\'s numbers', () => {
    // The sentence names the rule that fired and the figure it stopped on
    // (frozen at the stop: later rewards of earlier assignments do not
    // change it), from the API's stop object.
    const stop = st.bandits[0].stop;
    const m = sentence.match(/^Stopped by the GLR rule after ([0-9,]+) pulls: (\S+) is the best arm with an error bound of ([0-9.]+) ≤ 0\.05 \(GLR = [0-9.]+ > [0-9.]+\)\.$/);
    if (stop.rule !== 'glr' || !m) return `${sentence} (${JSON.stringify(stop)})`;
    const [pulls, arm, dc] = [m[1], m[2], Number(m[3])];
    return (arm === st.bandits[0].recommended[0] && pulls === st.pulls.toLocaleString('en-US') &&
      Math.abs(dc - stop.error_bound) <= 0.006 * stop.error_bound + 5e-4) ||
      `${sentence} vs ${JSON.stringify({ rec: st.bandits[0].recommended, stop, pulls: st.pulls })}`;
  });
  await check('stopped experiment: state badge, pulls, pending, no admin buttons after a stop', async () => {
    const badge = await page.textContent('.title-row .badge');
    const pulls = await page.textContent('#s-pulls');
    const pending = await page.textContent('#s-pending');
    const controlsHidden = await page.$eval('.controls', (e) => e.hidden);
    return (badge === 'stopped' && pulls === fmtInt(st.pulls) && pending === '0' && controlsHidden) || { badge, pulls, pending, controlsHidden };
  });
  await check('a successful stop is not shown in red: the confidence stop\'s badge is green', async () => {
    const c = await page.$eval('.title-row .badge', (e) => [getComputedStyle(e).color, getComputedStyle(e).backgroundColor]);
    return (!reddish(c[0]) && !reddish(c[1]) && FAMILY.green(c[0])) || c;
  });
  await check('fixed confidence: a Target δ card, no budget card', async () => {
    const cards = await page.$$eval('.stats .stat', (els) => els.filter((e) => getComputedStyle(e).display !== 'none')
      .map((e) => [e.querySelector('dt').textContent, e.querySelector('dd').textContent]));
    const delta = cards.find(([k]) => k === 'Target δ');
    return (delta && delta[1] === '0.05' && !cards.some(([k]) => k === 'Budget')) || cards;
  });
  await page.waitForTimeout(300); // let ResizeObservers settle
  await check('arm colours follow arm names that are colours: swatch, pulls line, interval and bar of red, green and blue', async () => {
    const sw = await page.$$eval('table.arms tbody tr', (trs) => trs.map((tr) => [tr.querySelector('th').textContent, getComputedStyle(tr.querySelector('.swatch')).backgroundColor]));
    const bad = [];
    for (const [arm, col] of sw) {
      if (!FAMILY[arm](col)) bad.push(`${arm} swatch ${col}`);
      const px = (await canvasPixels(page, '.chart.pulls', rgbOf(col), 30))[0];
      if (!px || px.hit < 80) bad.push(`${arm}: ${px && px.hit} pixels of ${col} in the pulls chart`);
      const fills = await page.$$eval(`.chart.ci rect[data-arm="${arm}"], .chart.hist path[data-arm="${arm}"]`, (es) => es.map((e) => e.getAttribute('fill')));
      if (fills.length !== 2 || !fills.every((f) => FAMILY[arm](f))) bad.push(`${arm} interval and bar: ${fills}`);
    }
    return (sw.length === 3 && bad.length === 0) || { sw, bad };
  });
  await check('the 1 − ρ̄ line is drawn where its legend says: the axis reaches it, or the clipping is marked', async () => {
    const r = await page.evaluate(() => {
      const host = document.querySelector('.chart.conf .plot');
      const over = host.querySelector('.u-over');
      const c = host.querySelector('canvas');
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let lowest = -1; // the lowest row (largest y) of 1 − ρ̄'s green
      for (let i = 0; i < d.length; i += 4) {
        if (d[i + 3] > 200 && d[i] < 40 && Math.abs(d[i + 1] - 158) < 40 && Math.abs(d[i + 2] - 115) < 40) lowest = Math.max(lowest, Math.floor(i / 4 / c.width));
      }
      const row = [...host.querySelectorAll('.u-legend .u-series')].find((e) => e.querySelector('.u-label')?.textContent === '1 − ρ̄');
      const chart = window.banditdDashboard?.plotOf?.(host);
      const yMin = chart?.plot?.u?.scales?.y?.min;
      return { lowest, bottom: over.offsetTop + over.offsetHeight, legend: row?.querySelector('.u-value')?.textContent,
        yMin, floorTick: chart && yMin ? chart.tick(yMin) : null };
    });
    const v = parseProb(r.legend);
    const onFloor = r.lowest >= r.bottom - 2; // the line touches the axis floor
    const marked = /below the axis/.test(r.legend || '') && (r.floorTick || '').startsWith('≤');
    const inRange = r.yMin !== undefined && v >= r.yMin * (1 - 1e-9);
    return (r.lowest > 0 && ((inRange && !onFloor) || marked)) || { ...r, v, onFloor, marked, inRange };
  });
  await check('the export buttons save the audit trail: NDJSON by the link, CSV through the API key', async () => {
    const want = (await call('GET', `/v1/experiments/${ids.stopped}/export`)).text;
    const wantCsv = (await call('GET', `/v1/experiments/${ids.stopped}/export?format=csv`)).text;
    const [nd] = await Promise.all([page.waitForEvent('download', { timeout: 8000 }), page.click('.export a[data-format="ndjson"]')]);
    const ndText = readFileSync(await nd.path(), 'utf8');
    await page.evaluate(() => sessionStorage.setItem('banditd.key', 'export-key'));
    const sent = page.waitForRequest((q) => q.url().includes('/export?format=csv') && q.headers().authorization === 'Bearer export-key', { timeout: 8000 });
    const [cs] = await Promise.all([page.waitForEvent('download', { timeout: 8000 }), page.click('.export a[data-format="csv"]')]);
    await sent;
    const csText = readFileSync(await cs.path(), 'utf8');
    await page.evaluate(() => sessionStorage.removeItem('banditd.key'));
    return (ndText === want && want.split('\n').length > 100 && nd.suggestedFilename() === `${ids.stopped}.ndjson` &&
      csText === wantCsv && cs.suggestedFilename() === `${ids.stopped}.csv`) ||
      { nd: [nd.suggestedFilename(), ndText.length, want.length], cs: [cs.suggestedFilename(), csText.length, wantCsv.length] };
  });
  await check('δᶜ chart drew its δᶜ line (blue pixels on the canvas) and the δ line', async () => {
    const blue = await canvasPixels(page, '.chart.conf', [0, 114, 178]);
    const orange = await canvasPixels(page, '.chart.conf', [213, 94, 0]);
    return (blue.length >= 1 && blue[0].w > 200 && blue[0].hit > 150 && orange[0].hit > 100) || { blue, orange };
  });
  await check('δᶜ chart is on a log scale with the target δ in its legend', async () => {
    const legend = await page.textContent('.chart.conf .u-legend');
    const dist = await page.evaluate(() => document.querySelector('.chart.conf .uplot') !== null);
    return (dist && legend.includes('target δ = 0.05') && legend.includes('1 − ρ̄')) || legend;
  });
  await check('pulls-over-time chart drew one line per arm', async () => {
    const hits = [];
    for (const c of armColours(st.bandits[0].arms.map((a) => a.id))) hits.push((await canvasPixels(page, '.chart.pulls', rgbOf(c), 30))[0].hit);
    return hits.every((n) => n > 80) || hits;
  });
  await check('intervals chart (K&S Fig. 1): an interval and a mean per arm, and the cutoff line', async () => {
    const r = await page.$eval('.chart.ci svg', (svg) => ({
      ci: [...svg.querySelectorAll('rect.ci')].map((e) => Number(e.getAttribute('height'))),
      means: svg.querySelectorAll('circle.mean').length,
      cutoff: svg.querySelectorAll('path.cutoff').length,
      label: svg.getAttribute('aria-label'),
      role: svg.getAttribute('role'),
    }));
    return (r.ci.length === 3 && r.ci.every((hh) => hh > 2) && r.means === 3 && r.cutoff === 1 && r.role === 'img' &&
      r.label.includes('Cutoff c* =') && r.label.includes('recommended')) || r;
  });
  await check('intervals chart: the recommended arm\'s interval sits above the non-recommended arms\' means', async () => {
    const b = st.bandits[0];
    const best = b.arms.find((a) => a.id === b.recommended[0]);
    return b.arms.filter((a) => a.id !== best.id).every((a) => a.mean < best.mean) || b.arms;
  });
  await check('pulls histogram (K&S Fig. 2c): a bar per arm, heights in the order of the pulls, the m | m+1 mark', async () => {
    const r = await page.$eval('.chart.hist svg', (svg) => ({
      bars: [...svg.querySelectorAll('path.bar')].map((p) => p.getBBox().height),
      boundary: svg.querySelectorAll('path.boundary').length,
    }));
    const ranked = st.bandits[0].arms.slice().sort((a, b) => b.mean - a.mean).map((a) => a.pulls);
    const order = (xs) => xs.map((_, i) => i).sort((i, j) => xs[i] - xs[j]).join();
    return (r.bars.length === 3 && r.boundary === 1 && r.bars.every((hh) => hh > 0) && order(r.bars) === order(ranked)) || { r, ranked };
  });
  await check('charts have text alternatives; a table of the numbers for each', async () => {
    const r = await page.evaluate(() => ({
      plots: [...document.querySelectorAll('.plot')].map((p) => [p.getAttribute('role'), p.getAttribute('aria-label')]),
      caps: document.querySelectorAll('figure.chart figcaption').length,
      armRows: document.querySelectorAll('table.arms tbody tr').length,
      histRows: document.querySelectorAll('table.hist tbody tr').length,
    }));
    return (r.plots.length === 2 && r.plots.every(([role, l]) => role === 'img' && l && l.length > 20) && r.plots[0][1].includes('δᶜ went from') &&
      r.caps === 4 && r.armRows === 3 && r.histRows >= 2) || r;
  });
  await page.screenshot({ path: join(OUT, 'dashboard.png'), fullPage: true });
  ok(true, `screenshot saved: ${join(OUT, 'dashboard.png')}`);

  // Two bandits stopped by the budget.
  const ms = (await call('GET', `/v1/experiments/${ids.multi}/status`)).json;
  await page.goto(`${U}/experiments/${ids.multi}`);
  await page.waitForSelector('section.bandit >> nth=1', { timeout: 10000 }).catch(() => {});
  await check('multi-bandit budget stop: the sentence, one line per bandit, a done/sampling badge each', async () => {
    const head = await page.textContent('#decision');
    const lines = await page.$$eval('.decision-details li', (l) => l.map((e) => e.textContent));
    const badges = await page.$$eval('table.overview tbody .badge', (b) => b.map((e) => e.textContent));
    const want = ms.bandits.map((b) => (b.done ? 'done' : 'sampling'));
    const sure = ms.bandits.filter((b) => b.delta_c <= ms.delta).length;
    return (head === `Stopped: the budget of ${fmtInt(ms.budget)} pulls is spent; ${sure} of 2 bandits proven at δ = 0.05.` &&
      lines.length === 2 && lines[0].startsWith('segment-a: ') && JSON.stringify(badges) === JSON.stringify(want) &&
      (await page.$$('section.bandit')).length === 2) || { head, lines, badges, want };
  });
  await check('fixed budget: no Target δ card; the budget card says how much of it is handed out; the badge is not red', async () => {
    const cards = await page.$$eval('.stats .stat', (els) => els.filter((e) => getComputedStyle(e).display !== 'none')
      .map((e) => [e.querySelector('dt').textContent, e.querySelector('dd').textContent]));
    const budget = cards.find(([k]) => k === 'Budget');
    const c = await page.$eval('.title-row .badge', (e) => [getComputedStyle(e).color, getComputedStyle(e).backgroundColor]);
    return (!cards.some(([k]) => /δ/.test(k)) && budget && budget[1] === `${fmtInt(ms.handed_out)} of ${fmtInt(ms.budget)} handed out` &&
      !reddish(c[0]) && !reddish(c[1])) || { cards, c, handed_out: ms.handed_out };
  });
  await check('multi-bandit: every bandit\'s charts drew', async () => {
    const c = await canvasPixels(page, 'section.bandit', [0, 114, 178]);
    const svgs = await page.$$eval('section.bandit svg', (s) => s.length);
    return (c.length === 4 && c.every((x) => x.hit > 50) && svgs === 4) || { c, svgs };
  });
  await page.screenshot({ path: join(OUT, 'dashboard-multi.png'), fullPage: true });

  // Many bandits: charts folded until asked for.
  await page.goto(`${U}/experiments/${ids.many}`);
  await page.waitForSelector('section.bandit >> nth=4', { timeout: 10000 }).catch(() => {});
  await check('five bandits: a section each, charts folded and drawn only once unfolded', async () => {
    const sections = (await page.$$('section.bandit')).length;
    const before = (await page.$$('.plot canvas')).length;
    await page.click('section.bandit >> nth=2 >> details.charts-fold > summary');
    await page.waitForSelector('section.bandit >> nth=2 >> .plot canvas', { timeout: 5000 });
    const drawn = await canvasPixels(page, 'section.bandit:nth-of-type(3) .chart.conf', [0, 114, 178]);
    const after = (await page.$$('.plot canvas')).length;
    const head = await page.textContent('#decision');
    return (sections === 5 && before === 0 && after === 2 && drawn[0] && drawn[0].hit > 50 && /^Running: 0 of 5 bandits done after/.test(head)) ||
      { sections, before, after, drawn, head };
  });

  // The running experiment: refresh, ETags, hidden tab, controls.
  const statusCalls = [];
  page.on('response', (r) => {
    if (r.url().endsWith(`/v1/experiments/${ids.live}/status`)) statusCalls.push({ t: Date.now(), status: r.status(), inm: r.request().headers()['if-none-match'] });
  });
  await page.goto(`${U}/experiments/${ids.live}`);
  await page.waitForFunction(() => document.querySelector('#decision')?.textContent.startsWith('Running'), null, { timeout: 10000 }).catch(() => {});
  await check('running experiment: the sentence says who leads and the goal', async () => {
    const t = await page.textContent('#decision');
    return /^Running: \S+ leads with an error bound of [0-9.×⁻⁰-⁹]+ after [0-9,]+ pulls; it stops when the GLR rule's error bound is ≤ 0\.05\.$/.test(t) || t;
  });
  await check('polls with If-None-Match and gets 304 while nothing changes', async () => {
    await page.waitForTimeout(4500);
    return statusCalls.some((c) => c.status === 304 && c.inm) || statusCalls;
  });
  await check('refreshes itself: new rewards show up without a reload', async () => {
    const before = await page.textContent('#s-pulls');
    await drive(ids.live, { red: 0.5, green: 0.5, blue: 0.5 }, 7, 25);
    const now = (await call('GET', `/v1/experiments/${ids.live}/status`)).json.pulls;
    await page.waitForFunction((p) => document.querySelector('#s-pulls').textContent === p, fmtInt(now), { timeout: 6000 }).catch(() => {});
    const after = await page.textContent('#s-pulls');
    return (after === fmtInt(now) && after !== before) || { before, after, now };
  });
  await check('a hidden tab stops polling; showing it polls at once', async () => {
    await page.evaluate(() => {
      Object.defineProperty(document, 'hidden', { configurable: true, get: () => true });
      Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'hidden' });
      document.dispatchEvent(new Event('visibilitychange'));
    });
    const t0 = Date.now();
    await page.waitForTimeout(4500);
    const whileHidden = statusCalls.filter((c) => c.t > t0 + 300).length;
    const live = await page.textContent('.live');
    const t1 = Date.now();
    await page.evaluate(() => {
      delete document.hidden;
      delete document.visibilityState;
      document.dispatchEvent(new Event('visibilitychange'));
    });
    await page.waitForTimeout(800);
    const afterShow = statusCalls.filter((c) => c.t > t1).length;
    return (whileHidden === 0 && live.includes('hidden') && afterShow >= 1) || { whileHidden, live, afterShow };
  });
  await check('Pause, then Resume: the API state and the page follow', async () => {
    await page.click('button[data-state="paused"]');
    await page.waitForFunction(() => document.querySelector('.title-row .badge').textContent === 'paused', null, { timeout: 6000 });
    const paused = (await call('GET', `/v1/experiments/${ids.live}`)).json.state;
    const sentence = await page.textContent('#decision');
    const resumeVisible = await page.isVisible('button[data-state="running"]');
    await page.click('button[data-state="running"]');
    await page.waitForFunction(() => document.querySelector('.title-row .badge').textContent === 'running', null, { timeout: 6000 });
    const running = (await call('GET', `/v1/experiments/${ids.live}`)).json.state;
    return (paused === 'paused' && sentence.startsWith('Paused after') && resumeVisible && running === 'running') || { paused, sentence, resumeVisible, running };
  });
  await check('Stop asks first, then stops by hand', async () => {
    await page.click('button[data-state="stopped"]');
    await page.waitForSelector('#stop-dialog[open]', { timeout: 3000 });
    await page.click('#stop-dialog button[value="stop"]');
    await page.waitForFunction(() => document.querySelector('#decision').textContent.startsWith('Stopped by hand'), null, { timeout: 6000 });
    const api = (await call('GET', `/v1/experiments/${ids.live}/status`)).json;
    const t = await page.textContent('#decision');
    return (api.stop_reason === 'manual' && t.includes(`after ${fmtInt(api.pulls)} pulls`) && (await page.$eval('.controls', (e) => e.hidden))) || { api: api.stop_reason, t };
  });
  await check('a stop by hand is not shown in red either', async () => {
    const c = await page.$eval('.title-row .badge', (e) => [getComputedStyle(e).color, getComputedStyle(e).backgroundColor]);
    return (!reddish(c[0]) && !reddish(c[1])) || c;
  });

  // The list, and creating from the form.
  await page.goto(`${U}/`);
  await page.waitForSelector(`tr[data-id="${ids.stopped}"]`, { timeout: 10000 }).catch(() => {});
  await check('the list: a row per experiment with state, policy, pulls, δᶜ, stop reason and age', async () => {
    const rows = await page.$$eval('table.list tbody tr', (trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent)));
    const row = rows.find((r) => r[0].startsWith(ids.stopped));
    return (rows.length === 4 && row && row[1] === 'stopped' && row[2] === 'adapt' && row[3] === fmtInt(st.pulls) &&
      row[5] === fmtProb(st.bandits[0].delta_c) && row[7] === 'GLR rule' && /ago|just now/.test(row[8])) || rows;
  });
  await check('the list shows no stop in red', async () => {
    const cs = await page.$$eval('table.list tbody .badge', (bs) => bs.map((b) => [b.textContent, getComputedStyle(b).color, getComputedStyle(b).backgroundColor]));
    return (cs.filter(([t]) => t === 'stopped').length === 3 && cs.every(([, a, b]) => !reddish(a) && !reddish(b))) || cs;
  });
  await page.screenshot({ path: join(OUT, 'dashboard-list.png'), fullPage: true });
  await check('create from the form: a new experiment, and its page', async () => {
    await page.click('details.create summary');
    await page.fill('#f-id', 'from-form');
    await page.fill('#f-name', 'Made in the browser');
    await page.fill('#f-arms', 'left, right');
    await Promise.all([page.waitForURL(`${U}/experiments/from-form`, { timeout: 8000 }), page.click('#create-form button[type="submit"]')]);
    await page.waitForFunction(() => document.querySelector('#decision')?.textContent.length > 0, null, { timeout: 6000 });
    const x = (await call('GET', '/v1/experiments/from-form')).json;
    const t = await page.textContent('#decision');
    const h1 = await page.textContent('h1');
    return (x.name === 'Made in the browser' && x.bandits[0].arms.join() === 'left,right' && x.policy.name === 'adapt' &&
      t === 'Running: no rewards yet.' && h1 === 'Made in the browser') || { x, t, h1 };
  });
  await check('the form shows the API\'s validation errors', async () => {
    await page.goto(`${U}/`);
    await page.click('details.create summary');
    await page.fill('#f-arms', 'only-one');
    const before = consoleProblems.length;
    await page.click('#create-form button[type="submit"]');
    await page.waitForSelector('#create-form .form-msg.error', { timeout: 5000 });
    const t = await page.textContent('#create-form .form-msg');
    // The browser logs the 400 it was told to expect; it is not a fault.
    consoleProblems.splice(before);
    return /arms|bandits/i.test(t) || t;
  });
  await check('the form plans: the lower bound and a simulation on the guessed means (POST /v1/plan)', async () => {
    await page.goto(`${U}/`);
    await page.click('details.create summary');
    await page.fill('#f-arms', 'a, b, c, d');
    await page.fill('#f-policy', 'track-and-stop');
    await page.fill('#f-means', '0.5, 0.45, 0.43, 0.4');
    await page.click('#plan-button');
    await page.waitForFunction(() => /simulated run/.test(document.querySelector('#create-form .form-msg')?.textContent || ''), null, { timeout: 15000 });
    const t = await page.textContent('#create-form .form-msg');
    const want = (await call('POST', '/v1/plan', { experiment: { arms: ['a', 'b', 'c', 'd'], policy: { name: 'track-and-stop', params: {} }, goal: { m: 1, epsilon: 0, delta: 0.05, budget: null } }, means: [0.5, 0.45, 0.43, 0.4], runs: 1 })).json;
    return (t.startsWith('Any δ-correct policy needs about 2,623 pulls') && t.includes('track-and-stop') &&
      planSentence(want).startsWith('Any δ-correct policy needs about 2,623 pulls')) || t;
  });
  await check('an API key typed once is kept for the session and sent as Bearer', async () => {
    await page.click('#key-button');
    await page.fill('#key-input', 'key-for-test');
    await page.click('#key-dialog button[value="save"]');
    // Kept across pages of the tab: the experiment page sends it too, and
    // offers the admin buttons to a key (its scopes show only when used).
    const sent = page.waitForRequest((r) => r.url().endsWith('/v1/experiments/from-form/status') && r.headers().authorization === 'Bearer key-for-test', { timeout: 8000 });
    await page.goto(`${U}/experiments/from-form`);
    await sent;
    await page.waitForFunction(() => !document.querySelector('.controls').hidden, null, { timeout: 5000 }).catch(() => {});
    const controls = await page.isVisible('button[data-state="paused"]');
    const stored = await page.evaluate(() => sessionStorage.getItem('banditd.key'));
    const label = await page.textContent('#key-button');
    await page.click('#key-button');
    await page.click('#key-dialog button[value="forget"]');
    const gone = await page.evaluate(() => sessionStorage.getItem('banditd.key'));
    return (stored === 'key-for-test' && label === 'API key: set' && controls && gone === null) || { stored, label, controls, gone };
  });
  await ctx.close();

  // A phone.
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
  const pp = await phone.newPage();
  watch(pp, 'phone');
  await pp.goto(`${U}/experiments/${ids.stopped}`);
  await pp.waitForFunction(() => document.querySelector('#decision')?.textContent.startsWith('Stopped'), null, { timeout: 10000 }).catch(() => {});
  await pp.waitForTimeout(300);
  await check('phone: the experiment page fits the width, charts drawn at phone size', async () => {
    const r = await pp.evaluate(() => ({
      sw: document.documentElement.scrollWidth,
      cw: document.documentElement.clientWidth,
      canvases: [...document.querySelectorAll('.plot canvas')].map((c) => c.getBoundingClientRect().width),
    }));
    return (r.sw <= r.cw + 1 && r.canvases.length === 2 && r.canvases.every((w) => w > 200 && w <= r.cw)) || r;
  });
  await pp.screenshot({ path: join(OUT, 'dashboard-phone.png'), fullPage: true });
  await pp.goto(`${U}/`);
  await pp.waitForSelector('table.list tbody tr', { timeout: 10000 }).catch(() => {});
  await check('phone: the list fits the width, as labelled cards', async () => {
    const r = await pp.evaluate(() => ({
      sw: document.documentElement.scrollWidth,
      cw: document.documentElement.clientWidth,
      before: getComputedStyle(document.querySelector('table.list td'), '::before').content,
    }));
    return (r.sw <= r.cw + 1 && r.before.includes('State')) || r;
  });
  await phone.close();
}

// --- comparisons with control ------------------------------------------------------------

// A trial against a control (goal type control): the intervals chart is
// each arm's difference with the control against the margin Δ (a superior
// arm's interval drawn above the Δ line), the pulls chart puts the control
// first and has no m | m + 1 boundary, and the captions say so.
async function controlChecks(browser) {
  const id = 'vs-placebo';
  const margin = 0.05;
  await call('POST', '/v1/experiments', { id, arms: ['placebo', 'better', 'same'], seed: 21,
    goal: { type: 'control', control: 'placebo', margin, delta: 0.1, budget: 1500 } });
  const st = await drive(id, { placebo: 0.3, better: 0.85, same: 0.3 }, 5, 1500);
  const decisions = Object.fromEntries(st.bandits[0].arms.filter((a) => a.vs_control).map((a) => [a.id, a.vs_control.decision]));
  ok(decisions.better === 'superior', 'API: the control trial declared the better arm superior', st.bandits[0].arms);
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1 });
  const page = await ctx.newPage();
  watch(page, 'control');
  await page.goto(`${U}/experiments/${id}`);
  await page.waitForSelector('.chart.ci svg rect.vs', { timeout: 10000 }).catch(() => {});
  await check('control: the intervals chart is each arm\'s difference with the control against Δ, a superior arm above the Δ line', async () => {
    const r = await page.$eval('.chart.ci', (fig) => {
      const svg = fig.querySelector('svg');
      const line = svg.querySelector('path.margin');
      return {
        caption: fig.querySelector('figcaption').textContent,
        label: svg.getAttribute('aria-label'),
        arms: [...svg.querySelectorAll('rect.vs')].map((e) => ({ arm: e.dataset.arm, decision: e.dataset.decision,
          top: Number(e.getAttribute('y')), bottom: Number(e.getAttribute('y')) + Number(e.getAttribute('height')) })),
        marginY: line ? Number(line.getAttribute('d').match(/^M[\d.]+,([\d.]+)/)[1]) : null,
        cutoff: svg.querySelectorAll('path.cutoff').length,
        zero: svg.querySelectorAll('path.zero').length,
      };
    });
    const byArm = Object.fromEntries(r.arms.map((a) => [a.arm, a]));
    const sup = r.arms.filter((a) => a.decision === 'superior');
    return (r.caption.startsWith('Each arm\'s difference with the control') && r.label.includes(`Margin Δ = ${margin}`) &&
      r.arms.length === 2 && !byArm.placebo && Object.entries(decisions).every(([arm, d]) => byArm[arm]?.decision === d) &&
      r.marginY !== null && sup.length >= 1 && sup.every((a) => a.bottom < r.marginY) && r.cutoff === 0 && r.zero === 1) || { r, decisions };
  });
  await check('control: the pulls chart puts the control first, with no m | m + 1 boundary', async () => {
    const r = await page.$eval('.chart.hist', (fig) => ({
      caption: fig.querySelector('figcaption').textContent,
      bars: [...fig.querySelectorAll('path.bar')].map((e) => e.dataset.arm),
      boundary: fig.querySelectorAll('path.boundary').length,
    }));
    return (r.caption === 'Pulls per arm, the control first' && r.bars[0] === 'placebo' && r.bars.length === 3 && r.boundary === 0) || r;
  });
  await page.screenshot({ path: join(OUT, 'dashboard-control.png'), fullPage: true });
  await ctx.close();
}

// --- blinding -------------------------------------------------------------------------

// A key made by the CLI beside the running daemon (the first one closes
// the open API: run last).
function makeKey(scope) {
  const r = spawnSync(BIN, ['keys', 'create', '--db', join(work, 't.db'), '--scope', scope, '--name', `web-${scope}`], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`keys create --scope ${scope}: ${r.stderr}`);
  return r.stdout.trim();
}

// A blinded trial (docs/contract.md, Clinical trials) seen through a read
// key: totals, pending, why it stopped and a "blinded" label, no arm named
// anywhere on the page and no per-arm request; through an unblinded key:
// the arms. Both without a console error (the final check).
async function blindedChecks(browser) {
  const keys = { admin: makeKey('admin'), read: makeKey('read'), unblinded: makeKey('unblinded') };
  const as = (k) => ({ Authorization: `Bearer ${keys[k]}` });
  const id = 'trial';
  const arms = ['placebo-arm', 'verum-arm'];
  await call('POST', '/v1/experiments', { id, arms, seed: 4, design: { blinded: true } }, as('admin'));
  const a = (await call('POST', `/v1/experiments/${id}/assignments`, { count: 12 }, as('admin'))).json.assignments;
  await call('POST', `/v1/experiments/${id}/rewards`, { rewards: a.slice(0, 10).map((x, j) => ({ assignment_id: x.id, reward: j % 3 ? 1 : 0 })) }, as('admin'));
  await call('PATCH', `/v1/experiments/${id}`, { state: 'stopped' }, as('admin'));
  const st = (await call('GET', `/v1/experiments/${id}/status`, undefined, as('read'))).json;
  ok(st.blinded === true && st.pulls === 10 && st.pending === 2 && st.bandits.every((b) => b.arms === undefined), 'API: a read key gets the blinded status', st);

  const open = async (key) => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await ctx.addInitScript((k) => sessionStorage.setItem('banditd.key', k), key);
    const page = await ctx.newPage();
    watch(page, `blinded(${key === keys.read ? 'read' : 'unblinded'})`);
    const asked = [];
    page.on('request', (q) => asked.push(new URL(q.url()).pathname));
    await page.goto(`${U}/experiments/${id}`);
    await page.waitForFunction(() => document.querySelector('#decision')?.textContent.startsWith('Stopped'), null, { timeout: 10000 }).catch(() => {});
    return { ctx, page, asked };
  };

  const r = await open(keys.read);
  await r.page.waitForTimeout(300);
  await check('blinded: a read key sees the totals, the pending count, why it stopped and the "blinded" label', async () => {
    const got = await r.page.evaluate(() => ({
      decision: document.querySelector('#decision').textContent,
      label: !document.querySelector('#blinded-label').hidden && document.querySelector('#blinded-label').textContent,
      pulls: document.querySelector('#s-pulls').textContent,
      pending: document.querySelector('#s-pending').textContent,
    }));
    return (got.decision === 'Stopped (stopped by hand) after 10 pulls, 2 pending.' && got.label === 'blinded' && got.pulls === '10' && got.pending === '2') || got;
  });
  await check('blinded: no per-arm data on the page (no arm named, no arms table, chart or export), none asked for', async () => {
    const got = await r.page.evaluate((names) => ({
      named: names.filter((n) => document.body.innerText.includes(n)),
      tables: document.querySelectorAll('table.arms, table.overview, .bandit, canvas, svg.ci').length,
      exportShown: !document.querySelector('.export').hidden,
    }), arms);
    const perArm = r.asked.filter((p) => p.endsWith('/history') || p.endsWith('/export'));
    return (got.named.length === 0 && got.tables === 0 && !got.exportShown && perArm.length === 0) || { ...got, perArm };
  });
  await r.page.screenshot({ path: join(OUT, 'dashboard-blinded.png'), fullPage: true });
  await r.page.goto(`${U}/`);
  await r.page.waitForSelector(`table.list tr[data-id="${id}"]`, { timeout: 10000 }).catch(() => {});
  await check('blinded: the list shows the trial\'s totals and no δᶜ to a read key', async () => {
    const got = await r.page.evaluate((tid) => {
      const row = document.querySelector(`table.list tr[data-id="${tid}"]`);
      const cell = (label) => row?.querySelector(`[data-label="${label}"]`)?.textContent;
      return { pulls: cell('Pulls'), dc: cell('δᶜ'), reason: cell('Stop reason') };
    }, id);
    return (got.pulls === '10' && got.dc === '–' && got.reason === 'stopped by hand') || got;
  });
  await r.ctx.close();

  const u = await open(keys.unblinded);
  await u.page.waitForSelector('table.arms tbody tr', { timeout: 10000 }).catch(() => {});
  await check('unblinded: the same trial with an unblinded key shows its arms and no "blinded" label', async () => {
    const got = await u.page.evaluate(() => ({
      arms: [...document.querySelectorAll('table.arms tbody th')].map((t) => t.textContent).sort(),
      label: !document.querySelector('#blinded-label').hidden,
      exportShown: !document.querySelector('.export').hidden,
    }));
    return (JSON.stringify(got.arms) === JSON.stringify(arms) && !got.label && got.exportShown) || got;
  });
  await u.ctx.close();
  await check('unblinded: the page\'s reads are recorded (audit log records and log lines, named by the key), the read key\'s are not', async () => {
    const lines = daemonErr.split('\n').filter((l) => l.includes(`unblinded read of ${id} `));
    const v = spawnSync(BIN, ['audit', 'verify', '--db', join(work, 't.db')], { encoding: 'utf8' });
    const m = v.stdout.match(/audit log: ok, (\d+) records/);
    // keys 3, experiments 5 + the trial, the API's status read above is
    // the read key's (not recorded); the page: a status and a history
    const reads = lines.filter((l) => l.includes('by key:') && l.includes(':web-unblinded'));
    const kinds = new Set(reads.map((l) => (l.match(/\((status|history)\)/) || [])[1]));
    return (v.status === 0 && m && reads.length === lines.length && kinds.has('status') && kinds.has('history')) || { lines, verify: v.stdout.slice(-400) };
  });
}

// --- run --------------------------------------------------------------------------------

let browser = null;
const deadline = setTimeout(() => {
  console.log(`not ok ${count + 1} - the whole test took over 150 s`);
  process.exit(1);
}, 150000);
try {
  formatChecks();
  U = await startDaemon();
  ok(true, `daemon started at ${U}`);
  await staticChecks();

  const ids = { stopped: 'checkout-button', multi: 'segments', many: 'many', live: 'live' };
  await call('POST', '/v1/experiments', { id: ids.stopped, name: ids.stopped, arms: ['red', 'green', 'blue'], seed: 42 });
  const stopped = await drive(ids.stopped, { red: 0.2, green: 0.6, blue: 0.4 }, 1, 20000);
  ok(stopped.stopped && stopped.stop_reason === stopped.bandits[0].stop.rule && stopped.bandits[0].stop.fired && stopped.bandits[0].stop.proven,
    `API: driven to a stop by a proven rule (${stopped.stop_reason}) after ${stopped.pulls} pulls`, stopped);
  await call('POST', '/v1/experiments', {
    // uniform: spends the whole budget (sar, the default with a budget, may
    // end earlier by its own rule).
    id: ids.multi, name: 'Two segments', seed: 7, policy: { name: 'uniform', params: {} }, goal: { m: 1, epsilon: 0, delta: 0.05, budget: 400 },
    bandits: [{ id: 'segment-a', arms: ['a1', 'a2'] }, { id: 'segment-b', arms: ['b1', 'b2', 'b3'] }],
  });
  const pa = { a1: 0.9, a2: 0.1, b1: 0.5, b2: 0.45, b3: 0.4 };
  const rndMulti = rng(3);
  // The policy chooses the bandit; a bandit that is done serves its answer
  // (exploit, not a pull), so only the other assignments are rewarded.
  for (let i = 0; i < 100; i++) {
    const a = (await call('POST', `/v1/experiments/${ids.multi}/assignments`, { count: 10 })).json.assignments.filter((x) => !x.exploit);
    if (a.length === 0) break;
    await call('POST', `/v1/experiments/${ids.multi}/rewards`, { rewards: a.map((x) => ({ assignment_id: x.id, reward: rndMulti() < pa[x.arm] ? 1 : 0 })) });
  }
  const multi = (await call('GET', `/v1/experiments/${ids.multi}/status`)).json;
  ok(multi.stopped && multi.stop_reason === 'budget' && multi.bandits.length === 2, 'API: the two-bandit experiment stopped at its budget', multi);
  await call('POST', '/v1/experiments', {
    id: ids.many, seed: 11, bandits: [1, 2, 3, 4, 5].map((i) => ({ id: `s${i}`, arms: [`s${i}-x`, `s${i}-y`] })),
  });
  for (let i = 1; i <= 5; i++) {
    const a = (await call('POST', `/v1/experiments/${ids.many}/assignments`, { count: 10, bandit: `s${i}` })).json.assignments;
    await call('POST', `/v1/experiments/${ids.many}/rewards`, { rewards: a.map((x, j) => ({ assignment_id: x.id, reward: j % 2 })) });
  }
  await call('POST', '/v1/experiments', { id: ids.live, arms: ['red', 'green', 'blue'], seed: 5 });
  await drive(ids.live, { red: 0.5, green: 0.5, blue: 0.5 }, 9, 100);

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // playwright gives every launch a fresh profile directory of its own
    // (it refuses --user-data-dir here), removed when the browser closes.
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  await browserChecks(browser, ids);
  await controlChecks(browser);
  await blindedChecks(browser);
  ok(consoleProblems.length === 0, 'no console errors or warnings, no failed requests, no 4xx/5xx', consoleProblems.join('\n'));
} catch (e) {
  ok(false, 'the test ran to its end', e && e.stack ? e.stack : String(e));
} finally {
  if (browser) await browser.close().catch(() => {});
  const code = await stopDaemon();
  ok(code === 0, 'the daemon exits 0 on SIGTERM', `exit ${code}\n${daemonErr.slice(-2000)}`);
  ok(!/ERROR: (Address|Leak)Sanitizer|runtime error/.test(daemonErr), 'the daemon reported no sanitizer errors', daemonErr.slice(-3000));
  rmSync(work, { recursive: true, force: true });
  clearTimeout(deadline);
  console.log(`1..${count}`);
  process.exitCode = failed ? 1 : 0;
}
