"""banditd_client — a client for the banditd HTTP API, standard library only.

One module (this file; the package exists only to carry py.typed, so type
checkers read its annotations once installed), no dependencies (urllib). For trial coordinators' scripts and
notebooks as much as for services::

    from banditd_client import Client, BanditdError

    bd = Client("http://127.0.0.1:8080", key="bd_...")
    bd.create({"id": "checkout-button", "arms": ["red", "green", "blue"]})
    a = bd.assign("checkout-button", unit="user-123")[0]
    bd.reward("checkout-button", [(a["id"], 1.0)])
    print(bd.status("checkout-button")["bandits"][0]["recommended"])
    bd.stop("checkout-button")

Every error the daemon answers becomes a BanditdError carrying its
problem+json (RFC 9457). Retries are safe only where the API makes them
so: rewards are idempotent per assignment (the same reward sent again is
a "duplicate", counted once), so reward() retries after a lost answer or
a daemon restart; an assignment is retried only when no assignment can
have been made (the daemon answered 429 or 503), or when it names a unit
(a sticky unit gets its assignment back, not a new pull).

The TypedDicts below mirror the schemas of docs/openapi.json of the same
name (SCHEMAS); tests/clients/test_python.py checks that they and
OPERATIONS agree with the document, so the client cannot drift from the
API.
"""

from __future__ import annotations

import json
import random
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, Iterable, List, Literal, Mapping, Optional, Tuple, TypedDict, Union

__all__ = [
    "Client",
    "BanditdError",
    "Assignment",
    "AssignmentRequest",
    "AssignmentResponse",
    "RewardItem",
    "RewardResult",
    "RewardResponse",
    "Status",
    "BanditStatus",
    "BlindedBandit",
    "Design",
    "DesignChange",
    "is_blinded",
    "ArmStatus",
    "StopEval",
    "Problem",
    "FieldError",
    "ExperimentPatch",
    "ReleaseResult",
    "ReleaseResponse",
    "ServedResult",
    "ServedResponse",
    "Block",
    "OPERATIONS",
    "SCHEMAS",
]

__version__ = "1.0.0"

# --- types: the schemas of docs/openapi.json ----------------------------------------


class AssignmentRequest(TypedDict, total=False):
    bandit: Optional[str]
    unit: Optional[str]
    count: int


class Assignment(TypedDict):
    id: str
    bandit: str
    arm: str
    arm_index: int
    expires_at: str
    exploit: bool


class AssignmentResponse(TypedDict):
    assignments: List[Assignment]


class RewardItem(TypedDict):
    assignment_id: str
    reward: float


RewardStatus = Literal["accepted", "duplicate", "conflict", "unknown", "expired", "error"]


class RewardResult(TypedDict):
    assignment_id: str
    status: RewardStatus


class RewardResponse(TypedDict):
    accepted: int
    duplicates: int
    results: List[RewardResult]


ReleaseStatus = Literal["released", "duplicate", "rewarded", "expired", "unknown", "error"]


class ReleaseResult(TypedDict):
    assignment_id: str
    status: ReleaseStatus


class ReleaseResponse(TypedDict):
    released: int
    duplicates: int
    results: List[ReleaseResult]


ServedStatus = Literal["bound", "duplicate", "conflict", "unknown", "error"]


class ServedResult(TypedDict):
    assignment_id: str
    status: ServedStatus


class ServedResponse(TypedDict):
    bound: int
    duplicates: int
    results: List[ServedResult]


class _ArmStatus(TypedDict):
    id: str
    pulls: int
    pending: int
    mean: Optional[float]
    variance: Optional[float]
    lower: float
    upper: float


class VsControl(TypedDict):
    """Goal type control: an arm's comparison with the control arm."""

    difference: Optional[float]
    lower: float
    upper: float
    decision: Literal["open", "superior", "futile"]
    decided_at: Optional[int]


class ArmStatus(_ArmStatus, total=False):
    posterior_mean: float
    retired: bool
    control: bool
    vs_control: VsControl


class StopEval(TypedDict):
    rule: str
    proven: bool
    fires_when: Optional[str]
    evidence: Optional[float]
    threshold: Optional[float]
    error_bound: Optional[float]
    fired: bool


class _BanditStatus(TypedDict):
    id: str
    recommended: List[str]
    delta_c: float
    rho: float
    done: bool
    arms: List[ArmStatus]
    stop: StopEval


class BanditStatus(_BanditStatus, total=False):
    cutoff: float
    glr: float


class _BlindedBandit(TypedDict):
    id: str


