"""rfa-phase (beyond the paper): test error after early stopping (Thm 1's T) and after long training, over the
noise rate η and the ratio d/n — where interpolation is benign (d ≫ n: the error stays ≈ η) and where it harms
(n ≫ d: fitting the noise costs test accuracy), Fig 2's two regimes as a map.

Every (η, seed) pair of one d trains in ONE batched run (as rfa-theorem1), probed log-spaced in t (as rfa-fig2).

Decisions where the issue is silent [paper silent]:
* n fixed, d varied (so d/n moves with d); σ² = d^-1.2 and ω² = 0.01/(md) (App. E) at every d, exact η-fraction
  flips per cluster, µ = e1, e2 (rfa-fig2's choices);
* "tracks η": the early-stopped error against η + (1 − 2η)·e*, with e* the clean test error of f* =
  |<µ1,x>| − |<µ2,x>| on the same test points — the error η is reachable only up to the clusters' own overlap,
  which App. E's σ² = d^-1.2 makes visible at small d (Thm 1 assumes (A2) σ√d ≤ 1/C, which small d breaks);
* the theory's boundary drawn on the maps: d = n (Fig 2's d ≫ n vs n ≫ d) and (A1) d = C·log²(n/δ) at C =
  check_C (Thm 1's dimension condition); benign = the largest d/n of the grid, harmful = the smallest.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch
from pydantic import Field, model_validator

from ...config import check
from ...nn.twolayer import sign_prediction
from ...runs.claims import AtLeast, AtMost, Claim, Control
from ...runs.registry import experiment
from ...utils import Replicas
from .common import RFABase, SegmentedRun, gd_logspaced, make_dist, make_net
from .data import f_star
from .phase_plots import phase_figure


class RFAPhaseConfig(RFABase):
    etas: list[float] = Field([0.0, 0.1, 0.2, 0.3], min_length=1, description="noise rates η")
    n: int = Field(40, ge=1, description="training points n (fixed; d/n moves with d)")
    ds: list[int] = Field([4, 13, 40, 130, 400], min_length=2, description="input dimensions d")
    steps_long: int = Field(20_000, ge=0, description="GD iterations of the long run (interpolation); 0 = the "
                            "untrained net, a control (then 'at T' reads the init too)")
    per_decade: int = Field(4, ge=1, description="probes per decade of iterations (log-spaced)")

    @model_validator(mode="after")
    def _valid(self):
        for e in self.etas:
            check(0 <= e < 0.5, "etas", f"must hold noise rates in [0, 1/2); got {e!r}", "e.g. 0.15")
        check(self.steps_long == 0 or self.steps_long >= self.T(), "steps_long",
              f"must be 0 (untrained) or >= Thm 1's T = {self.T()}")
        return self


WHY_SE = "3 s.e. = 3√(η(1 − η)/(n_test·seeds)) at the largest η of the grid, the test estimate's sampling error"
CLAIMS = [
    Claim("rfa.phase_early_tracks_eta", "early-stopped (t = T) test error minus η + (1 − 2η)·e*, worst cell of the "
          "(η, d/n) grid", "Thm 1 (2)", AtMost(hi=1, of="3 s.e."),
          why="Thm 1 (2): test error ≤ η + C√(log(1/δ)/n), C unspecified; its limit is the noise rate over f*'s "
              "own error e*; " + WHY_SE),
    Claim("rfa.phase_benign", "d ≫ n (largest d/n): error after long training minus η + (1 − 2η)·e*, worst η",
          "Fig 2 (high-dim)", AtMost(hi=1, of="3 s.e."), why="Fig 2: 'stays at 85 %' after interpolating; " + WHY_SE),
    Claim("rfa.phase_harmful", "n ≫ d (smallest d/n): error after long training minus at T, mean over η > 0",
          "Fig 2 (low-dim)", AtLeast(lo=1, of="3√2 s.e."),
          why="Fig 2: test accuracy falls once the noise is fitted; a rise larger than the sampling error of a "
              "difference of two test errors, 3√2 s.e."),
]


def _run_d(cfg: RFAPhaseConfig, seeds, d: int, dtype, device):
    """(η, seed) replicas at one d: test error per probed step, and f*'s clean error on the same test points."""
    reps = Replicas.grid(cfg.etas, seeds, label=lambda e: f"d={d}.eta={e:g}.")
    assert reps.values is not None  # grid() sets them
    dist = make_dist(cfg, reps, reps.values, dtype, device, d=d)
    tr, te = dist.sample(cfg.n, reps, "train"), dist.sample(cfg.n_test, reps, "test")
    net = make_net(cfg, reps, dtype, device, d=d)

    def probe(step):
        with torch.no_grad():
            return {"test_err": (sign_prediction(net(te.x)) != te.y).to(dtype).mean(-1),
                    "train_acc": (sign_prediction(net(tr.x)) == tr.y).to(dtype).mean(-1)}

    if cfg.steps_long == 0:  # the untrained net (a control): one probe at the init
        rows = [(s, 0, lab + name, float(v[i])) for name, v in probe(0).items()
                for i, (s, lab) in enumerate(zip(reps, reps.labels))]
        res = SegmentedRun("complete", "", pd.DataFrame(rows, columns=["seed", "step", "metric", "value"]))
    else:
        res = gd_logspaced(net, tr, cfg.steps_long, cfg.alpha, reps, probe, cfg.per_decade, desc=f"d={d} GD",
                           threads=cfg.threads)
    with torch.no_grad():
        e_star = (sign_prediction(f_star(te.x, dist.mu)) != te.y_clean).to(torch.float64).mean(-1)
    return reps, res, e_star


