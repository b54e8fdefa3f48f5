// app.js — banditd's dashboard. One HTML shell, two views chosen by the
// path: "/" lists the experiments (with a form to create one), and
// "/experiments/{id}" shows one experiment's confidence, arms and stop
// decision. Both poll the public API while the tab is visible; the
// experiment view sends If-None-Match so that an unchanged experiment costs
// a 304 and no redraw.

import { api, ApiError, download, expPath, getKey, setKey } from './api.js';
import { ConfidenceChart, PullsChart, drawControl, drawIntervals, drawPullsHistogram, plotOf, ranked } from './charts.js';
import { armColours } from './colours.js';
import { STOP_WORDS, bandit_series, blindedDecision, decision, fmtAge, fmtInt, fmtNum, fmtParam, fmtProb, planSentence } from './format.js';

const POLL_LIVE_MS = 2000; // running or paused: things change
const POLL_IDLE_MS = 10000; // stopped: only late rewards of pending assignments
const LIST_POLL_MS = 5000;
const FOLD_BANDITS = 4; // more bandits than this: their charts start folded

// --- DOM helpers -------------------------------------------------------------

function h(tag, attrs = {}, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v === null || v === undefined) continue;
    if (k === 'class') el.className = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const kid of kids.flat()) if (kid !== null && kid !== undefined && kid !== false) el.append(kid);
  return el;
}

const $ = (sel, root = document) => root.querySelector(sel);

function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}

// A stop is an outcome, not an error: a stop by a proven rule or the
// policy's own rule is green (decided); one by a rule without proof (ρ̄, the
// heuristic GLR), at the budget or by hand is neutral. Red is kept for
// failures (none of the states is one).
const STOP_TONE = { delta_c: 'decided', glr: 'decided', policy: 'decided', superiority: 'decided', futility: 'decided', 'glr-heuristic': 'neutral', rho: 'neutral', budget: 'neutral', manual: 'neutral' };

function badgeClass(state, reason) {
  return state === 'stopped' ? `badge badge-stopped badge-${STOP_TONE[reason] || 'neutral'}` : `badge badge-${state}`;
}

function badge(state, reason) {
  return h('span', { class: badgeClass(state, reason), title: reason ? `stopped: ${STOP_WORDS[reason] || reason}` : null }, state);
}

// --- page frame: key, live indicator, errors ---------------------------------

const ui = {
  main: null,
  live: null,
  alert: null,
  keyBtn: null,
  keyDialog: null,
  // Admin actions are offered when the API answered without a key (open
  // API: every caller is admin) or a key was typed (its scopes cannot be
  // known without trying), unless that key was refused one (403).
  openApi: false,
  refusedKey: null,
  // The key (or '') for which we last asked for a key on a 401: ask once,
  // not at every poll.
  askedFor: null,
  onKeyChange: null,
};

function adminOk() {
  const key = getKey();
  return key ? key !== ui.refusedKey : ui.openApi;
}

// A GET answered: without a key, the API is open.
function answered() {
  if (!getKey()) ui.openApi = true;
}

function showAlert(msg) {
  ui.alert.hidden = !msg;
  setText(ui.alert, msg || '');
}

function setLive(text) {
  setText(ui.live, text);
}

function refreshKeyButton() {
  setText(ui.keyBtn, getKey() ? 'API key: set' : 'API key');
}

function openKeyDialog(reason) {
  setText($('#key-reason', ui.keyDialog), reason || 'The key is kept in this browser tab only (sessionStorage) and sent as Authorization: Bearer.');
  $('#key-input', ui.keyDialog).value = getKey();
  if (!ui.keyDialog.open) ui.keyDialog.showModal();
  $('#key-input', ui.keyDialog).focus();
}

