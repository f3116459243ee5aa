"""rfa-amplification: the lemmas of §4 as measurements (Lemmas 4, 12–14, Conditions 9–10, Prop 2) over t ≤ T, and
ρ(0) = Θ(1/√d) vs ρ(1) = Θ(1) over d (random feature amplification)."""

from __future__ import annotations

import math

import pandas as pd
import torch
from pydantic import Field, model_validator

from ...config import check
from ...nn.twolayer import sign_prediction
from ...runs.claims import AtLeast, AtMost, Claim
from ...runs.registry import experiment
from . import lemmas as amp
from . import plots as plots_rfa
from .common import RFAConfig, assumption_notes, gd, make_dist, make_net, pattern_stats, test_errors
from .data import f_star


class AmplificationConfig(RFAConfig):
    C0: float = Field(amp.C0_PAPER, gt=1, description="Lemma 4's C0 in J_µ's threshold 1/(3C0√d) "
                      "(Def 7: 45·1024²·e⁴)")
    eta: float = Field(0.1, ge=0, lt=0.5, description="noise rate η")
    horizon: int | None = Field(None, ge=1, description="iterations drawn, each one probed; None = 2T (claims use "
                                "t ≤ T only)")
    d_sweep: list[int] = Field([100, 300, 1000, 3000], description="dimensions for ρ(0) vs ρ(1) (Lemmas 4, 12)")

    @model_validator(mode="after")
    def _valid(self):
        check(all(v >= 2 for v in self.d_sweep), "d_sweep", "must hold dimensions >= 2")
        return self


CLAIMS = [
    Claim("rfa.cond10", "almost-orthogonality: max_j |<w_j, µ_other>|/(α|a_j|) over t ≤ T", "Cond 10, Lemma 13",
          AtMost(hi=amp.AO_RADIUS), why="explicit in the paper: |<w_j^(t), µ_other>| ≤ 3α|a_j|"),
    Claim("rfa.growth", "per-step growth along own mean, min over j ∈ J_µ, 1 ≤ τ ≤ T−1, / (α|a_j|)",
          "Lemma 13 eq. (39)", AtLeast(lo=amp.GROWTH_FLOOR),
          why="explicit in eq. (39): <w_j^(τ+1) − w_j^(τ), µ> ≥ α|a_j| e^-2/64 for j ∈ J_µ"),
    Claim("rfa.lprime", "min_i −ℓ'(y_i f(x_i; W^{(τ)})) over τ ≤ T−1", "Lemma 13 eq. (37)",
          AtLeast(lo=amp.LPRIME_FLOOR), why="explicit in eq. (37): −ℓ'_{i,τ} ≥ e^-2/2 for τ ≤ T − 1"),
    Claim("rfa.frob", "‖W^{(t)}‖_F/(2αt), max over 1 ≤ t ≤ T", "Lemma 14", AtMost(hi=1),
          why="explicit in Lemma 14: ‖W^(t)‖_F ≤ 2αt"),
    Claim("rfa.rho_floor", "normalised correlation with own mean, min over j ∈ J_µ, 2 ≤ t ≤ T", "Lemma 13 eq. (40)",
          AtLeast(lo=amp.RHO_FLOOR), why="explicit in eq. (40): <w_j^(t)/‖w_j^(t)‖, µ> ≥ e^-2/256 for t ≥ 2"),
    Claim("rfa.cond9", "share of j ∈ J meeting Condition 9 (active on all of its cluster, inactive on the opposite) "
          "at T", "Cond 9, Lemma 13", AtLeast(lo=1), why="Lemma 13: Condition 9 holds for every j ∈ J_µ"),
    Claim("rfa.lemma12", "first step: |actual − (α a_j/2n)(N_{+µ} − N_{−µ})| within the ζ1 + ζ2 bound, share of "
          "seeds", "Lemma 12 eq. (30)", AtLeast(lo=1),
          why="the remainder bound (α|a_j|/n)Σ_i φ'_i(|<z_i, µ>| + |f(x_i)|/4) is exact (−ℓ' is ¼-Lipschitz): "
              "every neuron of every seed"),
    Claim("rfa.prop2", "relative feature-map change min_i ‖φ(W^T x_i) − φ(W^0 x_i)‖/‖φ(W^0 x_i)‖", "Prop 2",
          AtLeast(lo=1, of="e^-2/(16384 ω√(md))"), why="the explicit constant of Prop 2's proof"),
]