@experiment(
    "rfa-phase", paper="feature-amplification", reference="Thm 1, Fig 2 (beyond the paper: phase diagram)",
    summary="test error at T and after long training over η and d/n: benign (d ≫ n) vs harmful (n ≫ d)",
    config=RFAPhaseConfig, claims=CLAIMS,
    # not random labels: f*'s clean error e* is then 1/2 too, so η + (1 − 2η)e* = 1/2 and the claims would hold
    controls=[Control("untrained", {"steps_long": 0}, "the network at its random init: test error ≈ 1/2 at every "
                      "η, far from η + (1 − 2η)·e*", claims=("rfa.phase_early_tracks_eta", "rfa.phase_benign")),
              Control("early-stopped", {"steps_long": 3}, "the long run stopped at Thm 1's T = 3: nothing is "
                      "overfitted, so the error cannot rise", claims=("rfa.phase_harmful",))],
    presets={"quick": {"seeds": 2, "n": 40, "ds": [4, 13, 40, 130, 400], "m": 100, "steps_long": 20_000,
                       "n_test": 2000, "noise": "exact", "means": "axis"},
             "paper": {"seeds": 3, "n": 100, "ds": [10, 30, 100, 300, 1000, 3000], "m": 400,
                       "etas": [0.0, 0.05, 0.1, 0.15, 0.2, 0.3], "steps_long": 100_000, "n_test": 6000,
                       "noise": "exact", "means": "axis"}},
    tiny={"seeds": 1, "ds": [4, 40], "n": 20, "m": 20, "steps_long": 30, "n_test": 100, "etas": [0.0, 0.2]})
def rfa_phase(ctx) -> None:
    cfg: RFAPhaseConfig = ctx.cfg
    seeds, T, etas = ctx.seeds, cfg.T(), list(cfg.etas)
    early, late, star, fits = (np.zeros((len(etas), len(cfg.ds))) for _ in range(4))
    for j, d in enumerate(cfg.ds):
        reps, res, e_star = _run_d(cfg, seeds, d, ctx.dtype, ctx.device)
        frame = ctx.trained(res).frame()
        last = int(frame.step.max())
        for i, e in enumerate(etas):
            pre = f"d={d}.eta={e:g}."
            f = frame[frame.metric.str.startswith(pre)]
            err, acc = f[f.metric == pre + "test_err"], f[f.metric == pre + "train_acc"]
            early[i, j] = err[err.step == err.step[err.step >= min(T, last)].min()]["value"].mean()
            late[i, j] = err[err.step == last]["value"].mean()
            fits[i, j] = acc[acc.step == last]["value"].mean()
            star[i, j] = float(e_star[[k for k, v in enumerate(reps.values) if v == e]].mean())
            for name, v in (("test_err@T", early[i, j]), ("test_err@end", late[i, j]), ("train_acc@end",
                            fits[i, j]), ("fstar_clean_err", star[i, j])):
                ctx.metric(pre + name, v)
    target = np.array(etas)[:, None] + (1 - 2 * np.array(etas))[:, None] * star  # η + (1 − 2η)·e*
    eta_max = max(etas)
    se = math.sqrt(max(eta_max * (1 - eta_max), 1e-12) / (cfg.n_test * len(seeds)))
    if not ctx.is_control:
        ctx.figure(phase_figure(cfg, early, late, fits, target), "phase_test_error")
    ctx.claim("rfa.phase_early_tracks_eta", float((early - target).max()), scale=3 * se)
    ctx.claim("rfa.phase_benign", float((late - target)[:, -1].max()), scale=3 * se)
    pos = [i for i, e in enumerate(etas) if e > 0]
    rise = float((late - early)[pos, 0].mean()) if pos else float("nan")
    ctx.claim("rfa.phase_harmful", rise, scale=3 * math.sqrt(2) * se)
