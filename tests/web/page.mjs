// page.mjs — the JavaScript client in a real page of another origin (issue
// 16): Debian's chromium, driven by playwright-core, loads the page example
// of clients/js/README.md as written (only its daemon address and key
// filled in), served from one loopback port, calling banditd on another.
// The page gets an assignment and shows its arm; the visitor clicks; when
// the page goes away its reward leaves by navigator.sendBeacon; the reward
// is in the status, and still there after the daemon restarts (on disk). A
// page of an origin the daemon does not allow is refused by the browser,
// and a page's key can do nothing else. The allowed page's console stays
// clean. Prints TAP; exits non-zero when a check failed.
//
// Env: BANDITD_BIN (default build/banditd), CHROMIUM (default
// /usr/bin/chromium).
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const BIN = resolve(root, process.env.BANDITD_BIN || 'build/banditd');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

let count = 0;
let failed = 0;
function ok(cond, name, diag) {
  count++;
  console.log(`${cond ? 'ok' : 'not ok'} ${count} - ${name}`);
  if (!cond) {
    failed++;
    if (diag !== undefined) {
      for (const l of String(typeof diag === 'string' ? diag : JSON.stringify(diag)).split('\n')) console.log(`# ${l}`);
    }
  }
  return cond;
}

// --- the daemon ---------------------------------------------------------------------

const work = mkdtempSync(join(tmpdir(), 'banditd-page.'));
const db = join(work, 'test.db');
let daemon = null;
let daemonErr = '';
let API = '';

