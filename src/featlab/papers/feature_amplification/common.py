"""What the Random Feature Amplification experiments share: the config base, the data and net builders, GD.

Decisions where the paper is silent (each is a config field; defaults below):
* T = 1 + ⌊1/(4α)⌋ (the paper's T = 1 + 1/(4α) is not an integer in general; rounding down keeps t ≤ 1/(4α));
* μ1, μ2 a uniformly random orthonormal pair per seed (``means=axis`` for e1, e2);
* σ² = d^{-1.2} and ω² = 0.01/(md) (App. E) when σ, ω are not given;
* replicas with the same seed share x and init and differ only in their labels (one uniform per point decides
  the flips, so the noisy sets are nested in η); the test set uses the same noise model as the training set;
* ReLU'(0) = 1 (the core's convention; the paper allows any value in [0, 1]);
* the (A1)–(A7) check uses δ = ``delta`` and the smallest C ≥ ``check_C`` that (A7) allows (the paper's C is
  "large enough" and unspecified);
* Fig 1: a d-dimensional net drawn on the plane span{μ1, μ2} (x = uμ1 + vμ2), training points projected on it;
* Fig 2: n, d, horizons and seeds are not in the text; see the presets and docs/feature-amplification.md;
* ``labels``: §2's XOR labels; "linear" and "random" are the controls' null settings, not in the paper.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import pandas as pd
import torch
from pydantic import Field

from ...config import ExperimentConfig, Need
from ...data.base import Batch
from ...nn.twolayer import EnsembleTwoLayer, sign_prediction
from ...runs.claims import Assumption
from ...runs.resources import item, sequential, tensor, work
from ...train.loop import train
from ...train.objectives import logistic
from ...utils import torch_threads
from . import lemmas
from .data import XORClusterDistribution, rfa_readout


# ------------------------------------------------------------------------------------------ configs
class RFABase(ExperimentConfig):
    """Fields every rfa-* experiment reads: the net, the data law, GD's step size, the (A1)–(A7) check."""

    m: int = Field(400, ge=2, description="width m; a_j = ±1/√m half and half, a_m = 0 when m is odd (§2)")
    sigma: float | None = Field(None, gt=0, description="within-cluster std σ (Cov z = σ²I); None = App. E's "
                                "σ² = d^{-1.2}")
    omega: float | None = Field(None, gt=0, description="init std ω_init of W; None = App. E's ω² = 0.01/(md)")
    init: Literal["small", "ntk"] = Field(
        "small", description="init scale when omega is None: small = App. E's ω² = 0.01/(md) (the paper's, (A6)); "
        "ntk = ω = 1/√d, every neuron's pre-activation of order 1, the kernel (lazy) regime §1 contrasts with "
        "[a rival's setting, not in the paper]")
    train_labels: Literal["observed", "clean"] = Field(
        "observed", description="labels GD fits: the observed, noisy ones (§2); clean = the clean labels ỹ of the "
        "same points, a net trained without label noise, judged on the same observed training and test labels "
        "[a rival's setting, not in the paper]")
    alpha: float = Field(0.1, gt=0, description="GD step size α (App. E: 0.1)")
    noise: Literal["flip", "exact", "boundary", "cluster"] = Field(
        "flip", description="label noise: i.i.d. flips at rate η (§2 with η(x) ≡ η); exact η-fraction per "
        "cluster (App. E); boundary = x-dependent η(x) = 1{|f*(x)| < q_η}, flipping the points closest to f*'s "
        "boundary [the adversary is a choice]; cluster = every flip in cluster +µ1 at rate min(1, 4η), its "
        "majority label wrong for η > 1/8 [a control's setting, outside (A4)]")
    law: Literal["gaussian", "uniform", "laplace"] = Field(
        "gaussian", description="within-cluster law, i.i.d. coordinates scaled to covariance σ²I (log-concave)")
    means: Literal["random", "axis"] = Field("random", description="μ1, μ2: random orthonormal pair, or e1, e2")
    mean_cos: float = Field(0.0, ge=0, lt=1, description="<μ1, μ2>: 0 = §2's orthogonal means; c > 0 turns μ2 "
                            "towards μ1 (μ2 = cμ1 + √(1 − c²)μ2, norm 1) [a rival's setting, not in the paper]")
    labels: Literal["xor", "linear", "random"] = Field(
        "xor", description="clean labels of the clusters (+µ1, −µ1, +µ2, −µ2): xor = (+1, +1, −1, −1) (§2); "
        "linear = (+1, −1, +1, −1), separated by the homogeneous halfspace sgn<µ1 + µ2, x> (the null of §2's "
        "'linear classifiers are no better than chance'); random = a fair coin per point, independent of x (the null "
        "of every statement about learning) [linear, random: control settings, not in the paper]")
    n_test: int = Field(2000, ge=1, description="fresh test points per replica [App. E: 6000 validation points]")
    delta: float = Field(0.05, gt=0, lt=0.5, description="failure probability δ for the (A1)–(A7) check and "
                         "the 1 − 4δ success threshold")
    threads: int = Field(0, ge=0, description="torch threads while training; 0 = one thread when a GD step is "
                         "small (E·n·m·d < 2e8 multiply-adds: thread wake-ups cost more than they save), else "
                         "torch's default [engineering choice]")
    check_C: float = Field(10.0, gt=1, description="smallest C at which (A1)–(A7) are checked (the paper's C is "
                           "'large enough', unspecified); the check uses max(check_C, 1/(4α²))")

    def sigma_for(self, d: int) -> float:
        """σ at dimension d: the field, or App. E's σ² = d^{-1.2}."""
        return self.sigma if self.sigma is not None else d ** -0.6

    def omega_for(self, d: int) -> float:
        """ω at dimension d: the field, or App. E's ω² = 0.01/(md) (init = ntk: 1/√d)."""
        if self.omega is not None:
            return self.omega
        return 1 / math.sqrt(d) if self.init == "ntk" else math.sqrt(0.01 / (self.m * d))

    def T(self) -> int:
        return lemmas.stopping_time(self.alpha)

    def gd_needs(self, *, E: int, n: int, d: int, steps: int, fields: tuple[str, ...], step_field: str,
                 tag: str = "") -> list[Need]:
        """Full-batch GD of E replicas on n points in d dimensions (eq. (1)): the data and test points, W with its
        gradient and the (E, n, m) pre-activations; each step a few (E, n, d)·(d, m) products, probes included."""
        it, m, nt = item(self.dtype), self.m, self.n_test
        return [tensor(f"{tag}{E} runs × ({n} training + {nt} test points) × d={d}", fields + ("n_test",), E,
                       n + nt, d, itemsize=it, copies=2, host=True),
                tensor(f"{tag}{E} runs × m={m} neurons × (d={d} weights + {n + nt} pre-activations)", ("m", *fields),
                       E, m, d + n + nt, itemsize=it, copies=4),
                work(f"{tag}{steps} GD steps of {E} runs × n={n} × m={m} × d={d}", (step_field, *fields),
                     8.0 * E * n * m * d * steps, steps)]

    sequential = staticmethod(sequential)  # runs made one after another: the largest's memory, all the work