function frame() {
  const root = document.getElementById('app');
  ui.keyBtn = h('button', { type: 'button', class: 'linkish', id: 'key-button', onclick: () => openKeyDialog() }, 'API key');
  ui.live = h('span', { class: 'live', role: 'status', 'aria-live': 'polite' }, '');
  const header = h('header', { class: 'top' },
    h('a', { href: '/', class: 'brand' }, 'banditd'),
    h('nav', { 'aria-label': 'Main' }, h('a', { href: '/' }, 'Experiments')),
    h('div', { class: 'top-right' }, ui.live, ui.keyBtn));
  ui.alert = h('div', { class: 'alert', role: 'alert', hidden: true });
  ui.main = h('main', { id: 'main' });
  const input = h('input', { id: 'key-input', type: 'password', autocomplete: 'off', spellcheck: 'false', name: 'key' });
  ui.keyDialog = h('dialog', { id: 'key-dialog', 'aria-labelledby': 'key-title' },
    h('form', { method: 'dialog', onsubmit: (ev) => {
      const forget = ev.submitter && ev.submitter.value === 'forget';
      if (ev.submitter && ev.submitter.value === 'cancel') return;
      setKey(forget ? '' : input.value.trim());
      refreshKeyButton();
      if (ui.onKeyChange) ui.onKeyChange();
    } },
    h('h2', { id: 'key-title' }, 'API key'),
    h('p', { id: 'key-reason', class: 'muted' }),
    h('label', { for: 'key-input' }, 'Key'),
    input,
    h('div', { class: 'buttons' },
      h('button', { value: 'save', class: 'primary' }, 'Use this key'),
      h('button', { value: 'forget' }, 'Forget key'),
      h('button', { value: 'cancel', formnovalidate: true }, 'Cancel'))));
  root.replaceChildren(header, ui.alert, ui.main, ui.keyDialog);
  refreshKeyButton();
}

// Errors of a poll: a 401 asks for a key, the rest is shown and retried.
function reportError(err) {
  if (err instanceof ApiError && err.status === 401) {
    showAlert(getKey() ? 'The daemon does not know this API key.' : 'This daemon needs an API key with the read scope.');
    if (!getKey()) ui.openApi = false;
    if (!ui.keyDialog.open && ui.askedFor !== getKey()) {
      ui.askedFor = getKey();
      openKeyDialog('This daemon needs an API key. It is kept in this browser tab only and sent as Authorization: Bearer.');
    }
  } else if (err instanceof ApiError && err.status === 403) {
    showAlert(`This API key lacks the scope for that: ${err.message}`);
  } else if (err instanceof ApiError) {
    showAlert(err.message);
  } else {
    showAlert('Cannot reach the daemon; retrying.');
  }
}

// Calls fn now and then every interval() ms while the tab is visible; a
// hidden tab stops polling, and showing it again polls at once.
function poller(fn, interval) {
  let timer = null;
  let busy = false;
  let stopped = false;
  async function tick() {
    timer = null;
    if (stopped || document.hidden) return;
    busy = true;
    try {
      await fn();
    } finally {
      busy = false;
      schedule();
    }
  }
  function schedule() {
    clearTimeout(timer);
    timer = null;
    if (!stopped && !document.hidden) timer = setTimeout(tick, interval());
  }
  function onVisibility() {
    if (document.hidden) {
      clearTimeout(timer);
      timer = null;
      setLive('Paused while this tab is hidden');
    } else if (!busy) {
      tick();
    }
  }
  document.addEventListener('visibilitychange', onVisibility);
  tick();
  return {
    now() {
      if (!busy) tick();
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
      document.removeEventListener('visibilitychange', onVisibility);
    },
  };
}

const clock = () => new Date().toLocaleTimeString('en-GB', { hour12: false });

// --- "/": the list -------------------------------------------------------------

const NUM_COLS = ['Pulls', 'Pending', 'δᶜ'];

