// banditd.js — a client for the banditd HTTP API, for browsers and Node.js
// (18+): one ES module, no dependencies (fetch, and in a page
// localStorage or document.cookie and navigator.sendBeacon).
//
// In a page: a visitor is a unit, its id kept in localStorage (or a cookie)
// so that it keeps its arm (sticky units, docs/contract.md); the arm comes
// from one assignment per visitor, cached until it expires; rewards are
// queued and sent in batches by fetch, or by navigator.sendBeacon when the
// page is hidden or closed (a beacon survives the page). Every retry is
// safe: rewards are idempotent per assignment (the same reward again is a
// "duplicate", counted once), an assignment that names a unit gets the
// unit's assignment back, and 429/503 answers did nothing.
//
// Errors are BanditdError, carrying the problem+json (RFC 9457).
// banditd.d.ts has the types, checked against docs/openapi.json by
// test/openapi.test.mjs, as OPERATIONS is: the client cannot drift.

/** What each method calls: operationId, method, path template. */
export const OPERATIONS = Object.freeze({
  create: ['createExperiment', 'POST', '/v1/experiments'],
  get: ['getExperiment', 'GET', '/v1/experiments/{id}'],
  assign: ['createAssignments', 'POST', '/v1/experiments/{id}/assignments'],
  reward: ['createRewards', 'POST', '/v1/experiments/{id}/rewards'],
  release: ['releaseAssignments', 'POST', '/v1/experiments/{id}/assignments/release'],
  served: ['serveAssignments', 'POST', '/v1/experiments/{id}/assignments/served'],
  status: ['getStatus', 'GET', '/v1/experiments/{id}/status'],
  stop: ['patchExperiment', 'PATCH', '/v1/experiments/{id}'],
});

/** An answer that is not a success, or none (status 0). */
export class BanditdError extends Error {
  constructor(status, problem, retryAfter = null) {
    const p = problem && typeof problem === 'object' ? problem : {};
    super(`${p.title || 'banditd error'} (${status})${p.detail ? ': ' + p.detail : ''}`);
    this.name = 'BanditdError';
    this.status = status;
    this.problem = p;
    this.retryAfter = retryAfter;
  }
  get type() { return this.problem.type || 'about:blank'; }
  /** The last part of the type URN: "validation", "not-found", "rate-limited"… */
  get slug() { return this.type.split(':').pop(); }
  get title() { return this.problem.title || ''; }
  get detail() { return this.problem.detail || ''; }
  get errors() { return Array.isArray(this.problem.errors) ? this.problem.errors : []; }
  /** Whether the request may be sent again as it is: no answer, 429 or 503. */
  get retryable() { return this.status === 0 || this.status === 429 || this.status === 503; }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Where a page keeps its visitor's unit id and assignments. */
export function localStorageStore(storage = globalThis.localStorage) {
  return {
    get: (k) => { try { return storage.getItem(k); } catch { return null; } },
    set: (k, v) => { try { storage.setItem(k, v); } catch { /* full or denied: not sticky */ } },
  };
}

/** The same in cookies (first-party, SameSite=Lax), for a year. */
export function cookieStore(doc = globalThis.document, { maxAge = 31536000, path = '/' } = {}) {
  return {
    get(k) {
      const name = encodeURIComponent(k) + '=';
      for (const part of String(doc.cookie || '').split(/;\s*/)) {
        if (part.startsWith(name)) return decodeURIComponent(part.slice(name.length));
      }
      return null;
    },
    set(k, v) {
      doc.cookie = `${encodeURIComponent(k)}=${encodeURIComponent(v)}; Max-Age=${maxAge}; ` +
        `Path=${path}; SameSite=Lax`;
    },
  };
}

/** Whether a status is the blinded view of a blinded experiment (a key
 * without scope unblinded): its bandits are {id, done} only. */
export function isBlinded(s) { return s != null && s.blinded === true; }

/** In memory only (Node, tests). */
export function memoryStore() {
  const m = new Map();
  return { get: (k) => (m.has(k) ? m.get(k) : null), set: (k, v) => { m.set(k, String(v)); } };
}

function defaultStore() {
  try {
    if (globalThis.localStorage) {
      const probe = '__banditd_probe';
      globalThis.localStorage.setItem(probe, '1');
      globalThis.localStorage.removeItem(probe);
      return localStorageStore();
    }
  } catch { /* blocked: fall through */ }
  if (globalThis.document && 'cookie' in globalThis.document) return cookieStore();
  return memoryStore();
}

function newUnitId() {
  if (globalThis.crypto && typeof globalThis.crypto.randomUUID === 'function') {
    return globalThis.crypto.randomUUID();
  }
  return 'u-' + Date.now().toString(36) + '-' + Math.random().toString(36).slice(2, 12);
}

export class Client {
  /**
   * @param {import('./banditd').ClientOptions} options
   */
  constructor(options) {
    const o = typeof options === 'string' ? { baseUrl: options } : { ...options };
    if (!o.baseUrl) throw new TypeError('banditd: baseUrl is required');
    this.baseUrl = String(o.baseUrl).replace(/\/+$/, '');
    this.key = o.key || null;
    this.fetch = o.fetch || globalThis.fetch.bind(globalThis);
    this.retries = o.retries ?? 5;
    this.backoffMs = o.backoffMs ?? 200;
    this.batchSize = o.batchSize ?? 1000;
    this.flushMs = o.flushMs ?? 2000;
    this.store = o.store || defaultStore();
    this.prefix = o.storagePrefix || 'banditd:';
    this.beacon = o.beacon ?? true;
    this.queue = new Map(); // experiment -> Map(assignment_id -> reward)
    this.timer = null;
    if (o.flushOnHide !== false && globalThis.addEventListener && globalThis.document) {
      // the last moment a page may still send: beacons survive it
      const hide = () => { if (globalThis.document.visibilityState !== 'visible') this.flushByBeacon(); };
      globalThis.addEventListener('pagehide', () => this.flushByBeacon());
      globalThis.document.addEventListener('visibilitychange', hide);
    }
  }

