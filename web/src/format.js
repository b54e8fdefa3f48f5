// format.js — numbers, ages and the stop decision in words. Pure functions
// of the API's JSON (no DOM), so the browser test can also check them
// directly in Node.

const NBSP = '\u00a0';

// 1204 -> "1,204" (the decision sentence's style, whatever the locale).
export function fmtInt(n) {
  return Number(n).toLocaleString('en-US', { maximumFractionDigits: 0 });
}

function trimZeros(s) {
  return s.includes('.') && !s.includes('e') ? s.replace(/\.?0+$/, '') : s;
}

const SUPERSCRIPT = { '-': '⁻', 0: '⁰', 1: '¹', 2: '²', 3: '³', 4: '⁴', 5: '⁵', 6: '⁶', 7: '⁷', 8: '⁸', 9: '⁹' };

// A probability such as δᶜ: two significant digits, more when two digits
// would make it read as equal to, or on the wrong side of, ref (a δᶜ of
// 0.0503 must not print as "0.050 > 0.05"). Tiny values as a × 10⁻ᵏ.
export function fmtProb(v, ref) {
  if (v === null || v === undefined || Number.isNaN(v)) return '–';
  if (v === 0) return '0';
  if (v >= 1) return '1';
  if (v < 1e-4) {
    const [mant, exp] = v.toExponential(1).split('e');
    return `${trimZeros(mant)}×10${String(Number(exp)).replace(/./g, (c) => SUPERSCRIPT[c])}`;
  }
  for (let p = 2; p <= 8; p++) {
    const s = trimZeros(v.toPrecision(p));
    if (ref === undefined || ref === null) return s;
    const r = Number(s);
    if ((r <= ref) === (v <= ref) && (r !== ref || v === ref)) return s;
  }
  return String(v);
}

// A value in reward units: three significant digits, thousands grouped.
export function fmtNum(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return '–';
  if (Math.abs(v) >= 1000) return fmtInt(v);
  if (v === 0) return '0';
  return trimZeros(v.toPrecision(3));
}

// δ, ε as configured: as typed, without float noise.
export function fmtParam(v) {
  return trimZeros(Number(v).toPrecision(6));
}

// The floor of a log axis of probabilities (the confidence chart): a
// decade under delta/10 and under half the smallest positive value of the
// columns, rounded down to a power of ten, but not below 10⁻⁶ (past that,
// more decades tell nothing new). clipped: some value (a 0, or one under
// 10⁻⁶) is drawn at the floor rather than where it is — the axis and the
// legend must then say so.
export const LOG_FLOOR_MIN = 1e-6;
export function logAxisFloor(delta, ...columns) {
  let lo = delta / 10;
  for (const col of columns) for (const v of col) if (v > 0 && v / 2 < lo) lo = v / 2;
  const floor = Math.max(10 ** Math.floor(Math.log10(lo)), LOG_FLOOR_MIN);
  const clipped = columns.some((col) => col.some((v) => v !== null && v !== undefined && !Number.isNaN(v) && v < floor));
  return { floor, clipped };
}

// 12_345 -> "12.3k" (chart ticks).
export function fmtCompact(v) {
  const a = Math.abs(v);
  if (a >= 1e6) return `${trimZeros((v / 1e6).toFixed(1))}M`;
  if (a >= 1e4) return `${trimZeros((v / 1e3).toFixed(1))}k`;
  return fmtInt(v);
}

// "just now", "42 s ago", "5 min ago", "3 h ago", "12 days ago".
export function fmtAge(iso, nowMs = Date.now()) {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '–';
  const s = Math.max(0, Math.round((nowMs - t) / 1000));
  if (s < 5) return 'just now';
  if (s < 60) return `${s}${NBSP}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}${NBSP}min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}${NBSP}h ago`;
  const d = Math.floor(s / 86400);
  return `${d}${NBSP}${d === 1 ? 'day' : 'days'} ago`;
}

// ["a"] -> "a"; ["a","b"] -> "a and b"; ["a","b","c"] -> "a, b and c".
export function listWords(xs) {
  if (xs.length <= 1) return xs.join('');
  return `${xs.slice(0, -1).join(', ')} and ${xs[xs.length - 1]}`;
}

const capitalise = (s) => (s ? s[0].toUpperCase() + s.slice(1) : s);