class BlindedBandit(_BlindedBandit, total=False):
    """A bandit in the blinded view: its id and whether it is done."""

    done: bool


class _DesignChange(TypedDict):
    seq: int
    at: str
    via: Literal["patch", "amendment"]
    amendment: bool
    previous_hash: str
    design_hash: str


class DesignChange(_DesignChange, total=False):
    reason: Optional[str]  # absent from the blinded view


class Design(TypedDict):
    hash: str
    initial_hash: str
    frozen: bool
    locked: bool
    changes: int
    amendments: List[DesignChange]
    blinded: bool


State = Literal["running", "paused", "stopped"]


class _Status(TypedDict):
    id: str
    state: State
    stopped: bool
    stop_reason: Optional[str]
    pulls: int
    pending: int
    budget: Optional[int]
    # BanditStatus items in the full view; BlindedBandit items in the blinded
    # view of a blinded experiment (blinded: True; is_blinded()).
    bandits: List[Union[BanditStatus, BlindedBandit]]


class Status(_Status, total=False):
    handed_out: int
    policy: str
    m: int
    delta: float
    epsilon: float
    bandits_done: int
    bandits_total: int
    design_hash: str
    design: Design
    blinded: Literal[True]


def is_blinded(status: Mapping[str, Any]) -> bool:
    """Whether status is the blinded view of a blinded experiment (read by a
    key without scope unblinded): totals, state, whether and why it stopped,
    and each bandit's id and done (BlindedBandit); nothing per arm."""
    return status.get("blinded") is True


class ExperimentPatch(TypedDict, total=False):
    state: State
    name: str
    goal: Dict[str, Any]
    assignment_ttl_s: int
    reason: str
    retire: Dict[str, str]


class FieldError(TypedDict):
    field: str
    message: str


class _Problem(TypedDict):
    type: str
    title: str
    status: int


class Problem(_Problem, total=False):
    detail: str
    errors: List[FieldError]


# The schema each type mirrors (its name in components.schemas).
SCHEMAS: Dict[str, type] = {
    t.__name__: t
    for t in (
        AssignmentRequest,
        Assignment,
        AssignmentResponse,
        RewardItem,
        RewardResult,
        RewardResponse,
        ReleaseResult,
        ReleaseResponse,
        ServedResult,
        ServedResponse,
        ArmStatus,
        StopEval,
        BanditStatus,
        BlindedBandit,
        Design,
        DesignChange,
        Status,
        ExperimentPatch,
        FieldError,
        Problem,
    )
}

# What each method calls: (operationId, method, path template).
OPERATIONS: Dict[str, Tuple[str, str, str]] = {
    "create": ("createExperiment", "POST", "/v1/experiments"),
    "get": ("getExperiment", "GET", "/v1/experiments/{id}"),
    "assign": ("createAssignments", "POST", "/v1/experiments/{id}/assignments"),
    "reward": ("createRewards", "POST", "/v1/experiments/{id}/rewards"),
    "release": ("releaseAssignments", "POST", "/v1/experiments/{id}/assignments/release"),
    "served": ("serveAssignments", "POST", "/v1/experiments/{id}/assignments/served"),
    "status": ("getStatus", "GET", "/v1/experiments/{id}/status"),
    "stop": ("patchExperiment", "PATCH", "/v1/experiments/{id}"),
}

# --- errors ----------------------------------------------------------------------


class BanditdError(Exception):
    """An answer of the daemon that is not a success, or no answer at all.

    status is the HTTP status (0 when no answer came: connection refused,
    reset, timed out); problem is the problem+json document as sent (a
    dict; a synthesised one when the answer had none); retry_after the
    seconds of a Retry-After header, or None.
    """

    def __init__(self, status: int, problem: Mapping[str, Any], retry_after: Optional[float] = None):
        self.status = status
        self.problem: Dict[str, Any] = dict(problem)
        self.retry_after = retry_after
        super().__init__("%s (%d): %s" % (self.title, status, self.detail or self.type))

    @property
    def type(self) -> str:
        return str(self.problem.get("type", "about:blank"))

    @property
    def slug(self) -> str:
        """The last part of the type URN: "validation", "not-found", "rate-limited"…"""
        return self.type.rsplit(":", 1)[-1]

    @property
    def title(self) -> str:
        return str(self.problem.get("title", ""))

    @property
    def detail(self) -> str:
        return str(self.problem.get("detail", ""))

    @property
    def errors(self) -> List[FieldError]:
        return list(self.problem.get("errors", []))

    @property
    def retryable(self) -> bool:
        """Whether the request may be sent again as it is: no answer, 429 or 503."""
        return self.status in (0, 429, 503)


