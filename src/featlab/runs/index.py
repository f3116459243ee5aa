"""Finding run records under OUT: every run, the latest one of an experiment, a run named by folder, run id or
experiment id, its config as a diff against its preset, and the index ``featlab runs`` prints.

Read-only: nothing here writes into OUT. A run folder whose summary.json cannot be read is listed as a problem,
never raised, so one broken folder does not hide the others.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import FeatlabError, RunRecordError
from .record import SUMMARY, RunRecord, load_run, read_run, tally_short, with_rivals
from .registry import list_experiments
from .runner import resolve_config


@dataclass
class Runs:
    """Every readable run under OUT, newest first, and the folders that could not be read (path, why)."""

    out: Path
    records: list[RunRecord] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)
    sweep_points: set[str] = field(default_factory=set)  # folder names of runs listed in a sweep table

    def of(self, experiment: str, *, controls: bool = False) -> list[RunRecord]:
        return [r for r in self.records if r.experiment == experiment and r.is_control == controls]

    def latest(self, experiment: str, *, any_run: bool = False) -> RunRecord | None:
        """The newest run of ``experiment`` that is neither a control nor a sweep point (``any_run``: any run)."""
        runs = [r for r in self.records if r.experiment == experiment] if any_run else \
            [r for r in self.of(experiment) if r.dir.name not in self.sweep_points]
        return runs[0] if runs else None

    def damaged_newer(self, experiment: str, than: RunRecord | None, *, any_run: bool = False
                      ) -> list[tuple[str, str]]:
        """Unreadable run folders of ``experiment`` written after ``than`` (which a reader skipped), newest first;
        a folder a sweep table names is left out unless ``any_run`` (it would not have been the latest anyway)."""
        after = than.finished_at if than is not None else -1.0
        found = []
        for d, why in self.problems:
            p = Path(d)
            if p.parent.name == experiment and (any_run or p.name not in self.sweep_points) and \
                    (t := _mtime(p)) > after:
                found.append((t, d, why))
        return [(d, why) for _, d, why in sorted(found, reverse=True)]


def _mtime(folder: Path) -> float:
    try:
        return max((f.stat().st_mtime for f in folder.iterdir()), default=folder.stat().st_mtime)
    except OSError:
        return 0.0


def _sweep_points(out: Path) -> set[str]:
    """Run folders named in any sweep table under OUT (their ``dir`` column); an unreadable table names none."""
    import pyarrow.parquet as pq  # a heavy import, needed only where sweep tables exist

    names: set[str] = set()
    for t in out.glob("*/sweeps/*.parquet"):
        try:
            names |= {Path(str(d)).name for d in pq.read_table(t, columns=["dir"]).column("dir").to_pylist() if d}
        except Exception:  # a damaged table only loses the marking, never the index
            continue
    return names


def find_runs(out: str | Path) -> Runs:
    """Every run folder ``OUT/<experiment>/<run-id>/`` (hidden staging folders and sweep tables are skipped)."""
    out = Path(out)
    found = Runs(out)
    if not out.is_dir():
        return found
    for f in out.glob(f"*/*/{SUMMARY}"):
        d = f.parent
        if d.name.startswith(".") or d.parent.name.startswith("."):
            continue
        try:
            found.records.append(read_run(d))
        except RunRecordError as e:
            found.problems.append((str(d), str(e)))
    found.records.sort(key=lambda r: r.finished_at, reverse=True)
    found.sweep_points = _sweep_points(out)
    _annotate_roles(found)
    return found


def _annotate_roles(found: Runs) -> None:
    """Every paper-net run gets its claims' roles from the rival runs beside it (runs/discrimination.py)."""
    by_exp: dict[str, list[RunRecord]] = {}
    for r in found.records:
        by_exp.setdefault(r.experiment, []).append(r)
    for recs in by_exp.values():
        controls = [r for r in recs if r.is_control]
        for r in recs:
            with_rivals(r, controls)