function listView() {
  document.title = 'Experiments · banditd';
  let shown = 50;
  let next = null;
  const policies = new Set(['adapt']); // and whatever the list shows
  const tbody = h('tbody');
  const empty = h('p', { class: 'muted', hidden: true }, 'No experiments yet. Create one below, or with POST /v1/experiments.');
  const more = h('button', { type: 'button', hidden: true, onclick: () => { shown += 50; poll.now(); } }, 'Show more');
  const table = h('table', { class: 'list' },
    h('caption', { class: 'sr-only' }, 'Experiments, by id'),
    h('thead', {}, h('tr', {}, ['Experiment', 'State', 'Policy', 'Pulls', 'Pending', 'δᶜ', 'Bandits done', 'Stop reason', 'Age'].map((t) =>
      h('th', { scope: 'col', class: NUM_COLS.includes(t) ? 'num' : null }, t)))),
    tbody);
  const createBox = createForm(policies);
  ui.main.replaceChildren(
    h('h1', {}, 'Experiments'),
    h('div', { class: 'table-wrap' }, table),
    empty, more, createBox);

  function row(e) {
    const href = `/experiments/${encodeURIComponent(e.id)}`;
    const cells = [
      ['Experiment', h('a', { href }, e.name || e.id), e.name && e.name !== e.id ? h('span', { class: 'muted small' }, ` ${e.id}`) : null],
      ['State', badge(e.state, e.stop_reason)],
      ['Policy', e.policy],
      ['Pulls', fmtInt(e.pulls)],
      ['Pending', fmtInt(e.pending)],
      ['δᶜ', fmtProb(e.delta_c)],
      ['Bandits done', `${fmtInt(e.bandits_done)} of ${fmtInt(e.bandits)}`],
      ['Stop reason', e.stop_reason ? STOP_WORDS[e.stop_reason] || e.stop_reason : '–'],
      ['Age', h('time', { datetime: e.created_at, title: e.created_at }, fmtAge(e.created_at))],
    ];
    return h('tr', { 'data-id': e.id }, cells.map(([label, ...v], i) => h(i === 0 ? 'th' : 'td', { 'data-label': label, scope: i === 0 ? 'row' : null, class: NUM_COLS.includes(label) ? 'num' : null }, ...v)));
  }

  async function load() {
    try {
      const items = [];
      let after = null;
      // Fetch as many as are shown, page by page (the API caps a page).
      do {
        const q = new URLSearchParams({ limit: String(Math.min(1000, shown - items.length)) });
        if (after) q.set('after', after);
        const r = await api(`/v1/experiments?${q}`);
        items.push(...r.body.experiments);
        after = r.body.next;
      } while (after && items.length < shown);
      next = after;
      answered();
      createBox.hidden = !adminOk();
      for (const e of items) policies.add(e.policy);
      tbody.replaceChildren(...items.map(row));
      empty.hidden = items.length > 0;
      table.hidden = items.length === 0;
      more.hidden = !next;
      showAlert('');
      setLive(`Updated ${clock()}`);
    } catch (err) {
      reportError(err);
    }
  }
  const poll = poller(load, () => LIST_POLL_MS);
  ui.onKeyChange = () => poll.now();
}

// The create form: a simple experiment (one bandit), for admin keys.
function createForm(policies) {
  const field = (id, label, input, hint) =>
    h('div', { class: 'field' }, h('label', { for: id }, label), input, hint ? h('span', { class: 'hint', id: `${id}-hint` }, hint) : null);
  const inp = (id, attrs) => h('input', { id, name: id, ...attrs, 'aria-describedby': `${id}-hint` });
  const datalist = h('datalist', { id: 'policy-names' });
  const msg = h('div', { class: 'form-msg', role: 'status', 'aria-live': 'polite' });
  const form = h('form', { id: 'create-form', novalidate: false },
    field('f-name', 'Name', inp('f-name', { type: 'text', maxlength: 200, placeholder: 'Checkout button colour' }), 'Shown in lists; optional.'),
    field('f-id', 'ID', inp('f-id', { type: 'text', pattern: '[A-Za-z0-9_.\\-]{1,64}', placeholder: 'checkout-button' }), 'Letters, digits, _ . -; generated when empty.'),
    field('f-arms', 'Arms', inp('f-arms', { type: 'text', required: true, placeholder: 'red, green, blue' }), 'Two or more, separated by commas.'),
    field('f-policy', 'Policy', inp('f-policy', { type: 'text', list: 'policy-names', placeholder: 'adapt' }), 'Empty: the daemon\'s default (adapt; sar with a budget).'),
    field('f-m', 'Best arms wanted (m)', inp('f-m', { type: 'number', min: 1, step: 1, value: 1, required: true }), 'Top-m identification; 1 for the single best arm.'),
    field('f-delta', 'Error probability (δ)', inp('f-delta', { type: 'number', min: 0.0001, max: 0.5, step: 'any', value: 0.05, required: true }), 'The chance of a wrong answer it may stop with (a proven bound).'),
    field('f-budget', 'Budget (pulls)', inp('f-budget', { type: 'number', min: 1, step: 1 }), 'Empty: fixed confidence. Set: a fixed budget.'),
    field('f-means', 'Guessed means (for a plan)', inp('f-means', { type: 'text', placeholder: '0.10, 0.12, 0.11' }), 'One per arm, in [0, 1]: "Plan" estimates the pulls to stop.'),
    datalist,
    h('div', { class: 'buttons' }, h('button', { type: 'submit', class: 'primary' }, 'Create experiment'),
      h('button', { type: 'button', id: 'plan-button' }, 'Plan')),
    msg);
  const v = (id) => $(`#${id}`, form).value.trim();
  // The create body of the form's fields (the plan sends the same).
  const formBody = () => {
    const arms = v('f-arms').split(',').map((a) => a.trim()).filter(Boolean);
    const body = {
      goal: { m: Number(v('f-m')), epsilon: 0, delta: Number(v('f-delta')), budget: v('f-budget') ? Number(v('f-budget')) : null },
      arms,
    };
    if (v('f-policy')) body.policy = { name: v('f-policy'), params: {} };
    if (v('f-name')) body.name = v('f-name');
    if (v('f-id')) body.id = v('f-id');
    return body;
  };
  const showProblem = (err, what, needKey) => {
    msg.className = 'form-msg error';
    if (err instanceof ApiError) {
      if (err.status === 403) ui.refusedKey = getKey();
      const errs = err.problem?.errors || [];
      msg.replaceChildren(h('strong', {}, err.status === 403 ? `This key cannot ${what} (admin scope needed).` : err.message),
        errs.length ? h('ul', {}, errs.map((e) => h('li', {}, `${e.field || 'body'}: ${e.message}`))) : null);
      if (err.status === 401) openKeyDialog(needKey);
    } else {
      setText(msg, 'Cannot reach the daemon.');
    }
  };
  // POST /v1/plan: the lower bound T*(μ)·kl(δ, 1 − δ) and a quick
  // simulation of the same engine, on the guessed means.
  $('#plan-button', form).addEventListener('click', async () => {
    const means = v('f-means').split(',').map((x) => Number(x.trim())).filter((x) => !Number.isNaN(x));
    setText(msg, 'Planning…');
    msg.className = 'form-msg';
    try {
      const r = await api('/v1/plan', { method: 'POST', body: { experiment: formBody(), means, runs: 50 } });
      setText(msg, planSentence(r.body));
    } catch (err) {
      showProblem(err, 'plan experiments', 'Planning an experiment needs an admin API key.');
    }
  });
  form.addEventListener('focusin', () => datalist.replaceChildren(...[...policies].sort().map((p) => h('option', { value: p }))));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    setText(msg, 'Creating…');
    msg.className = 'form-msg';
    try {
      const r = await api('/v1/experiments', { method: 'POST', body: formBody() });
      setText(msg, `Created ${r.body.id}.`);
      location.assign(`/experiments/${encodeURIComponent(r.body.id)}`);
    } catch (err) {
      showProblem(err, 'create experiments', 'Creating an experiment needs an admin API key.');
    }
  });
  return h('details', { class: 'create', hidden: true },
    h('summary', {}, 'New experiment'),
    h('p', { class: 'muted' }, 'One bandit, rewards in [0, 1]. For segments, constraints and the other options, POST the full JSON to /v1/experiments.'),
    form);
}

