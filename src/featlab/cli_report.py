"""``featlab report``, ``featlab reproduce`` and ``featlab sweep``: the commands whose result is something to look at
(a report page, a short summary, a table and its plot)."""

from __future__ import annotations

import datetime as _dt
import json
import sys
import traceback
from pathlib import Path
from typing import Any

from .config import parse_overrides
from .errors import ConfigError, FeatlabError, RunRecordError
from .report.summary import NOT_RUN_FILE, Report, build, console_summary, write_text_atomic
from .report.tables import table


def add_commands(sub) -> None:
    r = sub.add_parser("report", help="one HTML page (and a Markdown twin) of every run under OUT: claims, figures, "
                       "notes, config, provenance")
    r.add_argument("root", nargs="?", default="runs", metavar="OUT", help="output folder of the runs (default ./runs)")
    r.add_argument("--paper", default=None, help="only this paper (a key from 'featlab list --json')")
    r.add_argument("--out", default=None, metavar="FILE", help="the HTML file (default OUT/report.html); the "
                   "Markdown twin goes beside it (.md, figures in <name>_files/)")
    r.add_argument("--all", action="store_true", help="every run, not only the latest of each experiment")


def write_report(report: Report, html_path: str | Path) -> list[Path]:
    from .report.html import write_html
    from .report.markdown import write_markdown

    html_path = Path(html_path)
    return [write_html(report, html_path), write_markdown(report, html_path.with_suffix(".md"))]


def _check_paper(paper: str | None) -> str | None:
    from .runs.registry import papers

    if paper in (None, "all"):
        return None
    if paper not in papers():
        raise ConfigError(f"unknown paper {paper!r}; choose one of: {', '.join(papers())}, all")
    return paper


def cmd_report(a) -> int:
    root = Path(a.root)
    if not root.is_dir():
        raise RunRecordError(f"no runs folder {str(root)!r}; pass the OUT of 'featlab run/reproduce' "
                             f"(default ./runs)")
    report = build(root, _check_paper(a.paper), all_runs=a.all)
    paths = write_report(report, a.out or root / "report.html")
    for pv in report.papers:
        held, total = pv.held
        print(f"{pv.title}: {held}/{total} claims hold")
    print("report: " + " and ".join(str(p) for p in paths))
    return 0