// "green is the best arm" / "green and blue are the best 2 arms", with the
// ε of the goal when there is one.
function bestPhrase(b, m, eps) {
  const rec = b.recommended || [];
  const within = eps > 0 ? ` (within ε = ${fmtParam(eps)})` : '';
  if (rec.length === 0) return 'no arm is recommended';
  if (m <= 1 && rec.length === 1) return `${rec[0]} is the best arm${within}`;
  return `${listWords(rec)} are the best ${rec.length} arms${within}`;
}

// "green leads" / "green and blue lead".
function leadPhrase(b) {
  const rec = b.recommended || [];
  if (rec.length === 0) return 'no arm leads';
  return `${listWords(rec)} ${rec.length === 1 ? 'leads' : 'lead'}`;
}

// A bandit's stop rule (status bandits[].stop); a status without one is
// read as the δᶜ rule.
function stopOf(b) {
  return b.stop || { rule: 'delta_c', proven: true, evidence: b.delta_c, threshold: null, error_bound: b.delta_c, fired: false };
}

const RULE_WORDS = { delta_c: 'the δᶜ rule', glr: 'the GLR rule', 'glr-heuristic': 'the heuristic GLR rule', rho: 'ρ̄ ≥ τ', none: 'no confidence rule', control: 'the comparisons with the control' };

function ruleName(s, policy) {
  return s.rule === 'policy' ? `the ${policy} policy's rule` : RULE_WORDS[s.rule] || s.rule;
}

// The proven bound on the chance that the bandit's answer is wrong: its
// rule's own when the rule has a proof, else δᶜ (also anytime-valid).
// Both are valid at any moment, a stop by another rule included.
function provenBound(b) {
  const s = stopOf(b);
  if (s.proven && s.error_bound !== null && s.error_bound !== undefined) return { v: s.error_bound, dc: s.rule === 'delta_c' };
  return { v: b.delta_c, dc: true };
}

function conclusiveAt(b, delta) {
  return provenBound(b).v <= delta;
}

// "δᶜ = 0.031 ≤ 0.05" or "an error bound of 0.045 ≤ 0.05".
function boundVsDelta(b, delta) {
  const p = provenBound(b);
  const rel = p.v <= delta ? '≤' : '>';
  return p.dc ? `δᶜ = ${fmtProb(p.v, delta)} ${rel} ${fmtParam(delta)}` : `an error bound of ${fmtProb(p.v, delta)} ${rel} ${fmtParam(delta)}`;
}

// An unproven rule's own comparison: "ρ̄ = 0.957 ≥ τ = 0.95".
function ruleFigures(s) {
  if (s.evidence === null || s.evidence === undefined || s.threshold === null || s.threshold === undefined) return '';
  if (s.rule === 'rho' || (s.rule === 'policy' && s.fires_when === 'evidence >= threshold'))
    return `ρ̄ = ${fmtNum(s.evidence)} ${s.evidence >= s.threshold ? '≥' : '<'} τ = ${fmtParam(s.threshold)}`;
  return `GLR = ${fmtNum(s.evidence)} ${s.evidence > s.threshold ? '>' : '≤'} ${fmtNum(s.threshold)}`;
}

// When the rule will stop the bandit, in words.
function goalWords(b, st) {
  const s = stopOf(b);
  const d = fmtParam(st.delta);
  if (st.budget && (s.rule === 'none' || !s.rule)) return `it stops after ${fmtInt(st.budget)} pulls (${fmtInt(Math.max(0, st.budget - st.pulls))} to go)`;
  if (st.budget) return `it stops after ${fmtInt(st.budget)} pulls (${fmtInt(Math.max(0, st.budget - st.pulls))} to go), or earlier by ${ruleName(s, st.policy)}`;
  switch (s.rule) {
    case 'delta_c': return `it stops at δᶜ ≤ ${d}`;
    case 'glr': return `it stops when the GLR rule's error bound is ≤ ${d}`;
    case 'none': return 'it stops by hand';
    default: return `it stops by ${ruleName(s, st.policy)}${s.proven ? '' : ' (no proof)'}`;
  }
}

// A stop reason in words (the list's column, the badge's title, the
// blinded decision).
export const STOP_WORDS = {
  delta_c: 'δᶜ ≤ δ', glr: 'GLR rule', 'glr-heuristic': 'heuristic GLR (no proof)', rho: 'ρ̄ ≥ τ (no proof)',
  budget: 'budget spent', manual: 'stopped by hand', policy: "policy's rule",
  superiority: 'an arm beats control by Δ', futility: 'no arm beats control by Δ',
};