class RFAConfig(RFABase):
    """One training set of n points in d dimensions, trained for ``steps`` GD iterations (Thm 1's T by default)."""

    d: int = Field(200, ge=2, description="input dimension d")
    n: int = Field(1000, ge=1, description="training points n")
    steps: int | None = Field(None, ge=0, description="GD iterations; None = Thm 1's T = 1 + ⌊1/(4α)⌋ "
                              "[paper: T = 1 + 1/(4α), rounded down]; 0 = the untrained network (a control)")

    def steps_(self) -> int:
        return self.steps if self.steps is not None else self.T()

    def estimate(self) -> list[Need]:
        return self.gd_needs(E=self.seeds, n=self.n, d=self.d, steps=self.steps_(), fields=("seeds", "n", "d"),
                             step_field="steps")


# ------------------------------------------------------------------------------------------ building blocks
def _size(cfg: RFABase, name: str, given: int | None) -> int:
    """``given``, else the config's own field ``name`` (RFAConfig's d or n; the other configs pass it)."""
    return given or getattr(cfg, name)


def make_dist(cfg: RFABase, seeds, etas: list[float], dtype, device: torch.device,
              d: int | None = None) -> XORClusterDistribution:
    d = _size(cfg, "d", d)
    return XORClusterDistribution.create(seeds, d, cfg.sigma_for(d), etas, law=cfg.law, noise=cfg.noise,
                                         means=cfg.means, dtype=dtype, labels=cfg.labels,
                                         mean_cos=cfg.mean_cos, device=device)


def make_net(cfg: RFABase, seeds, dtype, device: torch.device, d: int | None = None) -> EnsembleTwoLayer:
    """eq. (1): f(x; W) = Σ_j a_j φ(<w_j, x>), a_j = ±1/√m fixed, W^{(0)} ~ N(0, ω²I), no bias."""
    d = _size(cfg, "d", d)
    return EnsembleTwoLayer.init(seeds, d, rfa_readout(cfg.m), sigma_w=cfg.omega_for(d), sigma_b=None,
                                 dtype=dtype, device=device, role="init")


