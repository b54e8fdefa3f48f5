"""Renders the fixed-confidence reading (scripts/repro/experiments/
fixed_confidence.py, fc_analysis) from
a fixed set of lower-bound rows (means and 95% half-widths of an earlier
make reproduce) and prints it: tests/repro/test_repro.sh checks that the
prose follows the numbers. Argument: a factor applied to the proven-GLR
rows' stop times (1: as measured; 0.3: a much tighter proven rule, as the
`bounds` branch may bring)."""
import os, sys, types
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import repro
ts, w = repro.t_star(repro.GK_MU)
lb = {d: ts * repro.kl_delta(d) for d in (0.1, 0.05, 0.01)}
# (lab, key, bound, guar, mean@0.1, ci_half@0.1, mean@0.01, half@0.01) from an earlier run
rows = [
 ("uniform","delta_c","anytime","proven",27.0e3,1.2e3,35.0e3,1.4e3),
 ("uniform","delta_c","fixed","none (fixed-n bound, monitored)",9711,650,17.1e3,900),
 ("uniform","glr",None,"proven",56.2e3,1.9e3,61.8e3,1.9e3),
 ("uniform","glr-heuristic",None,"heuristic",7583,593,11.0e3,750),
 ("ADAPT (π4)","delta_c","anytime","proven",16.8e3,850,21.3e3,1e3),
 ("ADAPT (π4)","delta_c","fixed","none (fixed-n bound, monitored)",6289,575,10.8e3,650),
 ("ADAPT (π4)","glr",None,"proven",37.2e3,1.5e3,42.0e3,1.6e3),
 ("ADAPT (π4)","glr-heuristic",None,"heuristic",5112,583,7315,635),
 ("GCP (Bayes)","rho",None,"none (Bayesian ρ̄)",2977,290,7476,485),
 ("GCP (Bayes)","delta_c","anytime","proven",18.7e3,700,23.2e3,800),
 ("GCP (Bayes)","glr",None,"proven",36.8e3,1.05e3,40.8e3,1.05e3),
 ("GCP (Bayes)","glr-heuristic",None,"heuristic",4752,385,7492,504),
 ("LUCB1",None,None,"proven",95.7e3,1.85e3,100.3e3,1.8e3),
 ("KL-LUCB",None,None,"proven",47.4e3,1.2e3,51.8e3,1.25e3),
 ("TTTS","glr",None,"proven",36.0e3,1e3,39.9e3,1e3),
 ("TTTS","glr-heuristic",None,"heuristic",4496,362,7188,430),
 ("TTTS","delta_c","anytime","proven",16.7e3,650,21.3e3,700),
 ("Track-and-Stop","glr",None,"proven",35.3e3,1.05e3,39.3e3,1.05e3),
 ("Track-and-Stop","glr-heuristic",None,"heuristic",4434,414,6952,480),
 ("Track-and-Stop","delta_c","anytime","proven",17.2e3,750,21.8e3,800),
]
scale_p = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0  # shrink the proven GLR rows (a tighter rule)
ratios = []
for lab, key, bound, guar, m1, h1, m2, h2 in rows:
    for d, m, h in ((0.1, m1, h1), (0.01, m2, h2)):
        if key == "glr":
            m, h = m * scale_p, h * scale_p
        r = {"mean_pulls": m, "mean_pulls_se": h / repro.Z95, "errors": 0, "runs": 200}
        ratios.append((m / lb[d], d, lab, key, bound, guar, r))
ctx = types.SimpleNamespace(r=types.SimpleNamespace(policies={}))
facts = {"adapt_anytime_over_fixed": 2.7, "adapt_fixed_errors": (0, 600)}
print(repro.fc_analysis(ctx, ratios, lb, ts, w, facts))
