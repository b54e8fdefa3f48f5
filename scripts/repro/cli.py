"""The command line: arguments, the sections run side by side on one
runner, the report written; --smoke runs one tiny case (make test)."""

import argparse
import os
import shutil
import sys
import threading
import time

from . import __doc__ as PACKAGE_DOC
from .experiments import SECTIONS, START_ORDER
from .experiments.fixed_confidence import GK_MU
from .experiments.gabillon2011 import gabillon_problems
from .plot import Plotter
from .report import Ctx, SectionCtx, rate_cell, table, write_report
from .runner import Runner
from .stats import t_star


def smoke(args):
    """One tiny case end to end: two simulations, a rendered table, a plot
    when gnuplot is there (make test's check of this driver)."""
    runner = Runner(args.sim, args.out, args.jobs, sys.stderr)
    plotter = Plotter(args.img, os.path.join(args.out, "plots"), shutil.which("gnuplot") is not None
                      and not args.no_plots)
    prob = gabillon_problems()[1]
    u = runner.submit("smoke", prob, "uniform", 50, 1).result()
    g = runner.submit("smoke", prob, "gape", 50, 1, {"eta": 4, "h": 992.4}, trace=2).result()
    ts, _ = t_star(GK_MU)
    rows = [["Uniform", rate_cell(u)], ["GapE η = 4", rate_cell(g)]]
    text = "# smoke\n\n" + table(["algorithm", "ℓ(n) [95% CI]"], rows)
    text += f"\nT*({GK_MU}) = {ts:.1f}\n"
    text += "\n" + plotter.plot("smoke", "smoke: GapE error against pulls", "pulls", "error",
                                [{"label": "GapE", "points": list(zip(g["trace"]["pulls"],
                                                                      g["trace"]["error_rate"]))}]) + "\n"
    os.makedirs(os.path.dirname(os.path.abspath(args.doc)), exist_ok=True)
    with open(args.doc, "w") as f:
        f.write(text)
    runner.pool.shutdown()
    return 0


def main():
    ap = argparse.ArgumentParser(description=PACKAGE_DOC.split("\n\n")[0])
    ap.add_argument("--sim", default="build/bandit-sim")
    ap.add_argument("--tstar", default="", help="build/scripts/tstar: T*(μ) by policies/tas.h, to cross-check")
    ap.add_argument("--out", default="build/repro")
    ap.add_argument("--doc", default="docs/reproduction.md")
    ap.add_argument("--img", default="docs/img")
    ap.add_argument("--jobs", type=int, default=2, help="simulations at once (default 2)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every run count (default 1)")
    ap.add_argument("--only", default="", help="comma-separated sections: " + ",".join(s[0] for s in SECTIONS))
    ap.add_argument("--smoke", action="store_true", help="one tiny case (make test)")
    ap.add_argument("--no-plots", action="store_true")
    args = ap.parse_args()
    if args.smoke:
        return smoke(args)

    t0 = time.time()
    load0 = os.getloadavg()
    # The machine is shared: sample the load during the run, so that the wall time can be
    # read against what the neighbours took (the start and end values alone miss the peaks).
    loads = []
    done_ev = threading.Event()

    def sample_load():
        while not done_ev.wait(15):
            loads.append(os.getloadavg()[0])
    sampler = threading.Thread(target=sample_load, daemon=True)
    sampler.start()
    runner = Runner(args.sim, args.out, args.jobs, sys.stderr)
    runner.tstar = args.tstar
    plotter = Plotter(args.img, os.path.join(args.out, "plots"), not args.no_plots)
    ctx = Ctx(runner, plotter, args.scale, False)
    only = set(filter(None, args.only.split(",")))
    chosen = [s for s in SECTIONS if not only or s[0] in only]
    subs = {name: SectionCtx(ctx) for name, _, _ in chosen}
    texts = {}
    errors = []

    def run_section(name, fn):
        try:
            s0 = time.time()
            texts[name] = fn(subs[name])
            print(f"repro: {name} done in {time.time() - s0:.0f} s", file=sys.stderr, flush=True)
        except Exception as e:  # reported after the others finish
            errors.append((name, e))
            import traceback
            traceback.print_exc()

    threads = []
    order = [n for n in START_ORDER if n in subs]
    fns = {name: fn for name, fn, _ in chosen}
    for name in order:
        th = threading.Thread(target=run_section, args=(name, fns[name]))
        th.start()
        threads.append(th)
        time.sleep(0.2)  # submission order = start order
    for th in threads:
        th.join()
    runner.pool.shutdown()
    done_ev.set()
    if errors:
        print("repro: failed sections: " + ", ".join(n for n, _ in errors), file=sys.stderr)
        return 1
    wall = time.time() - t0
    load1 = os.getloadavg()

    write_report(args.doc, chosen, subs, texts, runner,
                 {"wall_s": wall, "load_start": load0, "load_end": load1, "loads": loads,
                  "jobs": args.jobs, "rec_dir": args.out})
    print(f"repro: wrote {args.doc} and {len(plotter.made)} plots in {wall:.0f} s "
          f"({runner.cpu:.0f} s CPU in simulations)", file=sys.stderr)
    return 0