def fit_set(cfg: RFABase, tr: Batch) -> Batch:
    """The batch GD fits: ``tr``, or (train_labels = clean) the same points with their clean labels ỹ (the rival
    trained without label noise); every measurement still reads ``tr``'s observed labels."""
    return tr if cfg.train_labels == "observed" else Batch(tr.x, tr.y_clean, tr.info)


def pattern_stats(score: torch.Tensor, b) -> dict[str, torch.Tensor]:
    """Thm 1 (1): share of clean points given their label, share of noisy points given their (flipped) label,
    and whether the pattern holds exactly (all clean right, all noisy wrong)."""
    pred = sign_prediction(score)
    right = pred == b.y
    clean, noisy = ~b.noisy, b.noisy
    fd = score.dtype
    c_ok = (right & clean).sum(-1).to(fd) / clean.sum(-1).clamp_min(1).to(fd)
    n_fit = (right & noisy).sum(-1).to(fd) / noisy.sum(-1).clamp_min(1).to(fd)
    exact = ((right | noisy).all(-1) & (~right | clean).all(-1)).to(fd)
    return {"train_clean_correct": c_ok, "train_noisy_fit": n_fit, "pattern_exact": exact}


def pattern_probe(net: EnsembleTwoLayer, tr):
    """probe(step) → the training pattern of Thm 1 (1): clean points right, noisy points fitted."""

    def probe(step):
        with torch.no_grad():
            st = pattern_stats(net(tr.x), tr)
        return {"train_clean_correct": st["train_clean_correct"], "train_noisy_fit": st["train_noisy_fit"]}

    return probe


def train_accuracy(score: torch.Tensor, b) -> torch.Tensor:
    """Share of training points given their observed label (noisy ones included): what GD fits. (E,)"""
    return (sign_prediction(score) == b.y).to(score.dtype).mean(-1)


def test_errors(score: torch.Tensor, b) -> dict[str, torch.Tensor]:
    pred = sign_prediction(score)
    fd = score.dtype
    return {"test_err": (pred != b.y).to(fd).mean(-1), "clean_test_err": (pred != b.y_clean).to(fd).mean(-1)}


# ------------------------------------------------------------------------------------------ gradient descent
def threads_for(threads: int, E: int, n: int, m: int, d: int) -> int:
    """The torch thread count of a GD run on E replicas of n points, width m, dimension d: ``threads`` when set;
    else (0) one thread when a step is small (E·n·m·d < 2e8 multiply-adds: thread wake-ups cost more than they
    save), else 0 = leave torch's default."""
    if threads:
        return threads
    return 1 if E * n * m * d < 2e8 else 0


def gd(net: EnsembleTwoLayer, tr, steps: int, alpha: float, seeds, probe=None, probe_every: int = 10,
       prefix: str = "", desc: str = "GD", threads: int = 0):
    """Full-batch GD on the mean logistic loss L̂(W) (§2), W only. ``threads``: the config field (0 = decide)."""
    E, M, d = net.W.shape
    with torch_threads(threads_for(threads, E, tr.n, M, d)):
        return train([net.W], lambda step: logistic(net(tr.x), tr.y), steps, seeds=seeds, lr=alpha, probe=probe,
                     probe_every=probe_every, prefix=prefix, desc=desc)


@dataclass
class SegmentedRun:
    """The result of :func:`gd_logspaced`: what ``ctx.trained`` reads (status, message, frame())."""

    status: str
    message: str
    rows: pd.DataFrame

    def frame(self) -> pd.DataFrame:
        return self.rows


