"""Run records: ``OUT/<experiment>/<run-id>/`` with config.yaml, metrics.parquet, figures/, summary.json.

A run is built in a hidden sibling folder and moved into place only once its summary.json has been written,
so a finished run folder is always complete: a run killed half-way leaves only the hidden folder, which the
next attempt removes; ``--force`` replaces a complete run only after the new one is complete.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import RunRecordError

SUMMARY = "summary.json"
METRICS = "metrics.parquet"
CONFIG = "config.yaml"


def atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


@dataclass
class RunRecord:
    """A finished run, as read back from its folder."""

    dir: Path
    summary: dict[str, Any]
    skipped: bool = False  # True when an identical complete run was found and nothing was trained
    _metrics: pd.DataFrame | None = field(default=None, repr=False)

    @property
    def status(self) -> str:
        return self.summary.get("status", "unknown")

    @property
    def ok(self) -> bool:
        return self.status == "complete"

    @property
    def claims(self) -> list[dict[str, Any]]:
        return self.summary.get("claims", [])

    @property
    def figures(self) -> list[Path]:
        return [self.dir / p for p in self.summary.get("figures", [])]

    @property
    def config(self) -> dict[str, Any]:
        return self.summary.get("config", {})

    @property
    def metrics(self) -> pd.DataFrame:
        """The tidy metrics table: seed, step, metric, value."""
        if self._metrics is None:
            f = self.dir / METRICS
            self._metrics = pd.read_parquet(f) if f.exists() else pd.DataFrame(
                columns=["seed", "step", "metric", "value"])
        return self._metrics

    def metric(self, name: str) -> float:
        return self.summary["metrics"][name]


def load_run(run_dir: str | Path) -> RunRecord:
    run_dir = Path(run_dir)
    f = run_dir / SUMMARY
    if not f.is_file():
        raise RunRecordError(f"{str(run_dir)!r} holds no {SUMMARY}; pass the folder of a finished run "
                             f"(OUT/<experiment>/<run-id>)")
    try:
        summary = json.loads(f.read_text())
    except json.JSONDecodeError:
        raise RunRecordError(f"{str(f)!r} is not valid JSON; rerun the experiment with --force") from None
    return RunRecord(run_dir, summary)


class RunWriter:
    """Writes one run into a hidden staging folder, then publishes it."""

    def __init__(self, out: str | Path, experiment_id: str, run_id: str):
        self.final = Path(out) / experiment_id / run_id
        self.stage = self.final.parent / f".{run_id}.partial-{uuid.uuid4().hex[:6]}"

    def existing(self) -> RunRecord | None:
        """The complete run already at the final place, if any."""
        if (self.final / SUMMARY).is_file():
            try:
                rec = load_run(self.final)
            except RunRecordError:
                return None
            return rec if rec.ok else None
        return None

    def open(self) -> Path:
        parent = self.final.parent
        parent.mkdir(parents=True, exist_ok=True)
        for stale in parent.glob(f".{self.final.name}.partial-*"):  # debris of a killed run
            shutil.rmtree(stale, ignore_errors=True)
        (self.stage / "figures").mkdir(parents=True)
        return self.stage

    def write_config(self, yaml_text: str) -> None:
        atomic_write_text(self.stage / CONFIG, yaml_text)

    def write_metrics(self, frame: pd.DataFrame) -> None:
        frame = frame.astype({"seed": "int64", "step": "int64", "metric": "string", "value": "float64"})
        frame.to_parquet(self.stage / METRICS, index=False)

    def publish(self, summary: dict[str, Any]) -> RunRecord:
        atomic_write_text(self.stage / SUMMARY, json.dumps(summary, indent=2, default=_json_default))
        old = None
        if self.final.exists():  # --force, or an incomplete folder from an older layout: keep it until swapped
            old = self.final.with_name(f".{self.final.name}.old-{uuid.uuid4().hex[:6]}")
            os.replace(self.final, old)
        os.replace(self.stage, self.final)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return load_run(self.final)

    def abandon(self) -> None:
        shutil.rmtree(self.stage, ignore_errors=True)


def _json_default(o: Any) -> Any:
    if hasattr(o, "item"):
        return o.item()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(type(o).__name__)
