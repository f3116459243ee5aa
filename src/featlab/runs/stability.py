"""``featlab stability``: do the verdicts survive the values the paper never gives?

    featlab stability fa-synthetic --preset quick [--fields h,seeds] [--budget 8]

Every open decision of a paper is a config field whose description says "[paper silent…]" and which declares the
values worth trying (``json_schema_extra={"range": [...]}``, see :mod:`featlab.config`). A stability study varies
each such field over its range one at a time, everything else held at the base setting (the preset plus any
``key=value``), and also the sample sizes every verdict rests on: ``seeds`` (halved, doubled), another noise draw
(``seed`` moved past the base replicas) and the test points ``n_test`` or ``n_test_*`` (halved, doubled) where the
config has them; sample sizes are scaled from the value in use, even where they declare a range. Each point is an
ordinary cached run sent through the sweep executors (local, Ray, SLURM), so a study resumes where it stopped. The
base run is the one ``featlab run`` makes (in ``OUT``); the varied points are kept apart, under
``OUT/<experiment>/stability/points/``, so ``report``, ``runs`` and ``reproduce`` still show the base run as the
experiment's latest. Per claim it says "stable over all tried values" or each field value where the verdict differs
from the base run's (held → failed, held → inconclusive, ...); a point whose run failed is "not judged".

The long table (one row per point and claim) is written as Parquet, with a Markdown page and a sidecar JSON naming
the base run, under ``OUT/<experiment>/stability/``; the report reads it (:func:`stable_under`).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..config import field_range, silent_fields
from ..errors import ConfigError, FeatlabError, RunRecordError
from ..text import fmt_value, table
from ..utils import atomic_write, check_writable, json_dumps, json_loads, writing
from .executors import execute
from .record import is_check, is_uncontrolled, load_run, status
from .remote import PointRequest
from .runner import resolve_config

SAMPLE_SIZES = ("seeds", "seed", "n_test")  # varied in every study (where the config has them): what a verdict rests on
BASE = "(base)"
FOLDER = "stability"


@dataclass
class Study:
    """What a study tries: the base overrides and, per varied field, the values other than the base's."""

    experiment_id: str
    preset: str
    base: dict[str, Any]
    axes: dict[str, list[Any]]
    skipped: list[str] = field(default_factory=list)  # values left out, and why (invalid here, or over the budget)

    def points(self) -> list[tuple[str, Any]]:
        return [(BASE, None)] + [(f, v) for f, vs in self.axes.items() for v in vs]


def _sample_values(name: str, cfg) -> list[Any]:
    v = getattr(cfg, name)
    if name == "seed":
        return [v + cfg.seeds]  # replicas disjoint from the base run's: another draw of data, init and noise
    low = v // 2 if name != "seeds" or v // 2 >= 2 else v  # one seed gives a per-seed verdict no interval
    return sorted({max(1, low), 2 * v} - {v})


def plan(experiment_id: str, preset: str = "quick", base: Mapping[str, Any] | None = None,
         fields: list[str] | None = None, budget: int | None = None) -> Study:
    """The study's points, each validated before anything runs. ``fields``: only these (each must have a range);
    ``budget``: at most this many points besides the base, taken round-robin (every field's first value before
    any field's second)."""
    exp, cfg = resolve_config(experiment_id, preset, overrides=base)
    cls = exp.config
    # sample sizes are scaled from the value in use (a quick preset shrinks them), even where they declare a range
    sizes = [f for f in cls.model_fields if f in SAMPLE_SIZES or f.startswith("n_test_")]
    rangeable = [f for f in silent_fields(cls) if field_range(cls, f) is not None and f not in sizes] + sizes
    if fields:
        for f in fields:
            if f not in cls.model_fields:
                raise ConfigError(f"unknown field {f!r} for {exp.id}; fields with a range are: {', '.join(rangeable)}")
            if f not in rangeable:
                raise ConfigError(f"the {f!r} field of {exp.id} declares no range (only paper-silent fields do, "
                                  f"plus {', '.join(SAMPLE_SIZES)}); choose among: {', '.join(rangeable)}")
    skipped = [f"{f}: declares no range" for f in silent_fields(cls) if f not in rangeable]
    axes: dict[str, list[Any]] = {}
    for f in fields or rangeable:
        values = _sample_values(f, cfg) if f in sizes else field_range(cls, f) or []
        kept = []
        for v in values:
            try:
                typed = getattr(resolve_config(exp.id, preset, overrides={**(base or {}), f: v})[1], f)
            except ConfigError as e:
                skipped.append(f"{f}={fmt_value(v)}: {e}")
                continue
            if typed != getattr(cfg, f) and typed not in kept:
                kept.append(typed)
        if kept:
            axes[f] = kept
    if budget is not None:
        if budget < 0:
            raise ConfigError(f"--budget must be a number of points >= 0; got {budget}")
        order = [(f, v) for i in range(max((len(v) for v in axes.values()), default=0))
                 for f, vs in axes.items() for v in vs[i:i + 1]]
        keep = order[:budget]
        skipped += [f"{f}={fmt_value(v)}: over the budget of {budget} points" for f, v in order[budget:]]
        axes = {f: [v for g, v in keep if g == f] for f in axes if any(g == f for g, _ in keep)}
    return Study(exp.id, preset, dict(base or {}), axes, skipped)


