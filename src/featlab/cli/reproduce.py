"""``featlab reproduce`` (every experiment of a paper, a short summary, a report page) and ``featlab report`` (the
page alone, over the runs already under OUT)."""

from __future__ import annotations

import argparse
import datetime as _dt
import sys
import traceback
from pathlib import Path
from typing import Any

import torch

from ..config import parse_overrides
from ..errors import ConfigError, FeatlabError, RunRecordError
from ..report.docs_sync import sync_docs
from ..report.pages import check_report, write_report
from ..report.publish import publish, publish_stability, sync_readme
from ..report.summary import NOT_RUN_FILE, build, console_summary
from ..runs.index import find_runs
from ..runs.record import counts_text
from ..runs.registry import NO_PAPER_PRESET, Experiment, list_experiments, papers
from ..runs.resources import duration, lower_bound, size
from ..runs.runner import resolve_config, run
from ..runs.timing import dry_run_budget, estimate
from ..utils import atomic_write, check_writable, json_dumps, json_loads, resolve_device, writing
from .options import add_run_options

GPU_S = 86_400.0  # an experiment estimated above a day on this CPU is left to a GPU machine


def register(sub) -> None:
    rp = sub.add_parser("reproduce", help="every experiment of a paper, then a short summary and a report page")
    rp.add_argument("paper", nargs="?", default="all", help=f"one of {', '.join(papers())} or all (default)")
    rp.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides for the experiments "
                    "that have the field, e.g. data_root=~/data")
    add_run_options(rp)
    rp.add_argument("--dry-run", "--estimate", dest="dry_run", action="store_true",
                    help="print the plan (each experiment's estimated time and memory, what is skipped and why) and "
                    "exit without running")
    rp.add_argument("--rivals", action="store_true",
                    help="also run every experiment's rival nets at the same preset (about 2-4× the time): the "
                    "headline then counts the mechanism claims; without it they show as unsettled")
    rp.set_defaults(handler=cmd_reproduce, trailing="overrides")

    r = sub.add_parser("report", help="one HTML page (and a Markdown twin) of every run under OUT: claims, figures, "
                       "notes, config, provenance")
    r.add_argument("root", nargs="?", default="runs", metavar="OUT", help="output folder of the runs (default ./runs)")
    r.add_argument("--paper", default=None, help="only this paper (a key from 'featlab list --json')")
    r.add_argument("--out", default=None, metavar="FILE", help="the HTML file (default OUT/report.html); the "
                   "Markdown twin goes beside it (.md, figures in <name>_files/)")
    r.add_argument("--all", action="store_true", help="every run, not only the latest of each experiment")
    r.add_argument("--sync-docs", metavar="DIR", default=None, help="also rewrite the measured sections of the "
                   "pages in DIR (<!-- measured: EXPERIMENT PRESET --> blocks) from the latest runs under OUT")
    r.add_argument("--publish", metavar="DIR", default=None, help="also write the committed results folder DIR "
                   "(verdict table, figures, configs, provenance) from the latest run of each experiment at --preset")
    r.add_argument("--publish-stability", metavar="DIR", default=None, help="also copy each experiment's newest "
                   "stability study (featlab stability) under OUT to DIR/stability/, with an index page")
    r.add_argument("--preset", default="paper", help="the preset --publish reads (default paper)")
    r.add_argument("--readme", metavar="FILE", default=None, help="with --publish: rewrite FILE's "
                   "<!-- results: DIR --> block (the counts, each failed claim's diagnosis, a few figures)")
    r.set_defaults(handler=cmd_report)


def _check_paper(paper: str | None) -> str | None:
    if paper in (None, "all"):
        return None
    if paper not in papers():
        raise ConfigError(f"unknown paper {paper!r}; choose one of: {', '.join(papers())}, all")
    return paper


def _check_report_destinations(a: argparse.Namespace, html: Path) -> None:
    """Every destination of ``featlab report`` checked before anything is read or written: a refusal never comes
    after a page was half-published."""
    check_report(html)
    if a.sync_docs:
        if not Path(a.sync_docs).is_dir():
            raise ConfigError(f"--sync-docs: no folder {a.sync_docs!r}; pass the docs folder (e.g. docs)")
        check_writable(a.sync_docs, "--sync-docs", folder=True)
    for flag, folder in (("--publish-stability", a.publish_stability), ("--publish", a.publish)):
        if folder:
            check_writable(folder, flag, folder=True)
    if a.publish and a.readme:
        if not Path(a.readme).is_file():
            raise ConfigError(f"--readme: no file {a.readme!r}; pass the README holding a <!-- results: DIR --> block")
        check_writable(a.readme, "--readme")


