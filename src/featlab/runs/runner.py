"""``featlab.run``: config layering, run-id, skip/force/resume, and the run record."""

from __future__ import annotations

import platform
import sys
import time
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from ..config import build_config, load_yaml
from ..errors import ConfigError, TrainingDiverged
from .context import RunContext
from .store import RunRecord, RunWriter
from .registry import get_experiment


def versions() -> dict[str, str]:
    import numpy
    import torch

    from .. import __version__

    return {"featlab": __version__, "python": platform.python_version(), "torch": torch.__version__,
            "numpy": numpy.__version__, "pandas": pd.__version__}


def resolve_config(experiment_id: str, preset: str = "quick", config_file: str | Path | None = None,
                   overrides: Mapping[str, Any] | None = None, control: bool | str = False):
    """The effective config: preset < YAML < key=value, then a control's overrides when asked (``control=True``:
    the first declared control, or its name)."""
    exp = get_experiment(experiment_id)
    layers = [exp.preset(preset)]
    if config_file is not None:
        layers.append(load_yaml(config_file))
    layers.append(dict(overrides or {}))
    if control:
        layers.append(exp.control(None if control is True else control).overrides)  # last: cannot be undone
    return exp, build_config(exp.config, exp.id, *layers)


def run(experiment_id: str, preset: str = "quick", *, out: str | Path = "runs", config_file: str | Path | None = None,
        force: bool = False, quiet: bool = False, control: bool | str = False, **overrides: Any) -> RunRecord:
    """Run an experiment (or return its existing complete run) and return the run record.

    ``control=True`` (or a control's name) runs a control setting (see ``@experiment(controls=...)``), where the
    claims it targets should fail; only those are judged, and the record says so under ``summary["control"]``.

    >>> res = featlab.run("fa-synthetic", preset="quick", seeds=2)
    >>> res.summary["metrics"]["binary.cos_in_class_mean"], res.metrics.head(), res.figures
    """
    exp, cfg = resolve_config(experiment_id, preset, config_file, overrides, control)
    run_id = cfg.digest(exp.id)
    writer = RunWriter(out, exp.id, run_id)
    if not force and (done := writer.existing()) is not None:
        done.skipped = True
        return done
    stage = writer.open()
    try:
        writer.write_config(cfg.to_yaml())
        ctl = exp.control(None if control is True else control) if control else None
        ctx = RunContext(exp.id, cfg, stage, quiet=quiet, declared=exp.claims,
                         judged=set(ctl.targets(exp.claims)) if ctl else None)
        t0 = time.perf_counter()
        try:
            exp.fn(ctx)
        except TrainingDiverged as e:  # a scientific outcome: recorded as a failed run, not a crash
            ctx.fail(str(e))
        elapsed = time.perf_counter() - t0
        frame = pd.concat(ctx.frames, ignore_index=True) if ctx.frames else pd.DataFrame(
            columns=["seed", "step", "metric", "value"])
        writer.write_metrics(frame)
        summary = {
            "experiment": exp.id,
            "run_id": run_id,
            "preset": preset,
            "status": ctx.status,
            "message": ctx.message,
            "config": cfg.to_dict(),
            "metrics": ctx.metrics,
            "claims": [c.to_dict() for c in ctx.claims],
            "control": ctl.to_dict(exp.claims) if ctl else None,
            "figures": ctx.figures,
            "notes": ctx.notes,
            "versions": versions(),
            "command": " ".join(sys.argv) if sys.argv and sys.argv[0].endswith("featlab") else None,
            "elapsed_s": round(elapsed, 3),
        }
        return writer.publish(summary)
    except BaseException:
        writer.abandon()
        raise
