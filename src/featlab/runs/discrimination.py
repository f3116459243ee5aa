"""Which claims discriminate: every claim judged on the paper's net and on each rival net, and its role from that.

A **rival** is an experiment's mechanism control (``Control`` with a ``premise``): a net trained to the same clean
(or training) accuracy by a different mechanism — a large init, GD from the decoupled solution, fine labels shuffled
within their coarse class, ERM in place of Midpoint Mixup. A rival run judges every claim of the experiment. A rival
*must fail* the claims it targets (``Control.targets``); a claim it does not target is exempt there, with the
paper's reason (``Control.exempt``).

The role of a claim of kind "claim" in a run, given the rival runs that match it (same settings outside the rival's
own overrides; :func:`rivals_for`):

* **mechanism**: it holds or fails on the paper's net, and it **fails** on every rival that must fail it and whose
  net trained (each ``trained`` metric within the rival's margin of the paper net's own): the measurement can tell
  the paper's mechanism from the rivals. Only these are counted in headlines.
* **premise**: it also **holds** for a rival that must fail it (the measurement does not need the mechanism: clean
  accuracy, convergence), or no rival must fail it at all. Shown, not counted.
* **unsettled**: no rival holds it, but some rival that must fail it did not run, was inconclusive or unverified
  there (more units), or did not train (a failed rival, not a defeated claim). Shown, not counted, with what is
  missing.

Kinds "premise" (declared: a premise by design, e.g. the net's clean accuracy) and "check" keep their kind.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from .claims import Verdict
from .registry import UnknownExperimentError, get_experiment


class RecordLike(Protocol):
    """What the matrix reads of a run record: runs/record.py's RunRecord, which imports this module (so a type
    import back would be a cycle)."""

    dir: Path
    summary: dict[str, Any]

    @property
    def experiment(self) -> str: ...

    @property
    def claims(self) -> list[dict[str, Any]]: ...

    @property
    def ok(self) -> bool: ...


R = TypeVar("R", bound=RecordLike)


def status(claim: dict[str, Any]) -> str:
    return Verdict.from_dict(claim).status

MECHANISM, PREMISE, UNSETTLED = "mechanism", "premise", "unsettled"
ROLES = (MECHANISM, PREMISE, UNSETTLED)
EXEMPT, NOT_RUN, UNTRAINED, NAN = "exempt", "not run", "rival untrained", "not measured"


@dataclass(frozen=True)
class Cell:
    """One claim on one rival: the rival's verdict, or exempt / not run / rival untrained."""

    rival: str
    state: str  # held / failed / inconclusive / unverified / exempt / not run / rival untrained / not measured
    measured: Any = None
    reason: str = ""  # exempt: the paper's reason; untrained: which metric fell short

    def to_dict(self) -> dict[str, Any]:
        out = {"rival": self.rival, "state": self.state}
        if self.measured is not None:
            out["measured"] = self.measured
        if self.reason:
            out["reason"] = self.reason
        return out


def _defaults(exp_id: str) -> dict[str, Any]:
    try:
        return {k: f.default for k, f in get_experiment(exp_id).config.model_fields.items()}
    except UnknownExperimentError:
        return {}


def matches(rival: RecordLike, main: RecordLike) -> bool:
    """A rival (or control) run belongs to a main run when their configs agree outside the rival's own overrides; a
    field one record lacks (a run made before the field existed) reads as the field's default."""
    changed = set((rival.summary.get("control") or {}).get("overrides", {}))
    a, b = rival.summary.get("config") or {}, main.summary.get("config") or {}
    dflt, absent = _defaults(main.experiment), object()
    return all(a.get(k, dflt.get(k, absent)) == b.get(k, dflt.get(k, absent)) for k in set(a) | set(b)
               if k not in changed)


def rivals_for(main: RecordLike, controls: Sequence[R]) -> list[R]:
    """The newest complete control run of each control name that matches ``main`` (``controls`` newest first)."""
    seen, out = set(), []
    for c in controls:
        name = (c.summary.get("control") or {}).get("name", "?")
        if name not in seen and c.ok and matches(c, main):
            seen.add(name)
            out.append(c)
    return out


