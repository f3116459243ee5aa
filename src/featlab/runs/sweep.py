"""Sweeps: the cartesian product of config values, each point an ordinary (cached) run.

    featlab sweep fa-synthetic k=10,20,40 d=3072,8192 --executor ray

Executors: ``local`` runs the points one after another in this process (each point already batches its seeds on
the replica axis, which is what fills one machine); ``ray`` sends each point to a Ray cluster as a task
(``ray.init(address=...)`` connects to an existing cluster, so a sweep that outgrows one machine spreads over
many). Every point writes an ordinary run record under ``OUT/<experiment>/<run-id>``; points already complete are
not retrained, so a sweep interrupted half-way resumes where it stopped.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from ..config import parse_overrides
from ..errors import ConfigError, FeatlabError
from .runner import resolve_config, run


def grid(items: Iterable[str]) -> list[dict[str, Any]]:
    """``["k=10,20", "eta=1e-3"]`` → [{k: 10, eta: 1e-3}, {k: 20, eta: 1e-3}]. Lists in brackets stay whole."""
    axes: dict[str, list[Any]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep:
            raise ConfigError(f"sweep axis {item!r} is not of the form key=v1,v2,... (e.g. k=10,20)")
        if raw.strip().startswith("["):
            values = [raw]
        else:
            values = [v for v in raw.split(",") if v != ""]
        if not values:
            raise ConfigError(f"sweep axis {key!r} has no values; write {key}=v1,v2,...")
        axes[key] = [parse_overrides([f"{key}={v}"])[key] for v in values]
    keys = list(axes)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(axes[k] for k in keys))]


def _run_point(experiment_id: str, preset: str, out: str, force: bool, overrides: dict[str, Any]) -> dict[str, Any]:
    rec = run(experiment_id, preset, out=out, force=force, quiet=True, **overrides)
    return {"dir": str(rec.dir), "status": rec.status, "skipped": rec.skipped, "metrics": rec.summary["metrics"],
            "claims": rec.claims}


def sweep(experiment_id: str, axes: list[str], *, preset: str = "quick", out: str | Path = "runs",
          executor: str = "local", force: bool = False, ray_address: str | None = None,
          progress: bool = True) -> pd.DataFrame:
    """Run every point of the grid and return one row per point: the swept values, status, claims held,
    every summary metric, and the run folder."""
    points = grid(axes)
    for p in points:  # validate everything before training anything
        resolve_config(experiment_id, preset, overrides=p)
    out = str(out)
    if executor == "local":
        results = []
        for i, p in enumerate(points, 1):
            if progress:
                print(f"[{i}/{len(points)}] {experiment_id} {' '.join(f'{k}={v}' for k, v in p.items())}", flush=True)
            results.append(_run_point(experiment_id, preset, out, force, p))
    elif executor == "ray":
        try:
            import ray
        except ImportError:
            raise FeatlabError("the ray executor needs Ray: pip install 'featlab[ray]' (or use --executor local)") \
                from None
        if not ray.is_initialized():
            ray.init(address=ray_address, include_dashboard=False, log_to_driver=False,
                     ignore_reinit_error=True)
        task = ray.remote(_run_point)
        results = ray.get([task.remote(experiment_id, preset, out, force, p) for p in points])
    else:
        raise ConfigError(f"unknown executor {executor!r}; choose local or ray")
    rows = []
    for p, r in zip(points, results):
        held = sum(c["holds"] for c in r["claims"])
        rows.append({**p, "status": r["status"], "claims_held": f"{held}/{len(r['claims'])}", **r["metrics"],
                     "run_dir": r["dir"]})
    return pd.DataFrame(rows)