function key(...args) {
  return execFileSync(BIN, ['keys', 'create', '--db', db, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
}

async function startDaemon(port, origins) {
  daemon = spawn(BIN, ['--listen', `127.0.0.1:${port}`, '--db', db, '--sync', 'normal', '--cors-origins', origins],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  daemon.stderr.on('data', (b) => { daemonErr += b; });
  const [line] = await once(createInterface({ input: daemon.stdout }), 'line');
  if (!line.startsWith('listening on ')) throw new Error('banditd did not start: ' + line + daemonErr);
  return `http://${line.slice('listening on '.length).trim()}`;
}

async function stopDaemon() {
  if (!daemon || daemon.exitCode !== null) return daemon ? daemon.exitCode : 0;
  const exited = once(daemon, 'exit');
  daemon.kill('SIGTERM');
  const [code, signal] = await exited;
  return signal ? 128 : code;
}

async function call(adminKey, method, path, body) {
  const res = await fetch(API + path, {
    method, headers: { Authorization: `Bearer ${adminKey}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json().catch(() => null) };
}

// --- the pages: two origins (ports) of their own --------------------------------------

/** The README's page example, with the daemon's address and the key filled in. */
function readmePage(apiUrl, pageKey) {
  const readme = readFileSync(join(root, 'clients/js/README.md'), 'utf8');
  const html = readme.match(/```html\n([\s\S]*?)```/)[1];
  const filled = html.replace('https://bandit.example', apiUrl).replace('bd_…', pageKey);
  if (filled === html || !filled.includes(pageKey)) throw new Error('README page example: no address or key to fill in');
  return `<!doctype html><html><head><meta charset="utf-8"><title>shop</title>` +
    `<link rel="icon" href="data:,"></head><body>\n${filled}</body></html>\n`;
}

function serve(routes) {
  const srv = createServer((req, res) => {
    const r = routes[req.url.split('?')[0]];
    if (!r) { res.writeHead(404).end(); return; }
    res.writeHead(200, { 'Content-Type': r[0], 'Cache-Control': 'no-store' }).end(r[1]);
  });
  srv.listen(0, '127.0.0.1');
  return srv;
}

const portOf = async (srv) => { if (!srv.listening) await once(srv, 'listening'); return srv.address().port; };

// --- run --------------------------------------------------------------------------------

let browser = null;
const servers = [];
const deadline = setTimeout(() => { console.log(`not ok ${count + 1} - the test took over 120 s`); process.exit(1); }, 120000);
try {
  const admin = key('--scope', 'admin');
  const pageKey = key('--scope', 'assign,report', '--experiments', 'checkout-button', '--name', 'shop-page');
  const lib = readFileSync(join(root, 'clients/js/banditd.js'), 'utf8');
  // the shop's origin and another one, each a port of its own
  const shop = serve({}); const evil = serve({});
  servers.push(shop, evil);
  const shopOrigin = `http://127.0.0.1:${await portOf(shop)}`;
  const evilOrigin = `http://127.0.0.1:${await portOf(evil)}`;
  const sock = createServer(); sock.listen(0, '127.0.0.1'); await once(sock, 'listening');
  const apiPort = sock.address().port; sock.close(); await once(sock, 'close');
  API = await startDaemon(apiPort, shopOrigin);
  ok(true, `daemon at ${API}, the page at ${shopOrigin}, another origin at ${evilOrigin}`);
  const created = await call(admin, 'POST', '/v1/experiments',
    { id: 'checkout-button', arms: ['red', 'green', 'blue'], default_reward: 0, seed: 5 });
  ok(created.status === 201, 'the experiment is created', created);

  const page = readmePage(API, pageKey);
  shop.removeAllListeners('request');
  shop.on('request', (req, res) => {
    const routes = { '/': ['text/html; charset=utf-8', page], '/banditd.js': ['text/javascript', lib] };
    const r = routes[req.url.split('?')[0]];
    if (!r) { res.writeHead(404).end(); return; }
    res.writeHead(200, { 'Content-Type': r[0], 'Cache-Control': 'no-store' }).end(r[1]);
  });
  evil.removeAllListeners('request');
  evil.on('request', (req, res) => {
    const routes = { '/': ['text/html; charset=utf-8', page.replace('<title>shop', '<title>evil')], '/banditd.js': ['text/javascript', lib] };
    const r = routes[req.url.split('?')[0]];
    if (!r) { res.writeHead(404).end(); return; }
    res.writeHead(200, { 'Content-Type': r[0], 'Cache-Control': 'no-store' }).end(r[1]);
  });

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // CI runs as root, where Chromium's sandbox cannot start
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });

  // 1. the shop's page: an arm shown, a click, a beacon when it goes away
  const ctx = await browser.newContext();
  // Beacons sent while a page unloads are not shown to playwright: the
  // page's navigator.sendBeacon notes each call in localStorage (the
  // origin's, read back below), then sends it as the browser does.
  await ctx.addInitScript(() => {
    const send = navigator.sendBeacon.bind(navigator);
    navigator.sendBeacon = (url, data) => {
      const taken = send(url, data);
      const log = JSON.parse(localStorage.getItem('test:beacons') || '[]');
      log.push({ url: String(url), body: typeof data === 'string' ? data : null, taken });
      localStorage.setItem('test:beacons', JSON.stringify(log));
      return taken;
    };
  });
  const p = await ctx.newPage();
  const problems = [];
  const beacons = [];
  p.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.push(`console.${m.type()}: ${m.text()}`); });
  p.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  p.on('requestfailed', (r) => { if (!r.url().includes('/rewards')) problems.push(`request failed: ${r.method()} ${r.url()} ${r.failure()?.errorText}`); });
  p.on('response', (r) => { if (r.status() >= 400) problems.push(`HTTP ${r.status()} ${r.url()}`); });
  p.on('request', (r) => { if (r.url().includes('/rewards')) beacons.push(r); });
  await p.goto(shopOrigin + '/');
  await p.waitForFunction(() => /\((red|green|blue)\)/.test(document.getElementById('buy').textContent), null, { timeout: 15000 })
    .catch(() => {});
  const shown = await p.evaluate(() => ({
    text: document.getElementById('buy').textContent,
    bg: document.getElementById('buy').style.background,
    unit: localStorage.getItem('banditd:unit'),
    cached: localStorage.getItem('banditd:a:checkout-button:'),
  }));
  const arm = (shown.text.match(/\((red|green|blue)\)/) || [])[1];
  ok(arm !== undefined && shown.bg.startsWith(arm), `the page shows its arm (${arm})`, shown);
  ok(shown.unit && JSON.parse(shown.cached || '{}').arm === arm, 'the unit and its assignment are in localStorage', shown);
  // a reload: the same arm, from the store, no request to the daemon
  const before = problems.length;
  let asked = 0;
  const countAsk = (r) => { if (r.url().includes('/assignments')) asked++; };
  p.on('request', countAsk);
  await p.reload();
  await p.waitForFunction(() => /\((red|green|blue)\)/.test(document.getElementById('buy').textContent), null, { timeout: 15000 }).catch(() => {});
  const again = await p.evaluate(() => document.getElementById('buy').textContent);
  ok(again.includes(`(${arm})`) && asked === 0, 'a reload keeps the arm without asking again', { again, asked });
  p.off('request', countAsk);
  await p.click('#buy');
  // the visitor leaves: pagehide, the queued reward goes by beacon
  await p.goto('about:blank');
  ok(problems.length === before || problems.length === 0, 'no problem while reloading', problems);
  let st = null;
  for (let i = 0; i < 100; i++) {
    st = (await call(admin, 'GET', '/v1/experiments/checkout-button/status')).json;
    if (st && st.pulls >= 1) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const armSt = st && st.bandits[0].arms.find((a) => a.id === arm);
  ok(st && st.pulls === 1 && st.pending === 0 && armSt && armSt.pulls === 1 && armSt.mean === 1,
    'the beacon\'s reward is in the status, on the arm shown', st);
  ok(beacons.length === 0, 'no reward went by fetch', beacons.map((r) => r.url()));
  ok(problems.length === 0, 'the page\'s console is clean: no errors, warnings, failed requests, 4xx/5xx', problems.join('\n'));

  // 2. the page's key can do nothing else, even from the allowed origin
  const p2 = await ctx.newPage();
  await p2.goto(shopOrigin + '/banditd.js'); // the shop's origin, a document without the client
  const sent = JSON.parse(await p2.evaluate(() => localStorage.getItem('test:beacons')) || '[]');
  ok(sent.length === 1 && sent[0].taken && sent[0].url.startsWith(`${API}/v1/experiments/checkout-button/rewards?access_token=`) &&
    JSON.parse(sent[0].body).rewards[0].reward === 1,
  'the reward left by navigator.sendBeacon (the key as access_token)', sent.map((x) => ({ ...x, url: x.url.replace(pageKey, 'KEY') })));
  const denied = await p2.evaluate(async ({ api, k }) => {
    const out = {};
    for (const [name, method, path, body] of [
      ['status', 'GET', '/v1/experiments/checkout-button/status'],
      ['create', 'POST', '/v1/experiments', { arms: ['a', 'b'] }],
      ['list', 'GET', '/v1/experiments'],
      ['stop', 'PATCH', '/v1/experiments/checkout-button', { state: 'stopped' }],
    ]) {
      const r = await fetch(api + path, { method, headers: { Authorization: `Bearer ${k}`, 'Content-Type': 'application/json' },
        body: body && JSON.stringify(body) });
      out[name] = [r.status, (await r.json()).type];
    }
    return out;
  }, { api: API, k: pageKey });
  ok(Object.values(denied).every(([s, t]) => s === 403 && t === 'urn:banditd:problem:forbidden'),
    'the page\'s key cannot read status, create, list or stop (403, readable by the page)', denied);
  await p2.close();

  // 3. a page of an origin the daemon does not allow: the browser refuses it
  const e = await browser.newContext();
  const pe = await e.newPage();
  const evilConsole = [];
  pe.on('console', (m) => evilConsole.push(m.text()));
  await pe.goto(evilOrigin + '/');
  const refused = await pe.evaluate(async ({ api, k }) => {
    try {
      await fetch(api + '/v1/experiments/checkout-button/assignments', { method: 'POST',
        headers: { Authorization: `Bearer ${k}`, 'Content-Type': 'application/json' }, body: '{}' });
      return 'answered';
    } catch (err) {
      return err.name;
    }
  }, { api: API, k: pageKey });
  const shownEvil = await pe.evaluate(() => document.getElementById('buy').textContent);
  ok(refused === 'TypeError' && !/\((red|green|blue)\)/.test(shownEvil),
    'a page of another origin is refused by the browser (no arm shown)', { refused, shownEvil });
  ok(evilConsole.some((t) => /CORS|Access-Control-Allow-Origin/i.test(t)), 'its console names the CORS refusal', evilConsole);
  await e.close();
  await ctx.close();

  // 4. on disk: the reward survives a restart
  const code = await stopDaemon();
  ok(code === 0, 'the daemon exits 0 on SIGTERM', daemonErr.slice(-1000));
  API = await startDaemon(apiPort, shopOrigin);
  st = (await call(admin, 'GET', '/v1/experiments/checkout-button/status')).json;
  ok(st && st.pulls === 1 && st.bandits[0].arms.find((a) => a.id === arm).mean === 1, 'after a restart the reward is still there', st);
} catch (err) {
  ok(false, 'the test ran to its end', err && err.stack ? err.stack : String(err));
} finally {
  if (browser) await browser.close().catch(() => {});
  for (const s of servers) s.close();
  const code = await stopDaemon();
  ok(code === 0, 'the daemon exits 0 at the end', `exit ${code}\n${daemonErr.slice(-2000)}`);
  ok(!/ERROR: (Address|Leak)Sanitizer|runtime error/.test(daemonErr), 'the daemon reported no sanitizer errors', daemonErr.slice(-3000));
  rmSync(work, { recursive: true, force: true });
  clearTimeout(deadline);
  console.log(`1..${count}`);
  process.exitCode = failed ? 1 : 0;
}
