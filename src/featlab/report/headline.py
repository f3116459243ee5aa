"""The headline per preset kind: mechanism claims held / failed / inconclusive / unverified at the papers' own
settings (``paper``) and at the theorems' assumptions (``theory``), each over the latest run of every experiment at
a preset of that kind, with premises, unsettled claims and checks counted apart; then one line per demo preset
(featlab's own settings, e.g. ``cpu-real``: the real FashionMNIST images on the CPU) that has a run, apart from
the papers' lines and never added to them. Quick presets are shown in the tables, never in the headline
(``Experiment.preset_kind``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..runs.record import STATUSES, RunRecord, tally
from ..runs.registry import list_experiments

HEADLINE_KINDS = {"paper": "the papers' own settings", "theory": "the theorems' assumptions"}


@dataclass
class KindCount:
    kind: str
    statuses: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATUSES, 0))
    premises: int = 0
    unsettled: int = 0
    checks: int = 0
    experiments: list[str] = field(default_factory=list)  # run at a preset of this kind
    offered: int = 0  # experiments that have a preset of this kind

    @property
    def counted(self) -> int:
        return sum(self.statuses.values())

    def add(self, claims: list[dict[str, Any]]) -> None:
        t = tally(claims)  # the one count (runs/record.py)
        for s in STATUSES:
            self.statuses[s] += t[s]
        self.premises += t["premise"]
        self.unsettled += t["unsettled"]
        self.checks += t["check"] + t["measurement"]

    @property
    def label(self) -> str:
        return (f"{self.kind} ({HEADLINE_KINDS[self.kind]})" if self.kind in HEADLINE_KINDS
                else f"demo `{self.kind}` (featlab's own settings, not the papers')")

    def text(self) -> str:
        """'paper (the papers' own settings): 9 of 14 mechanism claims held, 3 failed, 2 inconclusive; apart: 20
        premises, 4 unsettled, 7 checks; 8 of 14 experiments run'."""
        s = self.statuses
        rest = "".join(f", {s[k]} {k}" for k in STATUSES[1:] if s[k])
        apart = ", ".join(f"{n} {w}" for n, w in ((self.premises, "premises"), (self.unsettled, "unsettled"),
                                                   (self.checks, "checks")) if n)
        head = (f"{s['held']} of {self.counted} mechanism claims held{rest}" if self.counted
                else "no mechanism claim counted")  # never a bare 0 of 0
        return (f"{self.label}: {head}" + (f"; apart: {apart}" if apart else "")
                + f"; {len(self.experiments)} of {self.offered} experiments with a {self.kind} preset run")


def kind_counts(latest: dict[str, dict[str, RunRecord]]) -> dict[str, KindCount]:
    """{kind or demo preset name: its counts} from ``latest`` = {experiment id: {preset: its latest complete run}}:
    the headline kinds, then each demo preset name with a run (the experiments offering it counted per name)."""
    exps = list_experiments()
    demos = sorted({p for e in exps for p, r in latest.get(e.id, {}).items()
                    if p in e.presets and e.preset_kind(p) == "demo" and r.ok})
    out = {k: KindCount(k) for k in (*HEADLINE_KINDS, *demos)}
    for exp in exps:
        by_preset = latest.get(exp.id, {})
        for kind, count in out.items():
            presets = ([p for p in exp.presets if exp.preset_kind(p) == kind] if kind in HEADLINE_KINDS
                       else [kind] if kind in exp.presets else [])
            count.offered += bool(presets)
            runs = [by_preset[p] for p in presets if p in by_preset and by_preset[p].ok]
            if runs:
                count.experiments.append(exp.id)
                count.add(runs[0].claims)
    return out


def headline_lines(latest: dict[str, dict[str, RunRecord]]) -> list[str]:
    """One line per headline kind and per demo preset that has a run; none when there is no such run."""
    return [c.text() for c in kind_counts(latest).values() if c.experiments]
