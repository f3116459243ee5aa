"""The verdict of a claim after its run — the one post-run type — and the one count of a run's claims.

``Verdict`` is what ``Claim.judge`` returns, what summary.json records (``to_dict``) and what every reader gets back
(``Verdict.from_dict``: a record's claim or a published row). Its ``bucket`` decides where it goes in every count:
a mechanism claim's verdict (held / failed / inconclusive / unverified: counted) or why it is not counted (premise,
unsettled, check, measurement). :func:`tally` counts buckets; every command, page and the Python API
(``RunRecord.held``) count through it, so ``run``, ``reproduce``, ``runs``, ``show``, ``compare``, ``load_run`` and
the report cannot disagree (tests/test_counts_agree.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .uncertainty import HELD, STATUSES

COUNTED = ("held", "failed", "inconclusive", "unverified")  # the buckets a headline counts: a mechanism claim's verdict
APART = ("premise", "unsettled", "check", "measurement")  # judged and shown, never counted
BUCKETS = COUNTED + APART
_FIELDS = ("id", "statement", "source", "measured", "threshold", "holds", "paper_value", "kind", "status", "interval",
           "n", "unit", "settle", "by_rule", "role", "controlled", "rivals")


@dataclass
class Verdict:
    """A judged claim: the only shape a claim has after its run (``Claim.judge`` makes one; ``Verdict.from_dict`` reads
    one back from a record or a published table). ``role`` is what the rival nets say of it (mechanism / premise /
    unsettled: runs/discrimination.py) and ``bucket`` the one place where a verdict's place in every count is decided.
    """

    id: str
    statement: str
    source: str
    measured: float | str
    threshold: str
    holds: bool
    paper_value: float | None = None
    kind: str = "claim"
    status: str = ""  # held / failed / inconclusive / unverified ('' → from holds)
    interval: tuple[float, float] | None = None  # the 95 % interval of the measurement
    n: int | None = None  # units behind the interval
    unit: str = ""  # what they are: seeds, test points, ...
    settle: int | None = None  # inconclusive: the units that would settle it at the same estimate
    by_rule: str = ""  # inconclusive by the minimum-units rule: what the interval alone says (held / failed)
    role: str = ""  # mechanism / premise / unsettled, from the rival runs read with it ('' : none read)
    controlled: bool | None = None  # False: no mechanism control of its experiment targets it (a premise)
    rivals: list[dict[str, Any]] | None = None  # its cells on the rival nets (runs/discrimination.py)
    extra: dict[str, Any] = field(default_factory=dict)  # any other recorded key, kept as read

    def __post_init__(self):
        self.status = self.status or (HELD if self.holds else "failed")

    @property
    def bucket(self) -> str:
        """Where this verdict goes in every count: its status (held / failed / inconclusive / unverified) when it is a
        mechanism claim, else why it is not counted — 'check', 'measurement', 'premise' (declared, or the rivals
        show it, or no rival must fail it) or 'unsettled' (a rival that must fail it was not read or not decisive)."""
        if self.kind in ("check", "measurement", "premise"):
            return self.kind
        if self.role == "mechanism":
            return self.status
        if self.role in ("premise", "unsettled"):
            return self.role
        return "premise" if self.controlled is False else "unsettled"

    @property
    def counted(self) -> bool:
        return self.bucket in COUNTED

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Verdict:
        """A recorded claim (summary.json's ``claims``) or a published row (``claim`` for ``id``; ``bucket``, when
        given, fixes the role) as a Verdict; keys it does not know are kept in ``extra``."""
        known = {k: d[k] for k in _FIELDS if k in d}
        known.setdefault("id", d.get("claim", "?"))
        for k in ("statement", "source", "threshold"):
            known[k] = known.get(k) or ""
        known.setdefault("measured", float("nan"))
        known.setdefault("holds", d.get("status") == HELD)
        if isinstance(known.get("interval"), list):
            known["interval"] = tuple(known["interval"])
        b = d.get("bucket")
        if b in ("premise", "unsettled") and known.get("kind", "claim") == "claim":
            known["role"] = b
        elif b in COUNTED:
            known["role"] = "mechanism"
        if known.get("kind") == "uncontrolled":  # a published row's kind for a not-counted claim
            known["kind"] = "claim"
            known["role"] = known.get("role") if known.get("role") in ("premise", "unsettled") else "unsettled"
        if known.get("role") == "mechanism claim":  # a published row's role text
            known["role"] = "mechanism"
        extra = {k: v for k, v in d.items() if k not in _FIELDS and k not in ("bucket", "claim")}
        return cls(**known, extra=extra)

    def to_dict(self) -> dict[str, Any]:
        # a non-finite value stays a float: json_dumps writes it by featlab's one rule ("NaN"), json_loads reads it back
        out: dict[str, Any] = {"id": self.id, "statement": self.statement, "source": self.source,
                               "measured": self.measured, "threshold": self.threshold, "holds": bool(self.holds),
                               "kind": self.kind, "status": self.status}
        if self.interval is not None:
            out.update(interval=[float(x) for x in self.interval], n=self.n, unit=self.unit)
        if self.settle is not None:
            out["settle"] = self.settle
        if self.by_rule:
            out["by_rule"] = self.by_rule
        if self.paper_value is not None:
            out["paper_value"] = self.paper_value
        if self.role:
            out["role"] = self.role
        if self.controlled is not None:
            out["controlled"] = self.controlled
        if self.rivals is not None:
            out["rivals"] = self.rivals
        return {**self.extra, **out}


def verdict(claim: dict[str, Any] | Verdict) -> Verdict:
    """A recorded claim (or a published row) as the one post-run type."""
    return claim if isinstance(claim, Verdict) else Verdict.from_dict(claim)


def bucket(claim: dict[str, Any] | Verdict) -> str:
    """Where the claim goes in every count (``Verdict.bucket``): held / failed / inconclusive / unverified (a counted
    mechanism claim), or premise / unsettled / check / measurement (shown, never counted)."""
    return verdict(claim).bucket


def is_check(claim: dict[str, Any] | Verdict) -> bool:
    """A check (holds by construction, or tests the generator) or a measurement (no verdict): never counted."""
    return bucket(claim) in ("check", "measurement")


def is_uncontrolled(claim: dict[str, Any]) -> bool:
    """A claim not counted though not a check: a premise (declared, shown by a rival, or no rival must fail it) or
    unsettled (a rival that must fail it was not read with it, or was not decisive)."""
    return bucket(claim) in ("premise", "unsettled")


def role_text(claim: dict[str, Any]) -> str:
    """'mechanism claim' / 'premise' / 'unsettled' / 'check' / 'measurement'."""
    b = bucket(claim)
    return "mechanism claim" if b in COUNTED else b


def is_counted(claim: dict[str, Any]) -> bool:
    return bucket(claim) in COUNTED


def status(claim: dict[str, Any] | Verdict) -> str:
    """held / failed / inconclusive / unverified (records made before verdicts carried uncertainty: from holds)."""
    if isinstance(claim, Verdict):
        return claim.status
    return claim.get("status") or ("held" if claim.get("holds") else "failed")


def tally(claims: Iterable[dict[str, Any] | Verdict]) -> dict[str, int]:
    """{bucket: how many} over every bucket (``Verdict.bucket``): THE count of a run's claims, which every command,
    page and the Python API print (``claim_counts``, ``status_counts`` and ``counts_text`` read it)."""
    out = dict.fromkeys(BUCKETS, 0)
    for c in claims:
        out[bucket(c)] += 1
    return out


def claim_counts(claims: Iterable[dict[str, Any]]) -> tuple[int, int]:
    """(mechanism claims that hold, mechanism claims counted), from :func:`tally`."""
    t = tally(claims)
    return t["held"], sum(t[b] for b in COUNTED)


def status_counts(claims: Iterable[dict[str, Any]]) -> dict[str, int]:
    """{held, failed, inconclusive, unverified: how many} of the counted claims, from :func:`tally`."""
    t = tally(claims)
    return {s: t[s] for s in STATUSES}


def check_counts(claims: Iterable[dict[str, Any]]) -> tuple[int, int]:
    """(checks that hold, checks judged): shown apart from the claims."""
    checks = [c for c in claims if bucket(c) == "check"]
    return sum(status(c) == "held" for c in checks), len(checks)


def net_counts(claims: Iterable[dict[str, Any]]) -> tuple[int, int]:
    """(claims and premises that hold on the run's own net, claims and premises judged), checks and measurements
    apart: a sweep point's column, where no rival run is read (so nothing is counted as a mechanism claim) and
    ``--strict`` asks whether every judged claim held on the net."""
    judged = [verdict(c) for c in claims if verdict(c).kind in ("claim", "premise")]
    return sum(v.status == HELD for v in judged), len(judged)


def tally_text(t: dict[str, int]) -> str:
    """'1 of 2 mechanism claims held (1 failed); not counted: 2 unsettled, 3 premises, 2 checks', or 'no mechanism
    claim counted; not counted: ...' — never a bare '0/0'."""
    counted = sum(t[b] for b in COUNTED)
    rest = ", ".join(f"{t[s]} {s}" for s in COUNTED[1:] if t[s])
    plural = {"premise": "premises", "check": "checks", "measurement": "measurements"}
    apart = ", ".join(f"{t[b]} {plural.get(b, b) if t[b] != 1 else b}" for b in APART if t[b])
    head = (f"{t['held']} of {counted} mechanism claim{'s' if counted != 1 else ''} held" + (f" ({rest})" if rest
            else "")) if counted else "no mechanism claim counted"
    return head + (f"; not counted: {apart}" if apart else ("" if counted else " (no claim judged)"))


def tally_short(t: dict[str, int]) -> str:
    """'1/2 held' (mechanism claims), or 'none counted (2 unsettled)': the column ``runs`` and ``compare`` print."""
    counted = sum(t[b] for b in COUNTED)
    if counted:
        return f"{t['held']}/{counted} held"
    plural = {"premise": "premises", "check": "checks", "measurement": "measurements"}  # '1 premise', '2 premises'
    apart = ", ".join(f"{t[b]} {plural.get(b, b) if t[b] != 1 else b}" for b in APART if t[b])
    return "none counted" + (f" ({apart})" if apart else "")


def counts_text(claims: Iterable[dict[str, Any]]) -> str:
    """:func:`tally_text` of the claims' :func:`tally`."""
    return tally_text(tally(claims))