def gd_logspaced(net, tr, steps: int, alpha: float, seeds, probe, per_decade: int = 10, prefix: str = "",
                 desc: str = "GD", threads: int = 0) -> SegmentedRun:
    """GD with probes log-spaced in t (Fig 2's log axis): train() in segments, each with its own cadence.

    GD has no optimiser state, so chaining segments is exactly one run.
    """
    bounds = [0]
    while bounds[-1] < steps:
        b = bounds[-1]
        bounds.append(min(steps, 10 if b == 0 else b * 10))
    frames, status, msg = [], "complete", ""
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        every = max(1, (hi - lo) // per_decade) if lo > 0 else 1
        res = gd(net, tr, hi - lo, alpha, seeds, probe=lambda s, lo=lo: probe(lo + s), probe_every=every,
                 prefix=prefix, desc=f"{desc} {lo}-{hi}", threads=threads)
        f = res.frame()
        f["step"] += lo
        frames.append(f)
        if res.status != "complete":
            status, msg = res.status, res.message
            break
    frame = pd.concat(frames, ignore_index=True).drop_duplicates(["seed", "step", "metric"], keep="last")
    return SegmentedRun(status, msg, frame)


# ------------------------------------------------------------------------------------------ (A1)–(A7)
def assumption_notes(ctx, cfg: RFABase, eta: float, n: int | None = None, d: int | None = None) -> dict:
    """Check (A1)–(A7) for the config and print it with ctx.note; returns the check."""
    n, d = _size(cfg, "n", n), _size(cfg, "d", d)
    sigma, omega = cfg.sigma_for(d), cfg.omega_for(d)
    C = max(cfg.check_C, 1 / (4 * cfg.alpha**2))
    chk = lemmas.check_assumptions(d, n, cfg.m, sigma, eta, omega, cfg.alpha, cfg.delta, C)
    fails = [k for k, v in chk["holds"].items() if not v]
    cmax = "none" if chk["C_max"] is None else f"{chk['C_max']:.3g}"
    ctx.note(f"assumptions (A1)-(A7) at C = {C:g}, δ = {cfg.delta:g} (d={d}, n={n}, m={cfg.m}, σ={sigma:.3g}, "
             f"η={eta:g}, ω={omega:.3g}, α={cfg.alpha:g}): {chk['label']}"
             + (f" — fails {', '.join(fails)}" if fails else "") + f"; largest C meeting all at once: {cmax}")
    for line in chk["lines"]:
        ctx.note("    " + line)
    return chk


A_TEXT = {  # (A1)–(A7) of §3, with the paper's "large enough" absolute constant C
    "A1": "d ≥ C·max{log²(n/δ), log(m/δ)}", "A2": "σ² ≤ 1/(C²d), i.e. σ√d ≤ 1/C", "A3": "n ≥ C·log(m/δ)",
    "A4": "η ≤ 1/C", "A5": "m ≥ C·log(1/δ)", "A6": "ω² ≤ 1/(C⁴md), i.e. ω√(md) ≤ 1/C²",
    "A7": "1/(2√C) ≤ α ≤ 1/√C",
}


def preset_assumptions(config: type[RFAConfig], presets: dict[str, dict], eta_of) -> list[Assumption]:
    """(A1)–(A7) and Def 7's σ√d ≤ 3/C0 (Lemma 6's premise), each met or broken by every preset, computed by the
    same check the runs print (at C = max(check_C, 1/(4α²)), the smallest C that (A7) allows for the preset's α).
    ``eta_of(cfg)``: the noise rate the check uses (the largest of the grid)."""
    cfgs = {p: config(**ov) for p, ov in presets.items()}
    checks = {}
    for p, c in cfgs.items():
        C = max(c.check_C, 1 / (4 * c.alpha**2))
        checks[p] = (C, lemmas.check_assumptions(c.d, c.n, c.m, c.sigma_for(c.d), eta_of(c), c.omega_for(c.d),
                                                 c.alpha, c.delta, C))
    out = []
    for k, text in A_TEXT.items():
        why = "; ".join(f"{p}: {chk['caps'][k][2]} fails at C = {C:.3g}" for p, (C, chk) in checks.items()
                        if not chk["holds"][k])
        out.append(Assumption(f"({k})", text + " (at C = max(check_C, 1/(4α²)), the least C (A7) allows)",
                              {p: bool(chk["holds"][k]) for p, (C, chk) in checks.items()}, why=why))
    out.append(Assumption("C of (A1)–(A7)", "C 'large enough' for the proofs' constants: C ≥ C0/3 ≈ 8.6e8 (Def 7's "
                          "C0 via σ√d ≤ 1/C ≤ 3/C0), C ≥ 16C0² (Lemma 4 through (A5))",
                          {p: False for p in checks},
                          why="every preset: at such a C, (A1) needs d ≳ 1e9·log²(n/δ); the presets check (A1)–(A7) at "
                              "the least C (A7) allows instead"))
    sd = {p: c.sigma_for(c.d) * math.sqrt(c.d) for p, c in cfgs.items()}
    lim = 3 / lemmas.C0_PAPER
    out.append(Assumption("Def 7 (Lemma 6)", "σ√d ≤ 3/C0 with C0 = 45·1024²·e⁴ ≈ 2.6e9: every neuron of J_µ "
                          "(ρ_{j,µ}(0) ≥ 1/(3C0√d)) has an edge on its cluster",
                          {p: v <= lim for p, v in sd.items()},
                          why="; ".join(f"{p}: σ√d = {v:.3g} > 3/C0 = {lim:.3g}" for p, v in sd.items() if v > lim)))
    return out
