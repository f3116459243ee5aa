"""Sweep tables for people: the ``--plot x=AXIS y=METRIC [hue=AXIS] [kind=line|heatmap]`` figure drawn beside a
sweep's table, and the tables (with their plots) found under ``OUT/<experiment>/sweeps/`` for the report."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ConfigError
from .plots import subplots

PLOT_KEYS = ("x", "y", "hue", "kind")


def parse_plot(items: list[str] | str | None, axes: list[str]) -> dict[str, str] | None:
    """``["x=d", "y=binary.critical_radius", "hue=k"]`` → dict, checked against the sweep's axes before any run."""
    if not items:
        return None
    if isinstance(items, str):
        items = items.split()
    spec: dict[str, str] = {}
    for item in items:
        key, sep, val = item.partition("=")
        if not sep or key not in PLOT_KEYS or not val:
            raise ConfigError(f"--plot item {item!r} is not one of x=AXIS, y=METRIC, hue=AXIS, kind=line|heatmap "
                              f"(e.g. --plot x=d y=binary.critical_radius hue=k)")
        spec[key] = val
    if "x" not in spec or "y" not in spec:
        raise ConfigError("--plot needs x=AXIS and y=METRIC (e.g. --plot x=d y=binary.critical_radius)")
    for k in ("x", "hue"):
        if k in spec and spec[k] not in axes:
            raise ConfigError(f"--plot {k}={spec[k]!r} is not a swept field; choose one of: {', '.join(axes)}")
    kind = spec.setdefault("kind", "line")
    if kind not in ("line", "heatmap"):
        raise ConfigError(f"--plot kind={kind!r} must be line or heatmap")
    if kind == "heatmap" and "hue" not in spec:
        raise ConfigError("--plot kind=heatmap needs hue=AXIS for its rows (x=AXIS gives the columns)")
    return spec


def _numeric(values) -> bool:
    return all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in values)


def sweep_figure(df: pd.DataFrame, spec: dict[str, str], axes: list[str], title: str = ""):
    """The metric ``y`` against the axis ``x`` (one curve per ``hue`` value), or a heat map of ``y`` over hue × x."""
    x, y, hue = spec["x"], spec["y"], spec.get("hue")
    if y not in df.columns:
        metrics = [c for c in df.columns if c not in (*axes, "status", "claims_held", "run_dir") and "@" not in c]
        raise ConfigError(f"--plot y={y!r} is not a metric of these runs; e.g. {', '.join(metrics[:6])}")
    keys = [x] + ([hue] if hue else [])
    others = [a for a in axes if a not in keys and df[a].astype(str).nunique() > 1]
    if others:
        raise ConfigError(f"the sweep also varies {', '.join(others)}: name it as hue= (or sweep it alone) so each "
                          f"plotted point is one run")
    data = df[keys + [y]].copy()
    data[y] = pd.to_numeric(data[y], errors="coerce")
    if spec.get("kind") == "heatmap":
        return _heatmap(data, x, y, hue, title)
    fig, ax = subplots(figsize=(6.0, 4.2))
    groups = [(None, data)] if hue is None else list(data.groupby(hue, sort=True))
    numeric_x = _numeric(data[x].tolist())
    cats = list(dict.fromkeys(data[x].tolist()))
    for val, g in groups:
        g = g.sort_values(x) if numeric_x else g
        xs = g[x].to_numpy(float) if numeric_x else [cats.index(v) for v in g[x]]
        ax.plot(xs, g[y].to_numpy(float), "o-", lw=1.6, ms=4, label=None if hue is None else f"{hue} = {val}")
    if numeric_x:
        xv = data[x].to_numpy(float)
        if (xv > 0).all() and xv.max() / xv.min() >= 100:
            ax.set_xscale("log")
    else:
        ax.set_xticks(range(len(cats)), [str(c) for c in cats])
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.grid(alpha=0.3)
    if hue is not None:
        ax.legend(title=hue, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def _heatmap(data: pd.DataFrame, x: str, y: str, hue: str, title: str):
    grid = data.pivot_table(index=hue, columns=x, values=y, aggfunc="mean", sort=True)
    fig, ax = subplots(figsize=(1.2 * grid.shape[1] + 3.0, 0.6 * grid.shape[0] + 2.4))
    im = ax.imshow(grid.to_numpy(float), cmap="viridis", aspect="auto")
    ax.set_xticks(range(grid.shape[1]), [str(c) for c in grid.columns])
    ax.set_yticks(range(grid.shape[0]), [str(r) for r in grid.index])
    ax.set_xlabel(x)
    ax.set_ylabel(hue)
    vals = grid.to_numpy(float)
    mid = np.nanmin(vals) + 0.6 * (np.nanmax(vals) - np.nanmin(vals)) if np.isfinite(vals).any() else 0
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            v = vals[i, j]
            ax.text(j, i, "" if np.isnan(v) else f"{v:.3g}", ha="center", va="center", fontsize=8,
                    color="black" if v > mid else "white")
    fig.colorbar(im, ax=ax, label=y)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


@dataclass
class SweepTable:
    """A saved sweep: its table, what was swept (from the sidecar JSON) and its plot when one was drawn."""

    path: Path
    meta: dict[str, Any]
    table: pd.DataFrame
    plot: Path | None = None
    columns: list[str] = field(default_factory=list)  # what the report shows: axes, status, claims, a few metrics


def find_sweeps(out: str | Path, experiment: str) -> list[SweepTable]:
    found = []
    for f in sorted((Path(out) / experiment / "sweeps").glob("sweep-*.parquet")):
        try:
            meta = json.loads(f.with_suffix(".json").read_text(encoding="utf-8"))
            df = pd.read_parquet(f)
        except (OSError, ValueError):
            continue  # a table from an older layout (no sidecar) or an unreadable file: not shown
        axes = [a for a in meta.get("axis_names", []) if a in df.columns]
        shown = [m for m in meta.get("shown", []) if m in df.columns]
        if not shown:
            shown = [c for c in df.columns if c not in (*axes, "status", "claims_held", "run_dir") and "@" not in c][:4]
        plot = f.with_suffix(".png")
        found.append(SweepTable(f, meta, df, plot if plot.is_file() else None,
                                axes + [c for c in ("status", "claims_held") if c in df.columns] + shown))
    return found
