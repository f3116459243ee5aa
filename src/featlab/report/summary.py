"""The report's content, independent of its format: per paper, per experiment, the runs with their claims (and the
control's value beside each), figures, notes, config diff and provenance; and the first-screen answer to "does it
reproduce?" — claims held / total, runs missing or failed, presets never run. html.py and markdown.py render it;
``console_summary`` is the few lines ``featlab reproduce`` ends with.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..runs.discrimination import rivals_for
from ..runs.index import Runs, config_diff, find_runs
from ..runs.record import RunRecord, counts_text, is_uncontrolled, status, status_counts, tally, tally_short
from ..runs.registry import list_experiments, papers
from ..runs.stability import stable_under
from ..text import fmt_value
from ..utils import json_loads
from .headline import headline_lines
from .scorecard import Card, scorecards
from .scorecard_sources import RESULTS, gather
from .scorecard_text import QUICK_NOTE, card_text
from .sweeps import SweepTable, find_sweeps
from .tables import diagnosis_of, interval_text, verdict_text

NOT_RUN_FILE = "reproduce.json"  # written by `featlab reproduce`: experiments it could not or did not run, and why


@dataclass
class ClaimRow:
    id: str
    statement: str
    source: str
    paper_value: Any
    measured: Any
    threshold: str
    holds: bool
    controls: list[tuple[str, Any, bool]] = field(default_factory=list)  # (control name, measured, holds)
    kind: str = "claim"  # or "check": shown apart, never counted
    status: str = ""  # held / failed / inconclusive / unverified
    interval: str = "exact"  # the 95 % interval as text ('exact': a statement about every unit of the run)
    verdict: str = ""  # the status as shown (an inconclusive one with the units that would settle it)
    stable: str = ""  # from a stability table of this run (`featlab stability`): stable, or where the verdict flips
    diagnosis: str = ""  # a ✗'s declared diagnosis at this preset (runs/diagnosis.py): class, finding, evidence


@dataclass
class RunView:
    rec: RunRecord
    claims: list[ClaimRow]
    diff: list[tuple[str, Any, Any]]
    provenance: dict[str, str]

    @property
    def held(self) -> tuple[int, int]:
        return self.rec.held


@dataclass
class ExpView:
    id: str
    reference: str
    shows: str
    presets: list[str]
    runs: list[RunView] = field(default_factory=list)
    sweeps: list[SweepTable] = field(default_factory=list)
    not_run: str = ""  # why there is no run, when there is none
    never_run: list[str] = field(default_factory=list)  # presets with no run under OUT
    by_preset: dict[str, RunRecord] = field(default_factory=dict)  # the latest run of each preset run under OUT

    def presets_text(self) -> str:
        """'quick 8/13 held · theory 5/13 held': the verdicts of each preset run, side by side (runs/verdict.py)."""
        return " · ".join(f"{p} {tally_short(r.tally)}" for p, r in self.by_preset.items())


@dataclass
class PaperView:
    key: str
    title: str
    experiments: list[ExpView] = field(default_factory=list)

    @property
    def held(self) -> tuple[int, int]:
        counts = [r.held for e in self.experiments for r in e.runs[:1]]
        return sum(h for h, _ in counts), sum(t for _, t in counts)

    @property
    def statuses(self) -> dict[str, int]:
        """{held, failed, inconclusive, unverified: how many} over the latest runs' claims (checks apart)."""
        return status_counts(c for e in self.experiments for r in e.runs[:1] for c in r.rec.claims)

    @property
    def tally(self) -> dict[str, int]:
        """{bucket: how many} over the latest runs' claims (runs/verdict.py ``tally``)."""
        return tally(c for e in self.experiments for r in e.runs[:1] for c in r.rec.claims)

    def counts_text(self) -> str:
        """The latest runs' claims through the one count (runs/record.py ``tally``)."""
        return counts_text(c for e in self.experiments for r in e.runs[:1] for c in r.rec.claims)

    @property
    def checks(self) -> tuple[int, int]:
        """(checks that hold, checks judged) over the latest runs: shown apart, never counted as claims."""
        counts = [r.rec.checks for e in self.experiments for r in e.runs[:1]]
        return sum(h for h, _ in counts), sum(t for _, t in counts)

    @property
    def failed(self) -> list[ExpView]:
        return [e for e in self.experiments if e.runs and e.runs[0].rec.status != "complete"]

    @property
    def missing(self) -> list[ExpView]:
        return [e for e in self.experiments if not e.runs]

    def never_run(self) -> list[tuple[str, list[str]]]:
        """(preset, experiments that have runs but none with this preset): missing experiments are counted once,
        under ``missing``, not again here."""
        by: dict[str, list[str]] = {}
        for e in self.experiments:
            if e.runs:
                for p in e.never_run:
                    by.setdefault(p, []).append(e.id)
        return list(by.items())