def _kind(c: dict[str, Any]) -> str:
    return "check" if is_check(c) else "uncontrolled" if is_uncontrolled(c) else "claim"


def _number(v: Any) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else float("nan")


def long_table(study: Study, results: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per (point, claim of the base run): the field and value tried, the verdict there and at the base."""
    base_claims = {c.get("id"): c for c in results[0]["claims"]}
    rows = []
    for (f, v), r in zip(study.points(), results):
        judged = {c.get("id"): c for c in r["claims"]}
        for cid, bc in base_claims.items():
            c = judged.get(cid)
            verdict = status(c) if c is not None else f"not judged (run {r['status']})" if r["status"] != \
                "complete" else "not judged"
            rows.append({"field": f, "value": "" if f == BASE else json.dumps(v), "claim": cid, "kind": _kind(bc),
                         "verdict": verdict, "base_verdict": status(bc), "flipped": c is not None and
                         status(c) != status(bc), "measured": _number((c or {}).get("measured")),
                         "run_status": r["status"], "run_dir": r["dir"], "error": r.get("error", "")})
    return pd.DataFrame(rows, columns=["field", "value", "claim", "kind", "verdict", "base_verdict", "flipped",
                                       "measured", "run_status", "run_dir", "error"])


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    """One row per claim: its base verdict and ``stable under``: "stable over all tried values" or each flip."""
    rows = []
    for cid, g in df.groupby("claim", sort=False):
        tried = g[g["field"] != BASE]
        flips = tried[tried["flipped"]]
        unjudged = tried[tried["verdict"].str.startswith("not judged")]
        if tried.empty:
            text = "nothing tried"
        elif flips.empty:
            text = "stable over all tried values"
        else:
            text = "; ".join(f"{r['field']}={_show(r['value'])}: {r['base_verdict']} → {r['verdict']}"
                             for r in flips.to_dict("records"))
        if len(unjudged):
            text += f" ({len(unjudged)} not judged: " + ", ".join(f"{r['field']}={_show(r['value'])}"
                                                                for r in unjudged.to_dict("records")) + ")"
        m = g["measured"].dropna()
        rows.append({"claim": cid, "kind": g["kind"].iloc[0], "base_verdict": g["base_verdict"].iloc[0],
                     "stable": bool(flips.empty), "stable_under": text,
                     "measured_range": f"{fmt_value(m.min())} – {fmt_value(m.max())}" if len(m) else ""})
    return pd.DataFrame(rows)


def _show(value: Any) -> str:
    return fmt_value(json.loads(value)) if value else ""


def stability(experiment_id: str, preset: str = "quick", base: Mapping[str, Any] | None = None, *,
              fields: list[str] | None = None, budget: int | None = None, out: str | Path = "runs",
              executor: str = "local", force: bool = False, progress: bool = True, save: bool = True,
              **execute_options: Any) -> tuple[Study, pd.DataFrame, pd.DataFrame]:
    """Plan, run every point through the sweep executors (``execute_options``: ``cpus``, ``gpus``, ``shared_fs``,
    ``ray_address``, ``slurm``), and return (study, long table, per-claim summary); ``save`` writes them under
    ``OUT/<experiment>/stability/`` (paths in ``long.attrs["table"]`` and ``["markdown"]``)."""
    study = plan(experiment_id, preset, base, fields, budget)
    if save:  # before any point runs: its tables (and the points' runs beneath them) must be writable
        check_writable(Path(out) / study.experiment_id / FOLDER, "--out", folder=True)
    t0 = time.perf_counter()
    points_out = str(Path(out) / study.experiment_id / FOLDER / "points")  # apart: not the experiment's latest run
    requests = [PointRequest(study.experiment_id, preset, {**study.base, **({} if f == BASE else {f: v})},
                             str(out) if f == BASE else points_out, force) for f, v in study.points()]
    results = execute(requests[:1], executor=executor, progress=progress, **execute_options)
    if results[0]["status"] != "complete":  # nothing to compare with: stop before the other points
        raise FeatlabError(f"the base run of {study.experiment_id} did not complete ({results[0]['status']}: "
                           f"{results[0].get('error') or 'no message'}); fix it first: featlab run {experiment_id}")
    results += execute(requests[1:], executor=executor, progress=progress, **execute_options)
    elapsed = time.perf_counter() - t0
    long = long_table(study, results)
    summary = summarise(long)
    long.attrs["elapsed_s"] = elapsed
    long.attrs["base_run"] = results[0]["dir"]
    if save:
        save_study(study, long, summary, out, elapsed, results)
    return study, long, summary


def study_name(study: Study) -> str:
    digest = hashlib.sha256(json.dumps([study.experiment_id, study.preset, study.base, study.axes],
                                       sort_keys=True, default=str).encode()).hexdigest()[:10]
    return f"stability-{study.preset}-{digest}"


def save_study(study: Study, long: pd.DataFrame, summary: pd.DataFrame, out: str | Path, elapsed: float,
               results: list[dict[str, Any]]) -> Path:
    path = Path(out) / study.experiment_id / FOLDER / (study_name(study) + ".parquet")
    meta = {"experiment": study.experiment_id, "preset": study.preset, "base": study.base, "axes": study.axes,
            "skipped": study.skipped, "base_run": Path(results[0]["dir"]).name, "elapsed_s": round(elapsed, 1),
            "points": len(results), "retrained": sum(not r.get("skipped") for r in results)}
    # each file whole or absent; a full disk or a read-only folder is one line (exit 2), the runs stay
    with writing("--out", kept="the points' runs are kept: rerun the same study (complete points are read back)"):
        atomic_write(path, lambda t: long.to_parquet(t, index=False))
        atomic_write(path.with_suffix(".md"), markdown(study, summary, results, elapsed))
        atomic_write(path.with_suffix(".json"), json_dumps(meta, indent=2, default=str))
    long.attrs.update(table=str(path), markdown=str(path.with_suffix(".md")))
    return path


def headline(study: Study) -> str:
    tried = ", ".join(f"{f} ∈ {{{', '.join(fmt_value(v) for v in vs)}}}" for f, vs in study.axes.items())
    base = " ".join(f"{k}={fmt_value(v)}" for k, v in study.base.items())
    return (f"{study.experiment_id} ({study.preset}{', ' + base if base else ''}): {len(study.points())} runs, "
            f"one field at a time: {tried or 'no field has values to try'}")


def _rows(summary: pd.DataFrame, code: str = "") -> list[list[str]]:
    return [[f"{code}{r['claim']}{code}" + ("" if r["kind"] == "claim" else f" ({r['kind']})"), str(r["base_verdict"]),
             str(r["stable_under"]), str(r["measured_range"])] for r in summary.to_dict("records")]


def summary_text(summary: pd.DataFrame) -> str:
    return table(_rows(summary), ["claim", "base verdict", "stable under", "measured (min – max)"], [34, 12, 58, 20])


def markdown(study: Study, summary: pd.DataFrame, results: list[dict[str, Any]], elapsed: float) -> str:
    def md(rows: list[list[str]], header: list[str]) -> list[str]:
        cell = [[str(c).replace("|", "\\|") for c in r] for r in rows]
        return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |"
                                                                              for r in cell]
    lines = [f"# Stability of {study.experiment_id}'s verdicts", "", headline(study) + f" ({elapsed:.0f} s).", ""]
    lines += md(_rows(summary, "`"), ["claim", "base verdict", "stable under", "measured (min – max)"])
    lines += ["", "## Runs", ""]
    lines += md([[f, "" if f == BASE else fmt_value(v), r["status"], Path(r["dir"]).name if r["dir"] else "",
                  _took(r), r.get("error", "")[:80]] for (f, v), r in zip(study.points(), results)],
                ["field", "value", "status", "run", "run time", "error"])
    if study.skipped:
        lines += ["", "Not tried: " + "; ".join(study.skipped)]
    return "\n".join(lines) + "\n"


def _took(row: dict[str, Any]) -> str:
    """The run's own training time (a cached point: when it was first made), from its record."""
    try:
        t = load_run(row["dir"]).summary.get("elapsed_s")
    except (RunRecordError, KeyError, TypeError):
        return ""
    return f"{t:.0f} s" + (" (cached)" if row.get("skipped") else "") if isinstance(t, (int, float)) else ""


def stable_under(out: str | Path, experiment_id: str, run_id: str) -> dict[str, str]:
    """claim id → its "stable under" text over every stability table whose base run is ``run_id`` ({} when none;
    a value tried in several, its newest verdict): what the report shows beside each verdict."""
    found = []
    for meta_path in (Path(out) / experiment_id / FOLDER).glob("stability-*.json"):
        try:
            if json_loads(meta_path.read_text(encoding="utf-8")).get("base_run") == run_id:
                table = meta_path.with_suffix(".parquet")
                found.append((table.stat().st_mtime, pd.read_parquet(table)))
        except (OSError, ValueError, AttributeError):
            continue  # an unreadable or older table: not shown
    if not found:
        return {}
    tables = [t for _, t in sorted(found, key=lambda x: -x[0])]  # newest first: its verdict wins a repeated value
    s = summarise(pd.concat(tables, ignore_index=True).drop_duplicates(["field", "value", "claim"]))
    return dict(zip(s["claim"], s["stable_under"]))