def resolve(target: str, out: str | Path, *, any_run: bool = False,
            warn: Callable[[str], None] | None = None) -> RunRecord:
    """A run named as a folder, a run id (or a unique prefix of one) under OUT, or an experiment id (its latest run
    under OUT that is neither a control nor a sweep point; ``any_run``: its latest run of any kind). ``warn`` is
    told of a damaged run newer than the one returned for an experiment id; a damaged run named by its id is
    refused with the reason it cannot be read."""
    p = Path(target)
    if p.is_dir():
        return load_run(p)
    runs = find_runs(out)
    if target in {e.id for e in list_experiments()} or any(r.experiment == target for r in runs.records) or \
            any(Path(d).parent.name == target for d, _ in runs.problems):
        rec = runs.latest(target, any_run=any_run)
        damaged = runs.damaged_newer(target, rec, any_run=any_run)
        if rec is None and damaged:  # every run is unreadable: one line with the newest one's reason
            more = f" ({len(damaged) - 1} more unreadable)" if len(damaged) > 1 else ""
            raise RunRecordError(f"no readable run of {target} under {str(out)!r}{more}; the newest: {damaged[0][1]}")
        if rec is None:
            raise RunRecordError(f"no run of {target} under {str(out)!r}; run 'featlab run {target} --out {out}' "
                                 f"first, or pass --out where its runs are")
        if warn is not None:  # never silently an older run than the user expects
            for d, why in damaged:
                warn(f"skipped {d}, newer but unreadable: {why}")
        return rec
    hits = [r for r in runs.records if r.dir.name.startswith(target)] if len(target) >= 4 else []
    broken = [why for d, why in runs.problems if Path(d).name.startswith(target)] if len(target) >= 4 else []
    if not hits and len(broken) == 1:
        raise RunRecordError(broken[0])
    if not hits and broken:
        raise RunRecordError(f"run id {target!r} names {len(broken)} unreadable runs under {str(out)!r}; give more "
                             f"characters ('{runs_command(out)}' lists them)")
    if len(hits) == 1:
        return hits[0]
    if len(hits) > 1:
        raise RunRecordError(f"run id {target!r} is ambiguous under {str(out)!r} "
                             f"({', '.join(str(h.dir) for h in hits[:3])}); give more characters")
    raise RunRecordError(f"{target!r} is neither a run folder, an experiment id nor a run id under {str(out)!r}; "
                         f"'{runs_command(out)}' lists the runs")


def runs_command(out: str | Path) -> str:
    """'featlab runs' for the default folder (never 'featlab runs runs'), else 'featlab runs OUT'."""
    return "featlab runs" if Path(out) == Path("runs") else f"featlab runs {out}"


def preset_config(experiment: str, preset: str) -> dict[str, Any] | None:
    """The config the preset alone gives (None when the experiment or preset is not registered here)."""
    try:
        return resolve_config(experiment, preset)[1].to_dict()
    except (FeatlabError, KeyError):
        return None


def config_diff(rec: RunRecord) -> list[tuple[str, Any, Any]]:
    """(field, preset's value, this run's value) for every field the run changed from its preset."""
    base = preset_config(rec.experiment, rec.summary.get("preset", "quick"))
    cfg = rec.summary.get("config") or {}
    if base is None:
        return [(k, None, v) for k, v in cfg.items()]
    return [(k, base.get(k), v) for k, v in cfg.items() if base.get(k) != v]


def overrides_text(rec: RunRecord) -> str:
    return " ".join(f"{k}={_short(v)}" for k, _, v in config_diff(rec))


def _short(v: Any) -> str:
    s = json.dumps(v) if isinstance(v, (list, dict)) else str(v)
    return s.replace(" ", "")


def index_rows(runs: Runs) -> list[dict[str, Any]]:
    """One row per run, newest first: what ``featlab runs`` prints (and ``--json`` returns)."""
    rows = []
    for r in runs.records:
        ctl = r.summary.get("control") or {}
        rows.append({"experiment": r.experiment, "run_id": r.dir.name,
                     "preset": r.summary.get("preset", "?") + (f" [control {ctl.get('name')}]" if ctl else ""),
                     "overrides": overrides_text(r), "status": r.status, "claims_held": tally_short(r.tally),
                     "date": r.date, "elapsed_s": r.summary.get("elapsed_s"), "dir": str(r.dir)})
    return rows
