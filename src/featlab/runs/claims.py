"""Claims as data: a statement of a paper, a threshold fixed before the run, and the verdict of a measurement.

An experiment declares its claims once, at registration (``claims=[Claim(...)]``); ``featlab claims`` lists
them without running anything, and ``ctx.claim(id, measured)`` judges one at run time. A threshold renders its
own text and decides ``holds``, so the text and the test cannot drift apart.

Thresholds that scale with the setting (e.g. "within 0.6–1.4 × √(d/k)") name their unit with ``of=`` and receive
its value at run time: ``ctx.claim("fa.binary_breaks", r_crit, scale=(d / k) ** 0.5)``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from .diagnosis import Diagnosis
from .uncertainty import (
    HELD,
    INCONCLUSIVE,
    MIN_UNITS,
    Interval,
    Samples,
    clopper_pearson,
    decide,
    interval,
    units_to_settle,
)
from .verdict import Verdict


def _num(v: float) -> str:
    return f"{v:.3g}" if isinstance(v, float) and not float(v).is_integer() else f"{v:g}"


def _times(v: float, unit: str) -> str:
    """'0.6·√(d/k)', or just the unit when the multiple is 1 ('1 − 4δ')."""
    return unit if v == 1 else f"{_num(v)}·{unit}"


@dataclass(frozen=True)
class Threshold:
    """Base class: ``bounds(scale)`` → (lo, hi) with None for an open side; ``of`` names the unit of the bounds."""

    of: str | None = None
    strict: bool = False  # '>' / '<' instead of '>=' / '<='

    def bounds(self, scale: float | None) -> tuple[float | None, float | None]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _scaled(self, v: float | None, scale: float | None) -> float | None:
        if v is None or self.of is None:
            return v
        if scale is None:
            raise ValueError(f"threshold in units of {self.of} needs scale= at run time")
        return v * scale

    def holds(self, measured: float, scale: float | None = None) -> bool:
        if not isinstance(measured, (int, float)) or math.isnan(measured):
            return False
        lo, hi = self.bounds(scale)
        if self.strict:
            return (lo is None or measured > lo) and (hi is None or measured < hi)
        return (lo is None or measured >= lo) and (hi is None or measured <= hi)

    def _op(self, op: str) -> str:
        return op if self.strict else op + "="

    def text(self, scale: float | None = None) -> str:
        """The declared form (``scale=None``: '>= 0.99', 'in [0.6, 1.4]·√(d/k)') or the run's numbers."""
        raise NotImplementedError  # pragma: no cover - abstract

    def to_dict(self) -> dict[str, Any]:
        """The threshold as data: its kind, its declared text and every field (``lo``, ``hi``, ``centre``, ``tol``,
        ``of``, ``strict``), for ``featlab claims --json`` and docs/thresholds.json."""
        return {"kind": type(self).__name__, "text": self.text(), **asdict(self)}


@dataclass(frozen=True)
class AtLeast(Threshold):
    lo: float = 0.0

    def bounds(self, scale):
        return self._scaled(self.lo, scale), None

    def text(self, scale=None):
        op = self._op(">")
        if self.of is None:
            return f"{op} {_num(self.lo)}"
        return f"{op} {_times(self.lo, self.of)}" if scale is None else f"{op} {self._scaled(self.lo, scale):.3g}"


@dataclass(frozen=True)
class AtMost(Threshold):
    hi: float = 0.0

    def bounds(self, scale):
        return None, self._scaled(self.hi, scale)

    def text(self, scale=None):
        op = self._op("<")
        if self.of is None:
            return f"{op} {_num(self.hi)}"
        return f"{op} {_times(self.hi, self.of)}" if scale is None else f"{op} {self._scaled(self.hi, scale):.3g}"


@dataclass(frozen=True)
class Within(Threshold):
    lo: float = 0.0
    hi: float = 0.0

    def bounds(self, scale):
        return self._scaled(self.lo, scale), self._scaled(self.hi, scale)

    def text(self, scale=None):
        a, b = ("(", ")") if self.strict else ("[", "]")
        if self.of is None:
            return f"in {a}{_num(self.lo)}, {_num(self.hi)}{b}"
        if scale is None:
            return f"in {a}{_num(self.lo)}, {_num(self.hi)}{b}·{self.of}"
        lo, hi = self.bounds(scale)
        return f"in {a}{lo:.3g}, {hi:.3g}{b}"


