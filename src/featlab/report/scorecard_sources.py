"""Where the scorecard's verdicts come from: the committed results (every ``verdicts.json`` under docs/results, one
per published preset) or a runs folder (the latest complete run of each experiment at each preset), each verdict
with its tier (the preset's kind: paper / theory / demo / quick) and its declared diagnosis."""

from __future__ import annotations

from pathlib import Path

from ..errors import FeatlabError
from ..runs.index import find_runs
from ..runs.registry import UnknownExperimentError, get_experiment, list_experiments
from ..runs.verdict import Verdict
from ..utils import json_loads
from .scorecard import Found
from .tables import diagnosis_of

VERDICTS = "verdicts.json"
RESULTS = "docs/results"  # the committed results, from the repository's root


def tier_of(experiment: str, preset: str) -> str | None:
    """paper / theory / demo / quick for a registered experiment's preset; None when either is unknown here."""
    try:
        return get_experiment(experiment).preset_kind(preset)
    except FeatlabError:
        return None


def published(root: str | Path) -> tuple[list[Found], dict[str, str]]:
    """Every published verdict under ``root`` (each ``verdicts.json``, the paper preset's first) and why each
    experiment without a published run was not run (the paper preset's reason first)."""
    found: dict[tuple[str, str, str], Found] = {}
    not_run: dict[str, str] = {}
    files = sorted(Path(root).rglob(VERDICTS), key=lambda f: (len(f.relative_to(root).parts), str(f)))
    for f in files:
        data = json_loads(f.read_text(encoding="utf-8"))
        for row in data.get("rows", []):
            exp, preset = row.get("experiment", "?"), row.get("preset", data.get("preset", "?"))
            tier = tier_of(exp, preset)
            if tier is None:
                continue
            diag = row.get("diagnosis") or {}
            v = Verdict.from_dict(row)
            found.setdefault((v.id, exp, preset), Found(v, exp, preset, tier, diag.get("kind", ""),
                                                        _reformulation(exp, v.id, preset, diag),
                                                        _moved_threshold(exp, v.id, str(row.get("threshold")))))
        for exp, why in (data.get("not_run") or {}).items():
            not_run.setdefault(exp, str(why))
    return list(found.values()), not_run


def _moved_threshold(experiment: str, claim: str, published: str) -> str:
    """The claim's declared threshold when it is no longer the one its published row was judged at ('' if it is)."""
    try:
        declared = {c.id: c.threshold.text() for c in get_experiment(experiment).claims}
    except UnknownExperimentError:
        return ""
    now = declared.get(claim)
    return now if now is not None and now not in published else ""


def _reformulation(experiment: str, claim: str, preset: str, published_diagnosis: dict) -> str:
    """The reformulation a published row's diagnosis names, else the one declared now (a reformulation registered
    after the row was published still applies to it)."""
    if published_diagnosis.get("reformulation"):
        return str(published_diagnosis["reformulation"])
    d = diagnosis_of(experiment, claim, preset) if published_diagnosis else None
    return d.reformulation if d is not None and d.kind == published_diagnosis.get("kind") else ""


def from_runs(out: str | Path, *, quick: bool | None = None) -> list[Found]:
    """The verdicts of the latest complete run of every experiment at each preset under ``out`` (controls and sweep
    points left out), their roles read from the rival runs beside them; ``quick``: only quick presets (True), none
    (False), or every preset (None)."""
    runs = find_runs(out)
    found = []
    for exp in list_experiments():
        for preset in exp.presets:
            tier = exp.preset_kind(preset)
            if quick is not None and (tier == "quick") != quick:
                continue
            rec = next((r for r in runs.of(exp.id) if r.ok and r.summary.get("preset") == preset
                        and r.dir.name not in runs.sweep_points), None)
            if rec is None:
                continue
            for v in rec.verdicts:
                d = diagnosis_of(exp.id, v.id, preset) if v.status in ("failed", "inconclusive") else None
                found.append(Found(v, exp.id, preset, tier, d.kind if d else "", d.reformulation if d else ""))
    return found


def gather(out: str | Path | None, results: str | Path | None = RESULTS) -> tuple[list[Found], dict[str, str],
                                                                                 list[Found]]:
    """(the verdicts a scorecard counts, why experiments were not run, this run's quick verdicts): the runs under
    ``out`` at the paper, theory and demo presets first, then the committed results under ``results`` (where that
    folder exists) for every experiment and preset ``out`` has no run of; the quick verdicts from ``out``."""
    mine = from_runs(out, quick=False) if out is not None and Path(out).is_dir() else []
    quick = from_runs(out, quick=True) if out is not None and Path(out).is_dir() else []
    have = {(f.experiment, f.preset) for f in mine}
    committed, not_run = published(results) if results is not None and Path(results).is_dir() else ([], {})
    return mine + [f for f in committed if (f.experiment, f.preset) not in have], not_run, quick