def untrained_reason(rival: RecordLike, main: RecordLike) -> str:
    """Why the rival's net does not count (a ``trained`` metric more than its margin below the paper net's), or ''."""
    info = rival.summary.get("control") or {}
    margin = float(info.get("margin", 0.05))
    for m, value in (info.get("trained_values") or {}).items():
        mine = (main.summary.get("metrics") or {}).get(m)
        if not isinstance(value, (int, float)) or (isinstance(mine, (int, float)) and value < mine - margin):
            return f"{m} = {value} against {mine} on the paper's net (margin {margin})"
    return ""


def cells(claim_id: str, main: RecordLike, rivals: Sequence[RecordLike], declared: dict[str, Any],
          itself: dict[str, RecordLike] | None = None) -> list[Cell]:
    """The claim on every mechanism rival the experiment declares (``declared``: name → Control), run or not;
    ``itself``: rivals whose settings the paper-net run already has (judged on that run)."""
    runs: dict[Any, RecordLike] = dict(itself or {})
    runs.update({(r.summary.get("control") or {}).get("name"): r for r in rivals})
    out = []
    for name, ctl in declared.items():
        targets = set(ctl.targets_ids)
        if claim_id not in targets:
            out.append(Cell(name, EXEMPT, reason=ctl.exempt.get(claim_id, "")))
            continue
        run = runs.get(name)
        if run is None:
            out.append(Cell(name, NOT_RUN))
            continue
        why = untrained_reason(run, main)
        found = next((c for c in run.claims if c.get("id") == claim_id), None)
        if why:
            out.append(Cell(name, UNTRAINED, found.get("measured") if found else None, why))
        elif found is None:
            out.append(Cell(name, NOT_RUN, reason="the rival run did not judge it"))
        elif status(found) == "failed" and _is_nan(found.get("measured")):
            out.append(Cell(name, NAN, found.get("measured"), "NaN on the rival's net: a failure to measure, not a "
                            "defeat"))
        else:
            out.append(Cell(name, status(found), found.get("measured")))
    return out


def _is_nan(x: Any) -> bool:
    return (isinstance(x, float) and math.isnan(x)) or (isinstance(x, str) and x.lower() == "nan")


def role(row: list[Cell]) -> str:
    """mechanism / premise / unsettled from a claim's cells (see the module docstring)."""
    bound = [c for c in row if c.state != EXEMPT]
    if not bound or any(c.state == "held" for c in bound):
        return PREMISE
    return MECHANISM if all(c.state == "failed" for c in bound) else UNSETTLED


def annotate(main: RecordLike, controls: Sequence[RecordLike], exp) -> None:
    """Give each claim of ``main`` (a paper-net run) its ``role`` and its ``rivals`` cells, in memory, from the
    matching rival runs among ``controls``; ``main.summary["rivals"]`` lists the rivals with their nets' metrics."""
    declared = {c.name: _Declared(c, exp) for c in exp.controls if c.kind == "mechanism"}
    rivals = [r for r in rivals_for(main, controls) if (r.summary.get("control") or {}).get("name") in declared]
    cfg = main.summary.get("config") or {}
    # a rival whose every override the paper-net run already has is that very net (a run of it is the same run)
    itself = {n: main for n, d in declared.items() if d.overrides and all(cfg.get(k) == v for k, v in
                                                                          d.overrides.items())}
    for claim in main.claims:
        kind = claim.get("kind", "claim")
        if kind != "claim":
            continue
        row = cells(claim.get("id", "?"), main, rivals, declared, itself)
        claim["role"] = role(row)
        claim["rivals"] = [c.to_dict() for c in row]
    main.summary["rivals"] = [
        {"name": (r.summary.get("control") or {}).get("name"), "preset": r.summary.get("preset"),
         "run": r.dir.name, "trained": (r.summary.get("control") or {}).get("trained_values") or {},
         "untrained": untrained_reason(r, main)} for r in rivals]


class _Declared:
    """A mechanism control as the matrix reads it: its targets' ids and its exemptions."""

    def __init__(self, ctl, exp):
        self.targets_ids = tuple(ctl.targets(exp.claims))
        self.exempt = dict(getattr(ctl, "exempt", {}) or {})
        self.overrides = dict(getattr(ctl, "overrides", {}) or {})
