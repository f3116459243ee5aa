"""Reading run records back for people: every run under OUT, the latest one of an experiment, a run named by path,
run id or experiment id, its config as a diff against its preset, and the index ``featlab runs`` prints.

Read-only: nothing here writes into OUT. A run folder whose summary.json cannot be read is listed as a problem,
never raised, so one broken folder does not hide the others.
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import FeatlabError, RunRecordError
from ..runs.store import SUMMARY, RunRecord

_REQUIRED = ("experiment", "status", "claims")


@dataclass
class Runs:
    """Every readable run under OUT, newest first, and the folders that could not be read (path, why)."""

    out: Path
    records: list[RunRecord] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)

    def of(self, experiment: str, *, controls: bool = False) -> list[RunRecord]:
        return [r for r in self.records if r.summary["experiment"] == experiment and is_control(r) == controls]

    def latest(self, experiment: str) -> RunRecord | None:
        runs = self.of(experiment)
        return runs[0] if runs else None


def read_record(run_dir: Path) -> RunRecord:
    """A run folder → RunRecord; RunRecordError names the file and the fix when summary.json is unusable."""
    f = run_dir / SUMMARY
    if not f.is_file():
        raise RunRecordError(f"{str(run_dir)!r} holds no {SUMMARY}; pass the folder of a finished run "
                             f"(OUT/<experiment>/<run-id>) or an experiment id")
    try:
        summary = json.loads(f.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, OSError):
        raise RunRecordError(f"{str(f)!r} is not readable JSON; rerun the experiment with --force") from None
    if not isinstance(summary, dict) or any(k not in summary for k in _REQUIRED):
        raise RunRecordError(f"{str(f)!r} lacks the keys {', '.join(_REQUIRED)}; rerun the experiment with --force")
    return RunRecord(run_dir, summary)


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
            found.records.append(read_record(d))
        except RunRecordError as e:
            found.problems.append((str(d), str(e)))
    found.records.sort(key=run_time, reverse=True)
    return found


def is_control(rec: RunRecord) -> bool:
    return bool(rec.summary.get("control"))


def run_time(rec: RunRecord) -> float:
    """When the run finished: its recorded date, else the time its summary.json was written (publish time)."""
    date = rec.summary.get("date")
    if isinstance(date, str):
        try:
            return _dt.datetime.fromisoformat(date).timestamp()
        except ValueError:
            pass
    try:
        return (rec.dir / SUMMARY).stat().st_mtime
    except OSError:
        return 0.0


def run_date(rec: RunRecord) -> str:
    return _dt.datetime.fromtimestamp(run_time(rec)).strftime("%Y-%m-%d %H:%M")


def resolve(target: str, out: str | Path) -> RunRecord:
    """A run named as a folder, a run id (or a unique prefix of one) under OUT, or an experiment id (its latest
    run under OUT)."""
    p = Path(target)
    if p.is_dir():
        return read_record(p)
    runs = find_runs(out)
    from ..runs.registry import list_experiments

    if target in {e.id for e in list_experiments()} or any(r.summary["experiment"] == target for r in runs.records):
        rec = runs.latest(target)
        if rec is None:
            raise RunRecordError(f"no run of {target} under {str(out)!r}; run 'featlab run {target} --out {out}' "
                                 f"first, or pass --out where its runs are")
        return rec
    hits = [r for r in runs.records if r.dir.name.startswith(target)] if len(target) >= 4 else []
    if len(hits) == 1:
        return hits[0]
    if len(hits) > 1:
        raise RunRecordError(f"run id {target!r} is ambiguous under {str(out)!r} "
                             f"({', '.join(str(h.dir) for h in hits[:3])}); give more characters")
    raise RunRecordError(f"{target!r} is neither a run folder, an experiment id nor a run id under {str(out)!r}; "
                         f"'featlab runs {out}' lists the runs")


def preset_config(experiment: str, preset: str) -> dict[str, Any] | None:
    """The config the preset alone gives (None when the experiment or preset is not registered here)."""
    from ..runs.runner import resolve_config

    try:
        return resolve_config(experiment, preset)[1].to_dict()
    except (FeatlabError, KeyError):
        return None


def config_diff(rec: RunRecord) -> list[tuple[str, Any, Any]]:
    """(field, preset's value, this run's value) for every field the run changed from its preset."""
    base = preset_config(rec.summary["experiment"], rec.summary.get("preset", "quick"))
    cfg = rec.summary.get("config") or {}
    if base is None:
        return [(k, None, v) for k, v in cfg.items()]
    return [(k, base.get(k), v) for k, v in cfg.items() if base.get(k) != v]


def overrides_text(rec: RunRecord) -> str:
    return " ".join(f"{k}={_short(v)}" for k, _, v in config_diff(rec))


def _short(v: Any) -> str:
    s = json.dumps(v) if isinstance(v, (list, dict)) else str(v)
    return s.replace(" ", "")


def claims_held(rec: RunRecord) -> tuple[int, int]:
    return sum(bool(c.get("holds")) for c in rec.claims), len(rec.claims)


def index_rows(runs: Runs) -> list[dict[str, Any]]:
    """One row per run, newest first: what ``featlab runs`` prints (and ``--json`` returns)."""
    rows = []
    for r in runs.records:
        held, total = claims_held(r)
        ctl = r.summary.get("control") or {}
        rows.append({"experiment": r.summary["experiment"], "run_id": r.dir.name,
                     "preset": r.summary.get("preset", "?") + (f" [control {ctl.get('name')}]" if ctl else ""),
                     "overrides": overrides_text(r), "status": r.status, "claims_held": f"{held}/{total}",
                     "date": run_date(r), "elapsed_s": r.summary.get("elapsed_s"), "dir": str(r.dir)})
    return rows


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
           "python": v.get("python"), "torch": v.get("torch"), "device": device, "date": run_date(rec),
           "elapsed": f"{s['elapsed_s']:.1f} s" if isinstance(s.get("elapsed_s"), (int, float)) else None,
           "command": cmd, "run folder": str(rec.dir)}
    return {k: str(x) for k, x in out.items() if x not in (None, "")}


def collect_provenance(device: Any = None) -> dict[str, str]:
    """What a run record should carry beyond versions(): the date, the git commit when featlab runs from a checkout
    (``+dirty`` with uncommitted changes), and the device's name. For the runner to merge into summary.json."""
    import subprocess

    import torch

    here = Path(__file__).resolve().parent
    commit = None
    try:
        git = lambda *a: subprocess.run(["git", *a], cwd=here, capture_output=True, text=True, timeout=5)  # noqa
        head = git("rev-parse", "--short=12", "HEAD")
        tracked = git("ls-files", "--error-unmatch", Path(__file__).name)  # featlab's own checkout, not any repo
        if head.returncode == 0 and tracked.returncode == 0:
            dirty = git("status", "--porcelain", "--untracked-files=no").stdout.strip()
            commit = head.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    dev = torch.device(device) if device is not None else torch.device("cpu")
    if dev.type == "cuda" and torch.cuda.is_available():
        name = torch.cuda.get_device_name(dev)
    else:
        import platform

        name = f"cpu ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"
    out = {"date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"), "device": name}
    if commit:
        out["git_commit"] = commit
    return out
