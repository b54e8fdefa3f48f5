#!/usr/bin/env python3
"""docs_defaults.py FILE — `make docs-defaults`: measures every
fixed-confidence policy with the stop rules it can be paired with, as the
ratio of the mean samples to stop to the lower bound T*(μ)·kl(δ, 1 − δ)
(Garivier & Kaufmann 2016, Theorem 1), on μ1 = (0.5, 0.45, 0.43, 0.4),
μ2 = (0.3, 0.21, 0.2, 0.19, 0.18), the K = 10 instance (0.6, 0.55, …, 0.15)
and instances of other shapes (two arms, means near 0, K = 20, top-2), at
δ = 0.1 and 0.01, and the error rates of every rule on the near tie
(0.5, 0.49) at δ = 0.2. It writes three tables into FILE
(docs/measurements.md) between <!-- generated:defaults --> and
<!-- /generated -->. It is what the default policy and stop of a new
experiment were chosen from (issue 11). Fixed seeds: the same table on every
machine. Each cell is cached (CACHE, keyed by a hash of short probe runs of
the simulator, the cell and its runs), so an interrupted run resumes where
it stopped and a relink that changes no output keeps the cells.

Env: BANDIT_SIM (build/bandit-sim), TSTAR (build/scripts/tstar), DOCS_TOOL
(build/scripts/docs-tool), RUNS_1 (runs at δ = 0.1, default 100), RUNS_2
(at δ = 0.01, default 50), RUNS_TIE (near tie, default 300), JOBS (cells
run at once, each on one thread; default 2), CACHE (default
build/docs-defaults.json)."""

import concurrent.futures
import hashlib
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

SIM = os.environ.get("BANDIT_SIM", "build/bandit-sim")
TSTAR = os.environ.get("TSTAR", "build/scripts/tstar")
TOOL = os.environ.get("DOCS_TOOL", "build/scripts/docs-tool")
RUNS = {0.1: int(os.environ.get("RUNS_1", "100")), 0.01: int(os.environ.get("RUNS_2", "50"))}
RUNS_TIE = int(os.environ.get("RUNS_TIE", "200"))
# the instances beyond the brief's three (μ1, μ2, K = 10) get half the runs
EXTRA_SHARE = 0.5
JOBS = int(os.environ.get("JOBS", "2"))
CACHE = os.environ.get("CACHE", "build/docs-defaults.json")
SEED = 2016
MAX_PULLS = 10000000

# (name, means, m, share of RUNS). The lower bound is Garivier & Kaufmann's T* for m = 1;
# for the top-2 instance (no T* here) the cells give the mean samples.
INSTANCES = [
    ("μ1", [0.5, 0.45, 0.43, 0.4], 1, 1.0),
    ("μ2", [0.3, 0.21, 0.2, 0.19, 0.18], 1, 1.0),
    ("K = 10", [round(0.6 - 0.05 * i, 2) for i in range(10)], 1, 1.0),
    ("K = 2", [0.5, 0.45], 1, EXTRA_SHARE),
    ("near 0", [0.1, 0.06, 0.05, 0.03], 1, EXTRA_SHARE),
    ("K = 20", [0.7, 0.65] + [round(0.6 - 0.025 * i, 3) for i in range(18)], 1, EXTRA_SHARE),
    ("top-2", [0.6, 0.55, 0.45, 0.4, 0.3, 0.2], 2, EXTRA_SHARE),
]


def runs_of(share, delta):
    return max(10, int(RUNS[delta] * share))
