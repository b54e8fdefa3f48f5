"""Runs bandit-sim: a pool of workers, one simulation per distinct request,
and the result cache in build/repro/ (keyed by the binary's hash, the
arguments and the problem, so a rerun of an unchanged binary reuses it)."""

import hashlib
import json
import os
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor


class Runner:
    """Runs bandit-sim jobs on a pool of `jobs` workers (each simulation on one
    thread: results do not depend on --threads), caching every result."""

    def __init__(self, sim, out, jobs, log):
        self.sim = sim
        self.out = out
        self.pool = ThreadPoolExecutor(max_workers=jobs)
        self.log = log
        self.lock = threading.Lock()
        self.cpu = 0.0
        self.cpu_cached = 0.0  # what the reused results cost when they were computed
        self.ran = 0
        self.cached = 0
        self.cpu_by_tag = {}
        self.inflight = {}  # result path → Future: one simulation however often it is asked for
        with open(sim, "rb") as f:
            self.binhash = hashlib.sha256(f.read()).hexdigest()
        lst = json.loads(subprocess.run([sim, "--list-policies"], check=True,
                                        capture_output=True, text=True).stdout)
        self.policies = {p["name"]: p for p in lst["policies"]}
        self.stops = {r["name"] for r in lst["stop_rules"]}
        os.makedirs(os.path.join(out, "results"), exist_ok=True)
        os.makedirs(os.path.join(out, "problems"), exist_ok=True)

    def has(self, policy):
        return policy in self.policies

    def submit(self, tag, problem, policy, runs, seed, params=None, **opt):
        """Schedule one simulation; returns a Future of its JSON output (with
        "_cpu_s", the CPU time it took, 0 when it came from the cache)."""
        text = json.dumps(problem, sort_keys=True)
        phash = hashlib.sha256(text.encode()).hexdigest()[:16]
        ppath = os.path.join(self.out, "problems", phash + ".json")
        if not os.path.exists(ppath):
            tmp = ppath + f".{os.getpid()}.{threading.get_ident()}"
            with open(tmp, "w") as f:
                f.write(text + "\n")
            os.replace(tmp, ppath)
        args = ["--policy", policy, "--runs", str(runs), "--seed", str(seed)]
        for k, v in sorted((params or {}).items()):
            args += ["--param", f"{k}={v}"]
        for k, v in sorted(opt.items()):
            if v is None:
                continue
            args += ["--" + k.replace("_", "-"), str(v)]
        key = hashlib.sha256((self.binhash + "\0" + "\0".join(args) + "\0" + text).encode()).hexdigest()[:20]
        rpath = os.path.join(self.out, "results", f"{tag}-{key}.json")
        with self.lock:
            if rpath not in self.inflight:
                self.inflight[rpath] = self.pool.submit(self._run, tag, ppath, args, rpath)
            return self.inflight[rpath]

    def _run(self, tag, ppath, args, rpath):
        if os.path.exists(rpath):
            with open(rpath) as f:
                r = json.load(f)
            with self.lock:
                self.cached += 1
                self.cpu_cached += r.get("_cpu_s", 0.0)
                self.cpu_by_tag[tag] = self.cpu_by_tag.get(tag, 0.0) + r.get("_cpu_s", 0.0)
            return r
        cmd = [self.sim, "--problem", ppath, "--threads", "1", "--no-progress"] + args
        tmp = rpath + ".tmp"
        with open(tmp, "w") as fo:
            p = subprocess.Popen(cmd, stdout=fo, stderr=subprocess.PIPE)
            _, status, ru = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
            err = p.stderr.read().decode(errors="replace")
            p.stderr.close()
        if p.returncode != 0:
            os.unlink(tmp)
            raise RuntimeError(f"bandit-sim failed ({p.returncode}): {' '.join(cmd)}: {err.strip()}")
        cpu = ru.ru_utime + ru.ru_stime
        with open(tmp) as f:
            r = json.load(f)
        # The CPU time it took travels with the result, so that a report rendered from cached
        # results still says what they cost.
        r["_cpu_s"] = cpu
        with open(tmp, "w") as f:
            json.dump(r, f)
        os.replace(tmp, rpath)
        with self.lock:
            self.cpu += cpu
            self.ran += 1
            self.cpu_by_tag[tag] = self.cpu_by_tag.get(tag, 0.0) + cpu
        r["_cpu_s"] = cpu
        return r
