"""fa-phase (beyond the paper): where Thms 4.5/4.7's predictions hold over a (k, d) grid — the binary net's
in-class cosine vs 1/√(k/2), its critical radius vs √(d/k), the k-class net's vs √(d/2) — with log-log fits of
the radii's exponents.

Each (k, d) cell trains fa-synthetic's two nets on all seeds at once (papers/feature_averaging/common.py) and
attacks them with the worst-case ensemble (attacks.py); only the grid and the judging are new here.

Decisions where the issue is silent [paper silent]:
* n, η, T, α, σ and the init are fa-synthetic's at every cell (n = 1000 at every d and k); the binary width is
  m = k/2 (Assumption 4.3's m = Θ(k), Remark A.5's m ∈ [max|J±|, k]; ``width='fixed'`` keeps fa-synthetic's m);
* the claims are judged on the cells that meet the premises a CPU grid can meet (:func:`regime`: Assumption
  A.4's σ_w² ≤ ηk⁻⁵ and Remark A.5's width, read with constant 1); no cell of any preset meets d = Ω(k¹⁰),
  n = Ω(k⁷), η = O(d⁻²) or ηT = Ω(1), which the experiment's assumptions declare;
* radii: per net a grid relative to its prediction (binary √(d/k)·[0, 2], k-class √(d/2)·[0, 1.6], 17 radii
  each), so every cell resolves its transition equally well;
* a critical radius counts only where the net classifies (clean accuracy ≥ ``min_clean``, 0.9): an untrained
  net's "radius" is an artefact of the grid (it flips at the first radius, which scales like the prediction);
  a cell below it gets NaN, and a fit through NaN fails;
* exponent fits: least squares of log r_crit (mean over seeds) on log(d/k) (binary; judged against 0.5 ± 20 %,
  the issue's 20 %) and on log d and log k jointly (k-class; judged on the worst deviation from (0.5, 0), ≤ 0.1);
  their 95 % intervals are percentile bootstraps over the seeds (resampled jointly over the cells); the pooled
  slope on log d alone (with its t-interval) is still reported;
* the cosine claim is a 'for all' over the judged cells and the seeds;
* Thm 4.6 as a trend (fa.phase_thm46_falls, issue 45): the proof's bound U on the sup-gap to C·f_FA over
  sup|C·f_FA| (measures.thm46_distance's bound, no search: binary.thm46_bound_relative per cell), its log-log slope
  on d per k and seed, the largest over the ks (the k where it falls least), judged < 0 by its t interval over the
  seeds (the 5-net rule: quick's 2 seeds are inconclusive by rule). Measured at quick with seeds=5: slope −0.128,
  interval [−0.145, −0.112], held; the decoupled-init rival's gap is flat (3.41, 5.46, 8.12 at k = 4, 8, 16 at
  every d): slope 0, interval [−1e-7, 4e-7], inconclusive on the strict "< 0", so not a failure: the claim stays
  unsettled there. Its theory-tier run (`featlab run fa-phase --preset theory seeds=5`, then the same with
  `--control-name decoupled-init`) has not been run here.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import torch
from numpy.typing import ArrayLike
from pydantic import Field, model_validator

from ...config import Need, check
from ...nn.twolayer import binary_readout, sign_prediction
from ...probes.certify import robust_interval
from ...probes.robustness import worst_case
from ...runs.claims import Assumption, AtMost, Claim, Within
from ...runs.registry import experiment
from ...runs.uncertainty import Bracket
from ...train.loop import TrainResult
from ...utils import generator, torch_threads
from . import assumptions, attacks, gram, measures
from .common import FASyntheticConfig, fit_both, make_data
from .phase_plots import phase_figure
from .phase_rivals import DECOUPLED, LARGE_INIT, SHUFFLED, UNTRAINED

# Student t 97.5 % quantiles for 1..30 degrees of freedom (the last also used above 30: a slightly wide interval)
T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)

CLAIMS = [
    Claim("fa.phase_cos_everywhere", "binary net's in-class mean cosine within 20 % of 1/√(k/2) in every judged "
          "cell: worst |measured/predicted − 1| over the cells and seeds", "Thm 4.5 (2)", AtMost(hi=0.2),
          why="w ≈ λΣ_{J_s}μ_j/d gives cos(μ_j, w) = 1/√(k/2); 20 % is the issue's mark of a failed prediction",
          exact="a 'for all' over every judged cell and every seed of the run"),
    Claim("fa.phase_binary_exponent", "binary critical radius ∝ (d/k)^0.5: fitted log-log slope over the judged "
          "cells", "Thm 4.5 (3)", Within(lo=0.4, hi=0.6),
          why="the exact f_FA flips at √(d/k); exponent 0.5 ± 20 % [issue: 'exponent 0.5 in d/k']"),
    Claim("fa.phase_kclass_exponent", "k-class critical radius ∝ d^0.5·k^0: worst deviation of the fitted exponents "
          "(log r on log d and log k jointly, over the judged cells) from (0.5, 0)", "Thm 4.7 (3)", AtMost(hi=0.1),
          why="the cheapest flip reaches a midpoint of two centres at √(d/2), whatever k; 0.1 is 20 % of the 0.5 "
              "of each exponent (the issue's 20 %), and of the 0.5 that separates its k-exponent 0 from the binary "
              "net's −0.5. Jointly, because a slope in d alone is 0.5 for √(d/k) too (the binary net's scaling)"),
    Claim("fa.phase_thm46_falls", "Thm 4.6 as a trend: the binary net's relative uniform gap to C·f_FA on the sphere "
          "(the proof's upper bound U over sup|C·f_FA|, binary.thm46_bound_relative) falls as d grows at fixed k: "
          "per seed, the log-log slope of the gap on d at the k where it falls least; mean over seeds", "Thm 4.6",
          AtMost(hi=0, strict=True),
          why="Thm 4.6 states the gap is o(1) in d with no constant (fa.thm46 is reported, no verdict); what it "
              "does imply at finite size is the direction: the relative gap decreases with d at fixed k, a "
              "log-log slope < 0, its t interval over the seeds (each seed one unit: its nets at every d share "
              "nothing with another seed's), under the 5-net rule. Pre-registered with issue 45 before any run"),
]


class FAPhaseConfig(FASyntheticConfig):
    ks: list[int] = Field([4, 8, 16, 32], min_length=1, description="numbers of clusters k")
    ds: list[int] = Field([1024, 2048, 4096, 8192, 16384], min_length=1, description="input dimensions d")
    n_radii: int = Field(17, ge=3, description="radii per net, on its own grid relative to its prediction")
    min_clean: float = Field(0.9, gt=0, le=1, description="a cell's critical radius counts only when the net's "
                             "clean accuracy reaches this [our choice; see the module docstring]")
    width: Literal["half-k", "fixed"] = Field("half-k", description="binary width per cell: m = k/2 (Assumption "
                                              "4.3's m = Θ(k) with Remark A.5's m ∈ [max|J±|, k]) or ``m`` fixed")
    scaling: Literal["fixed", "theory"] = Field(
        "fixed", description="'fixed': fa-synthetic's η, T, σ_w, σ_b in every cell; 'theory': per cell the premises "
        "read with constant 1 — η = d⁻² (Assumption 4.3, run as the flow: needs simulation=gram, integrator=flow), "
        "σ_w² = σ_b² = ηk⁻⁵/10 (Assumption A.4, a tenth of the bound), ηT = k^horizon_power — and only cells with "
        "d ≥ k¹⁰ run and are judged [our choice: the theorems' regime where a CPU reaches it]")
    horizon_power: float = Field(8.0, ge=0, description="scaling='theory': flow time ηT = k^this (Thm 4.7's "
                                 "T = Ω(k⁸/η) with constant 1; it also meets Thm 4.5's ηT = Ω(1))")

    @model_validator(mode="after")
    def _theory_needs_flow(self):
        if self.scaling == "theory":
            check(self.simulation == "gram" and self.integrator == "flow", "scaling", "'theory' needs "
                  "simulation=gram and integrator=flow (η = d⁻² at d up to 10¹³)", "set both, or scaling=fixed")
        return self


    def estimate(self) -> list[Need]:
        """Every cell that runs, one after another: their work adds up, their memory does not (the largest)."""
        cells = [_cell(self, k, d) for k in self.ks for d in self.ds
                 if d >= k and not (self.scaling == "theory" and d < k**10)]
        needs = [n for c in cells for n in c.estimate()]
        if not needs:
            return []
        return [Need(f"the largest of {len(cells)} cells' data", ("seeds", "n", "ds"),
                     bytes=max(n.bytes for n in needs)),
                Need(f"{len(cells)} cells one after another", ("ks", "ds", "T"), flops=sum(n.flops for n in needs),
                     steps=sum(n.steps for n in needs))]


EXTRA = ("ks", "ds", "n_radii", "min_clean", "width", "scaling", "horizon_power")


def _cell(cfg: FAPhaseConfig, k: int, d: int) -> FASyntheticConfig:
    base = cfg.model_dump(exclude=set(EXTRA))
    base.update(k=k, d=d, positive=None, long_T=0, m=max(1, k // 2) if cfg.width == "half-k" else cfg.m)
    if cfg.scaling == "theory":
        # the flow is GD's η → 0 limit, so Assumption 4.3's η = O(d⁻²) holds at any d; the recorded η is only the
        # step axis' unit (T = 2⁶⁰ steps of it reach ηT = k^p: d⁻²·T would not fit an int64 past d ≈ 10⁹)
        sigma = math.sqrt(float(d) ** -2 * k**-5 / 10)  # Assumption A.4 at η = d⁻²: σ_w² = σ_b² ≤ ηk⁻⁵
        base.update(eta=k**cfg.horizon_power / 2**60, T=2**60, sigma_w=sigma, sigma_b=sigma)
    return FASyntheticConfig(**base)


def regime(cfg: FAPhaseConfig, k: int, d: int) -> dict[str, bool]:
    """The premises of Thms 4.5/4.7 a cell meets, read with constant 1: those a CPU grid can meet. Under
    scaling='fixed', d = Ω(k¹⁰), η = O(d⁻²) and ηT = Ω(1) are met by no cell; under 'theory' every cell meets η,
    the init and the times, and the dimension where d ≥ k¹⁰. n = Ω(k⁷) is met by no cell of any preset."""
    sub = _cell(cfg, k, d)
    half = len(sub.positive_set())
    eta = float(d) ** -2 if cfg.scaling == "theory" else sub.eta  # theory: the flow, read at η = d⁻²
    out = {"init": max(sub.sigma_w, sub.sigma_b) ** 2 <= eta * k ** -5,  # Assumption A.4
           "width": max(half, k - half) <= sub.m <= k}  # Remark A.5
    if cfg.scaling == "theory":
        out["dimension"] = d >= k**10  # Assumption 4.3
    return out


def _critical(cfg: FAPhaseConfig, seeds, dist, te, net, positive, radii: list[float], tag: str) -> torch.Tensor:
    """(E, 2) critical radius, [certified, attacked]: where robust accuracy falls below 50 % on the certified curve
    (the binary net's exact distances, the k-class net's certified bound) and on the attacked one (fa-synthetic's
    interval, attacks.distance_bounds)."""
    tgt = attacks.target(net, te.x, cfg.softplus_temperature, positive)
    cert = attacks.certified_radius(net, tgt.score, te.x, te.y, kclass=positive is not None)
    pgd = dict(steps=cfg.pgd_steps, step_size_factor=cfg.pgd_step_factor, random_start_=cfg.pgd_random_start,
               restarts=cfg.pgd_restarts, certified=cert, ddn_steps=cfg.ddn_steps, ddn_restarts=cfg.ddn_restarts,
               generators=[generator(s, f"attack/{tag}") for s in seeds],
               ddn_generators=[generator(s, f"attack/{tag}/min_norm") for s in seeds])
    worst = worst_case(attacks.ensemble(tgt, dist, te, radii, cfg.attacks, pgd))
    b = attacks.distance_bounds(net, te, radii, worst, positive)
    return robust_interval(radii, b.lower, b.upper).critical.to(te.x.dtype)


def _measure(ctx, cfg: FAPhaseConfig, k: int, d: int) -> tuple[dict[str, torch.Tensor], tuple[TrainResult, ...]]:
    """One cell's per-seed (E,) measurements; the attacks only for the claims this run judges."""
    sub, seeds, dtype = _cell(cfg, k, d), ctx.seeds, ctx.dtype
    dist, tr, te = make_data(sub, seeds, dtype, ctx.device)
    bnet, bres, knet, kres = fit_both(sub, seeds, dist, tr)
    _, st = measures.binary_alignment(bnet, dist, sub.m)
    with torch.no_grad():
        b_acc = (sign_prediction(bnet(te.x)) == te.y).to(dtype).mean(-1)
        k_acc = (sign_prediction(binary_readout(knet(te.x), dist.positive)) == te.y).to(dtype).mean(-1)
    grid = np.linspace(0, 1, cfg.n_radii)
    nan = torch.full_like(b_acc, float("nan"))
    rb = rk = torch.stack([nan, nan], -1)
    if ctx.judges("fa.phase_binary_exponent"):
        rb = _critical(cfg, seeds, dist, te, bnet, None, [float(2 * t * (d / k) ** 0.5) for t in grid], "binary")
    if ctx.judges("fa.phase_kclass_exponent"):
        rk = _critical(cfg, seeds, dist, te, knet, dist.positive,
                       [float(1.6 * t * (d / 2) ** 0.5) for t in grid], "multiclass")
    out = {"binary.clean_acc": b_acc, "multiclass.clean_acc": k_acc,
           "binary.cos_in_class_mean": st["cos_in_class_mean"],
           "binary.critical_radius": rb[:, 1] if b_acc.min() >= cfg.min_clean else nan,
           "multiclass.critical_radius": rk[:, 1] if k_acc.min() >= cfg.min_clean else nan,
           "binary.critical_radius_certified": rb[:, 0] if b_acc.min() >= cfg.min_clean else nan,
           "multiclass.critical_radius_certified": rk[:, 0] if k_acc.min() >= cfg.min_clean else nan}
    t46 = measures.thm46_distance(bnet, dist.mu, dist.positive, sub.m, starts=tr.x[:, :1], steps=1, d=dist.d)
    out["binary.thm46_bound_relative"] = t46["bound"] / t46["scale"]  # Thm 4.6: U / sup|C f_FA|, no search needed
    out["binary.cos_ratio"] = out["binary.cos_in_class_mean"] * math.sqrt(k / 2)  # Thm 4.5 (2): 1/√(k/2)
    out["binary.radius_ratio"] = out["binary.critical_radius"] / math.sqrt(d / k)  # Thm 4.5 (3)
    out["multiclass.radius_ratio"] = out["multiclass.critical_radius"] / math.sqrt(d / 2)  # Thm 4.7 (3)
    return out, (bres, kres)