@dataclass(frozen=True)
class Near(Threshold):
    """|measured − centre| <= tol (tol in units of ``of`` when given): a band around a value the paper fixes, whose
    half-width scales with the setting (e.g. 1/2 ± 3 s.e. of a test estimate)."""

    centre: float = 0.0
    tol: float = 1.0

    def bounds(self, scale):
        t = self._scaled(self.tol, scale)
        return self.centre - t, self.centre + t

    def holds(self, measured: float, scale: float | None = None) -> bool:
        if not isinstance(measured, (int, float)) or math.isnan(measured):
            return False
        tol = self._scaled(self.tol, scale)
        return tol is not None and abs(measured - self.centre) <= tol

    def text(self, scale=None):
        if self.of is None:
            return f"in {_num(self.centre)} ± {_num(self.tol)}"
        if scale is None:
            return f"in {_num(self.centre)} ± {_times(self.tol, self.of)}"
        return f"in {_num(self.centre)} ± {self._scaled(self.tol, scale):.3g}"


def fill_fields(statement: str, config: dict[str, Any]) -> str:
    """``{field}`` (or ``{field:g}``, a format spec) in a claim's statement replaced by the run's value; other braces
    (λ_{s,r,j}) stay as written."""
    def fill(m: re.Match) -> str:
        if m.group(1) not in config:
            return m.group(0)
        try:
            return format(config[m.group(1)], m.group(2) or "")
        except (TypeError, ValueError):  # a spec the value does not take: its plain text
            return str(config[m.group(1)])

    return re.sub(r"\{(\w+)(?::([^{}]*))?\}", fill, statement)


@dataclass(frozen=True)
class Claim:
    """A declared claim: id ``<paper>.<name>``, the paper's statement and reference, the threshold and why.

    ``statement`` may name config fields in braces (``"{k}-class net decouples"``); they are filled at run time.

    ``kind="check"``: a statement that holds by construction or only tests the data generator or a hand-built model.
    It is judged and shown like a claim, but listed apart and never counted among the claims that hold.
    ``kind="measurement"``: a quantity the paper states with no number (o(1), "small", no constant): reported with
    its interval and no verdict (the threshold stays as the reading it would be judged by, shown, never decisive).
    ``kind="premise"``: what the paper's net must satisfy for the mechanism claims to mean anything (clean accuracy,
    training converged); a trained rival satisfies it too, so it is shown and never counted. A "claim" is counted
    only where the rival nets show it discriminates (runs/discrimination.py).

    ``exact``: why the claim is judged without a sampling interval (it quantifies over every unit of the run, e.g.
    "every neuron of every seed"); a claim judged without samples must say so, a claim with samples leaves it empty.
    """

    id: str
    statement: str
    source: str  # the paper's reference, e.g. "Thm 4.5 (2)"
    threshold: Threshold
    why: str = ""  # where the threshold comes from
    kind: Literal["claim", "premise", "check", "measurement"] = "claim"
    exact: str = ""
    diagnoses: tuple[Diagnosis, ...] = ()  # why it fails where it does, from evidence run (runs/diagnosis.py)

    def judge(self, measured: float | str, *, scale: float | None = None, paper_value: float | None = None,
              config: dict[str, Any] | None = None, samples: Samples | None = None,
              statistic: Callable[..., float] | None = None, unit: str = "seeds",
              converged: bool | None = None, min_units: int = MIN_UNITS,
              per_seed: Sequence[float] | None = None) -> Verdict:
        """The verdict on ``measured``: with ``samples`` (per-unit values; a tuple of arrays for paired ones, reduced
        by ``statistic``, default the mean; a ``Clustered`` sample for points pooled over seeds) by its 95 %
        interval (see runs/uncertainty.py; fewer than ``min_units`` seeds: inconclusive by rule); without, on the
        value alone. ``converged=False`` (the search the measurement rests on did not converge): unverified.

        ``per_seed``: a claim quantified over seeds ("at every seed"): each seed's value passes or fails the
        threshold, and the verdict is that of the share of seeds passing — its Clopper–Pearson interval above 1/2
        (most nets behave as the paper says): held; below: failed; else inconclusive, under the minimum-units rule
        (5 of 5 seeds: [0.478, 1], inconclusive; 6 of 6 settle it). ``measured`` stays the run's statistic (e.g. the
        worst seed's value)."""
        if isinstance(measured, (int, float)) and not isinstance(measured, bool):
            measured = float(measured)
        statement = fill_fields(self.statement, config or {})
        text = self.threshold.text(scale)
        if self.threshold.of is not None:
            text += f" ({self.threshold.text()}, {self.threshold.of} = {scale:.3g})"
        if isinstance(measured, float) and not math.isnan(measured):
            self.threshold.holds(measured, scale)  # raises when a scaled threshold gets no scale
        value = measured if isinstance(measured, float) else math.nan
        bounds, strict, seeds = self.threshold.bounds(scale), self.threshold.strict, None
        if per_seed is not None and not math.isnan(value):  # the share of seeds passing decides, against 1/2
            seed_iv, value, bounds = pass_count(self.threshold, per_seed, scale)
            iv: Interval | None = seed_iv
            text, strict, seeds = text + f" at each seed; {PASS_RULE}", True, len(per_seed)
        else:  # (a NaN measurement fails, as without per-seed values)
            iv = interval(samples, statistic, unit=unit) if samples is not None else None
        status = decide(bounds, strict, value, iv, converged, min_units=min_units)
        settle = (units_to_settle(bounds, value, iv, min_units=min_units) if status == INCONCLUSIVE and iv is not None
                  else None)
        if seeds is not None and status == INCONCLUSIVE:
            settle = seeds_to_settle(value, seeds, min_units)
        alone = decide(bounds, strict, value, iv, converged, min_units=0)  # the interval's own say
        return Verdict(self.id, statement, self.source, measured, text, status == HELD, paper_value, self.kind,
                       status=status, interval=(iv.lo, iv.hi) if iv else None, n=iv.n if iv else None,
                       unit=iv.unit if iv else "", settle=settle,
                       by_rule=alone if status == INCONCLUSIVE and alone != INCONCLUSIVE else "")


