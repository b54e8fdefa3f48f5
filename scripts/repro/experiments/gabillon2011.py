"""Gabillon, Ghavamzadeh, Lazaric & Bubeck (2011), multi-bandit best-arm
identification: Problems 1–3, every η of their Figures 2 and 3, ℓ(n) against
the numbers of their text."""

import json
import math

from ..problems import arm_mean_sd, complexity_h, complexity_h_sigma, rademacher
from ..report import fmt_rate, frac_str, pct, rate_cell, table
from ..stats import Z95, wilson


def gabillon_problems():
    b1 = [rademacher(0, 1.0), rademacher(0.45, 0.45), rademacher(0.25, 0.65), rademacher(0, 0.9)]
    b2 = [rademacher(0.4, 0.6), rademacher(0.45, 0.45), rademacher(0.35, 0.55), rademacher(0.25, 0.65)]
    return {
        1: {"budget": 700, "bandits": [{"arms": [0.5, 0.45, 0.4, 0.3]}, {"arms": [0.5, 0.3, 0.2, 0.1]}]},
        2: {"budget": 1000, "bandits": [{"arms": b1}, {"arms": b2}]},
        3: {"budget": 1400, "bandits": [{"arms": b1}, {"arms": b2}, {"arms": b1}, {"arms": b2}]},
    }


# The η grids of their Figures 2 and 3 (x axes, four values per algorithm).
GABILLON_GRIDS = {
    1: [("Unif+UCB-E", [4, 8, 16, 32]), ("GapE", [2, 4, 8, 16]), ("A-GapE", [1 / 8, 1 / 4, 1 / 2, 1])],
    2: [("GapE", [8, 16, 32, 64]), ("GapE-V", [2, 4, 8, 16]), ("A-GapE-V", [1 / 4, 1 / 2, 1, 2])],
    3: [("Unif+UCB-E", [4, 8, 16, 32]), ("Unif+A-UCB-E", [1, 2, 4, 8]), ("GapE", [4, 8, 16, 32]),
        ("A-GapE", [1 / 4, 1 / 2, 1, 2]), ("GapE-V", [1 / 2, 1, 2, 4]), ("A-GapE-V", [1 / 4, 1 / 2, 1, 2])],
}


# What their text states (Sec. 4); the figures' other points are not given as numbers.
GABILLON_PAPER = {
    (1, "Uniform"): 0.294, (1, "Unif+UCB-E"): 0.239, (1, "GapE"): 0.157,
    (2, "Uniform"): 0.28, (2, "GapE"): 0.25,
}


