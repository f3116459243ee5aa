"""Prop 4.4 (App. C.3): some Def 4.1 data are not linearly learnable — a statement about the data alone.

The model class of Prop 4.4 is h^y(x) = Σ_p <w_y, x^(p)>, so h depends on x only through z = Σ_p x^(p) (2k feature
coordinates: the data carry no Gaussian noise). The data are fitted by some h iff the linear program

    max t  s.t.  <w_{y_i} − w_s, z_i> >= t  for every point i and class s ≠ y_i,   −1 <= W <= 1,  t <= 1

has t* > 0 (the margins are homogeneous in W, so the box only fixes the scale). ``lp_margin`` returns t*.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ...placement import to_numpy
from .data import MultiViewDistribution


def lp_margin(z: np.ndarray, y: np.ndarray, k: int) -> float:
    """t* of the program above for the summed patches z (n, 2k) and labels y (n,): > 0 iff some h fits all."""
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    n, D = z.shape
    rows, cols, vals = [], [], []
    r = 0
    for i in range(n):
        for s in range(k):
            if s == y[i]:
                continue
            # −<w_{y_i}, z_i> + <w_s, z_i> + t <= 0
            rows += [r] * (2 * D + 1)
            cols += list(range(y[i] * D, y[i] * D + D)) + list(range(s * D, s * D + D)) + [k * D]
            vals += list(-z[i]) + list(z[i]) + [1.0]
            r += 1
    A = coo_matrix((vals, (rows, cols)), shape=(r, k * D + 1)).tocsr()
    c = np.zeros(k * D + 1)
    c[-1] = -1.0
    res = linprog(c, A_ub=A, b_ub=np.zeros(r), bounds=[(-1, 1)] * (k * D) + [(None, 1)], method="highs")
    if res.status != 0:  # pragma: no cover - the program is always feasible (W = 0, t = 0) and bounded
        raise RuntimeError(f"Prop 4.4 LP: {res.message}")
    return float(-res.fun)


def construction(k: int, P: int = 0) -> dict:
    """App. C.3's D: δ1 = δ2 − δ1 = 1 (β ≡ 1), δ3 = δ4 = k^-1.5, one noise class per point (Q = 1, uniform ≠ y),
    P = k² (Assumption 4.3: P = Θ(k²)), C_P = 1."""
    g = k ** -1.5
    return dict(k=k, P=P or k * k, C_P=1, delta1=1.0, delta2=2.0, delta3=g, delta4=g, Q=1)


def prop44_margins(k: int, n: int, seeds: list[int], P: int = 0) -> list[float]:
    """t* on n i.i.d. points of App. C.3's D (P patches; 0: k²), per seed (its own data stream 'prop44')."""
    params = construction(k, P)
    dist = MultiViewDistribution.create(seeds, params.pop("k"), params.pop("P"), **params)
    out = []
    for s in seeds:
        b = dist.sample(n, [s], "prop44")
        out.append(lp_margin(to_numpy(b.x[0].sum(-2)), to_numpy(b.y[0]), k))
    return out


def data_margin(x: torch.Tensor, y: torch.Tensor, k: int) -> list[float]:
    """t* of a run's own training data x (E, N, P, 2k), per replica: > 0 means linearly learnable."""
    z, y_np = to_numpy(x.sum(-2), float), to_numpy(y)  # the LP runs on the host (scipy)
    return [lp_margin(z[e], y_np[e], k) for e in range(z.shape[0])]


def noise_over_signal(P: int, C_P: int, delta3: float, delta2: float) -> float:
    """(P − 2C_P)·δ3 / (δ2/2): the summed feature noise of one noise class over the mean signal per feature; Prop 4.4
    needs it ≫ 1 ('Pδ3 ≫ δ2', §4.1)."""
    return (P - 2 * C_P) * delta3 / (delta2 / 2) if delta2 > 0 else math.inf
