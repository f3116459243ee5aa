"""mm-phase (beyond the paper): where Thms 4.6/4.7's separation shows — the share of classes that learn both
features (Def 4.5) under ERM, Midpoint Mixup and uniform Mixup over d, the feature-noise level δ3 and k.

Every (d, δ3, seed) of one k trains in ONE batched run per method, in the exact reduced simulation of
mm-multiview: d enters only through the init scale 1/√d (DESIGN §7), so a replica's init is its seed's N(0, I)
draw times 1/√d_i, and δ3 only through its data. Replicas with the same seed share their data draws and init
direction across d (a paired comparison along d).

Decisions where the issue is silent [paper silent]:
* δ4 = δ3 (a point mass of feature noise, as mm-multiview's presets); ``delta3_theory`` adds the theory's
  δ3 = k^−1.5 (Assumption 4.3) for every k;
* P = 2k and m = ⌈k/2⌉ at every k (mm-multiview's choice at k = 10), N, η and the horizon fixed across the grid:
  Midpoint's rescue time grows ∝ d (docs/midpoint-mixup.md), so at large d the grid shows where a fixed budget
  stalls, not the limit;
* the "region the docs name" for the advantage claim: the smallest δ3 of the grid and d in [region_d_lo,
  region_d_hi] (docs: d = 3·10^5, δ3 = 0.002 is where ERM 0.2 vs Midpoint 1.0 at k = 10).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from pydantic import Field

from ...runs.claims import AtLeast, Claim, Control
from ...runs.registry import experiment
from ...train.loop import train
from ...utils import Replicas, torch_threads
from .data import MultiViewDistribution, compress_patches
from .learned_features import feature_test, learned_counts, train_accuracy
from .multiview import MultiViewConfig, make_loss, patch_cnn
from .phase_plots import phase_figure


class MMPhaseConfig(MultiViewConfig):
    ks: list[int] = Field([5, 10, 20], min_length=1, description="numbers of classes k (P = 2k, m = ⌈k/2⌉ each) "
                          "[paper silent]")
    ds: list[float] = Field([1e4, 1e5, 1e6, 1e7, 1e8, 1e9], min_length=2,
                            description="ambient dimensions d (reduced simulation: cost independent of d)")
    delta3s: list[float] = Field([0.002], min_length=1, description="feature-noise levels δ3 (δ4 = δ3) "
                                 "[0.002: mm-multiview's, data linearly learnable]")
    delta3_theory: bool = Field(True, description="also run δ3 = k^-1.5 (Assumption 4.3) at every k")
    region_d_lo: float = Field(1e5, gt=0, description="advantage claim: smallest d of the region [docs: 3·10^5]")
    region_d_hi: float = Field(1e6, gt=0, description="advantage claim: largest d of the region")
    n_per_class: int = Field(10, ge=1, description="training points per class: N = n_per_class·k at every k "
                             "(replaces N) [paper silent; mm-multiview: N = 100 at k = 10]")


CLAIMS = [
    Claim("mm.phase_erm_falls_with_d", "ERM's share of classes with both features falls with d: share at the "
          "smallest d minus at the largest, mean over (k, δ3)", "Thm 4.6 (2) (d = Ω(k^20))", AtLeast(lo=0.2),
          why="Thm 4.6 makes the share o(1) as d grows; docs/midpoint-mixup.md measured 0.6 at d = 3·10^4 and "
              "0.2 at 3·10^5 (k = 10): a drop of at least 0.2 over the grid's decades [paper silent on size]"),
    Claim("mm.phase_midpoint_advantage", "Midpoint Mixup's share minus ERM's, worst cell of the named region "
          "(smallest δ3, d in [region_d_lo, region_d_hi], every k)", "Thm 4.6 vs 4.7", AtLeast(lo=0.4),
          why="the issue's bar (Midpoint ≥ ERM + 0.4 over the region the docs name)"),
    Claim("mm.phase_midpoint_theory_noise", "Midpoint Mixup learns both features for ≥ 0.9 of classes at the "
          "theory's δ3 = k^-1.5 (worst k, d in the region)", "Thm 4.7 (2), Assumption 4.3", AtLeast(lo=0.9),
          why="Thm 4.7 is proved at δ3 = Θ(k^-1.5); same bar as mm.midpoint_all_both (1/k of slack)"),
]


def _sub(cfg: MMPhaseConfig, k: int) -> MultiViewConfig:
    """The mm-multiview setting of one k [paper silent: P = 2k, m = ⌈k/2⌉]."""
    base = cfg.model_dump(exclude={"ks", "ds", "delta3s", "delta3_theory", "region_d_lo", "region_d_hi",
                                   "n_per_class"})
    base.update(k=k, P=2 * k, m=max(1, math.ceil(k / 2)), d=max(int(cfg.ds[0]), 2 * k), N=cfg.n_per_class * k)
    return MultiViewConfig(**base)


def _levels(cfg: MMPhaseConfig, k: int) -> list[float]:
    return sorted(set(cfg.delta3s) | ({round(k ** -1.5, 6)} if cfg.delta3_theory else set()))


def _batched(sub: MultiViewConfig, cfg: MMPhaseConfig, k: int, seeds, dtype, device):
    """Replicas (δ3, d, seed) of one k; training data per δ3 group, concatenated; a balanced test set."""
    grid = [(dl, d, s) for dl in _levels(cfg, k) for d in cfg.ds for s in seeds]
    reps = Replicas([s for *_, s in grid], [f"k={k}.delta3={dl:g}.d={d:.0e}." for dl, d, _ in grid],
                    [(dl, d) for dl, d, _ in grid])
    trs, tes = [], []
    for dl in _levels(cfg, k):
        group = [s for g_dl, _, s in grid if g_dl == dl]
        dist = MultiViewDistribution.create(
            group, k, sub.P, C_P=sub.C_P, delta1=sub.delta1, delta2=sub.delta2, delta3=dl, delta4=dl, Q=sub.Q,
            positions=sub.positions, bijection=sub.bijection, beta_law=sub.beta_law, noise_classes=sub.noise_classes,
            gamma_law=sub.gamma_law)
        trs.append(dist.sample(sub.N, group, "train", device=device))
        tes.append(dist.sample_balanced(sub.n_test_per_class, group, "test", device=device))
    cat = lambda bs: type(bs[0])(torch.cat([b.x for b in bs]).to(dtype), torch.cat([b.y for b in bs]),
                                 {key: torch.cat([b.info[key] for b in bs]) for key in bs[0].info})
    return reps, dist, cat(trs), cat(tes)


def _fit(method: str, sub: MultiViewConfig, reps: Replicas, dtype, dist, tr, te):
    """One method on every replica of one k; the init is N(0, I/d_i) per replica (Def 4.2)."""
    xc, mult = compress_patches(tr.x)  # exact: noise patches coincide whatever δ3
    net = patch_cnn(sub.model_copy(update={"d": 1}), reps, dtype, 2 * sub.k, xc.device)  # N(0, 1) draws …
    assert reps.values is not None  # (k, d) per replica, from Replicas.grid
    scale = torch.tensor([d ** -0.5 for _, d in reps.values], dtype=dtype, device=net.W.device)
    with torch.no_grad():  # … scaled per replica to N(0, 1/d_i)
        net.W.mul_(scale[:, None, None])
    net.W.requires_grad_(True)

    def probe(step):
        learned, _ = feature_test(net, dist, te, sub.learned_threshold)
        return {"frac_classes_both": learned_counts(learned)[:, 2].to(dtype) / sub.k}

    with torch_threads(1):  # small steps: one thread beats two on a shared machine (RFA's threads_for rule)
        res = train([net.W], make_loss(method, sub, net, xc, tr.y, mult, reps), sub.steps, seeds=reps,
                    lr=sub.eta, probe=probe, probe_every=sub.probe_every, prefix=f"{method}.",
                    desc=f"k={sub.k} {method}")
    with torch.no_grad():
        learned, _ = feature_test(net, dist, te, sub.learned_threshold)
        both = learned_counts(learned)[:, 2].double() / sub.k
        acc = train_accuracy(net, xc, tr.y, mult).double()
    return res, both, acc


def _cells(values: list, vec: torch.Tensor, levels, ds) -> np.ndarray:
    """(E,) per replica → (len(levels), len(ds)) mean over seeds."""
    out = np.zeros((len(levels), len(ds)))
    cnt = np.zeros_like(out)
    for (dl, d), v in zip(values, vec.tolist()):
        i, j = levels.index(dl), ds.index(d)
        out[i, j] += v
        cnt[i, j] += 1
    return out / np.maximum(cnt, 1)


@experiment(
    "mm-phase", paper="midpoint-mixup", reference="Thms 4.6/4.7 (beyond the paper: phase diagram)",
    summary="share of classes learning both features under ERM / Midpoint / Mixup over d (1e4..1e9), δ3 and k",
    config=MMPhaseConfig, claims=CLAIMS,
    controls=[Control("untrained", {"steps": 1, "eta": 1e-9}, "the nets at their N(0, I/d) init (one step of "
                      "η = 1e-9): below ρ ReLU~ is homogeneous, so the init's Def 4.5 verdicts are the same at every "
                      "d (same seed, same direction) — no share falls with d and no method leads another")],
    presets={"quick": {"seeds": 1, "ks": [10], "ds": [1e4, 3e4, 1e5], "n_per_class": 6, "steps": 1500,
                       "methods": ["erm", "midpoint"], "probe_every": 250, "dtype": "float32",
                       "n_test_per_class": 50, "region_d_lo": 1e5, "region_d_hi": 1e5},
             "paper": {"seeds": 2, "ks": [5, 10, 20], "ds": [1e4, 1e5, 1e6, 1e7, 1e8, 1e9], "n_per_class": 10,
                       "steps": 6000, "probe_every": 500, "dtype": "float32", "region_d_lo": 1e5,
                       "region_d_hi": 3e5}},
    tiny={"ks": [3], "ds": [1e3, 1e4], "n_per_class": 4, "steps": 3, "n_test_per_class": 5, "region_d_lo": 1e3,
          "region_d_hi": 1e4})
def mm_phase(ctx) -> None:
    cfg: MMPhaseConfig = ctx.cfg
    ds, share = list(cfg.ds), {}
    for k in cfg.ks:
        sub = _sub(cfg, k)
        reps, dist, tr, te = _batched(sub, cfg, k, ctx.seeds, ctx.dtype, ctx.device)
        levels = _levels(cfg, k)
        for method in cfg.methods:
            res, both, acc = _fit(method, sub, reps, ctx.dtype, dist, tr, te)
            ctx.trained(res)
            share[k, method] = _cells(reps.values, both, levels, ds)
            for i, dl in enumerate(levels):
                for j, d in enumerate(ds):
                    ctx.metric(f"k={k}.delta3={dl:g}.d={d:.0e}.{method}.frac_classes_both", share[k, method][i, j])
            ctx.metric(f"k={k}.{method}.train_acc_min", acc.min())
    if not ctx.is_control:
        ctx.figure(phase_figure(cfg, share, ds, {k: _levels(cfg, k) for k in cfg.ks}), "phase_shares")
    _judge(ctx, cfg, share, ds)


def _judge(ctx, cfg: MMPhaseConfig, share: dict, ds: list) -> None:
    region = [j for j, d in enumerate(ds) if cfg.region_d_lo <= d <= cfg.region_d_hi]
    if "erm" in cfg.methods:
        drops = [share[k, "erm"][:, 0] - share[k, "erm"][:, -1] for k in cfg.ks]
        ctx.claim("mm.phase_erm_falls_with_d", float(np.concatenate(drops).mean()))
    if {"erm", "midpoint"} <= set(cfg.methods) and region:
        adv = min(float((share[k, "midpoint"][0, region] - share[k, "erm"][0, region]).min()) for k in cfg.ks)
        ctx.metric("region.midpoint_minus_erm_min", adv)
        ctx.claim("mm.phase_midpoint_advantage", adv)
    if "midpoint" in cfg.methods and cfg.delta3_theory and region:
        th = min(float(share[k, "midpoint"][_levels(cfg, k).index(round(k ** -1.5, 6)), region].min())
                 for k in cfg.ks)
        ctx.claim("mm.phase_midpoint_theory_noise", th)
