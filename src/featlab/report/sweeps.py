"""The sweep tables (with their plots) found under ``OUT/<experiment>/sweeps/``, for the report."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..plotting import SWEEP_BOOKKEEPING
from ..utils import json_loads


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
            meta = json_loads(f.with_suffix(".json").read_text(encoding="utf-8"))
            df = pd.read_parquet(f)
        except (OSError, ValueError):
            continue  # a table from an older layout (no sidecar) or an unreadable file: not shown
        axes = [a for a in meta.get("axis_names", []) if a in df.columns]
        shown = [m for m in meta.get("shown", []) if m in df.columns]
        if not shown:
            shown = [c for c in df.columns if c not in (*axes, *SWEEP_BOOKKEEPING) and "@" not in c][:4]
        plot = f.with_suffix(".png")
        found.append(SweepTable(f, meta, df, plot if plot.is_file() else None,
                                axes + [c for c in ("status", "claims_held", "claims") if c in df.columns] + shown))
    return found