# --- the client --------------------------------------------------------------------

Rewards = Union[Mapping[str, float], Iterable[Union[RewardItem, Tuple[str, float]]]]


class Client:
    """A banditd endpoint and the key to call it with.

    retries: how many times a retryable request is sent again (backoff
    doubling from backoff seconds, with jitter, or the daemon's
    Retry-After); batch: rewards per request (the daemon's --max-batch,
    1000 by default).
    """

    def __init__(
        self,
        base_url: str,
        key: Optional[str] = None,
        *,
        timeout: float = 10.0,
        retries: int = 5,
        backoff: float = 0.2,
        batch: int = 1000,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.key = key
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.batch = batch

    # -- operations -------------------------------------------------------------

    def create(self, config: Mapping[str, Any]) -> Dict[str, Any]:
        """Create an experiment (the body of docs/contract.md); the experiment."""
        return self._call("create", None, dict(config), retry_lost=False)

    def get(self, experiment: str) -> Dict[str, Any]:
        """An experiment's configuration and state."""
        return self._call("get", experiment, None, retry_lost=True)

    def assign(
        self,
        experiment: str,
        *,
        unit: Optional[str] = None,
        bandit: Optional[str] = None,
        count: int = 1,
    ) -> List[Assignment]:
        """Which arm(s) next: count assignments (1 with a unit)."""
        body: AssignmentRequest = {}
        if unit is not None:
            body["unit"] = unit
        if bandit is not None:
            body["bandit"] = bandit
        if count != 1:
            body["count"] = count
        # Sent again after a lost answer only with a unit: it gets the
        # assignment it holds back. Without one, a lost answer may have
        # made assignments; they expire unanswered (assignment_ttl_s).
        answer: AssignmentResponse = self._call("assign", experiment, body, retry_lost=unit is not None)
        return answer["assignments"]

    def reward(self, experiment: str, rewards: Rewards) -> RewardResponse:
        """Report rewards: {assignment_id: reward}, or (id, reward) pairs, or
        RewardItems. Sent in batches of `batch`, each retried until the
        daemon answered (rewards are idempotent per assignment: one that
        was recorded before the answer was lost comes back "duplicate").
        The results of every batch, in order."""
        items = _reward_items(rewards)
        total: RewardResponse = {"accepted": 0, "duplicates": 0, "results": []}
        for i in range(0, len(items), self.batch):
            part: RewardResponse = self._call(
                "reward", experiment, {"rewards": items[i : i + self.batch]}, retry_lost=True
            )
            total["accepted"] += part["accepted"]
            total["duplicates"] += part["duplicates"]
            total["results"].extend(part["results"])
        return total

    def release(self, experiment: str, assignment_ids: Iterable[str]) -> ReleaseResponse:
        """Give back leased assignments no visitor got (assignment blocks):
        they count nowhere. In batches, each retried until answered (a
        release sent again is a "duplicate")."""
        ids = [str(a) for a in assignment_ids]
        total: ReleaseResponse = {"released": 0, "duplicates": 0, "results": []}
        for i in range(0, len(ids), self.batch):
            items = [{"assignment_id": a} for a in ids[i : i + self.batch]]
            part: ReleaseResponse = self._call("release", experiment, {"releases": items}, retry_lost=True)
            total["released"] += part["released"]
            total["duplicates"] += part["duplicates"]
            total["results"].extend(part["results"])
        return total

    def served(self, experiment: str, units: Union[Mapping[str, str], Iterable[Tuple[str, str]]]) -> ServedResponse:
        """Say which unit got which leased assignment ({assignment_id: unit}
        or (id, unit) pairs): the unit gets it back when it asks with its
        unit, and the audit trail names it. Batched, retried (idempotent)."""
        pairs = list(units.items()) if isinstance(units, Mapping) else [tuple(p) for p in units]
        total: ServedResponse = {"bound": 0, "duplicates": 0, "results": []}
        for i in range(0, len(pairs), self.batch):
            items = [{"assignment_id": str(a), "unit": str(u)} for a, u in pairs[i : i + self.batch]]
            part: ServedResponse = self._call("served", experiment, {"served": items}, retry_lost=True)
            total["bound"] += part["bound"]
            total["duplicates"] += part["duplicates"]
            total["results"].extend(part["results"])
        return total

    def block(self, experiment: str, size: int, *, bandit: Optional[str] = None) -> "Block":
        """Assignments leased `size` at a time, handed out locally (Block)."""
        return Block(self, experiment, size, bandit=bandit)

    def status(self, experiment: str) -> Status:
        """Confidence, recommendation and stop state."""
        return self._call("status", experiment, None, retry_lost=True)

    def stop(self, experiment: str) -> Dict[str, Any]:
        """Stop the experiment for good (it serves its recommendation from then
        on); the experiment. Stopping a stopped experiment is no error."""
        patch: ExperimentPatch = {"state": "stopped"}
        return self._call("stop", experiment, patch, retry_lost=True)

    # -- transport ----------------------------------------------------------------

    def _call(self, op: str, experiment: Optional[str], body: Any, *, retry_lost: bool) -> Any:
        _, method, template = OPERATIONS[op]
        path = template.replace("{id}", urllib.parse.quote(experiment or "", safe=""))
        delay = self.backoff
        attempt = 0
        while True:
            try:
                return self._send(method, path, body)
            except BanditdError as e:
                attempt += 1
                lost = e.status == 0
                if attempt > self.retries or not e.retryable or (lost and not retry_lost):
                    raise
                wait = e.retry_after if e.retry_after is not None else delay * (0.5 + random.random())
                time.sleep(min(wait, 30.0))
                delay = min(delay * 2, 10.0)

    def _send(self, method: str, path: str, body: Any) -> Any:
        data = None
        headers = {"Accept": "application/json"}
        if body is not None:
            data = json.dumps(body, separators=(",", ":")).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self.key:
            headers["Authorization"] = "Bearer " + self.key
        req = urllib.request.Request(self.base_url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
                return json.loads(raw) if raw else None
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                problem = json.loads(raw)
                if not isinstance(problem, dict):
                    raise ValueError
            except ValueError:
                problem = {"type": "about:blank", "title": e.reason or "HTTP error", "status": e.code,
                           "detail": raw[:200].decode("utf-8", "replace")}
            raise BanditdError(e.code, problem, _retry_after(e.headers.get("Retry-After"))) from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise BanditdError(
                0,
                {"type": "urn:banditd:client:unreachable", "title": "No answer from banditd",
                 "status": 0, "detail": "%s %s: %s" % (method, self.base_url + path, reason)},
            ) from None


class Block:
    """Assignments leased `size` at a time and handed out one per visitor
    without a round trip: take() serves the next one (leasing a new block
    when this one is used up) and notes which unit got it; flush() sends
    those notes (served); close() flushes and releases what no visitor got.
    Use it as a context manager. The block size trades round trips against
    how fresh the allocation is (docs/measurements.md, "Assignment blocks").
    Not thread-safe: one per thread, or a lock around it."""

    def __init__(self, client: Client, experiment: str, size: int, *, bandit: Optional[str] = None):
        if size < 1:
            raise ValueError("size: at least 1")
        self.client = client
        self.experiment = experiment
        self.size = size
        self.bandit = bandit
        self.leased: List[Assignment] = []
        self.units: List[Tuple[str, str]] = []
        self.round_trips = 0

    def take(self, unit: Optional[str] = None) -> Assignment:
        """The next visitor's assignment; with its unit, the binding is sent
        at the next flush()."""
        if not self.leased:
            # a lost answer is not sent again: the block it may have made
            # expires unanswered
            self.leased = self.client.assign(self.experiment, bandit=self.bandit, count=self.size)
            self.leased.reverse()
            self.round_trips += 1
        a = self.leased.pop()
        if unit is not None:
            self.units.append((a["id"], unit))
        return a

    def flush(self) -> Optional[ServedResponse]:
        """Send which unit got which; None when there is nothing to send."""
        if not self.units:
            return None
        units, self.units = self.units, []
        try:
            return self.client.served(self.experiment, units)
        except BanditdError:
            self.units = units + self.units  # kept: sending them again is safe
            raise

    def close(self) -> Optional[ReleaseResponse]:
        """Flush, and release what no visitor got."""
        self.flush()
        if not self.leased:
            return None
        left = [a["id"] for a in self.leased]
        answer = self.client.release(self.experiment, left)
        self.leased = []
        return answer

    def __enter__(self) -> "Block":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _retry_after(value: Optional[str]) -> Optional[float]:
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def _reward_items(rewards: Rewards) -> List[RewardItem]:
    if isinstance(rewards, Mapping):
        return [{"assignment_id": str(k), "reward": float(v)} for k, v in rewards.items()]
    items: List[RewardItem] = []
    for r in rewards:
        if isinstance(r, Mapping):
            items.append({"assignment_id": str(r["assignment_id"]), "reward": float(r["reward"])})
        else:
            aid, value = r
            items.append({"assignment_id": str(aid), "reward": float(value)})
    return items
