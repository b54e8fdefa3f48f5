// The JS client against the real daemon (Node's test runner): every
// operation; errors as BanditdError with the problem+json; rewards retried
// across a kill -9 and a restart, counted once; sticky units in a
// localStorage and in cookies; queued rewards flushed in batches, put back
// when the daemon is away; a beacon (text/plain, access_token) with a key
// limited to its experiment; `npm pack` makes a tarball that installs and
// imports.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Daemon, ROOT } from './daemon.mjs';
import {
  Client, BanditdError, memoryStore, localStorageStore, cookieStore, isBlinded,
} from '../banditd.js';

let d;
let admin;

before(async () => {
  d = new Daemon();
  admin = d.key('admin');
  await d.start();
});

after(async () => {
  const code = await d.stop();
  d.cleanup();
  assert.equal(code, 0, 'the daemon shut down cleanly: ' + d.stderr.slice(-400));
});

const client = (opts = {}) => new Client({ baseUrl: d.url, key: admin, store: memoryStore(),
  flushOnHide: false, ...opts });

async function rejects(promise) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof BanditdError, 'a BanditdError: ' + e);
    return e;
  }
  assert.fail('no error');
}

test('every operation', async () => {
  const bd = client({ batchSize: 2 });
  const exp = await bd.create({ id: 'ops', arms: ['red', 'green', 'blue'], seed: 3 });
  assert.equal(exp.id, 'ops');
  const got = await bd.assign('ops', { count: 3 });
  assert.equal(got.length, 3);
  const u1 = await bd.assign('ops', { unit: 'user-1' });
  const u2 = await bd.assign('ops', { unit: 'user-1' });
  assert.equal(u1[0].id, u2[0].id, 'a unit gets its assignment back');
  const items = [...got, u1[0]].map((a) => [a.id, a.arm === 'green' ? 1 : 0]);
  let r = await bd.reward('ops', items); // two batches
  assert.deepEqual([r.accepted, r.duplicates, r.results.length], [4, 0, 4]);
  r = await bd.reward('ops', Object.fromEntries(items));
  assert.deepEqual([r.accepted, r.duplicates], [0, 4], 'the same rewards again are duplicates');
  const st = await bd.status('ops');
  assert.equal(st.pulls, 4);
  assert.equal(st.pending, 0);
  assert.equal((await bd.get('ops')).id, 'ops');
  assert.equal((await bd.stop('ops')).state, 'stopped');
  assert.equal((await bd.status('ops')).stopped, true);
});

test('errors carry the problem+json', async () => {
  const bd = client({ retries: 0 });
  let e = await rejects(bd.create({ id: 'bad id!', arms: ['a'] }));
  assert.equal(e.status, 400);
  assert.ok(e.errors.length > 0 && e.errors.every((x) => typeof x.field === 'string'));
  assert.equal(e.problem.status, 400);
  e = await rejects(bd.status('nope'));
  assert.deepEqual([e.status, e.slug], [404, 'not-found']);
  assert.ok(e.detail.length > 0);
  e = await rejects(client({ key: 'bd_wrong', retries: 0 }).status('nope'));
  assert.equal(e.status, 401);
  e = await rejects(new Client({ baseUrl: 'http://127.0.0.1:9', retries: 0, store: memoryStore() })
    .status('x'));
  assert.equal(e.status, 0);
  assert.ok(e.retryable);
});

test('rewards retried across a restart are counted once', async () => {
  const bd = client({ retries: 40, backoffMs: 100 });
  await bd.create({ id: 'restart', arms: ['a', 'b'] });
  const got = await bd.assign('restart', { count: 4 });
  const values = got.map((a, i) => [a.id, i % 2 === 0 ? 1 : 0]);
  const first = await bd.reward('restart', values.slice(0, 2));
  assert.equal(first.accepted, 2);
  await d.kill();
  const sending = bd.reward('restart', values); // retried while the daemon is down
  await new Promise((r) => setTimeout(r, 500));
  await d.start();
  const r = await sending;
  assert.deepEqual([r.accepted, r.duplicates], [2, 2]);
  const st = await bd.status('restart');
  assert.deepEqual([st.pulls, st.pending], [4, 0], 'nothing counted twice');
});

