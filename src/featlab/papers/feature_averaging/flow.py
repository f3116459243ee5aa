"""Gradient flow dθ/dt = −∇L(θ), the η → 0 limit of full-batch GD (Assumption 4.3's η = O(d⁻²)), integrated with an
adaptive solver (scipy's solve_ivp) so that the theorems' horizons ηT = Ω(1) (Thm 4.5) and Ω(k⁸) (Thm 4.7) are
reached in a few hundred solver steps instead of ηT/η GD steps.

GD with step η after T steps is the flow at time t = ηT up to O(η) (tested: GD at small η follows the flow at
matched time). The record keeps GD's step axis: a probe at flow time t is written at step round(t/η), so every
reader of ``ηt`` (Lemma B.23's band, §5's λ ≈ log(ηt)) reads the flow's time.

Decisions where the paper is silent: probes at log-spaced times (at least ``points`` of them and 5 a decade, from
the time the initial velocity takes to move the weights by 1 % of their RMS, to ``t_end``; probes inside GD's first
step are solver checkpoints, not records), since the dynamics slow down like 1/t; solver RK45 (Dormand–Prince; the
ReLU kinks make the right-hand side only piecewise smooth, which an explicit adaptive solver handles by rejecting
steps), relative tolerance ``rtol`` and absolute tolerance ``atol_scale`` × the weights' RMS at the last probe time
(relative in norm while the weights grow by orders of magnitude). Accuracy: the kinks of the early phase
(activations of tiny weights flipping) are where the error is made; at d = 512, n = 30 the output after ηT = 0.02 is
within 8 % of GD's η → 0 limit at atol_scale = 1e-3 (350 evaluations), 0.8 % at 1e-4 (1150), 0.05 % at 1e-5 (6300)
and 0.02 % at 1e-6 (38 000).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np
import torch
from scipy.integrate import solve_ivp

from ...placement import to_numpy
from ...train.loop import TrainResult, record
from ...utils import progress_bar


def probe_times(t_end: float, points: int, first: float = 1e-8) -> list[float]:
    """0, then log-spaced times up to ``t_end``: at least ``points`` and at least 5 a decade, from ``first`` (at
    most t_end·10⁻⁸). The first time is absolute, not relative to a long horizon: one segment spanning the early
    phase (tiny weights, kinks, growth by orders of magnitude) with the atol of its start would take the solver
    millions of steps (see :func:`first_time`)."""
    if t_end <= 0:
        return [0.0]
    lo = min(t_end * 1e-8, first)
    return [0.0] + [float(t) for t in np.geomspace(lo, t_end, max(points, 2, int(np.ceil(5 * np.log10(t_end / lo)))))]


def first_time(y: np.ndarray, dy: np.ndarray) -> float:
    """The time in which the initial velocity changes the weights by 1 % of their RMS: the first probe, so that
    the solver's tolerance (relative to the weights' RMS at each probe) follows their growth from the start."""
    ry, rdy = float(np.sqrt(np.mean(y * y))), float(np.sqrt(np.mean(dy * dy)))
    return 0.01 * ry / rdy if ry > 0 and rdy > 0 else 1e-8


def flow(params: Sequence[torch.Tensor], loss_fn: Callable[[], torch.Tensor], t_end: float, *, seeds, eta: float,
         probe: Callable[[int], dict[str, torch.Tensor]] | None = None, points: int = 40, prefix: str = "",
         desc: str = "flow", method: str = "RK45", rtol: float = 1e-6, atol_scale: float = 1e-4,
         first: float | None = None) -> TrainResult:
    """Integrate the gradient flow of Σ_replicas loss_fn() (replicas are independent, so each follows its own
    flow) from the params' current values to time ``t_end``, probing at :func:`probe_times`. Records (seed, step
    = round(t/η), metric, value) rows like :func:`~featlab.train.loop.train`; ``res.steps_done`` is the last step
    reached and ``res.message`` the solver's work (right-hand-side evaluations). ``first``: the first probe time
    (default :func:`first_time`)."""
    params = [p for p in params if p is not None]
    shapes = [p.shape for p in params]
    sizes = [p.numel() for p in params]
    res = TrainResult()
    t0 = time.perf_counter()
    nfev, passed = [0], [0]

    def load(y: np.ndarray) -> None:
        with torch.no_grad():
            for p, chunk, shape in zip(params, np.split(y, np.cumsum(sizes)[:-1]), shapes):
                p.copy_(torch.from_numpy(chunk).reshape(shape))

    def rhs(t, y):
        nfev[0] += 1
        while passed[0] < len(times) and times[passed[0]] <= t:  # progress: probe times the solver has passed
            passed[0] += 1
            bar.update(1)
            bar.set_postfix(t=f"{t:.3g}", nfev=nfev[0])
        load(y)
        for p in params:
            p.grad = None
        loss = loss_fn()
        grads = torch.autograd.grad(loss.sum(), params)
        return -to_numpy(torch.cat([g.reshape(-1) for g in grads]), float)

    y = to_numpy(torch.cat([p.detach().reshape(-1) for p in params]), float)
    times: list[float] = []  # rhs reads them for the progress bar: none yet for the first evaluation
    times = probe_times(t_end, points, first_time(y, rhs(0.0, y)) if first is None else first)
    bar = progress_bar(len(times), desc)

    # the record's step axis is int64: past 2⁶² steps of η (η = d⁻² at d ≳ 10⁹) steps count a coarser unit
    unit = eta if t_end / eta < 2.0**62 else t_end / 2.0**62

    last = [-1]

    def measure(t: float) -> None:
        step = round(t / unit)
        if step <= last[0]:  # a probe time inside the first step: a checkpoint of the solver, not recorded
            return
        last[0] = step
        with torch.no_grad():
            vals = {"loss": loss_fn().detach(), **(probe(step) if probe is not None else {})}
        record(res.records, seeds, step, vals, prefix)

    measure(0.0)
    for a, b in zip(times[:-1], times[1:]):
        # error per step ≤ rtol·|y_i| + atol with atol = atol_scale·RMS(y) at the segment's start: relative in
        # norm as the weights grow by orders of magnitude (a fixed atol is either far too coarse late or far too
        # fine early, where every activation change of a ReLU is a kink the solver would resolve in vain)
        atol = atol_scale * float(np.sqrt(np.mean(y * y))) or 1e-30
        sol = solve_ivp(rhs, (a, b), y, method=method, rtol=rtol, atol=atol)
        if not sol.success or not np.all(np.isfinite(sol.y[:, -1])):
            res.status, res.message = "failed", f"flow solver stopped at t={a:.4g}: {sol.message}"
            break
        y = sol.y[:, -1]
        load(y)
        measure(b)
        res.steps_done = round(b / unit)
    bar.close()
    load(y)
    if res.status != "failed":
        res.message = (f"gradient flow to ηT = {t_end:.4g} ({method}, rtol={rtol:g}): {nfev[0]} gradient evaluations"
                       + (f"; record steps in units of {unit:.3g}, not η" if unit != eta else ""))
    res.elapsed_s = time.perf_counter() - t0
    return res