@dataclass
class Report:
    out: Path
    papers: list[PaperView]
    problems: list[tuple[str, str]]
    created: str
    cards: list[Card] = field(default_factory=list)  # the scorecards: committed verdicts, this run's quick beside

    def headline(self) -> list[str]:
        """Mechanism claims per preset kind (paper, theory), premises and checks apart (report/headline.py)."""
        return headline_lines({e.id: e.by_preset for pv in self.papers for e in pv.experiments})


def live_reason(exp, why: str) -> str:
    """A recorded smoke-preset reason asked again: whether its dataset is here changes after the record was written
    (the one resolver says so today, never a stale 'needs its dataset' above a run on those very files)."""
    return exp.smoke_reason("quick") if exp.is_smoke("quick") and "pipeline smoke test" in str(why) else why


def not_run_reason(exp, recorded: dict[str, str]) -> str:
    if exp.id in recorded:
        return live_reason(exp, recorded[exp.id])
    if exp.is_smoke("quick"):
        return exp.smoke_reason("quick")
    return f"no run under this folder: featlab run {exp.id}"


def provenance(rec: RunRecord) -> dict[str, str]:
    """What the run record says about where and how it ran (fields older records lack are left out)."""
    s = rec.summary
    v = s.get("versions") or {}
    cmd = s.get("command")
    if isinstance(cmd, str) and cmd:
        head, _, rest = cmd.partition(" ")
        cmd = " ".join(x for x in (Path(head).name, rest) if x)  # the launcher's own path says nothing useful
    device = s.get("device") or v.get("device") or (s.get("config") or {}).get("device")
    out = {"featlab": v.get("featlab"), "git commit": s.get("git_commit") or v.get("git_commit") or v.get("git"),
           "python": v.get("python"), "torch": v.get("torch"), "device": device, "date": rec.date,
           "elapsed": f"{s['elapsed_s']:.1f} s" if isinstance(s.get("elapsed_s"), (int, float)) else None,
           "command": cmd, "run folder": str(rec.dir)}
    return {k: str(x) for k, x in out.items() if x not in (None, "")}


def run_view(rec: RunRecord, controls: Sequence[RunRecord] = ()) -> RunView:
    ctl_runs = rivals_for(rec, list(controls))
    stable = stable_under(rec.dir.parent.parent, rec.experiment, rec.dir.name)
    rows = []
    for c in rec.claims:
        row = ClaimRow(c.get("id", "?"), c.get("statement", ""), c.get("source", ""), c.get("paper_value"),
                       c.get("measured"), c.get("threshold", ""), bool(c.get("holds")),
                       kind="uncontrolled" if is_uncontrolled(c) else c.get("kind", "claim"),
                       status=status(c), interval=interval_text(c), verdict=verdict_text(c),
                       stable=stable.get(c.get("id", "?"), ""))
        if row.status in ("failed", "inconclusive"):
            found = diagnosis_of(rec.experiment, row.id, rec.summary.get("preset"))
            row.diagnosis = found.text() if found else ""
        for ctl in ctl_runs:
            for cc in ctl.claims:
                if cc.get("id") == row.id:
                    row.controls.append((ctl.summary["control"].get("name", "?"), cc.get("measured"),
                                         bool(cc.get("holds"))))
        rows.append(row)
    return RunView(rec, rows, config_diff(rec), provenance(rec))


