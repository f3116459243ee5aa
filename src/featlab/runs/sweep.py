"""Sweeps: the cartesian product of config values, each point an ordinary (cached) run.

    featlab sweep fa-synthetic k=10,20,40 d=3072,8192 --executor ray

Executors (see :mod:`featlab.runs.executors`): ``local`` runs the points one after another in this process (each
point already batches its seeds on the replica axis, which is what fills one machine); ``ray`` sends each point
to a Ray cluster as a task with the CPUs/GPUs it asks for (``ray.init(address=...)`` connects to an existing
cluster, so a sweep that outgrows one machine spreads over many); ``slurm`` submits each point as a job through
submitit. Every point becomes an ordinary run record under ``OUT/<experiment>/<run-id>`` of the driver's ``OUT``;
points already complete are not retrained, so a sweep interrupted half-way resumes where it stopped; a failing
point is a failed row with its error, and the others go on.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from ..config import parse_overrides
from ..errors import ConfigError
from ..plotting import parse_plot, sweep_figure
from ..utils import atomic_write, check_writable, json_dumps, writing
from .executors import execute
from .remote import PointRequest
from .runner import resolve_config
from .verdict import net_counts


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


def _typed(experiment_id: str, preset: str, points: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """Each point's values as the config reads them (``eta=1e-3`` → 0.001, a float), validating every point before
    anything trains; and each point's device (what its resources default from)."""
    typed, devices = [], []
    for p in points:
        cfg = resolve_config(experiment_id, preset, overrides=p)[1].to_dict()
        typed.append({k: cfg.get(k, v) for k, v in p.items()})
        devices.append(str(cfg.get("device", "auto")))
    return typed, devices


def _axis_items(axes: Iterable[str] | None, values: dict[str, Any]) -> list[str]:
    """CLI-style axes plus Python keywords: a list or tuple is an axis, anything else a fixed value."""
    items = list(axes or [])
    for k, v in values.items():
        vs = list(v) if isinstance(v, (list, tuple, range)) else [v]
        items.append(f"{k}=" + ",".join(json.dumps(x) if isinstance(x, (list, dict)) else str(x) for x in vs))
    return items


def sweep(experiment_id: str, axes: list[str] | None = None, *, preset: str = "quick", out: str | Path = "runs",
          executor: str = "local", force: bool = False, ray_address: str | None = None, progress: bool = True,
          save: bool = True, show: list[str] | None = None, plot: list[str] | str | None = None,
          cpus_per_point: float | None = None, gpus_per_point: float | None = None, shared_fs: bool = False,
          slurm: dict[str, Any] | None = None, **values: Any) -> pd.DataFrame:
    """Run every point of the grid and return one row per point: the swept values (typed as the config reads
    them), status, claims held (``claims_held`` of ``claims``), every summary metric, and the run folder.

    >>> featlab.sweep("fa-synthetic", k=[10, 20, 40], d=[3072, 8192], plot="x=d y=binary.critical_radius hue=k")

    ``save`` writes the table under ``OUT/<experiment>/sweeps/`` (its path in ``df.attrs["table"]``), with the
    ``plot`` (``x=AXIS y=METRIC [hue=AXIS] [kind=line|heatmap]``) beside it as a PNG (``df.attrs["plot"]``).
    ``cpus_per_point``/``gpus_per_point``: what each Ray task or SLURM job asks for (default 1 CPU, and 1 GPU
    when the point's device is cuda, or auto on a cluster with GPUs); ``shared_fs``: workers write into ``out``
    themselves instead of shipping the record back; ``slurm``: submitit options (``cluster="local"`` runs the
    jobs here, ``slurm_partition=...``, ``timeout_min=...``). A failed point has its error in the ``error`` column.
    """
    items = _axis_items(axes, values)
    raw = grid(items)
    names = list(raw[0]) if raw else []
    spec = parse_plot(plot, names)
    points, devices = _typed(experiment_id, preset, raw)
    out = str(out)
    if save:  # before any point runs: a table that cannot be written is refused now, not after the training
        check_writable(table_dir(out, experiment_id), "--out", folder=True)
    requests = [PointRequest(experiment_id, preset, p, out, force) for p in points]
    results = execute(requests, executor=executor, devices=devices, cpus=cpus_per_point, gpus=gpus_per_point,
                      shared_fs=shared_fs, ray_address=ray_address, slurm=slurm, progress=progress)
    rows = []
    for p, r in zip(points, results):
        held, total = net_counts(r["claims"])
        rows.append({**p, "status": r["status"], "claims_held": held, "claims": total, **r["metrics"],
                     "run_dir": r["dir"], "error": r.get("error", "")})
    df = pd.DataFrame(rows)
    if save:
        path = save_table(df, out, experiment_id, items, preset, names, show=show, plot=spec)
        df.attrs["table"] = str(path)
        if spec is not None:
            df.attrs["plot"] = str(path.with_suffix(".png"))
    return df


def table_name(experiment_id: str, items: list[str], preset: str) -> str:
    """``sweep-<preset>-<readable axes>-<hash>``: the hash covers the whole sweep (experiment, preset, every axis
    in full), so two sweeps share a file only when they are the same sweep; the prefix is for people."""
    digest = hashlib.sha256(json.dumps([experiment_id, preset, list(items)]).encode()).hexdigest()[:10]
    readable = re.sub(r"[^A-Za-z0-9.+-]+", "_", "-".join(items)).strip("_")[:60]
    return f"sweep-{re.sub(r'[^A-Za-z0-9.+-]+', '_', preset)}-{readable}-{digest}"


def save_table(df: pd.DataFrame, out: str | Path, experiment_id: str, items: list[str], preset: str,
               axis_names: list[str], show: list[str] | None = None, plot: dict[str, str] | None = None) -> Path:
    """Write the table (Parquet), a sidecar JSON saying what was swept, and the plot, each atomically; an OS error
    (a full disk, a read-only folder) is one line naming the file and saying the points' runs are kept."""
    path = table_dir(out, experiment_id) / (table_name(experiment_id, items, preset) + ".parquet")
    fig = None
    if plot is not None:  # first: a bad y= fails before anything is written
        fig = sweep_figure(df, plot, axis_names, f"{experiment_id} ({preset}): {plot['y']}")
    with writing("--out", kept="the points' runs are kept: rerun the same sweep (complete points are read back)"):
        if fig is not None:
            atomic_write(path.with_suffix(".png"),
                         lambda t: fig.savefig(t, dpi=130, bbox_inches="tight", format="png"))
        atomic_write(path, lambda t: df.to_parquet(t, index=False))
        meta = {"experiment": experiment_id, "preset": preset, "axes": list(items), "axis_names": axis_names,
                "shown": list(show or []), "plot": plot}
        atomic_write(path.with_suffix(".json"), json_dumps(meta, indent=2))
    return path


def table_dir(out: str | Path, experiment_id: str) -> Path:
    """Where a sweep's tables go: ``OUT/<experiment>/sweeps/``."""
    return Path(out) / experiment_id / "sweeps"
