"""Claims as data: a statement of a paper, a threshold fixed before the run, and the verdict of a measurement.

An experiment declares its claims once, at registration (``claims=[Claim(...)]``); ``featlab claims`` lists
them without running anything, and ``ctx.claim(id, measured)`` judges one at run time. A threshold renders its
own text and decides ``holds``, so the text and the test cannot drift apart.

Thresholds that scale with the setting (e.g. "within 0.6–1.4 × √(d/k)") name their unit with ``of=`` and receive
its value at run time: ``ctx.claim("fa.binary_breaks", r_crit, scale=(d / k) ** 0.5)``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Literal


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


@dataclass(frozen=True)
class Claim:
    """A declared claim: id ``<paper>.<name>``, the paper's statement and reference, the threshold and why.

    ``statement`` may name config fields in braces (``"{k}-class net decouples"``); they are filled at run time.

    ``kind="check"``: a statement that holds by construction or only tests the data generator or a hand-built model.
    It is judged and shown like a claim, but listed apart and never counted among the claims that hold.
    """

    id: str
    statement: str
    source: str  # the paper's reference, e.g. "Thm 4.5 (2)"
    threshold: Threshold
    why: str = ""  # where the threshold comes from
    kind: Literal["claim", "check"] = "claim"

    def judge(self, measured: float | str, *, scale: float | None = None, paper_value: float | None = None,
              config: dict[str, Any] | None = None) -> Verdict:
        if isinstance(measured, (int, float)) and not isinstance(measured, bool):
            measured = float(measured)
        try:
            statement = self.statement.format_map(config or {})
        except (KeyError, IndexError, ValueError):
            statement = self.statement
        text = self.threshold.text(scale)
        if self.threshold.of is not None:
            text += f" ({self.threshold.text()}, {self.threshold.of} = {scale:.3g})"
        holds = isinstance(measured, float) and self.threshold.holds(measured, scale)
        return Verdict(self.id, statement, self.source, measured, text, holds, paper_value, self.kind)


@dataclass
class Verdict:
    """A judged claim as it goes into summary.json."""

    id: str
    statement: str
    source: str
    measured: float | str
    threshold: str
    holds: bool
    paper_value: float | None = None
    kind: str = "claim"

    def to_dict(self) -> dict[str, Any]:
        m = self.measured
        if isinstance(m, float) and not math.isfinite(m):
            m = str(m)
        out = {"id": self.id, "statement": self.statement, "source": self.source, "measured": m,
               "threshold": self.threshold, "holds": bool(self.holds), "kind": self.kind}
        if self.paper_value is not None:
            out["paper_value"] = self.paper_value
        return out


@dataclass(frozen=True)
class Control:
    """A setting where the paper's statements should be false: the same measurement on an untrained network, the
    other method, shuffled labels, or the theory's null setting. ``claims``: the claims this control must defeat
    (default: every claim of the experiment). Every claim is targeted by at least one control, and the test suite
    runs each control at quick scale: a targeted claim that holds there cannot fail, and is a defect."""

    name: str  # 'untrained', 'coarse-labels', ...
    overrides: dict[str, Any]  # config overrides, applied after every other layer
    why: str  # what the setting is and why the claims must fail there
    claims: tuple[str, ...] = ()

    def targets(self, declared: list[Claim]) -> list[str]:
        return list(self.claims) if self.claims else [c.id for c in declared]

    def to_dict(self, declared: list[Claim]) -> dict[str, Any]:
        return {"name": self.name, "overrides": dict(self.overrides), "why": self.why,
                "claims": self.targets(declared)}


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
