#!/usr/bin/python3
"""The Python client (clients/python) against docs/openapi.json and the real
daemon: its operations and types agree with the document; every operation;
errors as BanditdError carrying the problem+json; rewards retried across a
daemon restart and counted once; 429 with Retry-After, waited out; the
folder installs with pip (offline: no build isolation). Output: TAP.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import typing

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from daemon import ROOT, Daemon  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "clients", "python"))
import banditd_client as bc  # noqa: E402

DOC = json.load(open(os.path.join(ROOT, "docs", "openapi.json"), encoding="utf-8"))
results = []


def check(ok, name, detail=""):
    results.append((bool(ok), name, detail))
    return ok


def skip(name, why):
    results.append((True, name, "SKIP " + why))


def raises(fn):
    try:
        fn()
    except bc.BanditdError as e:
        return e
    return None


def test_openapi_agreement():
    ops = {}
    for path, item in DOC["paths"].items():
        for method, op in item.items():
            if isinstance(op, dict) and "operationId" in op:
                ops[op["operationId"]] = (method.upper(), path)
    for name, (op_id, method, path) in bc.OPERATIONS.items():
        check(ops.get(op_id) == (method, path), "operation %s is %s %s %s in the document" %
              (name, op_id, method, path), "document: %s" % (ops.get(op_id),))
    schemas = DOC["components"]["schemas"]
    for name, td in bc.SCHEMAS.items():
        s = schemas.get(name)
        if not check(s is not None, "type %s is a schema of the document" % name):
            continue
        props = set(s.get("properties", {}))
        keys = set(typing.get_type_hints(td))
        check(keys == props, "type %s has the schema's fields" % name,
              "only in the client: %s; only in the document: %s" %
              (sorted(keys - props), sorted(props - keys)))
        check(set(td.__required_keys__) == set(s.get("required", [])),
              "type %s requires what the schema requires" % name,
              "client %s, document %s" % (sorted(td.__required_keys__), sorted(s.get("required", []))))
    # a status's bandits are either view's, as the schema's oneOf
    hints = typing.get_type_hints(bc.Status)
    union = typing.get_args(typing.get_args(hints["bandits"])[0])
    refs = [x["$ref"].rsplit("/", 1)[1] for x in schemas["Status"]["properties"]["bandits"]["items"]["oneOf"]]
    check(sorted(u.__name__ for u in union) == sorted(refs), "Status.bandits is the union of the schema's oneOf",
          "client %s, document %s" % (union, refs))
    # the reward statuses the client names are the document's
    enum = schemas["RewardResult"]["properties"]["status"]["enum"]
    check(set(typing.get_args(bc.RewardStatus)) == set(enum), "reward statuses agree", str(enum))
    check(set(typing.get_args(bc.State)) == set(schemas["State"]["enum"]), "states agree")
    for lit, schema in ((bc.ReleaseStatus, "ReleaseResult"), (bc.ServedStatus, "ServedResult")):
        check(set(typing.get_args(lit)) == set(schemas[schema]["properties"]["status"]["enum"]),
              "%s statuses agree" % schema)


def test_operations(d, admin):
    bd = bc.Client(d.url, admin, batch=2)
    exp = bd.create({"id": "checkout-button", "arms": ["red", "green", "blue"], "seed": 7})
    check(exp.get("id") == "checkout-button", "create returns the experiment")
    got = bd.assign("checkout-button", count=3)
    check(len(got) == 3 and all(a["arm"] in ("red", "green", "blue") for a in got),
          "assign count=3 gives three assignments")
    u1 = bd.assign("checkout-button", unit="user-1")
    u2 = bd.assign("checkout-button", unit="user-1")
    check(u1[0]["id"] == u2[0]["id"], "a unit gets its assignment back")
    items = [(a["id"], 1.0 if a["arm"] == "green" else 0.0) for a in got] + [(u1[0]["id"], 1.0)]
    r = bd.reward("checkout-button", items)  # batch=2: two requests
    check(r["accepted"] == 4 and r["duplicates"] == 0 and len(r["results"]) == 4,
          "reward in batches: 4 accepted", json.dumps(r))
    r = bd.reward("checkout-button", {a: v for a, v in items})
    check(r["accepted"] == 0 and r["duplicates"] == 4, "the same rewards again are duplicates",
          json.dumps(r))
    st = bd.status("checkout-button")
    check(st["pulls"] == 4 and st["pending"] == 0, "status counts each reward once", json.dumps(st)[:300])
    check(bd.get("checkout-button")["id"] == "checkout-button", "get")
    stopped = bd.stop("checkout-button")
    check(stopped.get("state") == "stopped", "stop")
    check(bd.status("checkout-button")["stopped"] is True, "status says stopped")


def test_blinded(d, admin):
    """A blinded experiment's status: the blinded view (a valid Status, its
    bandits BlindedBandits) to a read key, the full one to admin."""
    bd = bc.Client(d.url, admin)
    bd.create({"id": "trial", "arms": ["a", "b", "c"], "seed": 5, "design": {"blinded": True}})
    got = bd.assign("trial", count=3)
    bd.reward("trial", [(a["id"], 1.0) for a in got])
    st = bc.Client(d.url, d.key("read")).status("trial")
    check(bc.is_blinded(st) and st["pulls"] == 3 and st["pending"] == 0,
          "a read key gets the blinded view with its totals", json.dumps(st)[:300])
    check(all(set(b) == set(bc.BlindedBandit.__annotations__) | set(bc._BlindedBandit.__annotations__)
              for b in st["bandits"]), "its bandits are BlindedBandits", json.dumps(st["bandits"]))
    try:
        from jsonschema import Draft202012Validator
    except ImportError:
        skip("the blinded status validates against Status", "no python3-jsonschema")
    else:
        v = Draft202012Validator({"$ref": "#/components/schemas/Status", "components": DOC["components"]})
        errs = [e.message[:160] for e in v.iter_errors(st)]
        check(not errs, "the blinded status validates against Status", "; ".join(errs[:3]))
        # and the schema tells the views apart: the full view's bandits are no blinded status's
        errs = list(v.iter_errors(dict(st, bandits=[{"id": "default", "arms": []}])))
        check(errs, "a blinded status with a full bandit does not validate")
    full = bd.status("trial")
    check(not bc.is_blinded(full) and [a["pulls"] for a in full["bandits"][0]["arms"]] == [1, 1, 1],
          "admin sees it in full", json.dumps(full)[:300])


def test_errors(d, admin):
    bd = bc.Client(d.url, admin, retries=0)
    e = raises(lambda: bd.create({"id": "bad id!", "arms": ["a"]}))
    check(e is not None and e.status == 400 and e.slug in ("validation", "invalid-request") and e.errors
          and all("field" in x for x in e.errors), "an invalid create raises with the problem's errors",
          repr(e and e.problem))
    e = raises(lambda: bd.status("nope"))
    check(e is not None and e.status == 404 and e.problem.get("status") == 404 and e.slug == "not-found",
          "an unknown experiment: 404 with its problem+json", repr(e and e.problem))
    e = raises(lambda: bc.Client(d.url, "bd_wrong", retries=0).status("nope"))
    check(e is not None and e.status == 401 and e.title, "a wrong key: 401", repr(e and e.problem))
    e = raises(lambda: bc.Client("http://127.0.0.1:9", retries=0, timeout=2).status("x"))
    check(e is not None and e.status == 0 and e.retryable, "no daemon: status 0, retryable", repr(e))


def test_blocks(d, admin):
    """A block: visitors served without a round trip each, units noted,
    leftovers released; pending stays exact."""
    bd = bc.Client(d.url, admin)
    bd.create({"id": "blocks", "arms": ["a", "b", "c"]})
    with bd.block("blocks", 10) as blk:
        served = [blk.take(unit="visitor-%d" % i) for i in range(13)]
        check(blk.round_trips == 2, "13 visitors from blocks of 10: two leases", str(blk.round_trips))
        bound = blk.flush()
        check(bound is not None and bound["bound"] == 13, "13 units bound", repr(bound))
        bd.reward("blocks", [(a["id"], 1.0) for a in served[:5]])
    st = bd.status("blocks")
    check(st["pending"] == 8 and st["pulls"] == 5, "the 7 left over released: 8 pending, 5 rewarded",
          json.dumps(st)[:200])
    # a unit comes back through another client: it gets what it was served
    again = bd.assign("blocks", unit="visitor-7")
    check(again[0]["id"] == served[7]["id"], "a unit served from a block gets it back", repr(again))
    r = bd.release("blocks", [a["id"] for a in served[:2]])
    check(r["released"] == 0 and [x["status"] for x in r["results"]] == ["rewarded", "rewarded"],
          "a rewarded assignment is not released", repr(r))
    r = bd.served("blocks", {served[0]["id"]: "visitor-0", served[1]["id"]: "someone-else"})
    check([x["status"] for x in r["results"]] == ["duplicate", "conflict"], "served: duplicate, conflict",
          repr(r))


def test_restart(d, admin):
    """Rewards sent while the daemon is down go in once it is back, once."""
    bd = bc.Client(d.url, admin, retries=40, backoff=0.1)
    bd.create({"id": "restart", "arms": ["a", "b"]})
    got = bd.assign("restart", count=4)
    first = bd.reward("restart", [(got[0]["id"], 1.0), (got[1]["id"], 0.0)])  # what send() sends
    d.kill()
    out = {}

    def send():
        try:
            out["r"] = bd.reward("restart", [(a["id"], float(i % 2 == 0)) for i, a in enumerate(got)])
        except bc.BanditdError as e:
            out["e"] = e

    t = threading.Thread(target=send)
    t.start()
    time.sleep(0.5)  # the client is retrying against a closed port
    d.start()
    t.join(120)
    r = out.get("r")
    check(first["accepted"] == 2, "two rewards before the kill")
    check(r is not None and r["accepted"] == 2 and r["duplicates"] == 2,
          "after the restart: 2 new, 2 duplicates (sent again)", repr(out))
    st = bd.status("restart")
    check(st["pulls"] == 4 and st["pending"] == 0, "status: 4 pulls, nothing counted twice",
          json.dumps(st)[:200])


def test_rate_limited():
    d = Daemon("--rate-limit", "1", "--rate-burst", "1").start()
    try:
        once = bc.Client(d.url, retries=0)
        e = None
        for _ in range(20):
            e = raises(lambda: once.status("missing"))
            if e is not None and e.status == 429:
                break
        check(e is not None and e.status == 429 and e.slug == "rate-limited" and e.retry_after >= 1,
              "over the rate: 429 rate-limited with Retry-After", repr(e and e.problem))
        patient = bc.Client(d.url, retries=3)
        e = raises(lambda: patient.status("missing"))
        check(e is not None and e.status == 404, "a client that waits Retry-After gets through (404)",
              repr(e and e.problem))
        check(d.stop() == 0, "daemon (rate-limited) shut down cleanly")
    finally:
        d.cleanup()


def test_pip_install():
    if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode != 0:
        skip("pip installs clients/python", "no pip for " + sys.executable)
        return
    with tempfile.TemporaryDirectory() as work:
        # a copy: setuptools builds in the source folder
        src, tmp = os.path.join(work, "src"), os.path.join(work, "site")
        shutil.copytree(os.path.join(ROOT, "clients", "python"), src)
        # PyPI may be out of reach: build with the setuptools at hand
        p = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index",
                            "--no-build-isolation", "--no-deps", "--target", tmp, src],
                           capture_output=True, text=True)
        if not check(p.returncode == 0, "pip installs clients/python", p.stderr[-400:]):
            return
        check(os.path.exists(os.path.join(tmp, "banditd_client", "py.typed")), "installed with py.typed")
        q = subprocess.run([sys.executable, "-c", "import banditd_client as b; print(b.__file__)"],
                           capture_output=True, text=True, cwd="/", env=dict(os.environ, PYTHONPATH=tmp))
        check(q.returncode == 0 and q.stdout.startswith(tmp), "the installed module imports", q.stderr[-300:])


def main():
    test_openapi_agreement()
    d = Daemon()
    try:
        admin = d.key("admin")
        d.start()
        test_operations(d, admin)
        test_errors(d, admin)
        test_blocks(d, admin)
        test_blinded(d, admin)
        test_restart(d, admin)
        rc = d.stop()
        check(rc == 0, "daemon shut down cleanly", "exit %s: %s" % (rc, d.stderr()[-500:]))
    except Exception as e:  # a crash of the suite is a failure, said in TAP
        check(False, "suite ran to the end", repr(e))
    finally:
        d.cleanup()
    test_rate_limited()
    test_pip_install()
    print("1..%d" % len(results))
    for i, (ok, name, detail) in enumerate(results, 1):
        if detail.startswith("SKIP "):
            print("ok %d - %s # %s" % (i, name, detail))
            continue
        print("%s %d - %s" % ("ok" if ok else "not ok", i, name))
        if not ok and detail:
            print("  # " + detail.replace("\n", " "))
    return 0 if all(ok for ok, _, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