// --- "/experiments/{id}" ---------------------------------------------------------

function statItem(label, id) {
  return h('div', { class: 'stat' }, h('dt', {}, label), h('dd', { id }, '–'));
}

// The arm's colour in the charts (set through CSSOM: the page's CSP
// allows no inline style attributes).
function swatch(colour) {
  const el = h('span', { class: 'swatch', 'aria-hidden': 'true' });
  el.style.backgroundColor = colour;
  return el;
}

// Goal type control: an arm's comparison with the control, in a cell.
function vsControlCell(a) {
  if (a.control) return 'control';
  const v = a.vs_control;
  return v ? `${fmtNum(v.lower)} – ${fmtNum(v.upper)}: ${v.decision}` : '–';
}

function armsTable(bandit, status) {
  const arms = ranked(bandit);
  const colours = armColours(bandit.arms.map((a) => a.id));
  const vs = bandit.arms.some((a) => a.vs_control);
  const heads = ['Arm', 'Pulls', 'Pending', 'Mean', 'Interval', ...(vs ? ['Difference with the control'] : []), status.m > 1 ? `In top ${status.m}` : 'Best'];
  return h('table', { class: 'arms' },
    h('caption', {}, 'Arms, best mean first'),
    h('thead', {}, h('tr', {}, heads.map((t, i) =>
      h('th', { scope: 'col', class: i >= 1 && i <= 4 ? 'num' : null }, t)))),
    h('tbody', {}, arms.map((a) => h('tr', {},
      h('th', { scope: 'row' }, swatch(colours[a.index]), a.id),
      h('td', { class: 'num' }, fmtInt(a.pulls)),
      h('td', { class: 'num' }, fmtInt(a.pending)),
      h('td', { class: 'num' }, fmtNum(a.mean)),
      h('td', { class: 'num' }, `${fmtNum(a.lower)} – ${fmtNum(a.upper)}`),
      ...(vs ? [h('td', {}, vsControlCell(a))] : []),
      h('td', {}, a.high ? '✓ yes' : 'no')))));
}

