"""Issue 45 on the App. E.1 ablations: Fig 9's test (b) read against P⊥Σ_{J_s}μ_j on planted neurons (the exact
class-specific average Σ_{J_s}e_j passes, a decoupled net fails), and the 'reversed' grids of Figs 6 and 7 are
sanity checks, never rivals."""

import pytest
import torch

import featlab
from featlab.papers.feature_averaging.ablations import perp_averaging_margin, perp_sums
from featlab.papers.feature_averaging.measures import averaging_margin, class_coefficients
from featlab.utils import generator

K, D, M = 10, 256, 2


def centres(c: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(mu (1, k, d), positive, e (k, d)): μ_j = √d(√(1−c)e_j + √c e_0) as data.orthogonal_centres builds them,
    with e_j its private orthonormal parts."""
    q, _ = torch.linalg.qr(torch.randn(D, K + 1, generator=generator(0, "test"), dtype=torch.float64))
    q = q.T
    mu = ((1 - c) ** 0.5 * q[1:] + c ** 0.5 * q[:1]) * D ** 0.5
    return mu[None], torch.arange(K) < K // 2, q[1:]


def net(rows_pos: list[torch.Tensor], rows_neg: list[torch.Tensor]) -> torch.Tensor:
    return torch.stack(rows_pos + rows_neg)[None]


def test_the_exact_class_average_fails_the_old_b_and_passes_the_reformulated_one():
    mu, pos, e = centres(0.09)
    sums = perp_sums(mu, pos)[0]
    W = net([e[pos].sum(0)] * M, [e[~pos].sum(0)] * M)  # Σ_{J_s}e_j: orthogonal to every centre of the other class
    a, b = class_coefficients(W[:, :1], mu), class_coefficients(sums[None, :1], mu)
    assert torch.allclose(a / a.max(), b / b.max())  # the same coefficients as P⊥Σ_{J+}μ_j's, up to scale
    old = averaging_margin(W, mu, pos, M)
    assert old["off_ratio"].max().item() == pytest.approx(0.331, abs=1e-3)  # > 0.25: (b) fails it by construction
    assert old["margin_min"].item() < 1
    new = perp_averaging_margin(W, mu, pos, M)
    assert new["off_ratio"].abs().max().item() < 1e-9 and new["margin_min"].item() >= 1


def test_a_decoupled_net_fails_the_reformulated_test():
    mu, pos, _ = centres(0.09)
    ip, ineg = pos.nonzero()[:, 0], (~pos).nonzero()[:, 0]
    W = net([mu[0, ip[r]] for r in range(M)], [mu[0, ineg[r]] for r in range(M)])  # w_{s,r} = one centre each
    t = perp_averaging_margin(W, mu, pos, M)
    assert t["margin"].max().item() < 1 and t["off_ratio"].min().item() > 0.25  # (b) alone already fails it
    assert averaging_margin(W, mu, pos, M)["off_ratio"].abs().max().item() < 1e-9  # the old (b) passed it


@pytest.mark.parametrize("c", [0.0, 1e-3])
def test_for_orthogonal_centres_the_reformulation_is_the_old_test(c):
    mu, pos, _ = centres(c)
    W = torch.randn(1, 2 * M, D, generator=generator(1, "test"), dtype=torch.float64) + net(
        [mu[0, pos].sum(0)] * M, [mu[0, ~pos].sum(0)] * M)
    old, new = averaging_margin(W, mu, pos, M), perp_averaging_margin(W, mu, pos, M)
    assert torch.allclose(old["margin"], new["margin"], rtol=0.02 if c else 1e-9)


@pytest.mark.parametrize("exp_id", ["fa-ablation-lr", "fa-ablation-init"])
def test_the_reversed_grids_are_sanity_checks_and_the_lazy_net_is_the_rival(exp_id):
    exp = featlab.get_experiment(exp_id)
    reversed_ = next(c for c in exp.controls if c.name == "reversed")
    assert reversed_.kind == "sanity" and not reversed_.premise
    rivals = {c.name: c for c in exp.controls if c.kind == "mechanism"}
    assert set(rivals) == {"lazy"}  # never 'reversed', never σ = 1e-3
    small, large = (c.id for c in exp.claims)
    assert rivals["lazy"].targets(exp.claims) == [small] and large in rivals["lazy"].exempt
    assert "not counted" in next(c for c in exp.claims if c.id == large).why  # no rival can fail it: a premise


@pytest.mark.parametrize("exp_id", ["fa-ablation-n", "fa-ablation-snr", "fa-ablation-cosine"])
def test_every_invariant_ablation_has_the_lazy_rival(exp_id):
    exp = featlab.get_experiment(exp_id)
    lazy = exp.control("lazy")
    assert lazy.kind == "mechanism" and lazy.overrides == {"init": "lazy"}
    assert set(lazy.targets(exp.claims)) == {c.id for c in exp.claims if c.kind == "claim"}
