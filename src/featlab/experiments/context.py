"""What an experiment function receives: its config, resolved device/dtype, and a place to put results.

An experiment calls ``ctx.metric``, ``ctx.claim``, ``ctx.figure`` and ``ctx.log``; the runner turns those into
the run record. A failed claim is a scientific result, not an error: it is recorded with ``holds=False``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from ..utils import resolve_device, resolve_dtype


@dataclass
class Claim:
    id: str
    statement: str
    source: str  # the paper's reference, e.g. "Thm 4.5 (2)"
    measured: float | str
    threshold: str
    holds: bool

    def to_dict(self) -> dict[str, Any]:
        m = self.measured
        if isinstance(m, float) and not math.isfinite(m):
            m = str(m)
        return {"id": self.id, "statement": self.statement, "source": self.source, "measured": m,
                "threshold": self.threshold, "holds": bool(self.holds)}


@dataclass
class RunContext:
    experiment_id: str
    cfg: Any
    dir: Path
    quiet: bool = False
    metrics: dict[str, float] = field(default_factory=dict)
    claims: list[Claim] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    frames: list[pd.DataFrame] = field(default_factory=list)
    status: str = "complete"
    message: str = ""

    @property
    def seeds(self) -> list[int]:
        return self.cfg.seed_list()

    @property
    def device(self) -> torch.device:
        return resolve_device(self.cfg.device)

    @property
    def dtype(self) -> torch.dtype:
        return resolve_dtype(self.cfg.dtype)

    # ---------------------------------------------------------------- results
    def log(self, frame: pd.DataFrame | list, prefix: str = "") -> None:
        """Add rows (seed, step, metric, value) to metrics.parquet."""
        if isinstance(frame, list):
            frame = pd.DataFrame(frame, columns=["seed", "step", "metric", "value"])
        if prefix:
            frame = frame.assign(metric=prefix + frame["metric"].astype(str))
        self.frames.append(frame)

    def metric(self, name: str, value: float | torch.Tensor) -> float:
        """A headline number for summary.json (a mean over seeds when given an (E,) tensor)."""
        if isinstance(value, torch.Tensor):
            value = value.detach().double().mean().item()
        self.metrics[name] = float(value)
        return float(value)

    def claim(self, id: str, statement: str, source: str, measured: float | str, threshold: str,
              holds: bool) -> Claim:
        c = Claim(id, statement, source, measured, threshold, bool(holds))
        self.claims.append(c)
        return c

    def figure(self, fig, name: str) -> Path:
        """Save a matplotlib figure as figures/<name>.png and .pdf, and close it."""
        import matplotlib.pyplot as plt

        png = self.dir / "figures" / f"{name}.png"
        fig.savefig(png, dpi=130, bbox_inches="tight")
        fig.savefig(png.with_suffix(".pdf"), bbox_inches="tight")
        plt.close(fig)
        rel = f"figures/{name}.png"
        self.figures.append(rel)
        return png

    def note(self, text: str) -> None:
        """A line printed with the results and kept in summary.json (e.g. which assumptions hold)."""
        self.notes.append(text)
        if not self.quiet:
            print(text, flush=True)

    def fail(self, message: str) -> None:
        self.status, self.message = "failed", message
