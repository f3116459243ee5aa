"""The averaging test of the FA ablations (Figs 5–9) on planted neurons: a class-blind neuron w ∝ Σ_all μ_j passes
the in-class fidelity bar alone (1/√2 ≥ 0.7) and must fail the test; the averaging solution Σ_{J_s}μ_j must pass,
also with Fig 9's non-orthogonal centres."""

import pytest
import torch

from featlab.papers.feature_averaging.data import orthogonal_centres
from featlab.papers.feature_averaging.measures import averaging_margin
from featlab.utils import generator

K, D, M = 10, 256, 2


def centres(pairwise_cos: float) -> tuple[torch.Tensor, torch.Tensor]:
    mu = orthogonal_centres(K, D, "qr", generator(0, "test"), pairwise_cos=pairwise_cos)[None].double()
    positive = torch.arange(K) < K // 2
    return mu, positive


def planted(mu, positive, class_blind: bool) -> torch.Tensor:
    """(1, 2M, d): M positive then M negative neurons, each ∝ its class's sum (or, class-blind, the sum of all)."""
    pos, neg, all_ = mu[0, positive].sum(0), mu[0, ~positive].sum(0), mu[0].sum(0)
    rows = [all_ if class_blind else pos] * M + [-all_ if class_blind else neg] * M
    return torch.stack(rows)[None]


@pytest.mark.parametrize("pairwise_cos", [0.0, 0.09])
def test_the_averaging_solution_passes(pairwise_cos):
    mu, positive = centres(pairwise_cos)
    t = averaging_margin(planted(mu, positive, False), mu, positive, M)
    assert torch.allclose(t["fidelity"], torch.ones(1, 2 * M, dtype=mu.dtype))
    assert t["off_ratio"].abs().max() < 1e-9
    assert t["margin_min"].item() >= 1 / 0.7 - 1e-9


@pytest.mark.parametrize("pairwise_cos", [0.0, 0.09])
def test_a_class_blind_neuron_fails(pairwise_cos):
    mu, positive = centres(pairwise_cos)
    W = planted(mu, positive, False)
    W[0, 0] = mu[0].sum(0)  # one positive neuron ignores the class structure
    t = averaging_margin(W, mu, positive, M)
    assert t["fidelity"][0, 0].item() >= 0.7  # the in-class bar alone would pass it (≈ 1/√2 when orthogonal)
    assert t["off_ratio"][0, 0].item() == pytest.approx(1.0)
    assert t["margin_min"].item() == pytest.approx(0.25)  # worst neuron: 0.25 / ratio 1 < 1
    assert t["margin"][0, 1:].min().item() >= 1  # the other neurons average


def test_a_neuron_that_drops_a_cluster_or_points_away_fails():
    mu, positive = centres(0.0)
    W = planted(mu, positive, False)
    W[0, 1] = mu[0, 1:5].sum(0)  # ignores cluster 0 of its class
    W[0, 2] = -W[0, 2]  # a negative neuron pointing away from its class
    t = averaging_margin(W, mu, positive, M)
    assert t["margin"][0, 1].item() < 0.1 and t["margin"][0, 2].item() < 0
    assert t["margin"][0, [0, 3]].min().item() >= 1