// A table of the history beside the confidence chart: at most 12 rows,
// evenly spread, the last one always in.
function historyTable(series, delta) {
  const n = series.x.length;
  const idx = [];
  const want = Math.min(n, 12);
  for (let i = 0; i < want; i++) idx.push(Math.round((i * (n - 1)) / Math.max(1, want - 1)));
  return h('table', { class: 'hist' },
    h('caption', {}, 'δᶜ and ρ̄ at some points in time'),
    h('thead', {}, h('tr', {}, ['Pulls', 'δᶜ', 'ρ̄'].map((t) => h('th', { scope: 'col', class: 'num' }, t)))),
    h('tbody', {}, [...new Set(idx)].map((i) => h('tr', {},
      h('td', { class: 'num' }, fmtInt(series.x[i])),
      h('td', { class: 'num' }, fmtProb(series.dc[i], delta)),
      h('td', { class: 'num' }, fmtProb(series.rho[i]))))));
}

function figure(cls, caption, body, fallback, note) {
  return h('figure', { class: `chart ${cls}` }, h('figcaption', {}, caption), body,
    note ? h('p', { class: 'hint' }, note) : null,
    fallback ? h('details', { class: 'fallback' }, h('summary', {}, 'Numbers'), fallback) : null);
}

const CONF_CAPTION = 'δᶜ and ρ̄ against pulls (log scale; the dashed line is the target δ)';
// The two SVG figures' captions and notes: best-arm goals (K&S's figures)
// and comparisons with control.
const SVG_FIGURES = {
  best: {
    ci: ['Means and confidence intervals against the cutoff c* (Kalyanakrishnan & Stone, Fig. 1)',
      'Solid: recommended arms, which should sit above c*; pale with a hollow dot: the others, below it. Dots are means; bars span the intervals; each arm in its colour.'],
    hist: ['Pulls per arm, best mean first (Kalyanakrishnan & Stone, Fig. 2c)',
      'Adaptive policies spend their pulls on the arms either side of the m | m + 1 boundary. Solid bars: recommended arms.'],
  },
  control: {
    ci: ['Each arm\'s difference with the control: anytime intervals against the margin Δ',
      'An arm is superior once its interval lies above Δ (solid), futile once it lies below (pale); dashed: still open. Dots are the differences of the means; the grey line is no difference. The intervals hold together at every time with probability ≥ 1 − δ.'],
    hist: ['Pulls per arm, the control first',
      'The control keeps about √k times the pulls of each of the k arms still open; a decided arm gets no more. Solid bars: arms declared superior.'],
  },
};
// A fixed budget has no target δ: δ only sets the bounds' level there.
const CONF_CAPTION_BUDGET = 'δᶜ and ρ̄ against pulls (log scale; the dashed line is δ, for reference)';

// One bandit's section: charts, arms table; redrawn on each new status.
class BanditView {
  // collapsed: the charts start folded (experiments with many bandits), and
  // are drawn only while unfolded.
  constructor(bi, multi, collapsed) {
    this.bi = bi;
    this.multi = multi;
    this.collapsed = collapsed;
    this.title = h('h2', {});
    this.doneBadge = h('span', { class: 'badge' });
    this.confHost = h('div', { class: 'plot', role: 'img' });
    this.pullsHost = h('div', { class: 'plot', role: 'img' });
    this.ciHost = h('div', { class: 'svgplot' });
    this.histHost = h('div', { class: 'svgplot' });
    this.histFallback = h('div');
    this.armsHost = h('div', { class: 'table-wrap' });
    const grid = h('div', { class: 'grid' },
        figure('conf', CONF_CAPTION, this.confHost, this.histFallback,
          'δᶜ bounds the chance that the recommendation is wrong, at any time (proven); the δᶜ rule stops at δᶜ ≤ δ, the GLR rule (the default) on its own error bound, the dotted line, named in the decision above. ρ̄ is the Bayesian confidence (no proof), drawn as 1 − ρ̄.'),
        figure('ci', SVG_FIGURES.best.ci[0], this.ciHost, null, SVG_FIGURES.best.ci[1]),
        figure('hist', SVG_FIGURES.best.hist[0], this.histHost, null, SVG_FIGURES.best.hist[1]),
        figure('pulls', 'Pulls per arm against total pulls', this.pullsHost));
    this.fold = collapsed ? h('details', { class: 'charts-fold' }, h('summary', {}, 'Charts'), grid) : null;
    if (this.fold) this.fold.addEventListener('toggle', () => this.fold.open && this.drawCharts());
    this.el = h('section', { class: 'bandit', 'aria-labelledby': `bandit-${bi}-title` },
      h('div', { class: 'bandit-head' }, this.title, this.doneBadge),
      this.fold || grid,
      this.armsHost);
    this.title.id = `bandit-${bi}-title`;
    this.conf = new ConfidenceChart(this.confHost);
    this.pulls = new PullsChart(this.pullsHost);
  }