PASS_RULE = "held when the 95 % interval of the share of seeds passing lies above 1/2"


def pass_count(threshold: Threshold, per_seed: Sequence[float], scale: float | None = None
               ) -> tuple[Interval, float, tuple[float, None]]:
    """(the Clopper–Pearson interval of the share of seeds whose value passes ``threshold``, that share, the bounds
    it is judged against: above 1/2). Never an "exact" verdict on seeds: 5 of 5 is [0.478, 1]."""
    vals = [float(v) for v in per_seed]
    k = sum(threshold.holds(v, scale) for v in vals)
    lo, hi = clopper_pearson(k, len(vals)) if vals else (math.nan, math.nan)
    iv = Interval(lo, hi, len(vals), f"seeds (share passing: {k} of {len(vals)})", method="clopper-pearson")
    return iv, k / len(vals) if vals else math.nan, (0.5, None)


def seeds_to_settle(share: float, n: int, min_units: int = MIN_UNITS, most: int = 10_000) -> int | None:
    """The fewest seeds (more than ``n``, at least ``min_units``) whose Clopper–Pearson interval at the same share
    passing clears 1/2; None when the share is 1/2 (no number of seeds settles it) or NaN."""
    if not math.isfinite(share) or share == 0.5:
        return None
    for m in range(max(n + 1, min_units), most):
        lo, hi = clopper_pearson(round(share * m), m)
        if lo > 0.5 or hi < 0.5:
            return m
    return None