def loglog_fit(x: ArrayLike, y: ArrayLike) -> tuple[float, float, float, float]:
    """Slope, intercept and the slope's 95 % t-interval of log y on log x; NaN when any y is not a positive
    finite number or fewer than 3 points (no interval)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 3 or not np.all(np.isfinite(y) & (y > 0)) or np.ptp(np.log(x)) == 0:
        return (float("nan"),) * 4
    lx, ly = np.log(x), np.log(y)
    slope, icpt = np.polyfit(lx, ly, 1)
    resid = ly - (slope * lx + icpt)
    se = math.sqrt(resid @ resid / (len(x) - 2) / ((lx - lx.mean()) @ (lx - lx.mean())))
    h = T975[min(len(x) - 2, len(T975)) - 1] * se
    return float(slope), float(icpt), float(slope - h), float(slope + h)


def thm46_slopes(keys: list[tuple[int, int]], rel: dict[tuple[int, int], ArrayLike]) -> np.ndarray:
    """Per seed, the slope of log(relative Thm 4.6 gap) on log d at each k with two d's or more, and the largest of
    them (the k where the gap falls least): (E,); NaN where no k has two d's or a gap is not positive and finite.
    ``rel``: cell → (E,) per-seed relative gap."""
    by_k: dict[int, list[int]] = {}
    for k, d in keys:
        by_k.setdefault(k, []).append(d)
    E = len(np.atleast_1d(next(iter(rel.values())))) if rel else 0
    worst = np.full(E, -np.inf)
    usable = [(k, ds) for k, ds in by_k.items() if len(set(ds)) >= 2]
    if not usable:
        return np.full(E, np.nan)
    for k, ds in usable:
        y = np.stack([np.asarray(rel[k, d], float).reshape(E) for d in ds])  # (cells, E)
        ok = np.all(np.isfinite(y) & (y > 0), axis=0)
        ly = np.log(np.where(y > 0, y, 1.0))
        lx = np.log(np.asarray(ds, float))
        slope = ((lx - lx.mean()) @ (ly - ly.mean(0))) / ((lx - lx.mean()) @ (lx - lx.mean()))
        worst = np.maximum(worst, np.where(ok, slope, np.nan))
    return worst


def joint_fit(k: ArrayLike, d: ArrayLike, r: ArrayLike) -> tuple[float, float]:
    """Exponents (a, b) of the least-squares fit log r = a·log d + b·log k + c; NaN when any r is not a positive
    finite number or the cells do not vary in both d and k (fewer than 4 cells: no residual)."""
    k, d, r = (np.asarray(v, float) for v in (k, d, r))
    if len(r) < 4 or not np.all(np.isfinite(r) & (r > 0)) or np.ptp(np.log(k)) == 0 or np.ptp(np.log(d)) == 0:
        return math.nan, math.nan
    X = np.stack([np.log(d), np.log(k), np.ones_like(r)], 1)
    (a, b, _), *_ = np.linalg.lstsq(X, np.log(r), rcond=None)
    return float(a), float(b)


def _slope(x: list[float]):
    """The statistic of fa.phase_binary_exponent over per-seed radii, one array per cell: the log-log slope of the
    cells' mean radius on x."""
    return lambda *cells: loglog_fit(x, [float(np.mean(c)) for c in cells])[0]