# ------------------------------------------------------------------------------------------ training
def _probe(cfg: AmplificationConfig, net, tr, te, dist, J, W0, T: int, store: dict):
    """The lemmas' measurements at step t (W = W^{(t)}); keeps W^{(0)}, W^{(1)}, W^{(T)} in ``store``."""
    A = net.A
    prev = {"t": 0, "W": W0.clone()}

    def probe(t):
        with torch.no_grad():
            W = net.W.detach()
            s_tr = net(tr.x)
            out = {
                "cond9_share": amp.condition9(W, tr.x, tr.cluster, J),
                "cond10_max_ao": amp.condition10(W, A, dist.mu, J, cfg.alpha),
                "frob_over_2alpha_t": amp.frobenius_ratio(W, cfg.alpha, t) if t >= 1 else torch.zeros(W.shape[0]),
                "frob": W.flatten(1).norm(dim=-1),
                "min_neg_lprime": amp.min_neg_lprime(s_tr, tr.y),
                "span_share": amp.span_share(W, dist.mu),
                "fstar_agreement": (sign_prediction(net(te.x)) == sign_prediction(f_star(te.x, dist.mu))).to(
                    W.dtype).mean(-1),
                "rho_median": amp.median_rho_own(W, dist.mu, J),
                "rho_min": amp.min_rho_own(W, dist.mu, J),
                **{k: v for k, v in pattern_stats(s_tr, tr).items() if k != "pattern_exact"},
                **test_errors(net(te.x), te),
            }
            if t > prev["t"]:
                out["growth_min"] = amp.growth(W, prev["W"], A, dist.mu, J, cfg.alpha, t - prev["t"])
            else:
                out["growth_min"] = torch.full((W.shape[0],), float("nan"), dtype=W.dtype)
            if t in (0, 1, T):
                store[t] = W.clone()
            prev["t"], prev["W"] = t, W.clone()
        return out

    return probe


def _d_sweep(ctx, cfg: AmplificationConfig, seeds: list[int], dtype) -> list[tuple]:
    """ρ(0), ρ(1) vs d (Lemma 4: Θ(1/√d); Lemma 12: Θ(1)): one GD step per dimension."""
    sweep = []
    for d in cfg.d_sweep:
        dd = make_dist(cfg, seeds, [cfg.eta] * len(seeds), dtype, d=d)
        t2 = dd.sample(cfg.n, seeds, "train")
        nn_ = make_net(cfg, seeds, dtype, d=d)
        w0 = nn_.W.detach().clone()
        Jd = amp.neuron_sets(w0, nn_.A, dd.mu, cfg.C0)
        ctx.trained(gd(nn_, t2, 1, cfg.alpha, seeds, probe_every=10**9, prefix=f"d={d}.", desc=f"d={d}",
                       threads=cfg.threads))
        r0, r1 = amp.median_rho_own(w0, dd.mu, Jd), amp.median_rho_own(nn_.W.detach(), dd.mu, Jd)
        ctx.metric(f"d={d}.rho_median@t=0", r0)
        ctx.metric(f"d={d}.rho_median@t=1", r1)
        sweep.append((d, r0.numpy(), r1.numpy()))
    return sweep


# ------------------------------------------------------------------------------------------ measuring
def _measure_first_step(ctx, cfg: AmplificationConfig, net, tr, dist, J, W0, W1, score0) -> None:
    """Lemma 12: the predicted first step vs the actual one; ρ(0) vs ρ(1)."""
    if W1 is None:
        return
    l12 = amp.lemma12_first_step(W0, net.A, tr.x, tr.y, tr.cluster, dist.mu, score0, cfg.alpha)
    actual = amp.first_step_actual(W1, W0, dist.mu)
    gap = (actual - l12["predicted"]).abs()
    ok = (gap <= l12["bound"] * (1 + 1e-6) + 1e-12).flatten(1).all(-1).to(W0.dtype)
    scale = l12["predicted"].abs().flatten(1).amax(-1)
    ctx.metric("lemma12.within_bound", ok)
    ctx.metric("lemma12.max_rel_gap", gap.flatten(1).amax(-1) / scale)
    rho0, rho1 = amp.median_rho_own(W0, dist.mu, J), amp.median_rho_own(W1, dist.mu, J)
    ctx.metric("rho_median@t=0", rho0)
    ctx.metric("rho_median@t=1", rho1)
    ctx.metric("rho_median_sqrt_d@t=0", rho0 * math.sqrt(cfg.d))
    ctx.metric("amplification_ratio", rho1 / rho0)