  // --- operations ---------------------------------------------------------------------

  /** Create an experiment (docs/contract.md); the experiment. */
  create(config) { return this.call('create', null, config, { retryLost: false }); }

  /** An experiment's configuration and state. */
  get(experiment) { return this.call('get', experiment, undefined, { retryLost: true }); }

  /** Confidence, recommendation and stop state. */
  status(experiment) { return this.call('status', experiment, undefined, { retryLost: true }); }

  /** Stop the experiment for good; the experiment. */
  stop(experiment) { return this.call('stop', experiment, { state: 'stopped' }, { retryLost: true }); }

  /**
   * Which arm(s) next: `count` assignments (1 with a unit). Sent again after a
   * lost answer only with a unit (it gets its assignment back).
   */
  async assign(experiment, { unit, bandit, count } = {}) {
    const body = {};
    if (unit != null) body.unit = unit;
    if (bandit != null) body.bandit = bandit;
    if (count != null && count !== 1) body.count = count;
    const answer = await this.call('assign', experiment, body, { retryLost: unit != null });
    return answer.assignments;
  }

  /** This visitor's unit id (made once, kept in the store). */
  unit() {
    let u = this.store.get(this.prefix + 'unit');
    if (!u) {
      u = newUnitId();
      this.store.set(this.prefix + 'unit', u);
    }
    return u;
  }

  /**
   * The visitor's assignment in an experiment (and bandit): from the store
   * while it has not expired, else asked for with the visitor's unit (sticky:
   * the daemon gives the unit's assignment back).
   */
  async assignment(experiment, { bandit } = {}) {
    const k = `${this.prefix}a:${experiment}:${bandit || ''}`;
    const cached = this.store.get(k);
    if (cached) {
      try {
        const a = JSON.parse(cached);
        if (a && a.id && Date.parse(a.expires_at) > Date.now()) return a;
      } catch { /* a damaged entry: ask again */ }
    }
    const [a] = await this.assign(experiment, { unit: this.unit(), bandit });
    this.store.set(k, JSON.stringify(a));
    return a;
  }

  /**
   * Send rewards now, in batches: an array of {assignment_id, reward} or
   * [id, reward] pairs, or {id: reward}. Each batch is retried until answered
   * (idempotent). The summed RewardResponse.
   */
  async reward(experiment, rewards) {
    const items = rewardItems(rewards);
    const total = { accepted: 0, duplicates: 0, results: [] };
    for (let i = 0; i < items.length; i += this.batchSize) {
      const part = await this.call('reward', experiment, { rewards: items.slice(i, i + this.batchSize) },
        { retryLost: true });
      total.accepted += part.accepted;
      total.duplicates += part.duplicates;
      total.results.push(...part.results);
    }
    return total;
  }

