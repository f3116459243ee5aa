"""The scorecard: per paper, every numbered result (each ``PaperResult`` of its ``RESULTS`` table, Definition …
Table) with one status, from the verdicts of the latest run of every experiment at each tier:

* **counted** — a mechanism claim that checks it was judged at the ``paper`` or ``theory`` tier: held / failed /
  inconclusive / unverified, with the claim ids and the tier (the paper tier first; the two are never mixed);
* **judged, not counted** — its claims were judged but none counts: a premise (a rival net holds it too), unsettled
  (a rival that must fail it was not run or was not decisive), a check, a measurement (no number in the paper), a
  failure diagnosed ``formulation`` (featlab's test, not the paper, is at fault: never counted against the paper),
  or a verdict at a demo tier only (featlab's own settings);
* **not tested** — no verdict: why (no claim measures it and why not, the data or the GPU its experiment needs, or
  no run at a counted tier).

Quick presets are never counted: their verdicts only say whether this run agrees with the committed one
(:func:`agreement`). The verdicts come from the committed results (report/scorecard_sources.py reads
docs/results/**/verdicts.json) or from a runs folder; every count goes through ``Verdict.bucket``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..runs.claims import PaperResult
from ..runs.registry import list_experiments, paper_results, papers
from ..runs.verdict import COUNTED, Verdict

TIERS = ("paper", "theory", "demo")  # the preset kinds a verdict can come from; quick is never counted
COUNTED_TIERS = ("paper", "theory")
COUNTED_STATUS, JUDGED, NOT_TESTED = "counted", "judged, not counted", "not tested"
_APART_WHY = {"premise": "a premise: a rival net holds it too, or no rival must fail it",
              "unsettled": "unsettled: a rival net that must fail it was not run or was not decisive",
              "check": "a check: holds by construction or tests the generator",
              "measurement": "a measurement: the paper gives no number to judge it by",
              "formulation": "failed, diagnosed 'formulation': featlab's test, not the paper, is at fault",
              "demo": "judged only at a demo preset (featlab's own settings, not the papers')",
              "moved": "its threshold moved since the published run (docs/claims-changelog.md): rerun pending"}


@dataclass(frozen=True)
class Found:
    """One claim's verdict in one run (or one published row): where it was measured and at which tier."""

    verdict: Verdict
    experiment: str
    preset: str
    tier: str  # paper / theory / demo / quick
    diagnosis: str = ""  # the declared diagnosis's kind at this preset ('formulation', 'budget', ...)
    reformulation: str = ""  # a 'formulation' diagnosis's pre-registered reformulation (a claim id), if it names one
    moved: str = ""  # the declared threshold, when it moved since this published verdict was judged (rerun pending)

    @property
    def claim(self) -> str:
        return self.verdict.id

    @property
    def bucket(self) -> str:
        """The verdict's bucket; a claim failed on the paper's net (failed, or inconclusive with a failing unit: the
        diagnosed ✗ of runs/diagnosis.py) and diagnosed 'formulation' apart, whatever its role: never counted
        against the paper."""
        b = self.verdict.bucket
        if self.moved:  # judged at a threshold since changed (claims change log): never counted until rerun
            return "moved"
        if (self.diagnosis == "formulation" and self.verdict.kind == "claim"
                and self.verdict.status in ("failed", "inconclusive")):
            return "formulation"
        return b

    def to_dict(self) -> dict[str, Any]:
        return {"claim": self.claim, "experiment": self.experiment, "preset": self.preset, "tier": self.tier,
                "bucket": self.bucket, "status": self.verdict.status, "measured": self.verdict.measured,
                "interval": list(self.verdict.interval) if self.verdict.interval else None,
                "diagnosis": self.diagnosis or None, **({"reformulation": self.reformulation} if self.reformulation
                                                         else {}), **({"moved_to": self.moved} if self.moved else {})}


@dataclass
class Entry:
    """One numbered result on the scorecard."""

    ref: str
    what: str
    status: str  # counted / judged, not counted / not tested
    verdict: str  # counted: held / failed / inconclusive / unverified; else the buckets or ''
    tier: str  # the tier its verdicts come from ('' : not tested)
    found: list[Found] = field(default_factory=list)
    reason: str = ""  # judged-not-counted and not-tested: why
    quick: dict[str, str] = field(default_factory=dict)  # claim id -> agree / differ (quick: …) / not run

    def to_dict(self) -> dict[str, Any]:
        return {"ref": self.ref, "what": self.what, "status": self.status, "verdict": self.verdict,
                "tier": self.tier, "claims": [f.to_dict() for f in self.found], "reason": self.reason,
                **({"quick": self.quick} if self.quick else {})}


@dataclass
class Card:
    key: str
    title: str
    entries: list[Entry]

    @property
    def short(self) -> str:
        return self.title.split(" (")[0]

    def counts(self) -> dict[str, Any]:
        by = {t: {s: sum(e.status == COUNTED_STATUS and e.tier == t and e.verdict == s for e in self.entries)
                  for s in COUNTED} for t in COUNTED_TIERS}
        return {"results": len(self.entries), "counted": {t: sum(v.values()) for t, v in by.items()}, "by_tier": by,
                "judged": sum(e.status == JUDGED for e in self.entries),
                "not_tested": sum(e.status == NOT_TESTED for e in self.entries)}

    def line(self) -> str:
        """'Feature Averaging: 9 of 31 numbered results counted (paper: 7 held, 2 failed), 6 judged not counted,
        16 not tested' — each counted tier on its own, never added to another."""
        c = self.counts()
        tiers = "; ".join(f"{t}: " + ", ".join(f"{n} {s}" for s, n in c["by_tier"][t].items() if n)
                          for t in COUNTED_TIERS if c["counted"][t])
        n = sum(c["counted"].values())
        return (f"{self.short}: {n} of {c['results']} numbered results counted" + (f" ({tiers})" if tiers else "")
                + f", {c['judged']} judged not counted, {c['not_tested']} not tested")

    def to_dict(self) -> dict[str, Any]:
        return {"paper": self.key, "title": self.title, "line": self.line(), "counts": self.counts(),
                "results": [e.to_dict() for e in self.entries]}