test('a blinded status: the blinded view to a read key, the full one to admin', async () => {
  const doc = JSON.parse(readFileSync(join(ROOT, 'docs/openapi.json'), 'utf8')).components.schemas;
  const bd = client();
  await bd.create({ id: 'trial', arms: ['a', 'b', 'c'], seed: 5, design: { blinded: true } });
  const got = await bd.assign('trial', { count: 3 });
  await bd.reward('trial', got.map((a) => [a.id, 1]));
  const reader = client({ key: d.key('read') });
  const st = await reader.status('trial');
  assert.ok(isBlinded(st), 'a read key gets the blinded view: ' + JSON.stringify(st));
  assert.deepEqual([st.pulls, st.pending, st.stopped], [3, 0, false], 'totals stay');
  const fields = new Set(Object.keys(doc.Status.properties));
  assert.ok(Object.keys(st).every((k) => fields.has(k)), 'only the Status schema\'s fields');
  assert.ok(doc.Status.required.every((k) => k in st), 'every required field');
  const bb = Object.keys(doc.BlindedBandit.properties).sort();
  for (const b of st.bandits) {
    assert.deepEqual(Object.keys(b).sort(), bb, 'a bandit is a BlindedBandit: ' + JSON.stringify(b));
  }
  assert.ok(!JSON.stringify(st).includes('"arms"') && !('recommended' in st.bandits[0]));
  const full = await bd.status('trial');
  assert.ok(!isBlinded(full) && full.blinded === undefined, 'admin sees it in full');
  const need = doc.BanditStatus.required;
  assert.ok(need.every((k) => k in full.bandits[0]), 'a full bandit is a BanditStatus');
  assert.deepEqual(full.bandits[0].arms.map((a) => a.pulls), [1, 1, 1]);
});

/** A fetch that counts the requests it passes on. */
function countingFetch() {
  const f = (...args) => { f.calls++; return fetch(...args); };
  f.calls = 0;
  return f;
}

test('sticky units in localStorage and in cookies', async () => {
  await client().create({ id: 'sticky', arms: ['a', 'b', 'c'] });
  // a Storage as a page has it
  const data = new Map();
  const storage = {
    getItem: (k) => (data.has(k) ? data.get(k) : null),
    setItem: (k, v) => data.set(k, String(v)),
    removeItem: (k) => data.delete(k),
  };
  const f = countingFetch();
  const page1 = client({ store: localStorageStore(storage), fetch: f });
  const a1 = await page1.assignment('sticky');
  const a2 = await page1.assignment('sticky');
  assert.equal(a1.id, a2.id);
  assert.equal(f.calls, 1, 'the second call is served from the store');
  // the next page load: a new client on the same storage, the same unit
  const page2 = client({ store: localStorageStore(storage) });
  assert.equal(page2.unit(), page1.unit());
  assert.equal((await page2.assignment('sticky')).id, a1.id);
  // the store lost the assignment but kept the unit: the daemon gives it back
  for (const k of [...data.keys()]) if (k.includes(':a:')) data.delete(k);
  assert.equal((await page2.assignment('sticky')).id, a1.id);

  // cookies: document.cookie as a browser shows it
  const jar = new Map();
  const doc = {
    get cookie() { return [...jar].map(([k, v]) => `${k}=${v}`).join('; '); },
    set cookie(s) { const [kv] = s.split(';'); const i = kv.indexOf('='); jar.set(kv.slice(0, i), kv.slice(i + 1)); },
  };
  const c1 = client({ store: cookieStore(doc) });
  const b1 = await c1.assignment('sticky');
  const c2 = client({ store: cookieStore(doc) });
  assert.equal(c2.unit(), c1.unit());
  assert.equal((await c2.assignment('sticky')).id, b1.id);
  assert.notEqual(c1.unit(), page1.unit(), 'two visitors, two units');
});

test('queued rewards go in batches, and back in the queue when the daemon is away', async () => {
  const bd = client({ flushMs: 0, batchSize: 3 });
  await bd.create({ id: 'queued', arms: ['a', 'b'] });
  const got = await bd.assign('queued', { count: 5 });
  for (const a of got) bd.report('queued', a.id, 1);
  const away = client({ baseUrl: 'http://127.0.0.1:9', retries: 0, flushMs: 0 });
  for (const a of got) away.report('queued', a.id, 1);
  await rejects(away.flush());
  assert.equal(away.queue.get('queued').size, 5, 'kept for the next flush');
  const out = await bd.flush();
  assert.equal(out.queued.accepted, 5);
  assert.equal(bd.queue.size, 0);
  away.baseUrl = d.url;
  const again = await away.flush();
  assert.equal(again.queued.duplicates, 5, 'sent again: duplicates, counted once');
  assert.equal((await bd.status('queued')).pulls, 5);
});