  /**
   * Give back leased assignments no visitor got (assignment blocks): they
   * count nowhere. Batched, each batch retried until answered (a release
   * sent again is a "duplicate"). The summed ReleaseResponse.
   */
  async release(experiment, assignmentIds) {
    const ids = [...assignmentIds].map(String);
    const total = { released: 0, duplicates: 0, results: [] };
    for (let i = 0; i < ids.length; i += this.batchSize) {
      const releases = ids.slice(i, i + this.batchSize).map((id) => ({ assignment_id: id }));
      const part = await this.call('release', experiment, { releases }, { retryLost: true });
      total.released += part.released;
      total.duplicates += part.duplicates;
      total.results.push(...part.results);
    }
    return total;
  }

  /**
   * Say which unit got which leased assignment ({id: unit} or [id, unit]
   * pairs): the unit gets it back when it asks with its unit. Batched,
   * retried (idempotent). The summed ServedResponse.
   */
  async served(experiment, units) {
    const pairs = Array.isArray(units) ? units : Object.entries(units);
    const total = { bound: 0, duplicates: 0, results: [] };
    for (let i = 0; i < pairs.length; i += this.batchSize) {
      const served = pairs.slice(i, i + this.batchSize)
        .map(([id, unit]) => ({ assignment_id: String(id), unit: String(unit) }));
      const part = await this.call('served', experiment, { served }, { retryLost: true });
      total.bound += part.bound;
      total.duplicates += part.duplicates;
      total.results.push(...part.results);
    }
    return total;
  }

  /** Assignments leased `size` at a time and handed out locally (AssignmentBlock). */
  block(experiment, size, { bandit } = {}) {
    return new AssignmentBlock(this, experiment, size, { bandit });
  }

  /**
   * Queue a reward, sent with the next flush: after flushMs, on flush(), or by
   * beacon when the page is hidden. A second report of the same assignment
   * replaces the first while queued.
   */
  report(experiment, assignmentId, value) {
    if (!this.queue.has(experiment)) this.queue.set(experiment, new Map());
    this.queue.get(experiment).set(assignmentId, Number(value));
    if (this.timer === null && this.flushMs > 0) {
      this.timer = setTimeout(() => { this.timer = null; this.flush().catch(() => {}); }, this.flushMs);
    }
  }

  /** Send every queued reward by fetch (retried); what was sent, by experiment. */
  async flush() {
    if (this.timer !== null) { clearTimeout(this.timer); this.timer = null; }
    const out = {};
    const pending = [...this.queue.entries()];
    this.queue.clear();
    for (const [experiment, m] of pending) {
      try {
        out[experiment] = await this.reward(experiment, [...m.entries()]);
      } catch (e) {
        // back in the queue (idempotent: sending them again is safe)
        for (const [id, v] of m) {
          if (!this.queue.has(experiment)) this.queue.set(experiment, new Map());
          if (!this.queue.get(experiment).has(id)) this.queue.get(experiment).set(id, v);
        }
        throw e;
      }
    }
    return out;
  }

  /**
   * Send every queued reward by navigator.sendBeacon (the key as
   * access_token: it must be a key limited to experiments, `banditd keys
   * create --experiments`; the body as text/plain, which needs no
   * preflight). Where there is no beacon, fetch with keepalive. Returns
   * whether every batch was handed to the browser.
   */
  flushByBeacon() {
    if (this.timer !== null) { clearTimeout(this.timer); this.timer = null; }
    let all = true;
    const pending = [...this.queue.entries()];
    this.queue.clear();
    for (const [experiment, m] of pending) {
      const items = rewardItems([...m.entries()]);
      for (let i = 0; i < items.length; i += this.batchSize) {
        const ok = this.sendBeacon(experiment, items.slice(i, i + this.batchSize));
        if (!ok) {
          all = false;
          if (!this.queue.has(experiment)) this.queue.set(experiment, new Map());
          for (const it of items.slice(i, i + this.batchSize)) {
            this.queue.get(experiment).set(it.assignment_id, it.reward);
          }
        }
      }
    }
    return all;
  }

  /** One beacon of rewards; whether the browser took it. */
  sendBeacon(experiment, items) {
    const [, , template] = OPERATIONS.reward;
    let url = this.baseUrl + template.replace('{id}', encodeURIComponent(experiment));
    if (this.key) url += '?access_token=' + encodeURIComponent(this.key);
    const body = JSON.stringify({ rewards: items });
    const nav = globalThis.navigator;
    if (this.beacon && nav && typeof nav.sendBeacon === 'function') {
      try { return nav.sendBeacon(url, body); } catch { return false; }
    }
    this.fetch(url, { method: 'POST', body, keepalive: true,
      headers: { 'Content-Type': 'text/plain;charset=UTF-8' } }).catch(() => {});
    return true;
  }