def _recorded_not_run(out: Path) -> dict[str, str]:
    try:
        data = json_loads((out / NOT_RUN_FILE).read_text(encoding="utf-8"))
        return {str(k): str(v) for k, v in (data.get("not_run") or {}).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def build(out: str | Path, paper: str | None = None, all_runs: bool = False,
          not_run: dict[str, str] | None = None, chosen: dict[str, Path] | None = None,
          results: str | Path | None = RESULTS) -> Report:
    """The report over every readable run under OUT: the latest run of each experiment (``all_runs``: every run).

    ``chosen``: experiment → the run to show first (what ``reproduce`` just ran or found, even when an older
    identical run was reused and another run of the experiment is newer). ``results``: the committed results the
    scorecards read where OUT has no run at a paper, theory or demo preset (None: OUT alone)."""
    out = Path(out)
    runs: Runs = find_runs(out)
    recorded = {**_recorded_not_run(out), **(not_run or {})}
    titles = papers()
    views: dict[str, PaperView] = {}
    known = set()
    for exp in list_experiments(paper):
        known.add(exp.id)
        pv = views.setdefault(exp.paper, PaperView(exp.paper, titles.get(exp.paper, exp.paper)))
        main = runs.of(exp.id)
        if chosen and exp.id in chosen:
            pick = Path(chosen[exp.id]).resolve()
            main.sort(key=lambda r: r.dir.resolve() != pick)  # stable: the chosen run first, the rest newest first
        ev = ExpView(exp.id, exp.reference, exp.summary, list(exp.presets))
        ev.runs = [run_view(r, runs.of(exp.id, controls=True)) for r in (main if all_runs else main[:1])]
        ev.sweeps = find_sweeps(out, exp.id)
        ev.never_run = [p for p in exp.presets if not any(r.summary.get("preset") == p for r in main)]
        for p in exp.presets:  # newest first: the first run of each preset is its latest
            latest = next((r for r in main if r.summary.get("preset") == p and r.ok), None)
            if latest is not None:
                ev.by_preset[p] = latest
        if not main:
            ev.not_run = not_run_reason(exp, recorded)
        elif exp.id in recorded:
            ev.not_run = live_reason(exp, recorded[exp.id])  # this time it could not run; an older run is shown
        pv.experiments.append(ev)
    if paper is None:  # runs of experiments this installation does not register (an uninstalled plug-in)
        other = sorted({r.experiment for r in runs.records} - known)
        if other:
            pv = views.setdefault("other", PaperView("other", "Experiments not registered here"))
            for eid in other:
                main = runs.of(eid)
                ev = ExpView(eid, "", "", [])
                ev.runs = [run_view(r, runs.of(eid, controls=True)) for r in (main if all_runs else main[:1])]
                pv.experiments.append(ev)
    created = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    found, published_not_run, quick = gather(out, results)
    cards = scorecards(found, {**published_not_run, **recorded}, paper=paper, quick=quick)
    return Report(out, list(views.values()), runs.problems, created, cards)


def try_command(exp_id: str, presets: list[str]) -> str:
    """What to run next for a claim that does not hold: a longer CPU preset if the experiment has one, else paper."""
    extra = [p for p in presets if p not in ("quick", "paper")]
    return f"featlab run {exp_id} --preset {extra[0] if extra else 'paper'}"


def failures(report: Report) -> list[str]:
    """One line per ✗ (a failed run, or a claim that does not hold in the latest run): the cause and what to try."""
    lines = []
    for pv in report.papers:
        for ev in pv.experiments:
            if not ev.runs:
                continue
            rv = ev.runs[0]
            if rv.rec.status != "complete":
                msg = (rv.rec.summary.get("message") or "no message").splitlines()[0]
                lines.append(f"✗ {ev.id}: run {rv.rec.status}: {msg} — try: featlab run {ev.id} --force")
                continue
            for c in rv.claims:
                if not c.holds:
                    mark, what = ("✗", "") if c.status == "failed" else ("?", f"{c.verdict}: ")
                    iv = "" if c.interval == "exact" else f" {c.interval}"
                    lines.append(f"{mark} {ev.id} {c.id}: {what}measured {fmt_value(c.measured)}{iv}, needs "
                                 f"{c.threshold} — try: {try_command(ev.id, ev.presets)}")
    return lines


def console_summary(report: Report, paths: list[Path] | None = None) -> str:
    """The end of ``featlab reproduce``: claims held per paper, each ✗ in one line, what was not run, the report."""
    lines = [*report.headline(), ""] if report.headline() else []
    for pv in report.papers:
        ran = sum(bool(e.runs) for e in pv.experiments)
        ch, ct = pv.checks
        more = f"; {ch}/{ct} checks, not counted" if ct else ""
        lines.append(f"{pv.title}, this run: {pv.counts_text()} ({ran} of {len(pv.experiments)} experiments "
                     f"run{more})")
    side = [f"  {ev.id}: {ev.presets_text()}" for pv in report.papers for ev in pv.experiments
            if len(ev.by_preset) > 1]
    if side:
        lines += ["", "presets side by side (the latest run of each):", *side]
    lines += ["", *failures(report)] if failures(report) else []
    absent = [(ev.id, ev.not_run) for pv in report.papers for ev in pv.experiments if ev.not_run]
    if absent:
        lines += ["", "not reproduced here:"] + [f"  {i}: {why}" for i, why in absent]
    if report.cards:
        lines += ["", f"Scorecards: the committed verdicts at the paper and theory tiers; {QUICK_NOTE}.", ""]
        lines += ["\n\n".join(card_text(c, quick=True) for c in report.cards)]
    if paths:
        lines += ["", "report: " + " and ".join(str(p) for p in paths)]
    return "\n".join(lines)
