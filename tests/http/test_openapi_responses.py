#!/usr/bin/python3
"""Real answers of the daemon validate against docs/openapi.json.

tests/unit/test_openapi.c checks that the document lists exactly the routes;
this checks that its schemas describe what the daemon really sends (and that
the contract's example bodies are valid requests): start the daemon
(BANDITD_BIN) on a throwaway database, drive every endpoint, validate each
JSON answer against the schema the document names for that status
(JSON Schema 2020-12, python3-jsonschema). Output: TAP.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

from jsonschema import Draft202012Validator

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = json.load(open(os.path.join(ROOT, "docs", "openapi.json"), encoding="utf-8"))
BIN = os.environ.get("BANDITD_BIN", os.path.join(ROOT, "build", "asan", "banditd"))

results = []


def report(ok, name, detail="", skip=None):
    results.append((ok, name, detail if skip is None else "SKIP " + skip))


def deref(node):
    """Follow local $ref chains of a response or parameter object."""
    while isinstance(node, dict) and "$ref" in node:
        target = DOC
        for part in node["$ref"][2:].split("/"):
            target = target[part]
        node = target
    return node


def schema_for(method, pattern, status):
    op = DOC["paths"][pattern][method.lower()]
    resp = op["responses"].get(str(status))
    if resp is None:
        return None, "status %d is not documented for %s %s" % (status, method, pattern)
    resp = deref(resp)
    content = resp.get("content", {})
    for ctype in ("application/json", "application/problem+json"):
        if ctype in content:
            return content[ctype]["schema"], None
    return {}, None


def validate(schema, instance):
    v = Draft202012Validator({**schema, "components": DOC["components"]})
    return [e.message[:160] + " at " + "/".join(map(str, e.absolute_path)) for e in
            v.iter_errors(instance)]


def check_request(name, body, pattern, method):
    schema = DOC["paths"][pattern][method.lower()]["requestBody"]["content"][
        "application/json"]["schema"]
    errs = validate(schema, body)
    report(not errs, "request body valid: " + name, "; ".join(errs[:3]))


class Daemon:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="openapi_responses.")
        self.err = open(os.path.join(self.dir, "stderr.log"), "w")
        self.p = subprocess.Popen(
            [BIN, "--listen", "127.0.0.1:0", "--db", os.path.join(self.dir, "b.db")],
            stdout=subprocess.PIPE, stderr=self.err, text=True)
        line = self.p.stdout.readline()
        if not line.startswith("listening on "):
            raise RuntimeError("daemon did not start: " + line)
        self.port = int(line.rsplit(":", 1)[1])

    def stop(self):
        self.p.terminate()
        rc = self.p.wait(timeout=60)
        self.err.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        return rc

    def raw(self, path, headers=None):
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port, path))
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                if headers is not None:
                    headers.update(r.headers.items())
                return r.status, r.headers.get("Content-Type", ""), r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers.get("Content-Type", ""), e.read()

    def call(self, method, path, pattern, body=None, want=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port, path), data=data,
                                     method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                status, text = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read()
        inst = json.loads(text) if text else None
        name = "%s %s -> %d" % (method, path, status)
        if want is not None and status != want:
            report(False, name, "expected %d: %s" % (want, text[:200]))
            return inst
        schema, err = schema_for(method, pattern, status)
        if err:
            report(False, name, err)
        elif inst is not None:
            errs = validate(schema, inst)
            report(not errs, name + " matches its schema", "; ".join(errs[:3]))
        return inst


def documented_headers(method, pattern, status):
    op = DOC["paths"][pattern][method.lower()]
    return list(deref(op["responses"][str(status)]).get("headers", {}).keys())


def check_export(d):
    """Every NDJSON row of an export is an ExportRow; CSV has its columns;
    an incremental export too; the documented headers are sent."""
    got = {}
    status, ctype, body = d.raw("/v1/experiments/full/export", got)
    if status == 404 and b"no such endpoint" in body:
        report(True, "export rows match ExportRow", skip="the export route has not landed")
        return
    if status != 200 or not ctype.startswith("application/x-ndjson"):
        report(False, "GET export (ndjson)", "%d %s" % (status, ctype))
        return
    rows = [json.loads(line) for line in body.decode().splitlines() if line]
    schema = {"$ref": "#/components/schemas/ExportRow"}
    errs = []
    for row in rows:
        errs += validate(schema, row)
    kinds = sorted({r["kind"] for r in rows})
    report(not errs and kinds == ["assignment", "correction", "edit", "observation", "state", "unit"],
           "export rows match ExportRow (%d rows: %s)" % (len(rows), ", ".join(kinds)),
           "; ".join(errs[:3]))
    status, ctype, body = d.raw("/v1/experiments/full/export?format=csv")
    header = body.decode().split("\r\n", 1)[0].split(",")
    want = list(DOC["components"]["schemas"]["ExportRow"]["properties"].keys())
    report(status == 200 and ctype.startswith("text/csv") and header == want,
           "CSV export has the ExportRow columns in order", "%d %s %s" % (status, ctype, header))
    d.call("GET", "/v1/experiments/full/export?format=xml", "/v1/experiments/{id}/export", None,
           400)
    want = documented_headers("GET", "/v1/experiments/{id}/export", 200)
    missing = [h for h in want if h.lower() not in {k.lower() for k in got}]
    report(not missing, "export sends the headers the document names (%s)" % ", ".join(want),
           "missing: %s" % missing)
    # Incremental: after the first assignment, rows are ExportRows too (the
    # outcome of an earlier assignment comes again, whole).
    first = min(r["seq"] for r in rows if r["kind"] == "assignment")
    status, ctype, body = d.raw("/v1/experiments/full/export?after=%d" % first)
    inc = [json.loads(line) for line in body.decode().splitlines() if line]
    errs = []
    for row in inc:
        errs += validate(schema, row)
    report(status == 200 and 0 < len(inc) <= len(rows) and not errs,
           "incremental export rows match ExportRow (%d rows)" % len(inc),
           "%d %s" % (status, "; ".join(errs[:3])))
    d.call("GET", "/v1/experiments/full/export?after=x", "/v1/experiments/{id}/export", None, 400)
    next_after = int(got.get("Banditd-Next-After", "-1"))
    d.call("GET", "/v1/experiments/full/export?after=%d" % (next_after + 1),
           "/v1/experiments/{id}/export", None, 400)


def main():
    ex = "/v1/experiments"
    one = "/v1/experiments/{id}"
    sub = lambda s: "/v1/experiments/{id}/" + s
    contract = {
        "id": "checkout-button", "name": "Checkout button colour",
        "policy": {"name": "adapt", "params": {}},
        "goal": {"m": 1, "epsilon": 0.0, "delta": 0.05, "budget": None},
        "reward": {"min": 0, "max": 1},
        "bandits": [{"id": "all", "arms": ["red", "green", "blue"]}],
        "assignment_ttl_s": 86400, "seed": 42}
    optional = dict(contract, id="full", stop_rule="delta_c", bound="anytime", tau=None,
                    target_arm=None, default_reward=0,
                    constraints={"burn_in": 2, "min_prob": 0.02,
                                 "control": {"arm": "red", "share": 0.25}},
                    # .invalid never resolves (RFC 6761): the deliveries fail
                    # fast, and stay listed as pending with their error
                    webhooks=[{"url": "https://hooks.invalid/banditd",
                               "events": ["experiment.stopped", "experiment.paused"],
                               "secret": "whsec-0123456789abcdef"}])
    check_request("contract create body", contract, ex, "POST")
    check_request("create body with every optional field", optional, ex, "POST")
    check_request("shorthand arms", {"arms": ["a", "b"]}, ex, "POST")
    check_request("single release", {"assignment_id": "x"}, sub("assignments/release"), "POST")
    check_request("release batch", {"releases": [{"assignment_id": "x"}]},
                  sub("assignments/release"), "POST")
    check_request("served", {"served": [{"assignment_id": "x", "unit": "u"}]},
                  sub("assignments/served"), "POST")
    check_request("single reward", {"assignment_id": "x", "reward": 1}, sub("rewards"), "POST")
    check_request("reward batch", {"rewards": [{"assignment_id": "x", "reward": 0.5}]},
                  sub("rewards"), "POST")
    check_request("observation", {"bandit": "b", "arm": "green", "reward": 1},
                  sub("observations"), "POST")
    check_request("assignment request",
                  {"bandit": "segment-a", "unit": "user-123", "count": 1},
                  sub("assignments"), "POST")

    d = Daemon()
    try:
        d.call("POST", ex, ex, contract, 201)
        d.call("POST", ex, ex, optional, 201)
        d.call("POST", ex, ex, {"arms": ["a", "b"]}, 201)
        d.call("POST", ex, ex, {"arms": ["a", "b"], "prior": {"alpha": 2, "beta": 3}}, 201)
        d.call("GET", "/v1/policies", "/v1/policies", None, 200)
        d.call("POST", ex, ex, {"arms": ["a"]}, 400)
        d.call("POST", ex, ex, dict(contract), 409)
        d.call("GET", ex + "?limit=2", ex, None, 200)
        d.call("GET", ex + "?limit=0", ex, None, 400)
        d.call("GET", "/v1/experiments/full", one, None, 200)
        d.call("GET", "/v1/experiments/nope", one, None, 404)
        a = d.call("POST", "/v1/experiments/full/assignments", sub("assignments"),
                   {"count": 3}, 201)
        ids = [x["id"] for x in a["assignments"]]
        d.call("POST", "/v1/experiments/full/assignments", sub("assignments"),
               {"unit": "u1"}, 201)
        d.call("POST", "/v1/experiments/full/assignments", sub("assignments"),
               {"unit": "u1"}, 200)
        d.call("POST", "/v1/experiments/full/assignments", sub("assignments"),
               {"count": 0}, 400)
        d.call("POST", "/v1/experiments/full/rewards", sub("rewards"),
               {"rewards": [{"assignment_id": ids[0], "reward": 1},
                            {"assignment_id": ids[0], "reward": 1},
                            {"assignment_id": ids[0], "reward": 0},
                            {"assignment_id": "zz", "reward": 1}]}, 200)
        d.call("POST", "/v1/experiments/full/rewards", sub("rewards"),
               {"assignment_id": ids[1], "reward": 0}, 200)
        d.call("POST", "/v1/experiments/full/rewards", sub("rewards"),
               {"assignment_id": "zz-1", "reward": 0}, 404)
        d.call("POST", "/v1/experiments/full/rewards", sub("rewards"),
               {"assignment_id": ids[2], "reward": 7}, 400)
        # a leased block's leftovers, given back (one released, one already
        # rewarded, one unknown; then all unknown)
        b = d.call("POST", "/v1/experiments/full/assignments", sub("assignments"), {"count": 2}, 201)
        d.call("POST", "/v1/experiments/full/assignments/release", sub("assignments/release"),
               {"releases": [{"assignment_id": b["assignments"][0]["id"]},
                             {"assignment_id": ids[0]}, {"assignment_id": "zz"}]}, 200)
        d.call("POST", "/v1/experiments/full/assignments/release", sub("assignments/release"),
               {"assignment_id": "zz-1"}, 404)
        d.call("POST", "/v1/experiments/full/assignments/release", sub("assignments/release"),
               {"releases": []}, 400)
        d.call("POST", "/v1/experiments/full/assignments/served", sub("assignments/served"),
               {"served": [{"assignment_id": b["assignments"][1]["id"], "unit": "u9"},
                           {"assignment_id": "zz", "unit": "u9"}]}, 200)
        d.call("POST", "/v1/experiments/full/assignments/served", sub("assignments/served"),
               {"assignment_id": "zz-1", "unit": "u9"}, 404)
        d.call("POST", "/v1/experiments/full/observations", sub("observations"),
               {"observations": [{"arm": "red", "reward": 1}, {"arm": "blue", "reward": 0}]},
               200)
        d.call("GET", "/v1/experiments/full/status", sub("status"), None, 200)
        d.call("GET", "/v1/experiments/full/history", sub("history"), None, 200)
        # a comparison with control, run to its stop: the goal, vs_control
        # and the stop reason in their schemas
        d.call("POST", "/v1/experiments", "/v1/experiments",
               {"id": "vsc", "arms": ["ctl", "new"], "seed": 3,
                "goal": {"type": "control", "control": "ctl", "margin": 0.1}}, 201)
        for _ in range(2000):
            g = d.call("POST", "/v1/experiments/vsc/assignments", sub("assignments"), {}, 201)
            x = g["assignments"][0]
            if x["exploit"]:
                break
            d.call("POST", "/v1/experiments/vsc/rewards", sub("rewards"),
                   {"assignment_id": x["id"], "reward": 0.9 if x["arm"] == "new" else 0.2}, 200)
        st = d.call("GET", "/v1/experiments/vsc/status", sub("status"), None, 200)
        assert st["stop_reason"] == "superiority", st["stop_reason"]
        d.call("POST", "/v1/plan", "/v1/plan",
               {"experiment": {"arms": ["a", "b", "c"], "policy": {"name": "sr"},
                               "goal": {"budget": 300}}, "means": [0.5, 0.4, 0.3], "runs": 3},
               200)
        d.call("POST", "/v1/plan", "/v1/plan",
               {"experiment": {"arms": ["a", "b"], "goal": {"m": 1}}, "means": [0.5, 0.5],
                "runs": 1}, 200)
        d.call("POST", "/v1/plan", "/v1/plan", {"experiment": {"arms": ["a", "b"]}}, 400)
        d.call("POST", "/v1/experiments/full/oc", sub("oc"),
               {"scenarios": [{"name": "null", "arms": [0.3, 0.3, 0.3]},
                              {"name": "blue", "arms": [0.3, 0.3, 0.6]}],
                "runs": 3, "max_pulls": 50, "markdown": True}, 200)
        d.call("POST", "/v1/experiments/full/oc", sub("oc"), {"runs": 3}, 400)
        d.call("POST", "/v1/experiments/full/corrections", sub("corrections"),
               {"assignment_id": ids[1], "reward": 1, "reason": "late conversion"}, 201)
        d.call("POST", "/v1/experiments/full/corrections", sub("corrections"),
               {"assignment_id": ids[1], "reward": 0, "reason": "again"}, 409)
        d.call("POST", "/v1/experiments/full/corrections", sub("corrections"),
               {"corrections": [{"assignment_id": ids[1], "reward": 0, "reason": "x"}]}, 409)
        d.call("POST", "/v1/experiments/full/corrections", sub("corrections"),
               {"assignment_id": ids[1], "reward": 0}, 400)
        d.call("PATCH", "/v1/experiments/full", one,
               {"name": "Full", "assignment_ttl_s": 600, "reason": "longer sessions"}, 200)
        d.call("PATCH", "/v1/experiments/full", one, {"seed": 1}, 400)
        d.call("PATCH", "/v1/experiments/full", one, {"state": "paused"}, 200)
        d.call("PATCH", "/v1/experiments/full", one, {"state": "stopped"}, 200)
        d.call("PATCH", "/v1/experiments/full", one, {"state": "running"}, 409)
        # stopped by hand, no conclusion: the fallback, the control arm
        d.call("POST", "/v1/experiments/full/assignments", sub("assignments"), {}, 201)
        d.call("POST", "/v1/experiments/checkout-button/assignments", sub("assignments"),
               {}, 201)
        d.call("PATCH", "/v1/experiments/checkout-button", one, {"state": "paused"}, 200)
        # paused, no control arm: the fallback is "none", no assignment
        d.call("POST", "/v1/experiments/checkout-button/assignments", sub("assignments"),
               {}, 409)
        d.call("GET", "/v1/experiments/full/status", sub("status"), None, 200)
        d.call("GET", ex, ex, None, 200)
        d.call("GET", "/v1/experiments/full/webhooks", sub("webhooks"), None, 200)
        d.call("GET", "/v1/experiments/full/webhooks?limit=1", sub("webhooks"), None, 200)
        d.call("GET", "/v1/experiments/full/webhooks?limit=0", sub("webhooks"), None, 400)
        d.call("GET", "/v1/experiments/nope/webhooks", sub("webhooks"), None, 404)
        d.call("POST", ex, ex, {"arms": ["a", "b"], "webhooks": [
            {"url": "ftp://example.com/x", "secret": "0123456789abcdef"}]}, 400)
        check_export(d)
        d.call("DELETE", "/v1/experiments/checkout-button", one, None, 204)
        d.call("GET", "/healthz", "/healthz", None, 200)
        d.call("GET", "/readyz", "/readyz", None, 200)
        d.call("GET", "/openapi.json", "/openapi.json", None, 200)
    finally:
        rc = d.stop()
    report(rc == 0, "daemon exits 0 on SIGTERM", "exit %s" % rc)

    print("1..%d" % len(results))
    failed = 0
    for i, (ok, name, detail) in enumerate(results, 1):
        skip = detail.startswith("SKIP ")
        print("%s %d - %s%s" % ("ok" if ok else "not ok", i, name,
                                " # " + detail if skip else ""))
        if not ok:
            failed += 1
            print("# " + detail)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