def _row_verdict(found: list[Found]) -> str:
    """A result checked by several counted claims: failed if one failed, else inconclusive, else unverified, else
    held (held only when every counted claim held)."""
    buckets = {f.bucket for f in found}
    return next(s for s in ("failed", "inconclusive", "unverified", "held") if s in buckets)


def entry(result: PaperResult, found: list[Found], not_run: dict[str, str]) -> Entry:
    """The scorecard's line for one numbered result from every verdict of its claims (``found``, tiers paper,
    theory and demo; the latest run of each experiment and preset) and why experiments were not run."""
    mine = [f for f in found if f.claim in result.claims and f.tier in TIERS]
    for tier in COUNTED_TIERS:
        counted = [f for f in mine if f.tier == tier and f.bucket in COUNTED]
        if counted:
            shown = [f for f in mine if f.tier == tier]
            return Entry(result.ref, result.what, COUNTED_STATUS, _row_verdict(counted), tier, shown,
                         _formulation_note(shown, found))
    if mine:
        tier = next(t for t in TIERS if any(f.tier == t for f in mine))
        shown = [f for f in mine if f.tier == tier]
        kinds = list(dict.fromkeys("demo" if tier == "demo" else f.bucket for f in shown))
        apart, note = "; ".join(_APART_WHY.get(k, k) for k in kinds), _formulation_note(shown, found)
        return Entry(result.ref, result.what, JUDGED, ", ".join(kinds), tier, shown,
                     apart + (f" ({note})" if note else ""))
    if not result.claims:
        return Entry(result.ref, result.what, NOT_TESTED, "", "", reason=f"no claim measures it: {result.reason}")
    why = list(dict.fromkeys(_not_run_why(e, not_run) for e in list_experiments()
                             if any(c.id in result.claims for c in e.claims)))
    return Entry(result.ref, result.what, NOT_TESTED, "", "", reason="; ".join(why) or "no experiment judges it")


def _formulation_note(shown: list[Found], found: list[Found]) -> str:
    """For each formulation failure among ``shown``: not counted against the paper, and whether the pre-registered
    reformulation its diagnosis names has run at the same tier (its bucket there), or that none is named."""
    notes = []
    for f in (f for f in shown if f.bucket == "formulation"):
        if not f.reformulation:
            notes.append(f"{f.claim}: no reformulation pre-registered yet")
            continue
        ran = next((g for g in found if g.claim == f.reformulation and g.tier == f.tier), None)
        notes.append(f"{f.claim}: reformulated as {f.reformulation}, " + (
            f"run at the {f.tier} tier ({ran.bucket}), counted in its place" if ran else
            f"not yet run at the {f.tier} tier: nothing counted against the paper until it has"))
    return "; ".join(notes)


def _not_run_why(exp, not_run: dict[str, str]) -> str:
    """Why ``exp`` has no verdict here: the recorded reason (the data or the GPU it needs, its estimated time), or
    the presets that would count and the command that runs one."""
    if exp.id in not_run:
        return f"{exp.id}: {not_run[exp.id]}"
    counted = [p for p in exp.presets if exp.preset_kind(p) in COUNTED_TIERS]
    demos = [p for p in exp.presets if exp.preset_kind(p) == "demo"]
    if not counted:
        return (f"{exp.id}: no paper or theory preset implemented" + (f"; no run of its demo preset(s) "
                f"{', '.join(demos)} here" if demos else " (only quick, never counted)"))
    return f"{exp.id}: no run of its {'/'.join(counted)} preset here (featlab run {exp.id} --preset {counted[0]})"


def agreement(committed: list[Found], quick: list[Found]) -> dict[str, str]:
    """claim id -> whether this run's quick verdict on the paper's net agrees with the committed one: 'agree',
    'differ (quick: inconclusive)', or 'not run' (no quick verdict). The verdict on the paper's net is compared,
    not the bucket: a quick run reads no rival."""
    q = {f.claim: f.verdict.status for f in quick}
    return {f.claim: ("not run" if f.claim not in q else "agree" if q[f.claim] == f.verdict.status
                      else f"differ (quick: {q[f.claim]})") for f in committed}


def scorecards(found: list[Found], not_run: dict[str, str] | None = None, paper: str | None = None,
               quick: list[Found] | None = None) -> list[Card]:
    """One card per registered paper (or only ``paper``): every numbered result with its status; ``quick``: this
    run's quick verdicts, set beside each committed claim (:func:`agreement`)."""
    cards = []
    for key, title in papers().items():
        if (paper is not None and key != paper) or not paper_results(key):  # no numbered-results table: no card
            continue
        entries = [entry(r, found, not_run or {}) for r in paper_results(key)]
        if quick is not None:
            for e in entries:
                e.quick = agreement(e.found, quick)
        cards.append(Card(key, title, entries))
    return cards
