"""What an experiment function receives: its config, resolved device/dtype, and a place to put results.

An experiment calls ``ctx.metric``, ``ctx.claim``, ``ctx.figure`` and ``ctx.log``; the runner turns those into
the run record. A failed claim is a scientific result, not an error: it is recorded with ``holds=False``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import InitVar, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from .. import meter
from ..errors import TrainingDiverged
from ..placement import to_host, to_numpy, to_run
from ..text import safe_print, table
from ..utils import resolve_device, resolve_dtype, silence_stdout
from .claims import Claim, Verdict
from .uncertainty import Samples
from .units import UnitStore

BESIDE_PAPER = "Beside the paper"  # a note that puts the paper's numbers beside the run's


@dataclass
class RunContext:
    experiment_id: str
    cfg: Any
    dir: Path
    quiet: bool = False
    declared: list[Claim] = field(default_factory=list)  # the experiment's claims, judged by ctx.claim
    judged: set[str] | None = None  # under a sanity control: the claims it targets (the others are not recorded)
    control: str = ""  # the control's name under any control (a rival judges every claim: judged stays None)
    metrics: dict[str, float] = field(default_factory=dict)
    claims: list[Verdict] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    frames: list[pd.DataFrame] = field(default_factory=list)
    status: str = "complete"
    message: str = ""
    units: UnitStore = field(default_factory=lambda: UnitStore(None))  # the runner's keeps them (runs.units)
    device: torch.device = field(init=False)  # cfg.device resolved once: every tensor of the run goes there
    run_device: InitVar[torch.device | None] = None  # the runner passes the device its preflight resolved

    def __post_init__(self, run_device: torch.device | None) -> None:
        if run_device is None:  # a config's own resolution (AUTO_DEVICE); a plain namespace names its device
            run_device = self.cfg.run_device() if hasattr(self.cfg, "run_device") else resolve_device(self.cfg.device)
        self.device = run_device

    @property
    def seeds(self) -> list[int]:
        return self.cfg.seed_list()

    @property
    def dtype(self) -> torch.dtype:
        return resolve_dtype(self.cfg.dtype)

    @property
    def is_control(self) -> bool:
        """Whether this run is a control setting (a rival judges every claim; a sanity control only its targets)."""
        return bool(self.control) or self.judged is not None

    def judges(self, *claim_ids: str) -> bool:
        """Whether any of these claims is judged in this run: all are, except under a control that targets others
        (an experiment skips the measurements only they need)."""
        return self.judged is None or any(i in self.judged for i in claim_ids)

    # ---------------------------------------------------------------- placement (featlab.placement)
    def to_run(self, x: Any, dtype: torch.dtype | None = None) -> Any:
        """``x`` (tensors, possibly nested) on the run device: where host draws cross over, once."""
        return to_run(x, self.device, dtype)

    @staticmethod
    def to_host(x: Any) -> Any:
        """``x`` (tensors, possibly nested) detached on the host."""
        return to_host(x)

    @staticmethod
    def numpy(x: Any, dtype: Any = None) -> Any:
        """The one tensor → numpy conversion, for plots, tables, metrics and claims."""
        return to_numpy(x, dtype)

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

    def claim(self, claim_id: str, measured: float | str, *, scale: float | None = None,
              paper_value: float | None = None, samples: Samples | None = None,
              statistic: Callable[..., float] | None = None, unit: str = "seeds",
              converged: bool | None = None, per_seed: Sequence[float] | None = None) -> Verdict:
        """Judge the declared claim ``claim_id`` on a measured value (``scale``: the value of its threshold's unit).

        ``samples``: the per-unit values behind it (per seed, or per test point pooled over seeds; ``unit`` names
        them), a tuple of equal-length arrays for paired ones reduced by ``statistic`` (default: the mean); the
        verdict is then decided by their 95 % bootstrap interval. ``converged=False``: the search the value rests on
        did not converge (unverified). ``per_seed``: a claim about every seed, judged by the share of seeds whose
        value passes (``Claim.judge``). A claim judged without samples declares why it is exact (``Claim.exact``;
        the test suite checks it)."""
        spec = next((c for c in self.declared if c.id == claim_id), None)
        if spec is None:
            raise KeyError(f"{self.experiment_id} judges claim {claim_id!r} that it does not declare")
        v = spec.judge(measured, scale=scale, paper_value=paper_value, config=self.cfg.to_dict(), samples=samples,
                       statistic=statistic, unit=unit, converged=converged, per_seed=per_seed)
        if self.judges(claim_id):
            self.claims.append(v)
        return v

    def units_of(self, computes: dict[str, Callable[[], dict[str, Any]]]) -> dict[str, dict[str, Any]]:
        """The resumable pieces of a long run (an image table's method × seed), name → ``compute``: their results
        as each ``compute()`` returns them (numbers, strings, lists, numpy arrays), kept so that a run stopped by its
        budget, killed, or carried to another machine resumes without redoing them, and computed by several
        processes side by side with ``featlab run --workers`` (:mod:`featlab.runs.units`). A unit draws only from
        its own generators: its results never depend on which process or call computed it."""
        return self.units.map(computes)

    def trained(self, result) -> Any:
        """Log a training result's measurements and return it; a diverged run ends the experiment as failed.

        ``result``: anything with ``status``, ``message`` and ``frame()`` (the synthetic and image trainers' results).
        """
        self.log(result.frame())
        if result.status != "complete":
            raise TrainingDiverged(result.message)
        return result

    def figure(self, fig, name: str) -> Path:
        """Save a matplotlib Figure as figures/<name>.png and .pdf (no pyplot state involved); FEATLAB_PDF=0 skips
        the PDF (the test suite does: it halves the cost of drawing)."""
        png = self.dir / "figures" / f"{name}.png"

        def save() -> None:
            fig.savefig(png, dpi=130, bbox_inches="tight")
            if os.environ.get("FEATLAB_PDF", "1") != "0":
                fig.savefig(png.with_suffix(".pdf"), bbox_inches="tight")

        meter.figure(name, save)  # a timed run (featlab.meter) skips a figure whose cost it knows
        rel = f"figures/{name}.png"
        self.figures.append(rel)
        return png

    def note(self, text: str) -> None:
        """A line printed with the results and kept in summary.json (e.g. which assumptions hold)."""
        self.notes.append(text)
        if not self.quiet:
            try:
                safe_print(text)  # an ASCII-only stream gets ASCII spellings: a run never dies of a note
            except BrokenPipeError:  # stdout closed (`| head`): the run goes on, its notes are in summary.json
                silence_stdout()

    def beside_paper(self, title: str, header: list[str], rows: list[list[str]]) -> None:
        """A note holding the paper's numbers beside this run's (a column each), which the published results page
        gathers under "Beside the paper" (:data:`BESIDE_PAPER` starts it)."""
        self.note(f"{BESIDE_PAPER}: {title}\n" + table(rows, header))

    def fail(self, message: str) -> None:
        self.status, self.message = "failed", message