def _kclass_dev(ks: list[int], ds: list[int]):
    """The statistic of fa.phase_kclass_exponent: max(|a − 0.5|, |b|) of the joint fit of the cells' mean radius."""
    def stat(*cells) -> float:
        a, b = joint_fit(ks, ds, [float(np.mean(c)) for c in cells])
        return max(abs(a - 0.5), abs(b))
    return stat


_GRID = {"Assumption A.4 (init)": Assumption(
    "Assumption A.4 (init)", "σ_w² = σ_b² ≤ ηk⁻⁵, per cell", {"quick": True, "full-grid": False},
    why="σ_w² = 1e-10 against ηk⁻⁵ = 9.5e-10 at k = 16 (quick's largest k); the full-grid preset's k = 32 cells "
        "break it (3.1e-11) and are left out of the claims"),
    "Assumption 4.3 (m), Remark A.5": Assumption(
    "Assumption 4.3 (m), Remark A.5", "m = Θ(k), m ∈ [max(|J+|, |J−|), k], per cell",
    {"quick": True, "full-grid": True},
    why="m = k/2 in every cell (width='half-k'); a fixed m = 5 would break it at k = 4 and k ≥ 16")}
_WHY = {"Assumption 3.3": "|J+| = ⌊k/2⌋, |J−| = ⌈k/2⌉ (c = 1 for even k)",
        "Assumption 4.3 (d)": "d ≤ 16 384 against k¹⁰ ≥ 4¹⁰ ≈ 10⁶",
        "Assumption 4.3 (n)": "n = 1000 against k⁷ ≥ 4⁷ ≈ 1.6·10⁴",
        "Assumption 4.3 (η)": "η = 1e-3 against d⁻² ≤ 10⁻⁶",
        "Thm 4.5 (time)": "ηT = 0.1 in every cell; no cell meets it, nor d = Ω(k¹⁰), n = Ω(k⁷), η = O(d⁻²): the "
                          "claims are judged on the cells that meet the premises a grid can meet (regime()), outside "
                          "the theorems' asymptotic regime",
        "Thm 4.7 (time)": "ηT = 0.1 against k⁸ ≥ 4⁸ ≈ 6.6·10⁴"}