def cmd_report(a: argparse.Namespace) -> int:
    root = Path(a.root)
    if not root.is_dir():
        raise RunRecordError(f"no runs folder {str(root)!r}; pass the OUT of 'featlab run/reproduce' "
                             f"(default ./runs)")
    html = Path(a.out) if a.out else root / "report.html"
    _check_report_destinations(a, html)
    report = build(root, _check_paper(a.paper), all_runs=a.all)
    if not any(ev.runs for pv in report.papers for ev in pv.experiments):
        raise RunRecordError(f"no readable run under {str(root)!r}" + (f" for paper {a.paper}" if a.paper else "")
                             + (f" ({len(report.problems)} unreadable or damaged: 'featlab runs --verify {root}' "
                                f"names them)" if report.problems else "; run 'featlab run ID --out "
                                f"{root}' or 'featlab reproduce --out {root}' first"))
    for _, why in report.problems:
        print(f"featlab: note: {' '.join(why.split())}", file=sys.stderr)
    paths = write_report(report, html)
    for pv in report.papers:
        print(f"{pv.title}: {pv.counts_text()}")
    print("report: " + " and ".join(str(p) for p in paths))
    if a.sync_docs:
        with writing("--sync-docs"):
            done = sync_docs(root, a.sync_docs)
        missing = [f"{e} ({p})" for _, e, p, found in done if not found]
        print(f"docs: {len(done) - len(missing)} measured sections written from runs"
              + (f"; no run for {', '.join(missing)}" if missing else ""))
    if a.publish_stability:  # before --publish: its page links the studies
        with writing("--publish-stability"):
            studies = publish_stability(root, a.publish_stability)
        print(f"stability studies: {', '.join(studies) or 'none under ' + str(root)} → "
              f"{a.publish_stability}/stability")
    if a.publish:
        with writing("--publish"):
            counts = publish(root, a.publish, a.preset, not_run=lambda e: _not_run_reason(root, e, a.preset))
        print(f"results ({a.preset}): {counts['held']} held, {counts['failed']} failed, {counts['inconclusive']} "
              f"inconclusive, {counts['unverified']} unverified, {counts['never run']} never run → {a.publish}")
        with writing("--readme"):
            synced = not a.readme or sync_readme(a.readme)
        if not synced:
            raise ConfigError(f"--readme: {a.readme!r} has no <!-- results: DIR --> ... <!-- /results --> block")
    return 0


def _not_run_reason(root: Path, exp: Experiment, preset: str) -> str:
    """Why ``exp`` has no run at ``preset`` under ``root``: what `featlab reproduce` recorded, else its estimate (the
    data it lacks, or the time it would take on this machine: cached timing or a scaled model, never timed here)."""
    try:
        recorded = json_loads((root / NOT_RUN_FILE).read_text(encoding="utf-8")).get("not_run") or {}
    except (OSError, ValueError, AttributeError):
        recorded = {}
    why = recorded.get(exp.id) if isinstance(recorded, dict) else None
    est = estimate(exp, resolve_config(exp.id, preset)[1], runs=find_runs(root), measure=False)
    missing_then = "files under" in str(why) or "files (not in" in str(why)
    stale = missing_then and not est.missing  # its data were missing then, found now
    if why and not stale and not (str(why).startswith(NO_PAPER_PRESET) and preset != "paper"):  # paper only
        return str(why)
    return (f"not run here: {est.missing}" if est.missing else
            f"not run here yet: estimated {duration(est.seconds)} ({est.how}) and {size(est.bytes)} on this "
            f"CPU{' (needs a GPU)' if est.seconds > GPU_S else ''}; featlab run {exp.id} --preset {preset}")


def _split_overrides(exps: list[Experiment], overrides: dict[str, Any]) -> dict[str, dict[str, Any]]:
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
        old = json_loads(f.read_text(encoding="utf-8")).get("not_run") or {}
    except (OSError, ValueError, AttributeError):
        old = {}
    merged = {k: v for k, v in old.items() if k not in ran} | not_run
    atomic_write(f, json_dumps({"date": _dt.datetime.now().isoformat(timespec="seconds"), "not_run": merged},
                               indent=2, ensure_ascii=False))