  // --- transport ----------------------------------------------------------------------

  async call(op, experiment, body, { retryLost }) {
    const [, method, template] = OPERATIONS[op];
    const path = template.replace('{id}', encodeURIComponent(experiment ?? ''));
    let delay = this.backoffMs;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.send(method, path, body);
      } catch (e) {
        if (!(e instanceof BanditdError)) throw e;
        const lost = e.status === 0;
        if (attempt >= this.retries || !e.retryable || (lost && !retryLost)) throw e;
        const wait = e.retryAfter != null ? e.retryAfter * 1000 : delay * (0.5 + Math.random());
        await sleep(Math.min(wait, 30000));
        delay = Math.min(delay * 2, 10000);
      }
    }
  }

  async send(method, path, body) {
    const headers = { Accept: 'application/json' };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (this.key) headers.Authorization = 'Bearer ' + this.key;
    let res;
    try {
      res = await this.fetch(this.baseUrl + path, {
        method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (e) {
      throw new BanditdError(0, {
        type: 'urn:banditd:client:unreachable', title: 'No answer from banditd', status: 0,
        detail: `${method} ${this.baseUrl + path}: ${e && e.message ? e.message : e}`,
      });
    }
    const text = await res.text();
    if (res.ok) return text ? JSON.parse(text) : null;
    let problem;
    try {
      problem = JSON.parse(text);
      if (!problem || typeof problem !== 'object') throw new Error('not an object');
    } catch {
      problem = { type: 'about:blank', title: res.statusText || 'HTTP error', status: res.status,
        detail: text.slice(0, 200) };
    }
    const ra = res.headers.get('Retry-After');
    const secs = ra != null && ra !== '' && !Number.isNaN(Number(ra)) ? Number(ra) : null;
    throw new BanditdError(res.status, problem, secs);
  }
}

/**
 * Assignments leased `size` at a time (a service serving many visitors):
 * take() hands out the next one without a round trip, leasing a new block
 * when this one is used up (concurrent takes share one lease), and notes
 * which unit got it; flush() sends those notes; close() flushes and
 * releases what no visitor got. The size trades round trips against how
 * fresh the allocation is (docs/measurements.md, "Assignment blocks").
 */
export class AssignmentBlock {
  constructor(client, experiment, size, { bandit } = {}) {
    if (!(size >= 1)) throw new RangeError('banditd: a block holds at least 1 assignment');
    this.client = client;
    this.experiment = experiment;
    this.size = size;
    this.bandit = bandit;
    this.leased = [];
    this.units = [];
    this.roundTrips = 0;
    this.leasing = null;
  }

  async take(unit) {
    while (this.leased.length === 0) {
      if (!this.leasing) {
        // a lost answer is not sent again: its block expires unanswered
        this.leasing = this.client.assign(this.experiment, { bandit: this.bandit, count: this.size })
          .then((got) => { this.leased.push(...got); this.roundTrips++; })
          .finally(() => { this.leasing = null; });
      }
      await this.leasing;
    }
    const a = this.leased.shift();
    if (unit != null) this.units.push([a.id, String(unit)]);
    return a;
  }

  /** Send which unit got which; null when there is nothing to send. */
  async flush() {
    if (this.units.length === 0) return null;
    const units = this.units;
    this.units = [];
    try {
      return await this.client.served(this.experiment, units);
    } catch (e) {
      this.units = units.concat(this.units); // kept: sending them again is safe
      throw e;
    }
  }

  /** Flush, and release what no visitor got. */
  async close() {
    await this.flush();
    if (this.leasing) await this.leasing.catch(() => {});
    if (this.leased.length === 0) return null;
    const left = this.leased.map((a) => a.id);
    this.leased = [];
    return this.client.release(this.experiment, left);
  }
}

function rewardItems(rewards) {
  if (Array.isArray(rewards)) {
    return rewards.map((r) => (Array.isArray(r)
      ? { assignment_id: String(r[0]), reward: Number(r[1]) }
      : { assignment_id: String(r.assignment_id), reward: Number(r.reward) }));
  }
  return Object.entries(rewards).map(([id, v]) => ({ assignment_id: id, reward: Number(v) }));
}
