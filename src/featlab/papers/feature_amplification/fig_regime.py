"""Which of Thm 1's assumptions (A1)–(A7) each preset of rfa-fig1 / rfa-fig2 / rfa-phase meets, as declared
``Assumption`` rows (``featlab claims``, the report and every run's summary.json show them).

Each row is computed from the preset's own numbers by the same check every run prints (lemmas.check_assumptions at
C = max(check_C, 1/(4α²)), the smallest constant (A7) allows), so the declaration and the run cannot disagree.
A preset with several (n, d) settings (Fig 2's two regimes, the phase grid's cells) meets an assumption when every
one of its settings does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ...runs.claims import Assumption
from . import lemmas
from .common import RFABase

TEXT = {
    "A1": "d ≥ C·max{log²(n/δ), log(m/δ)}",
    "A2": "σ√d ≤ 1/C (clusters tight against their separation)",
    "A3": "n ≥ C·log(m/δ)",
    "A4": "η ≤ 1/C",
    "A5": "m ≥ C·log(1/δ)",
    "A6": "ω√(md) ≤ 1/C² (a small initialisation)",
    "A7": "1/(2√C) ≤ α ≤ 1/√C",
}

# settings(cfg) -> the (n, d, η) triples of one run of the preset
Settings = Callable[[Any], Iterable[tuple[int, int, float]]]


def check_setting(cfg: RFABase, n: int, d: int, eta: float) -> dict[str, bool]:
    """(A1)–(A7) at one (n, d, η) of a config, at the constant every run's note uses."""
    C = max(cfg.check_C, 1 / (4 * cfg.alpha**2))
    chk = lemmas.check_assumptions(d, n, cfg.m, cfg.sigma_for(d), eta, cfg.omega_for(d), cfg.alpha, cfg.delta, C)
    return chk["holds"]


def declared(config: type[RFABase], presets: dict[str, dict[str, Any]], settings: Settings,
             notes: dict[str, str] | None = None) -> list[Assumption]:
    """One Assumption per (A1)–(A7): met by a preset when it holds at every (n, d, η) the preset runs."""
    met: dict[str, dict[str, bool]] = {k: {} for k in TEXT}
    for name, values in presets.items():
        cfg = config(**values)
        checks = [check_setting(cfg, n, d, eta) for n, d, eta in settings(cfg)]
        for k in TEXT:
            met[k][name] = all(c[k] for c in checks)
    notes = notes or {}
    return [Assumption(f"({k})", TEXT[k], met[k], why=notes.get(k, "")) for k in TEXT]
