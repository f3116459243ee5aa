"""The one trainer: full-batch GD (the theory), mini-batch SGD / Adam (the practice), on E replicas at once.

``loss_fn(step)`` returns the (E,) per-replica losses of the step's batch; ``probe(step)`` returns a dict of
(E,) measurements. The inner loop never synchronises with the host except at the probe cadence: divergence is
tracked on the device as the first step each replica's loss became non-finite.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import pandas as pd
import torch

from .. import meter
from ..placement import to_host
from ..utils import progress_bar


class EnsembleOptimizer:
    """GD / SGD with momentum / Adam whose learning rate may differ per replica (an (E,) tensor).

    Written out (20 lines) rather than wrapping ``torch.optim`` so that a replica axis of learning rates, the
    usual sweep of the papers' ablations, trains in one batched computation.
    """

    def __init__(self, params: Iterable[torch.Tensor], name: str = "gd", lr: float | torch.Tensor = 1e-3,
                 momentum: float = 0.0, weight_decay: float = 0.0, betas=(0.9, 0.999), eps: float = 1e-8):
        self.params = [p for p in params if p is not None and p.requires_grad]
        self.name, self.momentum, self.wd, self.betas, self.eps = name, momentum, weight_decay, betas, eps
        self.lr = lr
        self.state: list[dict[str, torch.Tensor]] = [dict() for _ in self.params]
        self.t = 0

    def _lr(self, p: torch.Tensor):
        if isinstance(self.lr, torch.Tensor):
            return self.lr.to(p).reshape(-1, *([1] * (p.dim() - 1)))
        return self.lr

    @torch.no_grad()
    def step(self) -> None:
        self.t += 1
        for p, st in zip(self.params, self.state):
            g = p.grad
            if g is None:
                continue
            if self.wd:
                g = g.add(p, alpha=self.wd)
            lr = self._lr(p)
            if self.name == "adam":
                b1, b2 = self.betas
                m = st.setdefault("m", torch.zeros_like(p)).mul_(b1).add_(g, alpha=1 - b1)
                v = st.setdefault("v", torch.zeros_like(p)).mul_(b2).addcmul_(g, g, value=1 - b2)
                mhat = m / (1 - b1**self.t)
                vhat = v / (1 - b2**self.t)
                p.sub_(lr * mhat / (vhat.sqrt() + self.eps))
            else:
                if self.momentum:
                    buf = st.setdefault("buf", torch.zeros_like(p)).mul_(self.momentum).add_(g)
                    g = buf
                p.sub_(lr * g)

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None


@dataclass
class TrainResult:
    status: str = "complete"  # or "failed"
    steps_done: int = 0
    message: str = ""
    records: list[tuple[int, int, str, float]] = field(default_factory=list)  # (seed, step, metric, value)
    elapsed_s: float = 0.0

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.records, columns=["seed", "step", "metric", "value"])


def record(records: list, seeds: Sequence[int], step: int, values: dict[str, torch.Tensor], prefix: str = "") -> None:
    """Append (seed, step, metric, value) rows for every (E,) tensor in ``values`` (one host sync).

    With :class:`~featlab.utils.Replicas` seeds, replica i's rows are named ``labels[i] + prefix + metric``.
    """
    if not values:
        return
    labels = getattr(seeds, "labels", None) or ("",) * len(seeds)
    names = list(values)
    stacked = to_host(torch.stack([values[k].detach().reshape(-1).to(torch.float64) for k in names])).tolist()
    for name, row in zip(names, stacked):
        for s, lab, v in zip(seeds, labels, row):
            records.append((s, step, lab + prefix + name, float(v)))


def train(params: Iterable[torch.Tensor], loss_fn: Callable[[int], torch.Tensor], steps: int, *,
          seeds: Sequence[int], optimizer: str = "gd", lr: float | torch.Tensor = 1e-3, momentum: float = 0.0,
          weight_decay: float = 0.0, probe: Callable[[int], dict[str, torch.Tensor]] | None = None,
          probe_every: int = 10, prefix: str = "", desc: str = "train") -> TrainResult:
    """Run ``steps`` optimisation steps; probe at step 0, every ``probe_every`` steps and at the end.

    Stops early, with ``status='failed'``, at the first probe after a replica's loss became non-finite.
    Metrics are recorded as ``prefix + name`` (e.g. ``binary.loss``).
    """
    params = [p for p in params if p is not None]
    opt = EnsembleOptimizer(params, optimizer, lr, momentum, weight_decay)
    res = TrainResult()
    E = len(seeds)
    device = params[0].device
    first_bad = torch.full((E,), -1, dtype=torch.long, device=device)
    t0 = time.perf_counter()
    bar = progress_bar(steps, desc)

    def measure(step: int, loss: torch.Tensor | None) -> bool:
        vals = {} if probe is None else dict(probe(step))
        if loss is not None:
            vals = {"loss": loss.detach(), **vals}
        record(res.records, seeds, step, vals, prefix)
        if loss is not None and math.isfinite(m := float(loss.detach().mean())):
            bar.set_postfix(loss=f"{m:.4g}")
        bad = to_host(first_bad)
        if (bad >= 0).any():
            i = int((bad >= 0).nonzero()[0])
            res.status = "failed"
            res.message = f"{prefix}loss of seed {seeds[i]} became non-finite at step {int(bad[i])}"
            return False
        return True

    loss = None
    try:
        for step in meter.steps(steps):  # timed in a few steps when an estimate is measured (featlab.meter)
            opt.zero_grad()
            loss = loss_fn(step)
            first_bad = torch.where(~torch.isfinite(loss.detach()) & (first_bad < 0), step, first_bad)
            if step % probe_every == 0:
                with meter.every((steps - 1) // probe_every + 1):
                    ok = measure(step, loss)
                if not ok:
                    break
            loss.sum().backward()
            opt.step()
            res.steps_done = step + 1
            bar.update(1)
        else:
            with torch.no_grad():
                loss = loss_fn(steps)
            first_bad = torch.where(~torch.isfinite(loss) & (first_bad < 0), steps, first_bad)
            measure(steps, loss)
    finally:
        bar.close()
    res.elapsed_s = time.perf_counter() - t0
    return res