# (policy, --stop), proven rules: every instance, both δ. "default" is the
# policy's default rule (the proven GLR for every policy here).
PROVEN = [
    ("adapt", "delta_c"),
    ("adapt", "glr"),
    ("uniform", "glr"),
    ("lucb1", "glr"),
    ("kl-lucb", "glr"),
    ("gcp", "default"),
    ("ttts", "default"),
    ("track-and-stop", "default"),
    ("eb-tc", "default"),
    ("t3c", "default"),
]
# Rules without proof, and the papers' own proven rules (5–20 times the
# proven GLR's samples): μ1 and K = 10 at δ = 0.1.
OTHER = [
    ("adapt", "glr-heuristic"),
    ("ttts", "glr-heuristic"),
    ("track-and-stop", "glr-heuristic"),
    ("eb-tc", "glr-heuristic"),
    ("gcp", "rho"),
    ("lucb1", "policy"),
    ("kl-lucb", "policy"),
    ("adaptive-topk", "policy"),
]
OTHER_INSTANCES = ["μ1", "K = 10"]
# The near tie (0.5, 0.49) at δ = 0.2: every rule, (policy, stop, runs).
TIE = [
    ("adapt", "glr", RUNS_TIE // 3),
    ("adapt", "delta_c", RUNS_TIE // 3),
    ("uniform", "glr", RUNS_TIE),
    ("eb-tc", "default", RUNS_TIE),
    ("t3c", "default", RUNS_TIE),
    ("ttts", "default", RUNS_TIE),
    ("track-and-stop", "default", RUNS_TIE),
    ("gcp", "default", RUNS_TIE),
    ("eb-tc", "glr-heuristic", RUNS_TIE),
    ("gcp", "rho", RUNS_TIE),
]
TOP_TWO = {"ttts", "track-and-stop", "eb-tc", "t3c"}  # best arm only (m = 1)
RULE = {"delta_c": "δᶜ", "glr": "GLR (proven)", "default": "default (GLR, proven)",
        "glr-heuristic": "GLR heuristic (no proof)", "rho": "ρ̄ (no proof)",
        "policy": "own rule (paper's proof)"}

_lock = threading.Lock()


def kl(p, q):
    return p * math.log(p / q) + (1 - p) * math.log((1 - p) / (1 - q))


def lower_bound(mu, delta):
    out = subprocess.run([TSTAR] + [str(m) for m in mu], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)["tstar"] * kl(delta, 1 - delta)


def binary_key():
    """What the simulator does, not which file it is: a hash of a few short
    fixed-seed runs through every stop rule family (a relink that changes
    nothing keeps the cache; a changed threshold or sampler drops it)."""
    h = hashlib.sha256()
    probe = json.dumps({"arms": [0.5, 0.45, 0.43, 0.4], "delta": 0.1})
    for pol, stop in (("eb-tc", "glr"), ("adapt", "delta_c"), ("gcp", "rho"),
                      ("ttts", "default"), ("kl-lucb", "policy"), ("uniform", "glr-heuristic")):
        out = subprocess.run([SIM, "--problem", "-", "--policy", pol, "--stop", stop, "--runs",
                              "3", "--seed", "1", "--threads", "1", "--no-progress"],
                             input=probe, capture_output=True, text=True).stdout
        h.update(re.sub(r'"(wall_s|pulls_per_s)": [-+0-9.eE]+', "", out).encode())
    return h.hexdigest()[:16]


def load_cache(key):
    try:
        with open(CACHE) as f:
            c = json.load(f)
    except (OSError, ValueError):
        return {}
    return c if c.get("binary") == key else {}


def save_cache(cache):
    with _lock:
        tmp = CACHE + ".tmp"
        with open(tmp, "w") as f:
            json.dump(cache, f)
        os.replace(tmp, CACHE)


def measure(tmp, mu, m, delta, policy, stop, runs):
    path = os.path.join(tmp, f"p{threading.get_ident()}.json")
    with open(path, "w") as f:
        json.dump({"arms": mu, "delta": delta, "m": m}, f)
    out = subprocess.run(["nice", SIM, "--problem", path, "--policy", policy, "--stop", stop,
                          "--runs", str(runs), "--seed", str(SEED), "--threads", "1",
                          "--no-progress", "--max-pulls", str(MAX_PULLS)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        return {"refused": out.stderr.strip().splitlines()[-1:]}
    r = json.loads(out.stdout)
    return {k: r[k] for k in ("mean_pulls", "mean_pulls_se", "errors", "runs", "capped_runs",
                              "wall_s")}


def wilson_low(k, n, z=1.96):
    if n == 0:
        return 0.0
    p = k / n
    c = (p + z * z / (2 * n) - z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)))
    return c / (1 + z * z / n)


def wilson_high(k, n, z=1.96):
    if n == 0:
        return 1.0
    p = k / n
    c = (p + z * z / (2 * n) + z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)))
    return c / (1 + z * z / n)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: docs_defaults.py docs/measurements.md")
    start = time.time()
    key = binary_key()
    cache = load_cache(key)
    cache["binary"] = key
    cells = []  # (key, mu, m, delta, policy, stop, runs)
    inst = {name: (mu, m) for name, mu, m, _ in INSTANCES}
    for name, mu, m, share in INSTANCES:
        for delta in (0.1, 0.01):
            for pol, stop in PROVEN:
                if m > 1 and pol in TOP_TWO:
                    continue
                r = runs_of(share, delta)
                cells.append((f"{name}|{delta}|{pol}|{stop}|{r}", mu, m, delta, pol, stop, r))
    for name in OTHER_INSTANCES:
        for pol, stop in OTHER:
            r = RUNS[0.1] // 2
            cells.append((f"{name}|0.1|{pol}|{stop}|{r}", inst[name][0], 1, 0.1, pol, stop, r))
    for pol, stop, runs in TIE:
        cells.append((f"tie|0.2|{pol}|{stop}|{runs}", [0.5, 0.49], 1, 0.2, pol, stop, runs))
    # the brief's three instances and the δ-check first: a run cut short
    # still has them
    first = ("μ1|", "μ2|", "K = 10|", "tie|")
    cells.sort(key=lambda c: 0 if c[0].startswith(first) else 1)
    todo = [c for c in cells if c[0] not in cache]
    print(f"docs_defaults.py: {len(cells)} cells, {len(todo)} to run", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp, \
            concurrent.futures.ThreadPoolExecutor(max_workers=JOBS) as ex:
        futs = {ex.submit(measure, tmp, c[1], c[2], c[3], c[4], c[5], c[6]): c for c in todo}
        for f in concurrent.futures.as_completed(futs):
            c = futs[f]
            cache[c[0]] = f.result()
            save_cache(cache)
            print(f"{c[0]}: {cache[c[0]]} ({time.time() - start:.0f} s)", file=sys.stderr)
    lbs = {}
    for name, mu, m, _ in INSTANCES:
        for delta in (0.1, 0.01):
            lbs[(name, delta)] = lower_bound(mu, delta) if m == 1 else None

    def cell(name, delta, pol, stop, runs):
        r = cache.get(f"{name}|{delta}|{pol}|{stop}|{runs}")
        if r is None:
            return "not run"
        if "refused" in r:
            return "refused"
        lb = lbs.get((name, delta))
        capped = f", {r['capped_runs']} capped" if r["capped_runs"] else ""
        tail = f" ({r['errors']}/{r['runs']} wrong{capped})"
        if lb is None:
            return f"{r['mean_pulls']:.0f} ± {r['mean_pulls_se']:.0f}{tail}"
        return f"{r['mean_pulls'] / lb:.2f}× ± {r['mean_pulls_se'] / lb:.2f}{tail}"

    lines = ["Mean samples to stop ÷ T*(μ)·kl(δ, 1 − δ), ± its standard error (wrong answers / "
             "runs); Bernoulli arms, rewards back at once, seed 2016, `--stop` as shown "
             "(`default`: the policy's default rule, the proven GLR for every policy here: "
             "its own for `ttts`, `track-and-stop`, `eb-tc`, `t3c`, the engine's for `gcp`). "
             "The top-2 instance (m = 2: the best two of six) has no T* here: its cells are "
             "mean samples ± standard error; the top-two samplers find one arm only (—). "
             f"{RUNS[0.1]} runs per cell at δ = 0.1 and {RUNS[0.01]} at δ = 0.01 on μ1, μ2 "
             f"and K = 10, {runs_of(EXTRA_SHARE, 0.1)} and {runs_of(EXTRA_SHARE, 0.01)} on the "
             "others: few, because the machine that made the table (2 cores) was shared by "
             "several jobs; `RUNS_1`, `RUNS_2` raise them.", ""]
    for group in (INSTANCES[:4], INSTANCES[4:]):
        heads = []
        cols = []
        for name, mu, m, share in group:
            for delta in (0.1, 0.01):
                lb = lbs[(name, delta)]
                what = f"T*·kl = {lb:.0f}" if lb is not None else "samples"
                heads.append(f"{name}, δ = {delta} ({what})")
                cols.append((name, delta, m, runs_of(share, delta)))
        lines += ["| policy | stop | " + " | ".join(heads) + " |",
                  "| --- | --- | " + " | ".join("---:" for _ in heads) + " |"]
        for pol, stop in PROVEN:
            row = [("—" if m > 1 and pol in TOP_TWO else cell(n, d, pol, stop, r))
                   for n, d, m, r in cols]
            lines.append(f"| `{pol}` | {RULE[stop]} | " + " | ".join(row) + " |")
        lines.append("")
    lines += [f"Rules without proof and the papers' own proven rules, δ = 0.1, {RUNS[0.1] // 2} "
              "runs (same units):", "",
              "| policy | stop | " + " | ".join(f"{n}, δ = 0.1" for n in OTHER_INSTANCES) + " |",
              "| --- | --- | " + " | ".join("---:" for _ in OTHER_INSTANCES) + " |"]
    for pol, stop in OTHER:
        row = [cell(n, 0.1, pol, stop, RUNS[0.1] // 2) for n in OTHER_INSTANCES]
        lines.append(f"| `{pol}` | {RULE[stop]} | " + " | ".join(row) + " |")
    lines += ["", "The δ-check on the near tie (0.5, 0.49) at δ = 0.2: wrong answers, their rate "
              "with a 95% Wilson interval, and whether the interval lies above δ (a rule that "
              "is not δ-correct); mean samples ± standard error.", "",
              "| policy | stop | wrong / runs | rate [95% interval] | above δ? | samples |",
              "| --- | --- | ---: | ---: | :---: | ---: |"]
    for pol, stop, runs in TIE:
        r = cache.get(f"tie|0.2|{pol}|{stop}|{runs}")
        if r is None or "refused" in r:
            lines.append(f"| `{pol}` | {RULE[stop]} | {'not run' if r is None else 'refused'} "
                         "| | | |")
            continue
        k, n = r["errors"], r["runs"]
        lo, hi = wilson_low(k, n), wilson_high(k, n)
        above = "**yes**" if lo > 0.2 else "no"
        capped = f", {r['capped_runs']} capped" if r["capped_runs"] else ""
        lines.append(f"| `{pol}` | {RULE[stop]} | {k}/{n}{capped} | {k / n:.3f} [{lo:.3f}, "
                     f"{hi:.3f}] | {above} | {r['mean_pulls']:.0f} ± "
                     f"{r['mean_pulls_se']:.0f} |")
    secs = time.time() - start
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    cpu = sum(r.get("wall_s", 0) for k, r in cache.items() if isinstance(r, dict))
    lines += ["", f"*Generated by `make docs-defaults` ({cpu:.0f} s of simulation, run "
              f"niced, load average {load} on {os.cpu_count()} cores at the end).*"]
    subprocess.run([TOOL, "splice", sys.argv[1], "defaults"], input="\n".join(lines) + "\n",
                   check=True, text=True)
    print(f"docs_defaults.py: {sys.argv[1]} updated in {secs:.0f}s", file=sys.stderr)


if __name__ == "__main__":
    main()
