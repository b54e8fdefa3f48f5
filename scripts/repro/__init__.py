"""repro — the driver of `make reproduce`.

Runs the experiments of the five seed papers (docs/policy-formulas.md,
References) and the fixed-confidence checks (error rate ≤ δ; samples against
the lower bound of Garivier & Kaufmann 2016) with build/bandit-sim, fixed
seeds, and writes:

  build/repro/results/*.json   one bandit-sim output per simulation (a cache:
                               the key is the binary's hash, the arguments and
                               the problem, so a rerun of an unchanged binary
                               reuses them)
  build/repro/problems/*.json  the problem files those runs read
  docs/reproduction.md         tables: the paper's figure beside ours, run
                               counts, 95% intervals (Wilson for rates, normal
                               for means), what differs and why
  docs/img/*.png               gnuplot plots where the paper has a figure

The parts: cli.py (arguments, the run, --smoke), runner.py (bandit-sim jobs
and the cache), stats.py (intervals, tests, the lower bound), problems.py
(problem-file helpers), plot.py (gnuplot), report.py (formatting, the shared
context, the report writer), experiments/ (one module per paper, and
fixed_confidence.py). Python 3 standard library only (Debian's python3
package); gnuplot for the plots. Run it as `python3 scripts/repro.py` (what
`make reproduce` does) or `python3 scripts/repro`.
"""

# What tests/repro uses (statistics against closed forms, the computed
# fixed-confidence reading).
from .experiments.fixed_confidence import GK_MU, fc_analysis
from .stats import Z95, binom_sf, inv_t_star_at, kl_delta, t_star, wilson

__all__ = ["GK_MU", "Z95", "binom_sf", "fc_analysis", "inv_t_star_at", "kl_delta", "t_star", "wilson"]