# ---------------------------------------------------------------------------------------------- reproduce
def _split_overrides(exps, overrides: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each override goes to the experiments whose config has that field (``data_root=`` only to the image ones)."""
    unknown = [k for k in overrides if not any(k in e.config.model_fields for e in exps)]
    if unknown:
        raise ConfigError(f"no experiment of this reproduction has a field {unknown[0]!r}; "
                          f"'featlab config ID' lists an experiment's fields")
    return {e.id: {k: v for k, v in overrides.items() if k in e.config.model_fields} for e in exps}


def _record_not_run(out: Path, ran: list[str], not_run: dict[str, str]) -> None:
    """Keep OUT/reproduce.json's entries for experiments not part of this reproduction; replace the others."""
    f = out / NOT_RUN_FILE
    try:
        old = json.loads(f.read_text(encoding="utf-8")).get("not_run") or {}
    except (OSError, ValueError, AttributeError):
        old = {}
    merged = {k: v for k, v in old.items() if k not in ran} | not_run
    write_text_atomic(f, json.dumps({"date": _dt.datetime.now().isoformat(timespec="seconds"),
                                     "not_run": merged}, indent=2, ensure_ascii=False))


def cmd_reproduce(a) -> int:
    from .runs.registry import list_experiments
    from .runs.runner import resolve_config, run

    words = [a.paper, *a.overrides] if a.paper and "=" in a.paper else list(a.overrides)
    paper = _check_paper(None if a.paper and "=" in a.paper else a.paper)
    exps = list_experiments(paper)
    per_exp = _split_overrides(exps, parse_overrides(words))
    smoke = {e.id for e in exps if e.presets.get(a.preset, {}).get("smoke")}
    not_run = {i: f"not run here: needs data and a GPU (its {a.preset} preset is a pipeline smoke test); "
                  f"featlab run {i} --preset paper" for i in smoke}
    todo = [e for e in exps if e.id not in smoke]
    for e in todo:  # bad overrides or presets fail here, before anything trains
        resolve_config(e.id, a.preset, overrides=per_exp[e.id])
    out, chosen, broken = Path(a.out), {}, []
    for i, e in enumerate(todo, 1):
        print(f"[{i}/{len(todo)}] {e.id} ({e.reference}) ...", flush=True)
        try:
            rec = run(e.id, a.preset, out=out, force=a.force, **per_exp[e.id])
        except FeatlabError as err:  # e.g. a missing dataset: say so and go on with the others
            not_run[e.id] = f"could not run: {err}"
            broken.append(e.id)
            print(f"    could not run: {err}", flush=True)
            continue
        except Exception as err:  # a bug: keep its traceback, but do not lose the other experiments
            traceback.print_exc()
            not_run[e.id] = f"crashed ({type(err).__name__}: {err}); a bug, traceback printed by reproduce"
            broken.append(e.id)
            continue
        chosen[e.id] = rec.dir
        held = sum(c["holds"] for c in rec.claims)
        print(f"    {rec.status}{' (existing run)' if rec.skipped else ''}, {held}/{len(rec.claims)} claims hold, "
              f"{rec.summary.get('elapsed_s', 0):.1f} s → {rec.dir}", flush=True)
        if not rec.ok:
            broken.append(e.id)
    _record_not_run(out, [e.id for e in exps], not_run)
    report = build(out, paper, not_run=not_run, chosen=chosen)
    paths = write_report(report, out / "report.html")
    print()
    print(console_summary(report, paths))
    if broken:
        return 1
    held_all = all(c.holds for pv in report.papers for ev in pv.experiments for rv in ev.runs[:1] for c in rv.claims)
    return 1 if a.strict and not held_all else 0


# ---------------------------------------------------------------------------------------------- sweep
def cmd_sweep(a) -> int:
    from .runs.sweep import sweep

    slurm = {k: v for k, v in (("slurm_partition", a.slurm_partition), ("timeout_min", a.slurm_time)) if v}
    df = sweep(a.id, a.axes, preset=a.preset, out=a.out, executor=a.executor, force=a.force,
               ray_address=a.ray_address, show=[m for m in a.show.split(",") if m], plot=getattr(a, "plot", None),
               cpus_per_point=a.cpus_per_point, gpus_per_point=a.gpus_per_point, shared_fs=a.shared_fs, slurm=slurm)
    names = {ax.partition("=")[0] for ax in a.axes}
    axes = [c for c in df.columns if c in names]
    shown = [m for m in a.show.split(",") if m] or [c for c in df.columns
                                                    if c not in (*axes, "status", "claims_held", "run_dir", "error")
                                                    and "@" not in c][:4]
    missing = [m for m in shown if m not in df.columns]
    if missing:
        print(f"featlab: note: no metric {missing[0]!r} in these runs", file=sys.stderr)
    cols = axes + ["status", "claims_held"] + [m for m in shown if m in df.columns]
    rows = [[str(v) if not isinstance(v, float) else f"{v:.4g}" for v in r] for r in df[cols].values.tolist()]
    print(table(rows, cols))
    print(f"\nsweep table: {df.attrs['table']}")
    if "plot" in df.attrs:
        print(f"sweep plot:  {df.attrs['plot']}")
    for _, r in df[df["status"] != "complete"].iterrows():  # each failed point's error, one line each
        where = " ".join(f"{k}={r[k]}" for k in axes)
        print(f"featlab: point {where} failed: {r.get('error') or r['status']}", file=sys.stderr)
    failed = (df["status"] != "complete").any()
    held_all = all(x.split("/")[0] == x.split("/")[1] for x in df["claims_held"])
    return 1 if failed or (a.strict and not held_all) else 0