// The decision of a blinded status (a key without the unblinded scope on
// an experiment created blinded: docs/contract.md, Clinical trials): the
// totals, the pending count and whether and why it stopped, nothing that
// names an arm or measures the evidence. { tone: 'blinded', headline,
// details }.
export function blindedDecision(st) {
  const n = fmtInt(st.pulls);
  const pullsWord = st.pulls === 1 ? 'pull' : 'pulls';
  const pending = `${fmtInt(st.pending)} pending`;
  const details = ['Blinded: this API key sees totals, pending counts and whether and why the experiment stopped. Per-arm figures need a key with the unblinded scope.'];
  let headline;
  if (st.stopped || st.state === 'stopped') {
    const why = st.stop_reason ? ` (${STOP_WORDS[st.stop_reason] || st.stop_reason})` : '';
    headline = `Stopped${why} after ${n} ${pullsWord}, ${pending}.`;
  } else if (st.state === 'paused') {
    headline = `Paused after ${n} ${pullsWord}, ${pending}: no new assignments are handed out.`;
  } else {
    headline = `Running: ${n} ${pullsWord}, ${pending}.`;
  }
  return { tone: 'blinded', headline, details };
}

// The decision of status (GET .../status) in words:
// { tone: 'stopped'|'inconclusive'|'paused'|'running', headline, details: [sentences] };
// 'inconclusive' is a stop whose answer no proven bound puts within δ (a
// budget or manual stop short of it, a stop by a rule without proof).
// details has one line per bandit for multi-bandit experiments. A stop
// names the rule that fired (stop_reason), and says it is conclusive only
// from a proven bound ≤ δ: the rule's own figures frozen at the stop when
// it has a proof, δᶜ otherwise.
export function decision(st) {
  const d = decisionWords(st);
  if (d.tone === 'stopped' && !(st.bandits || []).every((b) => conclusiveAt(b, st.delta))) d.tone = 'inconclusive';
  return d;
}

// Goal type control (docs/contract.md, Comparisons with control): each
// bandit's decisions against its control arm (arms[].vs_control), in words.
// null for another goal.
function controlWords(st) {
  const bandits = st.bandits || [];
  if (!bandits.some((b) => (b.arms || []).some((a) => a.vs_control))) return null;
  const n = fmtInt(st.pulls);
  const pullsWord = st.pulls === 1 ? 'pull' : 'pulls';
  const multi = bandits.length > 1;
  let decided = 0;
  let compared = 0;
  const phrases = [];
  const details = [];
  for (const b of bandits) {
    const arms = b.arms || [];
    const ctl = (arms.find((a) => a.control) || {}).id || 'the control';
    const by = (d) => arms.filter((a) => a.vs_control && a.vs_control.decision === d).map((a) => a.id);
    const sup = by('superior');
    const fut = by('futile');
    const open = by('open');
    decided += sup.length + fut.length;
    compared += sup.length + fut.length + open.length;
    const parts = [];
    if (sup.length) parts.push(`${listWords(sup)} ${sup.length === 1 ? 'beats' : 'beat'} ${ctl} by more than the margin`);
    if (fut.length) parts.push(`${listWords(fut)} ${fut.length === 1 ? 'does' : 'do'} not`);
    if (open.length) parts.push(`${listWords(open)} still open`);
    phrases.push(`${multi ? `${b.id}: ` : ''}${parts.join('; ')}`);
    for (const a of arms) {
      const v = a.vs_control;
      if (!v) continue;
      const diff = v.difference === null || v.difference === undefined ? '–' : fmtNum(v.difference);
      details.push(`${multi ? `${b.id}: ` : ''}${a.id} − ${ctl} = ${diff}, anytime interval ${fmtNum(v.lower)} to ${fmtNum(v.upper)}: ${v.decision}.`);
    }
  }
  const phrase = phrases.join('; ');
  if (st.stopped || st.state === 'stopped') {
    if (st.stop_reason === 'superiority') return { tone: 'stopped', headline: `Stopped for superiority after ${n} ${pullsWord}: ${phrase}.`, details };
    if (st.stop_reason === 'futility') return { tone: 'stopped', headline: `Stopped for futility after ${n} ${pullsWord}: no arm beats the control by the margin.`, details };
    if (st.stop_reason === 'budget') return { tone: 'stopped', headline: `Stopped: the budget is spent after ${n} ${pullsWord}; ${phrase}.`, details };
    if (st.stop_reason === 'manual') return { tone: 'stopped', headline: `Stopped by hand after ${n} ${pullsWord}: ${phrase}.`, details };
    return { tone: 'stopped', headline: `Stopped after ${n} ${pullsWord}: ${phrase}.`, details };
  }
  if (st.pulls === 0) return { tone: st.state, headline: `${st.state === 'paused' ? 'Paused' : 'Running'}: no rewards yet.`, details };
  const count = `${decided} of ${compared} comparisons with the control decided`;
  if (st.state === 'paused') return { tone: 'paused', headline: `Paused after ${n} ${pullsWord}: no new assignments are handed out; ${count} (${phrase}).`, details };
  return { tone: 'running', headline: `Running: ${count} after ${n} ${pullsWord} (${phrase}).`, details };
}