def section(ctx):
    R = ctx.runs(4000)
    seed = 2011
    probs = gabillon_problems()
    out = ["## Gabillon, Ghavamzadeh, Lazaric & Bubeck (2011): multi-bandit best-arm identification\n\n"]
    out.append(
        "Problems 1–3 of their Sec. 4 (b = 1), budget n as given, ℓ(n) = P(some bandit's "
        "recommendation is wrong) — bandit-sim's `error_rate`. Every η of their Figures 2 and 3 "
        f"(a = η n / H; η n / Hσ for the -V variants). **{R} runs per point** (theirs: 10⁵; "
        "the 95% Wilson interval is about ±1.3 points at 20%). Uniform is round-robin over "
        "bandits and arms. Unif+UCB-E runs UCB-E alone on each bandit with budget n/M and "
        "a = η (n/M)/H_m (their definition), and ℓ = 1 − Π_m (1 − e_m) over the independent "
        "bandits (95% interval by the delta method); Unif+A-UCB-E is one run of `ucb-e` with "
        "the online estimate Ĥ (the engine gives each bandit n/M pulls).\n")
    futures = {}
    info = {}
    for pn, prob in probs.items():
        n = prob["budget"]
        M = len(prob["bandits"])
        ms = [[arm_mean_sd(a) for a in b["arms"]] for b in prob["bandits"]]
        Hm = [complexity_h([x[0] for x in b]) for b in ms]
        Hs = [complexity_h_sigma([x[0] for x in b], [x[1] for x in b]) for b in ms]
        info[pn] = (n, M, Hm, Hs)
        futures[(pn, "Uniform", None)] = ctx.r.submit(f"gab{pn}-uniform", prob, "uniform", R, seed)
        for alg, grid in GABILLON_GRIDS[pn]:
            for eta in grid:
                if alg == "GapE":
                    f = ctx.r.submit(f"gab{pn}-gape", prob, "gape", R, seed, {"eta": eta, "h": sum(Hm)})
                elif alg == "A-GapE":
                    f = ctx.r.submit(f"gab{pn}-agape", prob, "a-gape", R, seed, {"eta": eta})
                elif alg == "GapE-V":
                    f = ctx.r.submit(f"gab{pn}-gapev", prob, "gape-v", R, seed, {"eta": eta, "h": sum(Hs)})
                elif alg == "A-GapE-V":
                    f = ctx.r.submit(f"gab{pn}-agapev", prob, "a-gape-v", R, seed, {"eta": eta})
                elif alg == "Unif+A-UCB-E":
                    f = ctx.r.submit(f"gab{pn}-uaucbe", prob, "ucb-e", R, seed, {"c": eta})
                elif alg == "Unif+UCB-E":
                    # one run per distinct bandit (Problem 3 repeats bandits 1 and 2)
                    f = []
                    seen = {}
                    for b, bandit in enumerate(prob["bandits"]):
                        key = json.dumps(bandit, sort_keys=True)
                        if key in seen:
                            f.append(seen[key])
                            continue
                        sub = {"budget": n // M, "arms": bandit["arms"]}
                        fb = ctx.r.submit(f"gab{pn}-uucbe", sub, "ucb-e", R, seed + 1 + b,
                                          {"a": eta * (n / M) / Hm[b]})
                        seen[key] = fb
                        f.append(fb)
                futures[(pn, alg, eta)] = f

    def verdict(pn, alg, eta):
        """(ℓ, lo, hi, text) for one point."""
        f = futures[(pn, alg, eta)]
        if isinstance(f, list):
            # ℓ = 1 − Π (1 − e_b): delta-method interval over the distinct runs
            uniq = {}
            for x in f:
                uniq.setdefault(id(x), [x.result(), 0])[1] += 1
            keep = 1.0
            for res, c in uniq.values():
                keep *= (1 - res["error_rate"]) ** c
            ell = 1 - keep
            var = 0.0
            for res, c in uniq.values():
                e = res["error_rate"]
                d = c * keep / (1 - e) if e < 1 else 0.0
                var += d * d * e * (1 - e) / res["runs"]
            lo, hi = max(0.0, ell - Z95 * math.sqrt(var)), min(1.0, ell + Z95 * math.sqrt(var))
            e_mean = sum(res["error_rate"] * c for res, c in uniq.values()) / len(f)
            return ell, lo, hi, f"{pct(ell)} [{pct(lo)}, {pct(hi)}]", {"mean_bandit_error_rate": e_mean}
        res = f.result()
        lo, hi = wilson(res["errors"], res["runs"])
        return res["error_rate"], lo, hi, fmt_rate(res["errors"], res["runs"]), res

    for pn in (1, 2, 3):
        n, M, Hm, Hs = info[pn]
        out.append(f"\n### Problem {pn} (n = {n}, M = {M}, K = 4)\n\n")
        out.append(f"H_m = {', '.join(f'{h:.0f}' for h in Hm)} (H = {sum(Hm):.0f}); "
                   f"Hσ_m = {', '.join(f'{h:.0f}' for h in Hs)} (Hσ = {sum(Hs):.0f}).")
        if pn == 1:
            out.append(" Theirs: H₁ ≃ 925, H₂ ≃ 67.")
        elif pn == 2:
            out.append(" Theirs: Hσ₁ ≃ 1400, Hσ₂ ≃ 600.")
        out.append("\n\n")
        uni = futures[(pn, "Uniform", None)].result()
        rows = [["Uniform", "—", rate_cell(uni), pct(uni["mean_bandit_error_rate"]),
                 pct(GABILLON_PAPER[(pn, "Uniform")]) if (pn, "Uniform") in GABILLON_PAPER else "figure"]]
        series = []
        xt = []
        best = {}
        for gi, (alg, grid) in enumerate(GABILLON_GRIDS[pn]):
            pts = []
            for j, eta in enumerate(grid):
                ell, lo, hi, txt, res = verdict(pn, alg, eta)
                x = gi * 5 + j + 1
                pts.append((x, ell, lo, hi))
                xt.append((frac_str(eta), x))
                if alg not in best or ell < best[alg][0]:
                    best[alg] = (ell, eta, txt)
                paper = "figure"
                if (pn, alg) in GABILLON_PAPER:
                    paper = pct(GABILLON_PAPER[(pn, alg)]) + " (best η)"
                rows.append([alg, frac_str(eta), txt,
                             pct(res["mean_bandit_error_rate"]) if res else "—", paper if j == 0 else ""])
            series.append({"label": alg, "points": pts, "style": "errorbars"})
        # The paper's numbers from its text (best η; their figure has the rest), at the group's centre.
        paper_pts = [(gi * 5 + 2.5, GABILLON_PAPER[(pn, alg)]) for gi, (alg, _) in enumerate(GABILLON_GRIDS[pn])
                     if (pn, alg) in GABILLON_PAPER]
        if paper_pts:
            series.append({"label": "paper, text (best η)", "points": paper_pts, "style": "points", "pt": 3,
                           "colour": "#000000"})
        hl = [(uni["error_rate"], "Uniform")]
        if (pn, "Uniform") in GABILLON_PAPER:
            hl.append((GABILLON_PAPER[(pn, "Uniform")], "Uniform, paper"))
        out.append(table(["algorithm", "η", f"ℓ(n), ours [95% CI] ({R} runs)", "e(n), ours",
                          "paper (text)"], rows))
        out.append("\n" + ctx.p.plot(
            f"gabillon_p{pn}", f"Gabillon et al. 2011, Problem {pn}: max. probability of error",
            "parameter η (groups: " + ", ".join(a for a, _ in GABILLON_GRIDS[pn]) + ")",
            "ℓ(n)", series, xtics=xt, hlines=hl, xrange=(0, 5 * len(GABILLON_GRIDS[pn])),
            key="outside right top", size=(900, 420)) + "\n")
        if pn == 1:
            for alg, paper in (("Unif+UCB-E", 0.239), ("GapE", 0.157)):
                ell, eta, txt = best[alg]
                ctx.headline.append(("Gabillon 2011", f"P1 {alg} ℓ(n), best η", pct(paper),
                                     f"{txt} (η = {frac_str(eta)})"))
            ctx.headline.append(("Gabillon 2011", "P1 Uniform ℓ(n)", "29.4%", rate_cell(uni)))
        if pn == 2:
            ctx.headline.append(("Gabillon 2011", "P2 Uniform ℓ(n)", "28%", rate_cell(uni)))
            for alg, paper in (("GapE", "25%"), ("GapE-V", "≈ GapE − 10 points")):
                ell, eta, txt = best[alg]
                ctx.headline.append(("Gabillon 2011", f"P2 {alg} ℓ(n), best η", paper,
                                     f"{txt} (η = {frac_str(eta)})"))
        if pn == 3:
            order = sorted(best.items(), key=lambda kv: kv[1][0])
            out.append(
                f"\nProblem 3 as printed repeats Problem 2's two bandits twice with n = 1400, i.e. 350 "
                f"pulls per bandit where Problem 2 has 500: our Uniform errs in {pct(uni['error_rate'])} of "
                "the runs, above the 0.15–0.45 range of their Figure 3's axis, so their run must have used "
                "a larger n or other bandits (the text calls the problem \"strongly heterogeneous\", "
                "which two copies of two bandits are not). What carries over is the ranking, best first "
                "(best η each): " + ", ".join(f"{alg} {pct(v[0])}" for alg, v in order)
                + " — the variance-aware algorithms first and the uniform split over bandits last, as "
                "they conclude.\n")
            for alg in ("GapE", "GapE-V", "A-GapE-V", "Unif+UCB-E"):
                ell, eta, txt = best[alg]
                ctx.headline.append(("Gabillon 2011", f"P3 {alg} ℓ(n), best η",
                                     "figure (0.15–0.45 axis)", f"{txt} (η = {frac_str(eta)})"))
    out.append(GABILLON_NOTES)
    ctx.scaled.append(("Gabillon et al. Problems 1–3", "10⁵ runs per point", f"{R} runs per point",
                       f"CPU time; a rate's 95% interval is at most ±{100 * Z95 * math.sqrt(0.25 / R):.1f} "
                       "points (at 50%), narrower at the rates measured"))
    return "".join(out)


GABILLON_NOTES = """
**How ours compare.** The paper gives numbers in its text only for Problems 1
and 2 (the rest are figures without tabulated values: the table says "figure"
there). Differences to expect and why:

- *Unif+UCB-E.* banditd's `ucb-e` is the top-m UCB-E of Bubeck et al. (2013,
  Fig. 3), index −Δ̂ + sqrt(a/T) — with m = 1 the gap index of GapE on one
  bandit — where Audibert et al.'s UCB-E uses μ̂ + sqrt(a/T). Gabillon et al.
  note the two differ in how they split pulls between the best and second
  arm but not in their error; we expect (and see) rates close to theirs.
- *Unif+UCBE-V and Unif+A-UCBE-V* of their Figure 3 have no banditd policy
  (a variance-aware UCB-E): not run.
- *Ties and the error count.* Ties in estimated means are broken at random
  (docs/policy-formulas.md), in selection and in the returned arm; Bernoulli and
  Rademacher rewards tie often at these budgets, and an index tie-break would
  move ℓ(n) by a point or more either way.
- *A-GapE(-V).* Ĥ(t) is computed over all arms of all bandits at each pull,
  exactly as their §3.3 defines it; every arm is pulled once (twice for -V)
  first.
- *Allocation shares* (their "19% of the pulls to bandit 2", "(37%, 36%, 20%,
  7%)") are not measured: bandit-sim reports pulls per run, not per arm.
"""