def _measure_over_time(ctx, cfg: AmplificationConfig, frame: pd.DataFrame, T: int, W_T, W0, tr) -> pd.DataFrame:
    """The lemmas' thresholds over t ≤ T, and Prop 2's feature change at T; returns the wide (seed, step) table."""
    f = frame.pivot_table(index=["seed", "step"], columns="metric", values="value").reset_index()
    upto = f[f["step"] <= T]
    ctx.metric("cond10.max_ao", upto["cond10_max_ao"].max())
    grow = upto[(upto["step"] >= 2)]["growth_min"]
    ctx.metric("lemma13.growth_min", grow.min() if len(grow) else float("nan"))
    ctx.metric("lemma13.min_neg_lprime", f[f["step"] <= T - 1]["min_neg_lprime"].min())
    ctx.metric("lemma14.max_frob_over_2alpha_t", upto[upto["step"] >= 1]["frob_over_2alpha_t"].max())
    r2 = upto[upto["step"] >= 2]["rho_min"]
    ctx.metric("lemma13.rho_min_t>=2", r2.min() if len(r2) else float("nan"))
    atT = f[f["step"] == T]
    ctx.metric("cond9.share@T", atT["cond9_share"].mean())
    for name in ("span_share", "fstar_agreement", "train_clean_correct", "train_noisy_fit", "test_err",
                 "clean_test_err"):
        ctx.metric(f"{name}@T", atT[name].mean())
    with torch.no_grad():
        fc = amp.feature_change(W_T, W0, tr.x)
    ctx.metric("prop2.feature_change_min", fc.min())
    ctx.metric("prop2.bound", amp.prop2_bound(cfg.omega_for(cfg.d), cfg.m, cfg.d))
    return f


# ------------------------------------------------------------------------------------------ drawing, judging
def _draw(ctx, cfg: AmplificationConfig, f, T: int, store, dist, J, sweep, n_seeds: int) -> None:
    hist = {t: amp.own_rho_values(store[t], dist.mu, J).numpy() for t in (0, 1, T) if t in store}
    ctx.figure(plots_rfa.amplification_figure(f, T, cfg.alpha, hist, sweep,
                                              title=f"Random feature amplification: d={cfg.d}, n={cfg.n}, "
                                                    f"m={cfg.m}, α={cfg.alpha:g}, σ={cfg.sigma_for(cfg.d):.2g}, "
                                                    f"ω={cfg.omega_for(cfg.d):.2g}, η={cfg.eta:g}, {n_seeds} seeds"),
               "amplification")


def _judge(ctx) -> None:
    m = ctx.metrics
    ctx.claim("rfa.cond10", m["cond10.max_ao"])
    ctx.claim("rfa.growth", m["lemma13.growth_min"])
    ctx.claim("rfa.lprime", m["lemma13.min_neg_lprime"])
    ctx.claim("rfa.frob", m["lemma14.max_frob_over_2alpha_t"])
    ctx.claim("rfa.rho_floor", m["lemma13.rho_min_t>=2"])
    ctx.claim("rfa.cond9", m["cond9.share@T"])
    if "lemma12.within_bound" in m:
        ctx.claim("rfa.lemma12", m["lemma12.within_bound"])
    ctx.claim("rfa.prop2", m["prop2.feature_change_min"], scale=m["prop2.bound"])