# the theory preset (scaling='theory'): what each premise is there, and whether it is met
_THEORY = {"Assumption 3.2": (True, "centres √d·e_j exactly (gram.py)"),
           "Assumption 3.3": (True, "|J+| = |J−| = k/2"),
           "Assumption 4.3 (d)": (True, "only the cells with d ≥ k¹⁰ run (d from 2²⁰ to 2⁴⁴; d is a scale in the "
                                        "Gram simulation)"),
           "Assumption 4.3 (n)": (False, "n = 1000 against k⁷ ≥ 16 384: the flow of n = k⁷ points takes ~25 min a "
                                         "cell on this CPU"),
           "Assumption 4.3 (m), Remark A.5": (True, "m = k/2"),
           "Assumption 4.3 (η)": (True, "η = d⁻² per cell, run as GD's η → 0 limit (the gradient flow)"),
           "Assumption A.4 (init)": (True, "σ_w² = σ_b² = ηk⁻⁵/10 per cell"),
           "Thm 4.5 (time)": (True, "ηT = k⁸ ≥ 1"),
           "Thm 4.7 (time)": (True, "ηT = k⁸ (horizon_power = 8)")}


def _with_theory(a: Assumption) -> Assumption:
    met, why = _THEORY[a.ref]
    return Assumption(a.ref, a.text, {**a.met, "theory": met}, why=f"{a.why}; theory: {why}")