test('a beacon with a key limited to the experiment', async () => {
  await client().create({ id: 'beacon', arms: ['a', 'b'] });
  const pageKey = d.key('assign,report', '--experiments', 'beacon');
  const sent = [];
  const nav = {
    // what the browser does with a string: POST it as text/plain, no headers of ours
    sendBeacon(url, body) {
      sent.push(fetch(url, { method: 'POST', body,
        headers: { 'Content-Type': 'text/plain;charset=UTF-8' } }));
      return true;
    },
  };
  Object.defineProperty(globalThis, 'navigator', { value: nav, configurable: true, writable: true });
  try {
    const page = new Client({ baseUrl: d.url, key: pageKey, store: memoryStore(), flushOnHide: false });
    const a = await page.assignment('beacon');
    page.report('beacon', a.id, 1);
    assert.equal(page.flushByBeacon(), true);
    const [res] = await Promise.all(sent);
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal((await res.json()).accepted, 1);
    // what the page's key cannot do
    const e = await rejects(new Client({ baseUrl: d.url, key: pageKey, retries: 0, store: memoryStore() })
      .status('beacon'));
    assert.equal(e.status, 403);
  } finally {
    delete globalThis.navigator;
  }
  const st = await client().status('beacon');
  assert.equal(st.pulls, 1, 'the beacon\'s reward is in status');
});

test('assignment blocks: leased, served by unit, leftovers released', async () => {
  const bd = client();
  await bd.create({ id: 'blocks', arms: ['a', 'b', 'c'] });
  const blk = bd.block('blocks', 10);
  // visitors arrive together: one lease serves them
  const first = await Promise.all([0, 1, 2, 3, 4].map((i) => blk.take(`visitor-${i}`)));
  assert.equal(blk.roundTrips, 1);
  const rest = [];
  for (let i = 5; i < 13; i++) rest.push(await blk.take(`visitor-${i}`));
  assert.equal(blk.roundTrips, 2, '13 visitors from blocks of 10: two leases');
  const served = [...first, ...rest];
  assert.equal(new Set(served.map((a) => a.id)).size, 13);
  await bd.reward('blocks', served.slice(0, 5).map((a) => [a.id, 1]));
  const bound = await blk.flush();
  assert.equal(bound.bound, 13);
  const released = await blk.close();
  assert.equal(released.released, 7);
  const st = await bd.status('blocks');
  assert.deepEqual([st.pending, st.pulls], [8, 5], 'pending exact after the release');
  const [again] = await bd.assign('blocks', { unit: 'visitor-7' });
  assert.equal(again.id, served[7].id, 'a unit served from a block gets it back');
  const r = await bd.served('blocks', { [served[0].id]: 'visitor-0', [served[1].id]: 'someone-else' });
  assert.deepEqual(r.results.map((x) => x.status), ['duplicate', 'conflict']);
});

test('npm pack makes a tarball that installs and imports', () => {
  const pkg = fileURLToPath(new URL('..', import.meta.url));
  const work = mkdtempSync(join(tmpdir(), 'banditd-js-pack.'));
  try {
    const name = execFileSync('npm', ['pack', '--silent', '--pack-destination', work, pkg],
      { encoding: 'utf8' }).trim().split('\n').pop();
    const tgz = join(work, name);
    assert.ok(existsSync(tgz), tgz);
    const app = join(work, 'app');
    execFileSync('mkdir', ['-p', app]);
    writeFileSync(join(app, 'package.json'), '{"name":"app","version":"1.0.0","private":true}');
    execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--silent', tgz], { cwd: app });
    const out = execFileSync(process.execPath, ['--input-type=module', '-e',
      "import { Client, BanditdError } from 'banditd-client'; console.log(typeof Client, typeof BanditdError)"],
    { cwd: app, encoding: 'utf8' });
    assert.equal(out.trim(), 'function function');
    assert.ok(existsSync(join(app, 'node_modules/banditd-client/banditd.d.ts')));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});