function decisionWords(st) {
  const vs = controlWords(st);
  if (vs) return vs;
  const delta = st.delta;
  const m = st.m || 1;
  const eps = st.epsilon || 0;
  const bandits = st.bandits || [];
  const n = fmtInt(st.pulls);
  const pullsWord = st.pulls === 1 ? 'pull' : 'pulls';
  const nb = bandits.length;
  const done = st.bandits_done ?? bandits.filter((b) => b.done).length;
  const budget = st.budget ? `the budget of ${fmtInt(st.budget)} pulls is spent` : 'the budget is spent';
  const byRule = st.stop_reason && st.stop_reason !== 'budget' && st.stop_reason !== 'manual';

  if (nb === 1) {
    const b = bandits[0];
    const s = stopOf(b);
    const best = bestPhrase(b, m, eps);
    const lead = leadPhrase(b);
    const bd = boundVsDelta(b, delta);
    const sure = conclusiveAt(b, delta);
    const verdict = sure ? `${best} with ${bd}` : `${lead} with ${bd}: not conclusive yet`;
    if (st.stopped || st.state === 'stopped') {
      if (byRule) {
        const rule = ruleName(s, st.policy);
        if (s.proven) {
          const figs = s.rule === 'delta_c' ? '' : ruleFigures(s);
          return { tone: 'stopped', headline: `Stopped by ${rule} after ${n} ${pullsWord}: ${best} with ${bd}${figs ? ` (${figs})` : ''}.`, details: [] };
        }
        const figs = ruleFigures(s);
        return {
          tone: 'stopped',
          headline: `Stopped by ${rule}, a rule without proof, after ${n} ${pullsWord}${figs ? ` (${figs})` : ''}: ${sure ? `${best} with ${bd}` : `${lead} with ${bd}: not proven at δ = ${fmtParam(delta)}`}.`,
          details: [],
        };
      }
      if (st.stop_reason === 'budget') {
        return {
          tone: 'stopped',
          headline: sure ? `Stopped: ${budget}; ${best} with ${bd}.` : `Stopped: ${budget}; ${lead} with ${bd}: the best guess, not conclusive at δ = ${fmtParam(delta)}.`,
          details: [],
        };
      }
      if (st.stop_reason === 'manual') return { tone: 'stopped', headline: `Stopped by hand after ${n} ${pullsWord}: ${verdict}.`, details: [] };
      return { tone: 'stopped', headline: `Stopped after ${n} ${pullsWord}: ${verdict}.`, details: [] };
    }
    if (st.pulls === 0) {
      const what = st.state === 'paused' ? 'Paused' : 'Running';
      return { tone: st.state, headline: `${what}: no rewards yet.`, details: [] };
    }
    const goal = goalWords(b, st);
    if (st.state === 'paused') {
      return {
        tone: 'paused',
        headline: `Paused after ${n} ${pullsWord}: no new assignments are handed out. ${capitalise(lead)} with ${bd.replace(/ [≤>] [^ ]+$/, '')}; ${goal}.`,
        details: [],
      };
    }
    return {
      tone: 'running',
      headline: `Running: ${lead} with ${bd.replace(/ [≤>] [^ ]+$/, '')} after ${n} ${pullsWord}; ${goal}.`,
      details: [],
    };
  }

  // Several bandits: a headline for the experiment, a line per bandit. A
  // bandit is "done" when it gets no more pulls (its rule fired, out of
  // budget, or stopped); whether its answer is conclusive is its proven
  // bound against δ.
  const details = bandits.map((b) => {
    const state = b.done ? 'done' : 'still sampling';
    if (conclusiveAt(b, delta)) return `${b.id}: ${state}, ${bestPhrase(b, m, eps)} (${boundVsDelta(b, delta)}).`;
    return `${b.id}: ${state}, ${leadPhrase(b)} (${boundVsDelta(b, delta)}${b.done ? ': not conclusive' : ''}).`;
  });
  const sure = bandits.filter((b) => conclusiveAt(b, delta)).length;
  const conclusive = `${sure} of ${nb} bandits proven at δ = ${fmtParam(delta)}`;
  const doneWords = `${done} of ${nb} bandits done`;
  if (st.stopped || st.state === 'stopped') {
    if (byRule) {
      const s = stopOf(bandits[0] || {});
      const rule = `${ruleName(s, st.policy)}${s.proven ? '' : ', a rule without proof'}`;
      return {
        tone: 'stopped',
        headline: sure === nb
          ? `Stopped by ${rule}: all ${nb} bandits are decided at δ = ${fmtParam(delta)} after ${n} ${pullsWord}.`
          : `Stopped by ${rule}: all ${nb} bandits met it after ${n} ${pullsWord}; ${conclusive}.`,
        details,
      };
    }
    if (st.stop_reason === 'budget') return { tone: 'stopped', headline: `Stopped: ${budget}; ${conclusive}.`, details };
    if (st.stop_reason === 'manual') return { tone: 'stopped', headline: `Stopped by hand after ${n} ${pullsWord}: ${conclusive}.`, details };
    return { tone: 'stopped', headline: `Stopped after ${n} ${pullsWord}: ${conclusive}.`, details };
  }
  if (st.pulls === 0) {
    const what = st.state === 'paused' ? 'Paused' : 'Running';
    return { tone: st.state, headline: `${what}: no rewards yet in any of the ${nb} bandits.`, details };
  }
  if (st.state === 'paused')
    return { tone: 'paused', headline: `Paused after ${n} ${pullsWord}: no new assignments are handed out; ${doneWords}, ${conclusive}.`, details };
  return { tone: 'running', headline: `Running: ${doneWords} after ${n} ${pullsWord}; ${conclusive}.`, details };
}

