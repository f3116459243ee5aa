"""rfa-phase's measurements: one batched run per d (every (η, seed) replica at once, as rfa-theorem1), with each
probe's per-point errors on the test set and on a separate validation set, reduced to the claims' samples.

Per cell (η, d) and seed: the test points' errors at Thm 1's T, at the step where the validation error is lowest
(Fig 2's peak, chosen on points never judged on) and at the end of the long run, and the errors of f* =
|<µ1,x>| − |<µ2,x>| against the same observed labels (whose mean is η + (1 − 2η)·e*, e* f*'s clean error).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from ...nn.twolayer import sign_prediction
from ...placement import to_host, to_numpy
from ...utils import Replicas
from .common import SegmentedRun, fit_set, gd_logspaced, make_dist, make_net
from .data import f_star


def run_d(cfg, seeds, d: int, dtype, device) -> tuple[SegmentedRun, dict]:
    """Every (η, seed) replica at one d. Returns the run (metrics ``d=<d>.eta=<η>.<name>``) and per-cell records
    {η: {"T", "peak", "end", "fstar"}: (S, N) bool errors, "train_acc", "train_clean", "e_star": floats}."""
    reps = Replicas.grid(cfg.etas, seeds, label=lambda e: f"d={d}.eta={e:g}.")
    assert reps.values is not None  # grid() sets them
    dist = make_dist(cfg, reps, reps.values, dtype, device, d=d)
    tr, te = dist.sample(cfg.n, reps, "train"), dist.sample(cfg.n_test, reps, "test")
    va = dist.sample(cfg.n_test, reps, "val")  # chooses each replica's peak step; never judged on
    net = make_net(cfg, reps, dtype, device, d=d)
    wrong: dict[str, dict[int, torch.Tensor]] = {"test": {}, "val": {}}  # host copies, for the claims' samples

    def probe(step):
        with torch.no_grad():
            st = sign_prediction(net(tr.x))
            test_wrong = sign_prediction(net(te.x)) != te.y
            wrong["test"][step] = to_host(test_wrong)
            wrong["val"][step] = to_host(sign_prediction(net(va.x)) != va.y)
            clean = ~tr.noisy
            # on the run device: record() stacks the probe's values with the trainer's losses
            return {"test_err": test_wrong.to(dtype).mean(-1),
                    "train_acc": (st == tr.y).to(dtype).mean(-1),
                    "train_clean_correct": ((st == tr.y) & clean).sum(-1).to(dtype) / clean.sum(-1).clamp_min(1)}

    if cfg.steps_long == 0:  # the untrained net (a control): one probe at the init
        rows = [(s, 0, lab + name, float(v[i])) for name, v in to_host(probe(0)).items()
                for i, (s, lab) in enumerate(zip(reps, reps.labels))]
        res = SegmentedRun("complete", "", pd.DataFrame(rows, columns=["seed", "step", "metric", "value"]))
    else:
        res = gd_logspaced(net, fit_set(cfg, tr), cfg.steps_long, cfg.alpha, reps, probe, cfg.per_decade,
                           desc=f"d={d} GD",
                           threads=cfg.threads)
    with torch.no_grad():
        fs = sign_prediction(f_star(te.x, dist.mu))
        fstar_wrong, e_star = to_host(fs != te.y), to_host((fs != te.y_clean).to(torch.float64).mean(-1))
        final = sign_prediction(net(tr.x))
        train_acc = to_host((final == tr.y).to(torch.float64).mean(-1))
        clean = ~tr.noisy
        train_clean = to_host(((final == tr.y) & clean).sum(-1).double() / clean.sum(-1).clamp_min(1))
    steps = sorted(wrong["test"])
    t_T = next(s for s in steps if s >= min(cfg.T(), steps[-1]))
    val = torch.stack([wrong["val"][s].double().mean(-1) for s in steps])  # (steps, E)
    peak = [steps[int(k)] for k in val.argmin(0)]  # first step of the lowest validation error, per replica
    cells = {}
    for e in cfg.etas:
        idx = [k for k, v in enumerate(reps.values) if v == e]
        cells[e] = {"T": wrong["test"][t_T][idx], "end": wrong["test"][steps[-1]][idx],
                    "peak": torch.stack([wrong["test"][peak[k]][k] for k in idx]),
                    "fstar": fstar_wrong[idx], "e_star": float(e_star[idx].mean()),
                    "train_acc": float(train_acc[idx].mean()), "train_clean": float(train_clean[idx].mean()),
                    "peak_step": float(np.mean([peak[k] for k in idx]))}
    return res, cells


def pooled(cells: list[dict], a: str, b: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(errors a, errors b, cell index) over the cells' test points pooled over seeds: paired samples."""
    xs = [to_numpy(c[a].reshape(-1), float) for c in cells]
    ys = [to_numpy(c[b].reshape(-1), float) for c in cells]
    ids = [np.full(len(x), k, float) for k, x in enumerate(xs)]
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(ids)


def _cell_gaps(a: np.ndarray, b: np.ndarray, cell: np.ndarray) -> np.ndarray:
    """mean(a − b) within each cell present (arrays: pooled()'s, or the bootstrap's resamples of them)."""
    k = cell.astype(int)
    n = np.bincount(k)
    return np.bincount(k, weights=a - b)[n > 0] / n[n > 0]


def worst_cell_gap(a, b, cell) -> float:
    """max over cells of mean(a − b) within the cell (the worst cell's excess)."""
    return float(_cell_gaps(a, b, cell).max())


def mean_gap(a, b, cell) -> float:
    """mean over cells of mean(a − b) within the cell."""
    return float(_cell_gaps(a, b, cell).mean())