@experiment(
    "rfa-amplification", paper="feature-amplification", reference="Lemmas 4, 12, 13, 14; Conds 9-10; Prop 2",
    summary="weak random correlations Θ(1/√d) are amplified to Θ(1) in one step; the lemmas' explicit "
            "thresholds (3α|a_j|, e^-2/64, e^-2/2, 2αt) measured over time",
    config=AmplificationConfig,
    presets={
        # σ√d ≤ 3/C0 (Lemma 6's premise with Def 7's C0 ≈ 2.6e9) needs σ ≈ 1e-11 and float64
        "quick": {"seeds": 4, "d": 1000, "n": 400, "m": 100, "alpha": 0.05, "sigma": 3e-11, "omega": 1e-5,
                  "n_test": 1000, "probe_every": 1, "dtype": "float64", "d_sweep": [100, 300, 1000, 3000]},
        "paper": {"seeds": 10, "d": 2000, "n": 1000, "m": 400, "alpha": 0.01, "sigma": 2e-11, "omega": 1e-6,
                  "n_test": 2000, "probe_every": 1, "dtype": "float64", "d_sweep": [100, 300, 1000, 3000, 10000]},
        # σ√d = 0.03 ≫ 3/C0: Lemma 6's premise fails for the paper's C0 (set C0=3 to make J consistent)
        "practical": {"seeds": 4, "d": 1000, "n": 400, "m": 100, "alpha": 0.05, "sigma": 1e-3, "omega": 1e-5,
                      "n_test": 1000, "probe_every": 1, "d_sweep": [100, 300, 1000, 3000]},
        "theory": {"seeds": 4, "d": 700, "n": 200, "m": 32, "alpha": 0.2, "sigma": 0.002, "omega": 5e-5,
                   "eta": 0.05, "probe_every": 1, "dtype": "float64", "d_sweep": [100, 700]},
    },
    claims=CLAIMS)
def rfa_amplification(ctx) -> None:
    cfg: AmplificationConfig = ctx.cfg
    seeds, dtype = ctx.seeds, ctx.dtype
    assumption_notes(ctx, cfg, cfg.eta)
    T = cfg.steps_()
    H = max(cfg.horizon if cfg.horizon is not None else 2 * T, T)
    ctx.note(f"T = {T} (1 + ⌊1/(4α)⌋ unless steps is set); drawing t = 0..{H}; claims use t ≤ T")
    sd, lim = cfg.sigma_for(cfg.d) * math.sqrt(cfg.d), 3 / cfg.C0
    verdict = "holds" if sd <= lim else "FAILS: the lemmas may fail for neurons of J_µ with ρ(0) ≲ σ"
    ctx.note(f"Lemma 6's premise σ√d ≤ 3/C0 (needed for every j ∈ J_µ to have an edge): σ√d = {sd:.3g}, "
             f"3/C0 = {lim:.3g} → {verdict}")
    dist = make_dist(cfg, seeds, [cfg.eta] * len(seeds), dtype)
    tr, te = dist.sample(cfg.n, seeds, "train"), dist.sample(cfg.n_test, seeds, "test")
    net = make_net(cfg, seeds, dtype)
    W0 = net.W.detach().clone()
    J = amp.neuron_sets(W0, net.A, dist.mu, cfg.C0)  # Lemma 4
    ctx.metric("J_share", J.sum((1, 2)).to(dtype) / cfg.m)
    for k, name in enumerate(("+mu1", "-mu1", "+mu2", "-mu2")):  # Lemma 4: |J_µ| ≥ (m/4)(1 − 1/C0)²
        ctx.metric(f"J_{name}.share", J[:, k].sum(-1).to(dtype) / cfg.m)
    with torch.no_grad():
        score0 = net(tr.x)
    store: dict[int, torch.Tensor] = {}
    # the lemmas are statements about every step: probe every step whatever probe_every says
    res = ctx.trained(gd(net, tr, H, cfg.alpha, seeds, probe=_probe(cfg, net, tr, te, dist, J, W0, T, store),
                         probe_every=1, desc="GD", threads=cfg.threads))
    _measure_first_step(ctx, cfg, net, tr, dist, J, W0, store.get(1), score0)
    f = _measure_over_time(ctx, cfg, res.frame(), T, store[T], W0, tr)
    sweep = _d_sweep(ctx, cfg, seeds, dtype)
    _draw(ctx, cfg, f, T, store, dist, J, sweep, len(seeds))
    _judge(ctx)