def _plan(exps: list[Experiment], presets: list[str]) -> tuple[list[tuple[Experiment, str]], dict[str, str]]:
    """(experiment, preset) pairs to run, and why the others are not run. Each experiment runs at each asked preset
    it has; one with none of them (``--preset theory`` on an experiment with no theory preset) is listed as not run,
    and one without a paper preset under ``--preset paper`` says that the paper did not run it."""
    todo, not_run = [], {}
    for e in exps:
        mine = [p for p in presets if p in e.presets]
        if not mine:
            why = NO_PAPER_PRESET if "paper" in presets else f"has no preset {' or '.join(presets)}"
            not_run[e.id] = f"{why} (its presets: {', '.join(e.presets)})"
        for p in mine:
            if e.is_smoke(p):
                not_run.setdefault(e.id, e.smoke_reason(p))
            else:
                todo.append((e, p))
    ran = {e.id for e, _ in todo}
    return todo, {k: v for k, v in not_run.items() if k not in ran}


def print_plan(todo: list[tuple[Experiment, str]], configs: list, not_run: dict[str, str],
               out: Path | None = None, measure: bool | None = True) -> list[tuple[Any, str]]:
    """Print each experiment's estimated time and memory and how the time was estimated (featlab.runs.timing: a run
    of the same config under ``out``, its own steps timed here or cached, else a scaled model; ``measure=None``
    times only what might need a GPU; ``measure=True``, a dry run, shares ``DRY_RUN_S`` among its timings);
    skip, with a line, those whose data are missing or that need a GPU (more than
    a day on this CPU). The rest is returned (``not_run`` gets the reasons)."""
    gpu = torch.cuda.is_available()
    runs = find_runs(out) if out is not None else None
    where = "this machine" if gpu else "this machine's CPU"
    print(f"plan (each experiment's own steps timed on {where}, scaled to the preset's steps; how, in brackets):",
          flush=True)
    kept, timed = [], []
    ests = _estimates(todo, configs, runs, measure)
    for (e, p), est in zip(todo, ests):
        secs = est.seconds
        slow = "" if gpu or secs <= GPU_S else f"needs a GPU ({'about' if est.measured else 'at least'} " \
            f"{duration(secs)} on this CPU)"
        why = "; ".join(w for w in (est.missing, slow) if w)
        print(f"  {e.id:22s} {p:8s} {est.time_text():>11s}, {size(est.bytes):>9s}"
              + (f"  skipped: {why}" if why else "") + f"  ({est.how})", flush=True)
        if why:
            not_run[e.id] = f"not run here: {why}; featlab run {e.id} --preset {p} runs it anyway"
        else:
            kept.append((e, p))
            timed.append(est)
    print("  " + plan_total(timed) + (f"; {len(todo) - len(kept)} skipped" if len(kept) < len(todo) else ""),
          flush=True)
    return kept


def _estimates(todo: list[tuple[Experiment, str]], configs: list, runs: Any, measure: bool | None) -> list:
    """Each run's estimate. A dry run (``measure=True``) shares one time budget among its timings
    (featlab.runs.timing.DRY_RUN_S), the cheapest runs by the lower bound first: as many as can be are timed in
    full, and the others stop at their share (a floor) or are left for the next dry run (those timed are cached)."""
    if measure is not True:
        return [estimate(e, cfg, runs=runs, measure=measure) for (e, _), cfg in zip(todo, configs)]
    budget = dry_run_budget([(e, cfg) for (e, _), cfg in zip(todo, configs)])
    order = sorted(range(len(todo)), key=lambda i: _cost(configs[i]))
    found = {i: estimate(todo[i][0], configs[i], runs=runs, measure=True, budget=budget) for i in order}
    return [found[i] for i in range(len(todo))]


def _cost(cfg: Any) -> float:
    """The run's lower bound on its device (the order in which a dry run times runs): infinite if unknown."""
    try:
        return lower_bound(cfg.estimate(), cfg.run_device().type)
    except Exception:
        return float("inf")


