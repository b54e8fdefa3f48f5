// charts.js — the experiment page's pictures. Series over pulls are uPlot
// canvases (δᶜ and 1 − ρ̄ on a log axis with the target δ; pulls per arm);
// per-arm pictures are small SVGs drawn here: means and confidence
// intervals against the cutoff (Kalyanakrishnan & Stone 2010, Fig. 1) and
// pulls per arm sorted by mean (their Fig. 2c); for a comparison with
// control (goal type control), each arm's anytime interval on its
// difference with the control against 0 and the margin Δ, and the pulls
// with the control first. Every chart carries a text
// alternative (aria-label) kept current with the data; tables beside them
// hold the numbers.

import uPlot from 'uplot';
import { armColours } from './colours.js';
import { fmtCompact, fmtInt, fmtNum, fmtParam, fmtProb, logAxisFloor } from './format.js';

const INK = '#1f2933';
const MUTED = '#6b7785';
const GRID = 'rgba(0,0,0,0.08)';
const CUTOFF = '#D55E00';
const DELTA_C = '#0072B2';
const ONE_MINUS_RHO = '#009E73';
const STOP_BOUND = '#CC79A7'; // the stop rule's own error bound, when it is not δᶜ

const SVGNS = 'http://www.w3.org/2000/svg';
function s(tag, attrs = {}, text) {
  const el = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

function axisOpts(label, extra = {}) {
  return {
    label,
    stroke: MUTED,
    grid: { stroke: GRID, width: 1 },
    ticks: { stroke: GRID, width: 1 },
    font: '12px system-ui, sans-serif',
    labelFont: '12px system-ui, sans-serif',
    ...extra,
  };
}

// A legend value formatter: the value under the cursor or, with no
// cursor on the chart, the latest one (so the legend reads as a summary).
// raw() gives the unclipped columns.
function legendValue(raw, fmt) {
  return (u, v, sidx, idx) => {
    const col = raw()[sidx] || [];
    const val = idx == null ? col[col.length - 1] : col[idx];
    return val == null ? '–' : fmt(val);
  };
}

const chartHeight = (w) => Math.round(Math.max(180, Math.min(260, w * 0.55)));

// The chart drawn in each host (its .plot.u is the uPlot instance), for the
// browser test (window.banditdDashboard.plotOf).
const charts = new WeakMap();
export const plotOf = (host) => charts.get(host) || null;

// A uPlot chart in host that follows the host's width. update(data, opts)
// redraws; a changed series layout (key) rebuilds. owner: the chart it
// draws.
class Plot {
  constructor(host, owner) {
    this.host = host;
    charts.set(host, owner);
    this.u = null;
    this.key = '';
    this.ro = new ResizeObserver(() => {
      if (this.u) {
        const w = this.width();
        if (Math.abs(w - this.u.width) > 1) this.u.setSize({ width: w, height: chartHeight(w) });
      }
    });
    this.ro.observe(host);
  }

  width() {
    return Math.max(240, Math.floor(this.host.clientWidth || 320));
  }

  update(key, makeOpts, data) {
    if (this.u && key === this.key) {
      this.u.setData(data);
      return;
    }
    if (this.u) this.u.destroy();
    const w = this.width();
    this.key = key;
    this.u = new uPlot({ width: w, height: chartHeight(w), ...makeOpts() }, data, this.host);
  }

  destroy() {
    this.ro.disconnect();
    if (this.u) this.u.destroy();
    this.u = null;
  }
}

// δᶜ and 1 − ρ̄ against pulls, log y, with δ (the target of a
// fixed-confidence experiment; a reference line on a fixed-budget one). The
// axis reaches a decade under δ and under the smallest δᶜ and 1 − ρ̄
// (logAxisFloor), so the lines are drawn where their values are; only a 0
// or a value under 10⁻⁶ is drawn on the floor, and then the floor's tick
// reads "≤" and the legend says "below the axis".
export class ConfidenceChart {
  constructor(host) {
    this.plot = new Plot(host, this);
  }

  update(series, delta, target = true) {
    const n = series.x.length;
    const oneMinusRho = series.rho.map((r) => Math.max(0, 1 - r));
    const eb = series.eb;
    const { floor, clipped } = logAxisFloor(delta, series.dc, oneMinusRho, ...(eb ? [eb] : []));
    const decades = [];
    for (let e = Math.round(Math.log10(floor)); e <= 0; e++) decades.push(10 ** e);
    const pin = (v) => (v === null || v === undefined ? null : Math.max(v, floor));
    const data = [series.x, series.dc.map(pin), oneMinusRho.map(pin), new Array(n).fill(delta)];
    this.raw = [series.x, series.dc, oneMinusRho, data[3]];
    if (eb) {
      data.push(eb.map(pin));
      this.raw.push(eb);
    }
    this.floor = floor;
    this.clipped = clipped;
    const raw = () => this.raw;
    const prob = (v, ref) => (v < floor ? `${fmtProb(v, ref)}, below the axis` : fmtProb(v, ref));
    const deltaLabel = target ? `target δ = ${fmtParam(delta)}` : `δ = ${fmtParam(delta)}`;
    this.plot.update(
      `conf-${floor}-${clipped}-${deltaLabel}-${series.ebLabel}`,
      () => ({
        scales: { x: { time: false }, y: { distr: 3, range: () => [floor, 1] } },
        axes: [
          axisOpts('pulls', { values: (u, ticks) => ticks.map((t) => (t == null ? '' : fmtCompact(t))) }),
          axisOpts('probability (log scale)', {
            splits: () => decades,
            // uPlot hands null for ticks it has no room to label.
            values: (u, ticks) => ticks.map((t) => (t == null ? '' : this.tick(t))),
            size: 64,
          }),
        ],
        series: [
          { label: 'pulls', value: legendValue(raw, fmtInt) },
          { label: 'δᶜ', stroke: DELTA_C, width: 2, value: legendValue(raw, (v) => prob(v, delta)) },
          { label: '1 − ρ̄', stroke: ONE_MINUS_RHO, width: 1.5, dash: [5, 3], value: legendValue(raw, (v) => prob(v)) },
          { label: deltaLabel, stroke: CUTOFF, width: 1.5, dash: [8, 5], points: { show: false }, value: () => fmtParam(delta) },
          ...(eb ? [{ label: series.ebLabel, stroke: STOP_BOUND, width: 2, dash: [2, 3], value: legendValue(raw, (v) => prob(v, delta)) }] : []),
        ],
        cursor: { drag: { x: false, y: false } },
      }),
      data,
    );
    const last = n - 1;
    const ebWords = eb && eb[last] !== null && eb[last] !== undefined ? ` The ${series.ebLabel} is now ${fmtProb(eb[last], delta)}.` : '';
    return n === 0
      ? 'No pulls yet: δᶜ starts at 1.'
      : `δᶜ went from ${fmtProb(series.dc[0], delta)} to ${fmtProb(series.dc[last], delta)} over ${fmtInt(series.x[last])} pulls; ` +
          `${target ? 'the target δ' : 'δ'} is ${fmtParam(delta)}; ρ̄ is now ${fmtProb(series.rho[last])}.${ebWords}`;
  }

  // The y axis's label of tick t: the floor says "≤" when values sit on it.
  tick(t) {
    return this.clipped && t === this.floor ? `≤${fmtProb(t)}` : fmtProb(t);
  }

  destroy() {
    this.plot.destroy();
  }
}

// Pulls of each arm against total pulls.
export class PullsChart {
  constructor(host) {
    this.plot = new Plot(host, this);
  }

  update(series, armIds) {
    const data = [series.x, ...armIds.map((id) => series.arms[id])];
    const colours = armColours(armIds);
    this.raw = data;
    const raw = () => this.raw;
    this.plot.update(
      `pulls-${armIds.join('\u0000')}`,
      () => ({
        scales: { x: { time: false } },
        axes: [
          axisOpts('pulls (all arms)', { values: (u, ticks) => ticks.map((t) => (t == null ? '' : fmtCompact(t))) }),
          axisOpts('pulls of the arm', { values: (u, ticks) => ticks.map((t) => (t == null ? '' : fmtCompact(t))), size: 56 }),
        ],
        series: [
          { label: 'pulls', value: legendValue(raw, fmtInt) },
          ...armIds.map((id, i) => ({ label: id, stroke: colours[i], width: 2, value: legendValue(raw, fmtInt) })),
        ],
        cursor: { drag: { x: false, y: false } },
        // Past a dozen arms the legend would bury the chart; the arms
        // table has the numbers.
        legend: { show: armIds.length <= 12 },
      }),
      data,
    );
    const n = series.x.length;
    if (n === 0) return 'No pulls yet.';
    return `Pulls per arm over ${fmtInt(series.x[n - 1])} pulls: ${armIds.map((id) => `${id} ${fmtInt(series.arms[id][n - 1])}`).join(', ')}.`;
  }

  destroy() {
    this.plot.destroy();
  }
}

// Arms ranked by mean, best first; arms without a mean last, in order.
export function ranked(bandit) {
  return bandit.arms
    .map((a, i) => ({ ...a, index: i, high: (bandit.recommended || []).includes(a.id) }))
    .sort((a, b) => (b.mean ?? -Infinity) - (a.mean ?? -Infinity) || a.index - b.index);
}

function svgShell(host, height, title, desc) {
  const width = Math.max(240, Math.floor(host.clientWidth || 320));
  const svg = s('svg', { width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': `${title}. ${desc}` });
  svg.append(s('title', {}, title), s('desc', {}, desc));
  return { svg, width };
}

// x slots for k arms in [x0, x1], and whether labels fit upright.
function slots(k, x0, x1) {
  const w = (x1 - x0) / Math.max(1, k);
  return { w, at: (i) => x0 + w * (i + 0.5), rotate: w < 56, hide: w < 11 };
}

function armLabels(g, arms, sl, y) {
  if (sl.hide) return;
  arms.forEach((a, i) => {
    const x = sl.at(i);
    const t = s('text', sl.rotate
      ? { x, y: y + 4, 'text-anchor': 'end', transform: `rotate(-40 ${x} ${y + 4})`, class: 'lbl' }
      : { x, y: y + 14, 'text-anchor': 'middle', class: 'lbl' }, a.id.length > 14 ? `${a.id.slice(0, 13)}…` : a.id);
    g.append(t);
  });
}

function yTicks(lo, hi, count) {
  const span = hi - lo || 1;
  const step0 = span / count;
  const mag = 10 ** Math.floor(Math.log10(step0));
  const step = [1, 2, 2.5, 5, 10].map((f) => f * mag).find((st) => span / st <= count) || 10 * mag;
  const ticks = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push(Number(t.toPrecision(12)));
  return ticks;
}

// The vertical axis both interval charts share: the range of the finite
// values in vals, padded by 5% (a unit range when they all agree), its
// grid, ticks and label, and k arms' slots along the width.
function intervalAxes(vals, k, width, height, labelRoom, label) {
  const m = { l: 48, r: 12, t: 14, b: labelRoom };
  const finite = vals.filter((v) => v !== null && Number.isFinite(v));
  let lo = Math.min(...finite);
  let hi = Math.max(...finite);
  if (hi - lo < 1e-9) { lo -= 0.5; hi += 0.5; }
  const pad = (hi - lo) * 0.05;
  lo -= pad; hi += pad;
  const y = (v) => m.t + (hi - v) / (hi - lo) * (height - m.t - m.b);
  const sl = slots(k, m.l, width - m.r);
  const g = s('g');
  for (const t of yTicks(lo, hi, 5)) {
    g.append(s('line', { x1: m.l, x2: width - m.r, y1: y(t), y2: y(t), stroke: GRID }));
    g.append(s('text', { x: m.l - 6, y: y(t) + 4, 'text-anchor': 'end', class: 'tick' }, fmtNum(t)));
  }
  g.append(s('text', { x: 12, y: m.t + (height - m.t - m.b) / 2, transform: `rotate(-90 12 ${m.t + (height - m.t - m.b) / 2})`, 'text-anchor': 'middle', class: 'tick' }, label));
  return { m, y, sl, g };
}

// Means with confidence intervals against the cutoff c* (K&S Fig. 1): the
// recommended (High) arms should sit above c*, the others below it.
export function drawIntervals(host, bandit, status) {
  const arms = ranked(bandit);
  const labelRoom = arms.length > 6 ? 64 : 26;
  const height = 250 + (labelRoom - 26);
  const eps = status.epsilon || 0;
  const cut = bandit.cutoff;
  const withData = arms.filter((a) => a.mean !== null);
  const desc = withData.length === 0
    ? 'No rewards yet: every interval spans the reward range.'
    : `Cutoff c* = ${fmtNum(cut)}. ` + arms.map((a) => `${a.id}: mean ${fmtNum(a.mean)}, interval ${fmtNum(a.lower)} to ${fmtNum(a.upper)}${a.high ? ', recommended' : ''}`).join('; ') + '.';
  const { svg, width } = svgShell(host, height, 'Means and confidence intervals against the cutoff', desc);
  const vals = arms.flatMap((a) => [a.lower, a.upper]).concat([cut, eps > 0 ? cut - eps : cut]);
  const { m, y, sl, g } = intervalAxes(vals, arms.length, width, height, labelRoom, 'reward');
  const barW = Math.max(2, Math.min(10, sl.w * 0.3));
  const colours = armColours(bandit.arms.map((a) => a.id));
  // Each arm in its own colour; recommended arms solid, the others pale
  // with a dashed outline and a hollow mean.
  arms.forEach((a, i) => {
    const x = sl.at(i);
    const col = colours[a.index];
    const top = y(a.upper);
    const bot = y(a.lower);
    const rect = { x: x - barW / 2, y: top, width: barW, height: Math.max(1, bot - top), fill: col, stroke: col, class: `ci ${a.high ? 'high' : 'low'}`, 'data-arm': a.id };
    g.append(s('rect', a.high ? { ...rect, 'fill-opacity': 0.35 } : { ...rect, 'fill-opacity': 0.08, 'stroke-dasharray': '3 2' }));
    const r = Math.max(2.5, Math.min(5, barW * 0.6));
    if (a.mean !== null) {
      g.append(s('circle', a.high
        ? { cx: x, cy: y(a.mean), r, fill: col, class: 'mean high', 'data-arm': a.id }
        : { cx: x, cy: y(a.mean), r, fill: '#fff', stroke: col, 'stroke-width': 1.5, class: 'mean low', 'data-arm': a.id }));
    }
  });
  // The cutoff, and c* − ε below which a High arm's lower bound may go.
  const cutLine = (v, label, dash) => {
    g.append(s('path', { d: `M${m.l},${y(v)}H${width - m.r}`, stroke: CUTOFF, 'stroke-width': 1.5, 'stroke-dasharray': dash, fill: 'none', class: 'cutoff' }));
    g.append(s('text', { x: width - m.r - 2, y: y(v) - 4, 'text-anchor': 'end', class: 'cut-lbl' }, label));
  };
  cutLine(cut, `c* = ${fmtNum(cut)}`, '7 4');
  if (eps > 0) cutLine(cut - eps, `c* − ε = ${fmtNum(cut - eps)}`, '2 3');
  armLabels(g, arms, sl, height - m.b + 2);
  svg.append(g);
  host.replaceChildren(svg);
  return desc;
}

// Goal type control: the arms compared with the control, in their order.
export function comparedArms(bandit) {
  return bandit.arms.map((a, i) => ({ ...a, index: i })).filter((a) => a.vs_control);
}

// Goal type control (docs/contract.md, Comparisons with control): each
// arm's anytime interval on μ_arm − μ_control, with 0 (no difference) and
// the margin Δ (null: not known) the decisions are taken against: an arm
// is superior once its interval lies above Δ, futile once below. Superior
// arms solid, open ones pale and dashed, futile ones pale; dots are the
// differences of the means.
export function drawControl(host, bandit, margin) {
  const arms = comparedArms(bandit);
  const ctl = (bandit.arms.find((a) => a.control) || {}).id || 'the control';
  const labelRoom = arms.length > 6 ? 64 : 26;
  const height = 250 + (labelRoom - 26);
  const hasMargin = typeof margin === 'number' && Number.isFinite(margin);
  const desc = (hasMargin ? `Margin Δ = ${fmtNum(margin)}. ` : '') + arms.map((a) => {
    const v = a.vs_control;
    return `${a.id} − ${ctl}: difference ${fmtNum(v.difference)}, interval ${fmtNum(v.lower)} to ${fmtNum(v.upper)}, ${v.decision}`;
  }).join('; ') + '.';
  const { svg, width } = svgShell(host, height, `Differences with the control (${ctl}) against the margin`, desc);
  const vals = arms.flatMap((a) => [a.vs_control.lower, a.vs_control.upper]).concat([0, hasMargin ? margin : 0]);
  const { m, y, sl, g } = intervalAxes(vals, arms.length, width, height, labelRoom, `arm − ${ctl}`);
  g.append(s('path', { d: `M${m.l},${y(0)}H${width - m.r}`, stroke: MUTED, 'stroke-width': 1, fill: 'none', class: 'zero' }));
  if (hasMargin) {
    g.append(s('path', { d: `M${m.l},${y(margin)}H${width - m.r}`, stroke: CUTOFF, 'stroke-width': 1.5, 'stroke-dasharray': '7 4', fill: 'none', class: 'margin' }));
    g.append(s('text', { x: width - m.r - 2, y: y(margin) - 4, 'text-anchor': 'end', class: 'cut-lbl' }, `Δ = ${fmtNum(margin)}`));
  }
  const barW = Math.max(2, Math.min(10, sl.w * 0.3));
  const colours = armColours(bandit.arms.map((a) => a.id));
  arms.forEach((a, i) => {
    const v = a.vs_control;
    const x = sl.at(i);
    const col = colours[a.index];
    const sup = v.decision === 'superior';
    const top = y(v.upper);
    const rect = { x: x - barW / 2, y: top, width: barW, height: Math.max(1, y(v.lower) - top), fill: col, stroke: col, class: `vs ${v.decision}`, 'data-arm': a.id, 'data-decision': v.decision };
    g.append(s('rect', sup ? { ...rect, 'fill-opacity': 0.35 }
      : { ...rect, 'fill-opacity': 0.08, ...(v.decision === 'open' ? { 'stroke-dasharray': '3 2' } : {}) }));
    if (v.difference !== null) {
      const r = Math.max(2.5, Math.min(5, barW * 0.6));
      g.append(s('circle', sup ? { cx: x, cy: y(v.difference), r, fill: col, class: 'diff', 'data-arm': a.id }
        : { cx: x, cy: y(v.difference), r, fill: '#fff', stroke: col, 'stroke-width': 1.5, class: 'diff', 'data-arm': a.id }));
    }
  });
  armLabels(g, arms, sl, height - m.b + 2);
  svg.append(g);
  host.replaceChildren(svg);
  return desc;
}

// Pulls per arm, arms ranked by mean, the m | m+1 boundary marked (K&S
// Fig. 2c): an adaptive policy spends its pulls on the arms near it. A
// comparison with control has no such boundary: the control comes first
// (it keeps about √k times the pulls of each of the k open arms), and the
// arms declared superior are solid.
export function drawPullsHistogram(host, bandit, status) {
  const vsControl = bandit.arms.some((a) => a.control);
  const arms = vsControl
    ? ranked(bandit).map((a) => ({ ...a, high: a.vs_control?.decision === 'superior' })).sort((a, b) => (b.control ? 1 : 0) - (a.control ? 1 : 0))
    : ranked(bandit);
  const m = vsControl ? arms.length : Math.min(status.m || 1, arms.length);
  const labelRoom = arms.length > 6 ? 64 : 26;
  const height = 220 + (labelRoom - 26);
  const total = arms.reduce((t, a) => t + a.pulls, 0);
  const desc = total === 0
    ? 'No pulls yet.'
    : (vsControl ? 'The control, then the other arms from the highest mean to the lowest: ' : 'Arms from the highest mean to the lowest: ') +
      arms.map((a) => `${a.id} ${fmtInt(a.pulls)} pulls`).join(', ') + '.';
  const { svg, width } = svgShell(host, height, vsControl ? 'Pulls per arm, the control first' : 'Pulls per arm, arms ranked by mean', desc);
  const mg = { l: 48, r: 12, t: 18, b: labelRoom };
  const hi = Math.max(1, ...arms.map((a) => a.pulls)) * 1.1;
  const y = (v) => mg.t + (hi - v) / hi * (height - mg.t - mg.b);
  const sl = slots(arms.length, mg.l, width - mg.r);
  const g = s('g');
  for (const t of yTicks(0, hi, 4)) {
    g.append(s('line', { x1: mg.l, x2: width - mg.r, y1: y(t), y2: y(t), stroke: GRID }));
    g.append(s('text', { x: mg.l - 6, y: y(t) + 4, 'text-anchor': 'end', class: 'tick' }, fmtCompact(t)));
  }
  const bw = Math.max(1, sl.w * 0.7);
  const colours = armColours(bandit.arms.map((a) => a.id));
  arms.forEach((a, i) => {
    const x = sl.at(i);
    const col = colours[a.index];
    const top = y(a.pulls);
    // Bars as paths: one element type for every bar, zero-height included.
    // Recommended arms solid, the others pale with an outline.
    const d = `M${x - bw / 2},${y(0)}V${top}H${x + bw / 2}V${y(0)}Z`;
    g.append(s('path', a.high
      ? { d, fill: col, class: 'bar high', 'data-arm': a.id }
      : { d, fill: col, 'fill-opacity': 0.25, stroke: col, 'stroke-width': 1, class: 'bar low', 'data-arm': a.id }));
    if (sl.w >= 30 && a.pulls > 0) g.append(s('text', { x, y: top - 4, 'text-anchor': 'middle', class: 'tick' }, fmtCompact(a.pulls)));
  });
  if (m < arms.length) {
    const xb = mg.l + sl.w * m;
    g.append(s('path', { d: `M${xb},${mg.t - 6}V${height - mg.b}`, stroke: CUTOFF, 'stroke-width': 1.5, 'stroke-dasharray': '4 3', fill: 'none', class: 'boundary' }));
    g.append(s('text', { x: xb + 4, y: mg.t + 4, class: 'cut-lbl' }, `m = ${m} | m + 1`));
  }
  g.append(s('line', { x1: mg.l, x2: width - mg.r, y1: y(0), y2: y(0), stroke: MUTED }));
  armLabels(g, arms, sl, height - mg.b + 2);
  svg.append(g);
  host.replaceChildren(svg);
  return desc;
}

export { INK };
