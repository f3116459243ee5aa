"""Claims as data: a statement of a paper, a threshold fixed before the run, and the verdict of a measurement.

An experiment declares its claims once, at registration (``claims=[Claim(...)]``); ``featlab claims`` lists
them without running anything, and ``ctx.claim(id, measured)`` judges one at run time. A threshold renders its
own text and decides ``holds``, so the text and the test cannot drift apart.

Thresholds that scale with the setting (e.g. "within 0.6–1.4 × √(d/k)") name their unit with ``of=`` and receive
its value at run time: ``ctx.claim("fa.binary_breaks", r_crit, scale=(d / k) ** 0.5)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


def _num(v: float) -> str:
    return f"{v:.3g}" if isinstance(v, float) and not float(v).is_integer() else f"{v:g}"


@dataclass(frozen=True)
class Threshold:
    """Base class: ``bounds(scale)`` → (lo, hi) with None for an open side; ``of`` names the unit of the bounds."""

    of: str | None = None

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
        return (lo is None or measured >= lo) and (hi is None or measured <= hi)

    def text(self, scale: float | None = None) -> str:
        """The declared form (``scale=None``: '>= 0.99', 'in [0.6, 1.4]·√(d/k)') or the run's numbers."""
        raise NotImplementedError  # pragma: no cover - abstract


@dataclass(frozen=True)
class AtLeast(Threshold):
    lo: float = 0.0

    def bounds(self, scale):
        return self._scaled(self.lo, scale), None

    def text(self, scale=None):
        if self.of is None:
            return f">= {_num(self.lo)}"
        return f">= {_num(self.lo)}·{self.of}" if scale is None else f">= {self._scaled(self.lo, scale):.3g}"


@dataclass(frozen=True)
class AtMost(Threshold):
    hi: float = 0.0

    def bounds(self, scale):
        return None, self._scaled(self.hi, scale)

    def text(self, scale=None):
        if self.of is None:
            return f"<= {_num(self.hi)}"
        return f"<= {_num(self.hi)}·{self.of}" if scale is None else f"<= {self._scaled(self.hi, scale):.3g}"


@dataclass(frozen=True)
class Within(Threshold):
    lo: float = 0.0
    hi: float = 0.0

    def bounds(self, scale):
        return self._scaled(self.lo, scale), self._scaled(self.hi, scale)

    def text(self, scale=None):
        if self.of is None:
            return f"in [{_num(self.lo)}, {_num(self.hi)}]"
        if scale is None:
            return f"in [{_num(self.lo)}, {_num(self.hi)}]·{self.of}"
        lo, hi = self.bounds(scale)
        return f"in [{lo:.3g}, {hi:.3g}]"


def at_least(lo: float, of: str | None = None) -> AtLeast:
    return AtLeast(of, lo)


def at_most(hi: float, of: str | None = None) -> AtMost:
    return AtMost(of, hi)


def within(lo: float, hi: float, of: str | None = None) -> Within:
    return Within(of, lo, hi)


@dataclass(frozen=True)
class Claim:
    """A declared claim: id ``<paper>.<name>``, the paper's statement and reference, the threshold and why.

    ``statement`` may name config fields in braces (``"{k}-class net decouples"``); they are filled at run time.
    """

    id: str
    statement: str
    source: str  # the paper's reference, e.g. "Thm 4.5 (2)"
    threshold: Threshold
    why: str = ""  # where the threshold comes from

    def judge(self, measured: float | str, *, scale: float | None = None, paper_value: float | None = None,
              config: dict[str, Any] | None = None) -> "Verdict":
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
        return Verdict(self.id, statement, self.source, measured, text, holds, paper_value)


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

    def to_dict(self) -> dict[str, Any]:
        m = self.measured
        if isinstance(m, float) and not math.isfinite(m):
            m = str(m)
        out = {"id": self.id, "statement": self.statement, "source": self.source, "measured": m,
               "threshold": self.threshold, "holds": bool(self.holds)}
        if self.paper_value is not None:
            out["paper_value"] = self.paper_value
        return out