def plan_total(ests: list) -> str:
    """The plan's last line: a total only when every run to make was measured here (a run of its config, or its
    own steps timed); otherwise how many were, and no sum that would pass a guess off as a promise."""
    n = len(ests)
    runs = f"{n} experiment run{'s' if n != 1 else ''}"
    if all(e.measured in ("run", "timed") for e in ests):
        return f"total ≈ {duration(sum(e.seconds for e in ests))} for {runs}"
    if all(e.measured for e in ests):
        return f"total ≥ {duration(sum(e.seconds for e in ests))} for {runs} (some timings stopped early)"
    done = sum(bool(e.measured) for e in ests)
    return f"total: not timed ({done} of {runs} timed here; 'featlab reproduce --dry-run' times the rest)"


def _run_rivals(e: Experiment, preset: str, out: Path, force: bool, overrides: dict[str, Any],
                broken: list[str]) -> None:
    """Every rival (mechanism control) of ``e`` at the same preset and overrides: the runs the matrix reads."""
    for ctl in [c for c in e.controls if c.kind == "mechanism"]:
        try:
            r = run(e.id, preset, out=out, force=force, control=ctl.name, **overrides)
        except FeatlabError as err:
            print(f"    rival {ctl.name}: could not run: {err}", flush=True)
            broken.append(e.id)
            continue
        print(f"    rival {ctl.name}: {r.status}, claims {counts_text(r.claims)}, "
              f"{r.summary.get('elapsed_s', 0):.1f} s", flush=True)


def cmd_reproduce(a: argparse.Namespace) -> int:
    """Goes on past an experiment that cannot run; ends with a report page. ``--preset quick,theory`` runs both
    presets where an experiment has them and shows their verdicts side by side."""
    words = [a.paper, *a.overrides] if a.paper and "=" in a.paper else list(a.overrides)
    paper = _check_paper(None if a.paper and "=" in a.paper else a.paper)
    exps = list_experiments(paper)
    per_exp = _split_overrides(exps, parse_overrides(words))
    presets = [p.strip() for p in a.preset.split(",") if p.strip()]
    if not presets:
        raise ConfigError("--preset: name a preset (quick, paper, theory, ...) or several separated by commas")
    todo, not_run = _plan(exps, presets)
    if not todo and not not_run:
        raise ConfigError(f"--preset: no experiment of this reproduction has a preset {a.preset!r}")
    configs = [resolve_config(e.id, p, overrides=per_exp[e.id])[1] for e, p in todo]  # bad overrides fail here
    for cfg in {c.device for c in configs}:  # device=cuda on a machine without one: exit 2 before any work
        resolve_device(cfg)
    absent = dict(not_run)
    todo = print_plan(todo, configs, not_run, Path(a.out), measure=True if a.dry_run else None)
    for exp_id, why in absent.items():  # after the plan: those with no such preset, or a smoke test only
        print(f"  {exp_id:22s} not run: {why}", flush=True)
    if a.dry_run:
        return 0
    out, broken = Path(a.out), []
    check_report(out / "report.html")  # before any experiment runs: the page at the end must be writable
    chosen: dict[str, Path] = {}
    for i, (e, p) in enumerate(todo, 1):
        print(f"[{i}/{len(todo)}] {e.id} ({e.reference}){'' if len(presets) == 1 else f' --preset {p}'} ...",
              flush=True)
        try:
            rec = run(e.id, p, out=out, force=a.force, **per_exp[e.id])
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
        chosen.setdefault(e.id, rec.dir)  # the first preset asked is the one the report shows first
        print(f"    {rec.status}{' (existing run)' if rec.skipped else ''}, claims {counts_text(rec.claims)}, "
              f"{rec.summary.get('elapsed_s', 0):.1f} s → {rec.dir}", flush=True)
        if not rec.ok:
            broken.append(e.id)
        elif a.rivals:
            _run_rivals(e, p, out, a.force, per_exp[e.id], broken)
    kept = "the runs are kept: 'featlab report OUT' writes the page once fixed"
    with writing("--out", kept):
        _record_not_run(out, [e.id for e in exps], not_run)
    report = build(out, paper, not_run=not_run, chosen=chosen)
    paths = write_report(report, out / "report.html", kept=kept)
    print()
    print(console_summary(report, paths))
    if broken:
        return 1
    shown = [ev.runs[0].rec for pv in report.papers for ev in pv.experiments if ev.runs]
    return 1 if a.strict and not all(rec.all_hold for rec in shown) else 0  # --strict: every shown claim holds