@dataclass(frozen=True)
class Control:
    """A setting where the paper's statements should be false. ``claims``: the claims this control must defeat
    (default: every claim of the experiment); the test suite runs each control at quick scale, and a targeted claim
    that holds there cannot fail, and is a defect.

    Two kinds. A **mechanism** control keeps the network trained and removes the mechanism or a premise the theorem
    needs (``premise`` says which); ``trained`` names the metrics (higher is better: an accuracy, a fit) that show
    the net is still trained, and the tests fail when one falls more than ``margin`` below the claim's own run. A
    **sanity** control (an untrained net, a forced tie) only shows a claim is not vacuous. A claim counts among the
    results only when a mechanism control targets it."""

    name: str  # 'untrained', 'coarse-labels', ...
    overrides: dict[str, Any]  # config overrides, applied after every other layer
    why: str  # what the setting is and why the claims must fail there
    claims: tuple[str, ...] = ()
    premise: str = ""  # mechanism controls: the premise or mechanism removed ('' : a sanity control)
    trained: tuple[str, ...] = ()  # summary metrics that show the net trained (compared with the claim's own run)
    margin: float = 0.05  # how far below the claim's own run a ``trained`` metric may fall
    tiny: dict[str, Any] = field(default_factory=dict)  # smaller sizes with the same code paths (the device check)
    exempt: dict[str, str] = field(default_factory=dict)  # claim id -> the paper's reason this rival need not fail it

    def __post_init__(self):
        if bool(self.premise) != bool(self.trained):
            raise ValueError(f"control {self.name!r}: a mechanism control names both its premise and the metrics "
                             f"that show its net trained (trained=...); a sanity control names neither")

    @property
    def kind(self) -> str:
        return "mechanism" if self.premise else "sanity"

    def targets(self, declared: list[Claim]) -> list[str]:
        """The claims this setting must defeat: those named, else every claim of kind "claim" it does not exempt."""
        if self.claims:
            return list(self.claims)
        return [c.id for c in declared if c.kind == "claim" and c.id not in self.exempt]

    def to_dict(self, declared: list[Claim]) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "overrides": dict(self.overrides), "why": self.why,
               "claims": self.targets(declared)}
        if self.premise:
            out.update(premise=self.premise, trained=list(self.trained), margin=self.margin)
            out["exempt"] = {c.id: self.exempt.get(c.id, "") for c in declared
                             if c.kind == "claim" and c.id not in out["claims"]}
        return out


@dataclass(frozen=True)
class Assumption:
    """A premise of the theorem an experiment tests, and which of its presets meet it: a preset that leaves it on
    purpose (to fit this CPU, or to show what happens outside it) says so, and ``featlab claims`` and the report
    show it beside the verdicts."""

    ref: str  # 'Assumption 4.3', '(A1)', 'Prop 4.4 premise'
    text: str  # what it requires, in the paper's terms
    met: dict[str, bool]  # preset -> whether the preset meets it
    why: str = ""  # how the presets that break it break it (e.g. 'quick: d = 4 < the d ≥ log² n needed')

    def to_dict(self) -> dict[str, Any]:
        return {"ref": self.ref, "text": self.text, "met": dict(self.met), "why": self.why}


@dataclass(frozen=True)
class PaperResult:
    """One numbered result of a paper (definition, lemma, proposition, theorem, figure, table) and what checks it:
    the claims that measure it, or the reason none does (schematic figure, constants only, regime not reached)."""

    ref: str  # 'Lemma 3.2', 'Fig 3', 'Def 4.1'
    what: str  # a few words on its content
    claims: tuple[str, ...] = ()
    reason: str = ""  # when no claim checks it: why (and which test, if any, checks it)

    def __post_init__(self):
        if not self.claims and not self.reason:
            raise ValueError(f"{self.ref}: name the claims that check it or the reason none does")


# ------------------------------------------------------------------------------------------ diagnoses
def with_diagnoses(claims: Iterable[Claim], table: Mapping[str, Diagnosis | tuple[Diagnosis, ...]]) -> list[Claim]:
    """The claims with their diagnoses attached; an id in ``table`` that names no claim is an error."""
    claims = list(claims)
    unknown = set(table) - {c.id for c in claims}
    if unknown:
        raise ValueError(f"diagnoses for undeclared claims: {sorted(unknown)}")
    as_tuple = lambda d: d if isinstance(d, tuple) else (d,)
    return [replace(c, diagnoses=as_tuple(table[c.id])) if c.id in table else c for c in claims]


def diagnosis_for(claim: Claim | None, preset: str | None) -> Diagnosis | None:
    """The diagnosis of ``claim`` at ``preset`` (the first that lists it), or None."""
    if claim is None:
        return None
    return next((d for d in claim.diagnoses if preset in d.presets), None)