  // config: the experiment as GET shows it (the control goal's margin Δ).
  render(status, hist, config) {
    const b = status.bandits[this.bi];
    this.margin = config?.goal?.type === 'control' ? config.goal.margin : null;
    setText(this.title, this.multi ? `Bandit ${b.id}` : 'Arms and confidence');
    this.doneBadge.className = `badge ${b.done ? 'badge-done' : 'badge-open'}`;
    setText(this.doneBadge, b.done ? 'done' : 'sampling');
    this.doneBadge.hidden = !this.multi;
    this.last = { status, hist };
    this.armsHost.replaceChildren(armsTable(b, status));
    this.drawCharts();
  }

  drawCharts() {
    if (!this.last || (this.fold && !this.fold.open)) return;
    const { status, hist } = this.last;
    const b = status.bandits[this.bi];
    const series = bandit_series(hist, status, this.bi);
    this.confHost.setAttribute('aria-label', this.conf.update(series, status.delta, !status.budget));
    setText(this.confHost.parentElement.querySelector('figcaption'), status.budget ? CONF_CAPTION_BUDGET : CONF_CAPTION);
    this.histFallback.replaceChildren(historyTable(series, status.delta));
    const armIds = b.arms.map((a) => a.id);
    this.pullsHost.setAttribute('aria-label', this.pulls.update(series, armIds));
    this.redrawSvg();
  }

  // The SVGs are drawn at their host's width; called again on resize.
  redrawSvg() {
    if (!this.last || (this.fold && !this.fold.open)) return;
    const { status } = this.last;
    const b = status.bandits[this.bi];
    const vsControl = b.arms.some((a) => a.vs_control);
    const texts = SVG_FIGURES[vsControl ? 'control' : 'best'];
    for (const [host, [caption, note]] of [[this.ciHost, texts.ci], [this.histHost, texts.hist]]) {
      const fig = host.parentElement;
      setText(fig.querySelector('figcaption'), caption);
      setText(fig.querySelector('.hint'), note);
    }
    if (vsControl) drawControl(this.ciHost, b, this.margin);
    else drawIntervals(this.ciHost, b, status);
    drawPullsHistogram(this.histHost, b, status);
  }

  destroy() {
    this.conf.destroy();
    this.pulls.destroy();
  }
}