// One chart's data from history (GET .../history) for bandit index bi,
// completed with the current status when it is ahead of the last history
// point (history is sampled; status is exact).
export function bandit_series(hist, st, bi) {
  const x = (hist?.pulls || []).slice();
  const hb = hist?.bandits?.[bi];
  const sb = st.bandits[bi];
  const dc = (hb?.delta_c || []).slice();
  const rho = (hb?.rho || []).slice();
  const eb = (hb?.error_bound || dc.map(() => null)).slice();
  const arms = {};
  for (const a of sb.arms) arms[a.id] = (hb?.arm_pulls?.[a.id] || []).slice();
  if (st.pulls > 0 && (x.length === 0 || st.pulls > x[x.length - 1])) {
    x.push(st.pulls);
    dc.push(sb.delta_c);
    rho.push(sb.rho);
    eb.push(sb.stop ? sb.stop.error_bound : null);
    for (const a of sb.arms) arms[a.id].push(a.pulls);
  }
  // The stop rule's own bound gets a line of its own when it is not δᶜ
  // (the GLR rule, a policy's GLR): what the decision's sentence quotes.
  const rule = sb.stop?.rule;
  const ebLabel = rule && rule !== 'delta_c' && eb.some((v) => v !== null && v !== undefined)
    ? `error bound (${rule === 'policy' ? `${st.policy}'s rule` : RULE_WORDS[rule]?.replace(/^the /, '') || rule})`
    : null;
  return { x, dc, rho, arms, eb: ebLabel ? eb : null, ebLabel };
}

// The answer of POST /v1/plan in words: the lower bound no δ-correct
// policy beats, then what the simulation of the same engine gave.
export function planSentence(p) {
  const lb = p.lower_bound?.pulls;
  const s = p.simulation;
  const bound = lb === null || lb === undefined
    ? `No lower bound (${p.lower_bound?.note || 'not defined here'}).`
    : `Any δ-correct policy needs about ${fmtInt(Math.round(lb))} pulls or more on average (T*(μ)·kl(δ, 1 − δ)).`;
  let sim = `${p.policy}, ${fmtInt(s.runs)} simulated run${s.runs === 1 ? '' : 's'}: ${fmtInt(Math.round(s.mean_pulls))} pulls on average `
    + `(median ${fmtInt(Math.round(s.median_pulls))}, 90% within ${fmtInt(Math.round(s.p90_pulls))}), error rate ${fmtProb(s.error_rate)}`;
  if (s.capped > 0) sim += `; ${fmtInt(s.capped)} did not stop within ${fmtInt(s.max_pulls)} pulls`;
  return `${bound} ${sim}.`;
}
