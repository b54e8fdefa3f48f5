#!/usr/bin/env python3
"""sim_fingerprint.py [--sim PATH] [--jobs N] — a fingerprint of bandit-sim's
outputs for fixed seeds, to show a refactor of policies/ keeps simulations
bit-identical (issue 10: "the same bandit-sim outputs before and after").

Every policy of `bandit-sim --list-policies` runs under every stop rule of
`--stop` on four problems (a two-arm near tie, μ = (0.5, 0.45, 0.43, 0.4),
K = 10 with the fixed-n bounds, and three top-2 bandits on a budget with
delayed rewards), with a few runs each and a δᶜ/ρ̄ trace; then every parameter of every
policy at a value other than its default. Each line is
`case sha256`, the hash over the exit status, standard output and standard
error; a refused combination is hashed like any other output. Only the
timing fields (wall_s, pulls_per_s) are taken out. Compare two fingerprints
with diff; the whole set takes well under two minutes on one core."""

import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

# The rules bandit-sim's --help lists; a rule a policy refuses is kept (its
# refusal is part of the behaviour too).
STOPS = ["policy", "delta_c", "glr", "glr-heuristic", "rho", "none"]
SEED = 20261127
RUNS = 12
MAX_PULLS = 6000
BUDGET = 600  # for policies that are fixed-budget only, on problems without one


def bern(*ps):
    return {"arms": [{"dist": "bernoulli", "p": p} for p in ps]}


# name -> (problem, extra command-line options)
PROBLEMS = {
    "tie2": ({"m": 1, "epsilon": 0.02, "delta": 0.1, "target_arm": 1,
             "bandits": [bern(0.5, 0.48)]}, []),
    "mu1": ({"m": 1, "epsilon": 0.0, "delta": 0.1, "target_arm": 0,
             "bandits": [bern(0.5, 0.45, 0.43, 0.4)]}, []),
    "k10": ({"m": 1, "epsilon": 0.05, "delta": 0.05, "bound": "fixed", "target_arm": 2,
             "bandits": [{"arms": [{"dist": "bernoulli", "p": 0.9 - 0.07 * i} for i in range(9)]
                          + [{"dist": "uniform", "low": 0.0, "high": 0.6}]}]}, []),
    "topm-multi": ({"m": 2, "epsilon": 0.02, "delta": 0.1, "budget": 900, "tau": 0.8,
                    "target_arm": 0,
                    "bandits": [bern(0.6, 0.5, 0.45, 0.3, 0.2), bern(0.7, 0.65, 0.4, 0.35, 0.3),
                                {"arms": [{"dist": "gaussian", "mean": 0.5, "sd": 0.3},
                                          {"dist": "rademacher", "x": 0.2, "y": 0.9},
                                          {"dist": "beta", "a": 2, "b": 5},
                                          {"dist": "bernoulli", "p": 0.4},
                                          {"dist": "bernoulli", "p": 0.1}]}]},
                   ["--delay", "7"]),
}

# Non-default parameter values (every parameter of every policy at least
# once), run with the policy's own stop on mu1 and topm-multi: the lookup of
# parameters is part of what a refactor may break.
PARAMS = {
    "adapt": [["variant=uniform"], ["variant=collide"], ["variant=deltac", "cap=1"]],
    "lucb1": [["k1=2", "power=3"]],
    "kl-lucb": [["rate=heuristic"], ["alpha=1.5", "k1=1000"]],
    "ttts": [["beta=0.3", "max_tries=2", "threshold=heuristic"]],
    "track-and-stop": [["tracking=c", "refresh=3"], ["threshold=heuristic"]],
    "eb-tc": [["beta=0.3", "slack=0.05", "challenger=tc", "threshold=heuristic"]],
    "t3c": [["beta=0.3", "threshold=heuristic"]],
    "ucb-e": [["c=0.5"], ["a=40", "h=100"]],
    "gape": [["eta=2"], ["a=30", "h=80"]],
    "gape-v": [["eta=2"], ["a=30", "h=80"]],
    "a-gape": [["eta=1"]],
    "a-gape-v": [["eta=0.5"]],
    "gcp": [["bandits=uniform"]],
    "gcp-targeted": [["resample=4"]],
}

VOLATILE = re.compile(r'"(wall_s|pulls_per_s)": [-+0-9.eE]+')


def run_case(sim, pfile, policy, flags, stop, extra):
    """The hash of one run of bandit-sim."""
    cmd = [sim, "--problem", pfile, "--policy", policy, "--runs", str(RUNS), "--seed",
           str(SEED), "--threads", "1", "--stop", stop, "--max-pulls", str(MAX_PULLS),
           "--trace", "1", "--no-progress"] + extra
    if "fixed_budget" in flags and "fixed_confidence" not in flags:
        cmd += ["--budget", str(BUDGET)]
    p = subprocess.run(cmd, capture_output=True, check=False)
    out = VOLATILE.sub(lambda m: '"%s": X' % m.group(1), p.stdout.decode())
    h = hashlib.sha256()
    h.update(b"rc=%d\n" % p.returncode)
    h.update(out.encode())
    h.update(b"\n--stderr--\n" + p.stderr)
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sim", default="build/bandit-sim")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    raw = subprocess.run([a.sim, "--list-policies"], capture_output=True, check=True).stdout
    print("list-policies %s" % hashlib.sha256(raw).hexdigest())
    listing = json.loads(raw)
    policies = listing if isinstance(listing, list) else listing["policies"]
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for name, (prob, _) in PROBLEMS.items():
            files[name] = os.path.join(tmp, name + ".json")
            with open(files[name], "w", encoding="utf-8") as f:
                json.dump(prob, f)
        # (label, problem, policy, stop, extra options)
        cases = [("%s/%s/%s" % (pn, pol["name"], stop), pn, pol["name"], stop, [])
                 for pn in PROBLEMS for pol in policies for stop in STOPS]
        flags = {pol["name"]: pol.get("flags", []) for pol in policies}
        for pol, variants in PARAMS.items():
            if pol not in flags:
                continue  # an older binary, from before the policy: compare what both have
            for v in variants:
                for pn in ("mu1", "topm-multi"):
                    extra = [x for kv in v for x in ("--param", kv)]
                    cases.append(("%s/%s[%s]/policy" % (pn, pol, ",".join(v)), pn, pol, "policy",
                                  extra))
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
            futs = [ex.submit(run_case, a.sim, files[pn], pol, flags[pol], stop,
                              PROBLEMS[pn][1] + extra) for _, pn, pol, stop, extra in cases]
            for case, fut in zip(cases, futs):
                print("%s %s" % (case[0], fut.result()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