function experimentView(id) {
  document.title = `${id} · banditd`;
  const title = h('h1', {}, id);
  const stateBadge = h('span', { class: 'badge' });
  // A blinded view (status.blinded): no per-arm figure reaches this page.
  const blindBadge = h('span', { class: 'badge badge-blinded', id: 'blinded-label', hidden: true, title: 'Per-arm figures are hidden from this API key (it lacks the unblinded scope)' }, 'blinded');
  const meta = h('p', { class: 'meta muted' });
  const headline = h('p', { class: 'headline', id: 'decision' });
  const details = h('ul', { class: 'decision-details' });
  const decisionBox = h('section', { class: 'decision', 'aria-live': 'polite', 'aria-labelledby': 'decision' }, headline, details);
  const ctlMsg = h('p', { class: 'form-msg', role: 'status', 'aria-live': 'polite' });
  const btn = (label, state, cls) => h('button', { type: 'button', class: cls, 'data-state': state, onclick: () => act(state) }, label);
  const pauseBtn = btn('Pause', 'paused');
  const resumeBtn = btn('Resume', 'running', 'primary');
  const stopBtn = btn('Stop…', 'stopped', 'danger');
  const controls = h('div', { class: 'controls', role: 'group', 'aria-label': 'Experiment controls', hidden: true }, pauseBtn, resumeBtn, stopBtn);
  // The goal's card: the budget and how much of it is handed out on a
  // fixed-budget experiment, the target δ on a fixed-confidence one.
  const budgetCard = statItem('Budget', 's-budget');
  const deltaCard = statItem('Target δ', 's-delta');
  const stats = h('dl', { class: 'stats' },
    statItem('Pulls', 's-pulls'), statItem('Pending assignments', 's-pending'), budgetCard, deltaCard,
    statItem('Bandits done', 's-done'));
  const exportLink = (format, label) => h('a', {
    class: 'button', href: `${expPath(id)}/export?format=${format}`, download: `${id}.${format}`, 'data-format': format,
    onclick: (ev) => saveExport(ev, format),
  }, label);
  const exportMsg = h('span', { class: 'form-msg', role: 'status', 'aria-live': 'polite' });
  const exportBox = h('div', { class: 'export', role: 'group', 'aria-label': 'Export the audit trail' },
    h('span', { class: 'muted' }, 'Export every assignment and reward:'), exportLink('ndjson', 'NDJSON'), exportLink('csv', 'CSV'), exportMsg);
  const overview = h('div', { class: 'table-wrap', hidden: true });
  const banditsHost = h('div');
  const confirmDlg = h('dialog', { id: 'stop-dialog', 'aria-labelledby': 'stop-title' },
    h('form', { method: 'dialog' },
      h('h2', { id: 'stop-title' }, 'Stop this experiment?'),
      h('p', {}, 'A stop is final. Assignments will then serve the recommended arm and no longer count as pulls.'),
      h('div', { class: 'buttons' }, h('button', { value: 'stop', class: 'danger' }, 'Stop experiment'), h('button', { value: 'cancel' }, 'Cancel'))));
  confirmDlg.addEventListener('close', () => {
    if (confirmDlg.returnValue === 'stop') patch('stopped');
  });
  ui.main.replaceChildren(
    h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('a', { href: '/' }, 'Experiments'), ' / ', h('span', {}, id)),
    h('div', { class: 'title-row' }, title, stateBadge, blindBadge),
    meta, decisionBox, controls, ctlMsg, stats, overview, banditsHost, exportBox, confirmDlg);

  let status = null;
  let hist = null;
  let statusTag = null;
  let histTag = null;
  let config = null;
  let views = [];
  const ro = new ResizeObserver(() => views.forEach((v) => v.redrawSvg()));
  ro.observe(banditsHost);

  // Without a key the link downloads by itself (streamed to disk); with one
  // the request must carry it, so the file is fetched and saved from memory.
  async function saveExport(ev, format) {
    if (!getKey()) return;
    ev.preventDefault();
    setText(exportMsg, 'Exporting…');
    try {
      await download(`${expPath(id)}/export?format=${format}`, `${id}.${format}`);
      setText(exportMsg, '');
    } catch (err) {
      setText(exportMsg, err instanceof ApiError ? err.message : 'Cannot reach the daemon.');
    }
  }

  function act(state) {
    if (state === 'stopped') confirmDlg.showModal();
    else patch(state);
  }

  async function patch(state) {
    setText(ctlMsg, 'Saving…');
    try {
      const r = await api(expPath(id), { method: 'PATCH', body: { state } });
      config = r.body;
      setText(ctlMsg, `Now ${r.body.state}.`);
      poll.now();
    } catch (err) {
      if (err instanceof ApiError && (err.status === 403 || err.status === 401)) {
        if (err.status === 403) ui.refusedKey = getKey();
        setText(ctlMsg, 'This API key cannot change the experiment: that needs the admin scope.');
        if (err.status === 401) openKeyDialog('Changing an experiment needs an admin API key.');
        renderControls();
      } else {
        setText(ctlMsg, err instanceof ApiError ? err.message : 'Cannot reach the daemon.');
      }
    }
  }

  function renderControls() {
    controls.hidden = !adminOk() || !status || status.state === 'stopped';
    if (!status) return;
    pauseBtn.hidden = status.state !== 'running';
    resumeBtn.hidden = status.state !== 'paused';
  }

  function renderOverview() {
    if (status.bandits.length < 2) {
      overview.hidden = true;
      return;
    }
    overview.hidden = false;
    overview.replaceChildren(h('table', { class: 'overview' },
      h('caption', {}, 'Bandits'),
      h('thead', {}, h('tr', {}, ['Bandit', 'Done', 'Recommended', 'δᶜ', 'ρ̄', 'Pulls', 'Pending'].map((t, i) =>
        h('th', { scope: 'col', class: i >= 3 ? 'num' : null }, t)))),
      h('tbody', {}, status.bandits.map((b) => h('tr', {},
        h('th', { scope: 'row' }, h('a', { href: `#bandit-${status.bandits.indexOf(b)}-title` }, b.id)),
        h('td', {}, h('span', { class: `badge ${b.done ? 'badge-done' : 'badge-open'}` }, b.done ? 'done' : 'sampling')),
        h('td', {}, (b.recommended || []).join(', ') || '–'),
        h('td', { class: 'num' }, fmtProb(b.delta_c, status.delta)),
        h('td', { class: 'num' }, fmtProb(b.rho)),
        h('td', { class: 'num' }, fmtInt(b.arms.reduce((t, a) => t + a.pulls, 0))),
        h('td', { class: 'num' }, fmtInt(b.arms.reduce((t, a) => t + a.pending, 0))))))));
  }

  function render() {
    const name = config?.name && config.name !== id ? config.name : id;
    setText(title, name);
    document.title = `${name} · banditd`;
    stateBadge.className = badgeClass(status.state, status.stop_reason);
    stateBadge.title = status.stop_reason ? `stopped: ${STOP_WORDS[status.stop_reason] || status.stop_reason}` : '';
    setText(stateBadge, status.state);
    const bound = config?.bound ? ` · ${config.bound} bound` : '';
    const created = config?.created_at ? ` · created ${fmtAge(config.created_at)}` : '';
    setText(meta, `${name !== id ? `${id} · ` : ''}policy ${status.policy} · m = ${status.m} · δ = ${fmtParam(status.delta)} · ε = ${fmtParam(status.epsilon)}${bound}${created}`);
    const blinded = !!status.blinded;
    blindBadge.hidden = !blinded;
    const d = blinded ? blindedDecision(status) : decision(status);
    decisionBox.className = `decision tone-${d.tone}`;
    setText(headline, d.headline);
    details.replaceChildren(...d.details.map((t) => h('li', {}, t)));
    setText($('#s-pulls', stats), fmtInt(status.pulls));
    setText($('#s-pending', stats), fmtInt(status.pending));
    budgetCard.hidden = !status.budget;
    deltaCard.hidden = !!status.budget;
    if (status.budget) {
      const used = status.handed_out ?? status.pulls;
      setText($('#s-budget', stats), `${fmtInt(used)} of ${fmtInt(status.budget)} handed out`);
    }
    setText($('#s-done', stats), `${fmtInt(status.bandits_done)} of ${fmtInt(status.bandits.length)}`);
    setText($('#s-delta', stats), fmtParam(status.delta));
    renderControls();
    // Blinded: the totals above are all there is; the charts, the arms and
    // the export (refused to this key) are not drawn.
    exportBox.hidden = blinded;
    if (blinded) {
      overview.hidden = true;
      overview.replaceChildren();
      views.forEach((v) => v.destroy());
      views = [];
      banditsHost.replaceChildren();
      return;
    }
    renderOverview();
    if (views.length !== status.bandits.length) {
      views.forEach((v) => v.destroy());
      const nb = status.bandits.length;
      views = status.bandits.map((b, i) => new BanditView(i, nb > 1, nb > FOLD_BANDITS));
      banditsHost.replaceChildren(...views.map((v) => v.el));
    }
    views.forEach((v) => v.render(status, hist, config));
  }

  async function load() {
    try {
      if (!config) config = (await api(expPath(id))).body;
      answered();
      const s = await api(`${expPath(id)}/status`, { etag: statusTag });
      if (s.status !== 304) {
        const state0 = status?.state;
        status = s.body;
        statusTag = s.etag;
        if (state0 && state0 !== status.state) config = (await api(expPath(id))).body;
        // A blinded history holds nothing the page draws.
        const hr = status.blinded ? null : await api(`${expPath(id)}/history`, { etag: histTag });
        if (hr && hr.status !== 304) {
          hist = hr.body;
          histTag = hr.etag;
        }
        render();
      }
      showAlert('');
      setLive(`Updated ${clock()}`);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) {
        poll.stop();
        ui.main.replaceChildren(h('h1', {}, 'Not found'), h('p', {}, `There is no experiment “${id}”. `, h('a', { href: '/' }, 'All experiments')));
        return;
      }
      reportError(err);
    }
  }
  const poll = poller(load, () => (status && status.state === 'stopped' ? POLL_IDLE_MS : POLL_LIVE_MS));
  ui.onKeyChange = () => {
    statusTag = null; // a new key may see more (or less: blinded): fetch afresh
    histTag = null;
    config = null;
    poll.now();
  };
}

// --- start ------------------------------------------------------------------------

function start() {
  frame();
  const path = location.pathname;
  const m = path.match(/^\/experiments\/([^/]+)\/?$/);
  if (m) experimentView(decodeURIComponent(m[1]));
  else if (path === '/' || path === '') listView();
  else ui.main.replaceChildren(h('h1', {}, 'Not found'), h('p', {}, h('a', { href: '/' }, 'All experiments')));
}

// Exposed for the browser test and for curious users; not an API.
window.banditdDashboard = { armColours, plotOf };

start();
