"""mm-linear: the identities that are tests rather than claims (Lemma 3.2's sufficiency, App. C's closed form,
Prop 3.5 with constant 1), the theory's constant of the Prop 3.4 claim, and what the claims measure (min over y)."""

import math

import numpy as np
import pytest
import torch

from featlab.config import build_config
from featlab.errors import ConfigError
from featlab.papers.midpoint_mixup import linear as L
from featlab.papers.midpoint_mixup.data import LinearMultiView
from featlab.papers.midpoint_mixup.losses import beta_entropy, midpoint_all_pairs_loss, mixup_infimum
from featlab.runs.context import RunContext

pytestmark = pytest.mark.usefixtures("one_thread")
D = torch.float64
TINY = dict(grad_ks=[4, 6], grad_points_per_class=12, grad_C=[1.0, 8.0, 40.0], starve_C=8.0)


def test_lemma32_sufficiency_is_exact_at_large_scale():
    # Eq. 3.3: equal correlations scaled by γ reach inf J_MM; at γC = 1000 the residual is e^{−500}-small
    k = 5
    b = LinearMultiView(k).sample(60, [0], dtype=D)
    C = torch.tensor([1000.0], dtype=D)
    eq = L.linear_model(L.diagonal_weights(C, C, k), k)
    with torch.no_grad():
        gap = float(midpoint_all_pairs_loss(eq, b.x, b.y)[0] - mixup_infimum(b.y, math.inf)[0])
    assert abs(gap) < 1e-12


@pytest.mark.parametrize("a", [0.5, 1.0, 2.0, 8.0])
def test_quadrature_matches_app_c_closed_form(a):
    # App. C (C.2): −E[λ log λ + (1 − λ) log(1 − λ)] = ψ(2a+1) − ψ(a+1), by 32-node Gauss–Jacobi quadrature
    lam, w = L.beta_nodes(a, 32)
    ent = float(-(w * (lam * lam.log() + (1 - lam) * (1 - lam).log())).sum())
    assert abs(ent - beta_entropy(a)) < 1e-4
    assert abs(float(w.sum()) - 1) < 1e-12 and torch.allclose(lam, 1 - lam.flip(0))  # symmetric about ½


def test_point_mass_half_is_midpoint_mixup():
    lam, w = L.beta_nodes(math.inf, 32)
    assert lam.tolist() == [0.5] and w.tolist() == [1.0]
    assert beta_entropy(math.inf) == math.log(2)


@pytest.mark.parametrize("others", ["lopsided", "balanced"])
def test_prop35_bound_holds_with_constant_one(others):
    # Eq. 3.6 from the gradient's form: <−∇J, v_y2> = (1/N)Σ_{i∈N_y}(1 − φ_y)(1 − β_i) <= (k − 1)e^{−0.1Δ} = k^{1−0.1C}
    cfg = L.LinearConfig(**TINY, others=others)
    for kk in cfg.grad_ks:
        _, out = L.lagging_gradients(cfg, kk, 0, D)
        bound = kk ** (1 - 0.1 * torch.tensor(cfg.grad_C, dtype=D))
        assert (out["grad_erm"] > 0).all() and (out["grad_erm"] <= bound[:, None]).all()
        assert out["grad_mm"].shape == (len(cfg.grad_C), kk if others == "lopsided" else 1)


def _one_competitor_term(k: int, C: float, n: int = 400) -> float:
    """App. C.2's term of one competing class s: E[(½ − φ_y(z_{y,s}))(1 − β_y)], others at logit 0 (midpoint rule)."""
    b = 0.1 + 0.8 * (np.arange(n) + 0.5) / n
    by, bs = np.meshgrid(b, b, indexing="ij")
    D_ = C * math.log(k)
    gy, gs = by * D_ / 2, bs * D_ / 2
    top = np.maximum(gy, gs)
    phi = np.exp(gy - top) / (np.exp(gy - top) + np.exp(gs - top) + (k - 2) * np.exp(-top))
    return float(((0.5 - phi) * (1 - by)).mean())


def test_prop34_constant_comes_from_the_proof():
    # Δ_y → ∞: φ_y → 1{β_y > β_s}, and E[(½ − 1{β_y > β_s})(1 − β_y)] = 1/4 − 11/60 = 1/15
    assert abs(_one_competitor_term(10, 1e4) - 1 / 15) < 1e-3
    # at every Δ_y >= log k the one-competitor term stays above the claim's constant
    terms = [_one_competitor_term(k, C) for k in (3, 10, 20, 40) for C in (1, 2, 4, 8, 16, 32, 64)]
    assert min(terms) > 0.058 > L.PROP34_CONSTANT


def _ctx(**kw):
    cfg = build_config(L.LinearConfig, "mm-linear", TINY, kw)
    return RunContext("mm-linear", cfg, dir=None, quiet=True, declared=L.CLAIMS), cfg


@pytest.mark.parametrize("prop34_loss", ["midpoint", "erm"])
def test_prop34_claim_measures_the_worst_class(prop34_loss):
    ctx, cfg = _ctx(prop34_loss=prop34_loss)
    m = L._measure_gradients(ctx, cfg, [])
    per_k = []
    for kk in cfg.grad_ks:
        _, out = L.lagging_gradients(cfg, kk, ctx.seeds[0], D)
        per_k.append(float((kk**2 * out["grad_mm"]).min()))  # min over C (all >= 1 here) and over classes y
        assert per_k[-1] < float((kk**2 * out["grad_mm"]).mean())
        i = cfg.grad_C.index(cfg.starve_C)
        if kk == cfg.grad_ks[-1]:
            assert m["starvation"] == pytest.approx(float((out["grad_erm"][i] / out["grad_mm"][i]).max()))
    assert m["prop34_lower"] == pytest.approx(min(per_k))
    if prop34_loss == "erm":  # the control: ERM against itself
        assert m["starvation"] == pytest.approx(1.0) and m["prop34_lower"] < L.PROP34_CONSTANT


def test_controls_skip_the_parts_they_do_not_judge():
    ctx, cfg = _ctx(N=20, scales=[1.0, 10.0])
    ctx.judged = {"mm.lemma32_unequal"}
    m = L._measure_gaps(ctx, cfg, [])
    assert "prop33_gap" not in m and m["gap_min"] == {}
    assert not ctx.judges("mm.prop34_lower", "mm.starvation")


def test_starve_c_must_be_on_the_grid():
    with pytest.raises(ConfigError, match="starve_C"):
        build_config(L.LinearConfig, "mm-linear", {"starve_C": 5.0})