ASSUMPTIONS = [_with_theory(_GRID.get(a.ref) or Assumption(a.ref, a.text, a.met, why=_WHY.get(a.ref, a.why)))
               for a in assumptions.synthetic(("quick", "full-grid"))]

# the theorems' regime where this CPU reaches it: d ≥ k¹⁰ up to 2⁴⁴ ≈ 1.8·10¹³ (d/k over 7 decades), η = d⁻², the
# init of Assumption A.4, ηT = k⁸ (every premise but n = Ω(k⁷))
THEORY = {"seeds": 2, "ks": [4, 8, 16], "ds": [2**20, 2**26, 2**30, 2**34, 2**40, 2**44], "n_test": 200,
          "n_radii": 13, "pgd_steps": 20, "convergence_check": False, "thm46_starts": 1, "scaling": "theory",
          "simulation": "gram", "integrator": "flow", "dtype": "float64"}

@experiment(
    "fa-phase", paper="feature-averaging", reference="Thms 4.5/4.7 (beyond the paper: phase diagram)",
    summary="over a (k, d) grid: binary cosine vs 1/√(k/2), critical radii vs √(d/k) and √(d/2), fitted exponents",
    config=FAPhaseConfig, controls=[UNTRAINED, LARGE_INIT, DECOUPLED, SHUFFLED], assumptions=ASSUMPTIONS,
    presets={"quick": {"seeds": 2, "ks": [4, 8, 16], "ds": [1024, 2048, 4096], "n_test": 200, "n_radii": 13,
                       "pgd_steps": 20, "convergence_check": False, "ddn_steps": 100, "ddn_restarts": 0},
             "full-grid": {"seeds": 3, "ks": [4, 8, 16, 32], "ds": [1024, 2048, 4096, 8192, 16384],
                           "n_test": 500, "convergence_check": False},
             "theory": THEORY},
    tiny={"seeds": 1, "ks": [2, 4], "ds": [64, 128], "n": 100, "n_test": 40, "T": 20, "n_radii": 4, "pgd_steps": 2,
          "attacks": ["pgd", "avgdir", "midpoint"]},
    claims=CLAIMS)
def fa_phase(ctx) -> None:
    cfg: FAPhaseConfig = ctx.cfg
    per: dict[tuple[int, int], dict[str, torch.Tensor]] = {}
    for k in cfg.ks:
        for d in cfg.ds:
            if d < k or (cfg.scaling == "theory" and d < k**10):  # theory: only the cells of Assumption 4.3's d
                continue
            m = max(1, k // 2) if cfg.width == "half-k" else cfg.m
            dim = min(d, gram.size(_cell(cfg, k, d))[1]) if cfg.simulation == "gram" else d  # coordinates per vector
            with torch_threads(1 if len(ctx.seeds) * cfg.n * (2 * m + k) * dim < 2e8 else 0):  # small: 1 thread
                per[k, d], results = _measure(ctx, cfg, k, d)
            for res in results:
                ctx.trained(res)
            for name, v in per[k, d].items():
                ctx.metric(f"k={k}.d={d}.{name}", v)
    cells = {c: {name: float(v.double().mean()) for name, v in vals.items()} for c, vals in per.items()}
    for net in ("binary", "multiclass"):
        ctx.metric(f"{net}.clean_acc_min", min(c[f"{net}.clean_acc"] for c in cells.values()))
    # judged cells: those meeting the premises a grid can meet (under a control, every cell: it removes one)
    keys = [c for c in sorted(cells) if ctx.is_control or all(regime(cfg, *c).values())]
    ctx.metric("cells_judged", len(keys))
    ctx.note(f"judged cells (Assumption A.4's init and Remark A.5's width met): {len(keys)} of {len(cells)}"
             + "".join(f"; k={k} d={d} left out ({', '.join(n for n, ok in regime(cfg, k, d).items() if not ok)})"
                       for k, d in sorted(cells) if (k, d) not in keys))
    ks, ds = [k for k, _ in keys], [d for _, d in keys]
    fits = {"binary": loglog_fit([d / k for k, d in keys], [cells[c]["binary.critical_radius"] for c in keys]),
            "multiclass": loglog_fit(ds, [cells[c]["multiclass.critical_radius"] for c in keys])}
    joint = joint_fit(ks, ds, [cells[c]["multiclass.critical_radius"] for c in keys])
    for net, (slope, _icpt, lo, hi) in fits.items():
        ctx.metric(f"{net}.radius_exponent", slope)
        ctx.metric(f"{net}.radius_exponent_ci_lo", lo)
        ctx.metric(f"{net}.radius_exponent_ci_hi", hi)
        ctx.note(f"{net}: fitted exponent {slope:.3f} (95 % interval [{lo:.3f}, {hi:.3f}]; theory 0.5)")
    for net, xs in (("binary", [d / k for k, d in keys]), ("multiclass", ds)):  # the interval's lower side
        low = loglog_fit(xs, [cells[c][f"{net}.critical_radius_certified"] for c in keys])[0]
        ctx.metric(f"{net}.radius_exponent_certified", low)
        ctx.note(f"{net}: fitted exponent on the certified radii {low:.3f}")
    ctx.metric("multiclass.radius_exponent_d", joint[0])
    ctx.metric("multiclass.radius_exponent_k", joint[1])
    ctx.note(f"multiclass, joint fit: exponent of d {joint[0]:.3f}, of k {joint[1]:.3f} (theory 0.5, 0)")
    if not ctx.is_control:
        ctx.figure(phase_figure(cfg, cells, fits), "phase_heatmaps")
    ratios = [per[c]["binary.cos_ratio"] for c in keys]
    ctx.claim("fa.phase_cos_everywhere", max((float((r - 1).abs().max()) for r in ratios), default=math.nan))
    arr = lambda name: tuple(ctx.numpy(per[c][name], float) for c in keys)  # per seed, one array per cell
    # seeds resampled jointly over the cells; judged on both sides of each radius' interval (certified, attacked)
    rb, rbc = arr("binary.critical_radius"), arr("binary.critical_radius_certified")
    ctx.claim("fa.phase_binary_exponent", fits["binary"][0], samples=Bracket(rbc, rb) if rb else None,
              statistic=_slope([d / k for k, d in keys]), unit="seeds, certified to attacked")
    rk, rkc = arr("multiclass.critical_radius"), arr("multiclass.critical_radius_certified")
    ctx.claim("fa.phase_kclass_exponent", _kclass_dev(ks, ds)(*rk), samples=Bracket(rkc, rk) if rk else None,
              statistic=_kclass_dev(ks, ds), unit="seeds, certified to attacked")
    t46 = thm46_slopes(keys, {c: ctx.numpy(per[c]["binary.thm46_bound_relative"], float) for c in keys})
    ctx.metric("binary.thm46_slope", float(np.mean(t46)) if len(t46) else math.nan)
    ctx.claim("fa.phase_thm46_falls", float(np.mean(t46)) if len(t46) else math.nan,
              samples=t46 if len(t46) and np.all(np.isfinite(t46)) else None, unit="seeds")
