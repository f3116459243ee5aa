"""Every paper's data class follows the distribution protocol of data/base.py, and its data module stands alone."""

import ast
from pathlib import Path

import pytest
import torch

from featlab.data.base import Batch, Distribution
from featlab.papers.feature_amplification.data import XORClusterDistribution
from featlab.papers.feature_averaging.data import MultiClusterDistribution
from featlab.papers.midpoint_mixup.data import LinearMultiView, MultiViewDistribution

SEEDS = [0, 1, 2]
PAPERS = Path(__file__).resolve().parents[1] / "src" / "featlab" / "papers"

CASES = {
    "feature_averaging": lambda seeds: MultiClusterDistribution.create(seeds, k=4, d=12, positive=[0, 1]),
    "feature_amplification": lambda seeds: XORClusterDistribution.create(seeds, 10, 0.1, 0.2),
    "midpoint_mixup/def41": lambda seeds: MultiViewDistribution.create(seeds, 4, 6),
    "midpoint_mixup/def31": lambda seeds: LinearMultiView.create(seeds, 5),
}


@pytest.mark.parametrize("name", CASES)
def test_distribution_protocol(name):
    dist = CASES[name](SEEDS)
    assert isinstance(dist, Distribution)
    assert dist.E == len(SEEDS)
    b = dist.sample(7, SEEDS, role="test")
    assert isinstance(b, Batch)
    assert b.x.shape[0] == dist.E and b.x.shape[-1] == dist.d and b.y.shape == (dist.E, 7)
    # generators keyed by (seed, role): replica 1 alone draws the same points; another role draws others
    alone = CASES[name](SEEDS[1:2]).sample(7, SEEDS[1:2], role="test")
    assert torch.equal(alone.x[0], b.x[1]) and torch.equal(alone.y[0], b.y[1])
    assert not torch.equal(b.x, dist.sample(7, SEEDS, role="train").x)


def test_a_batch_is_not_a_distribution():
    assert not isinstance(Batch(torch.zeros(1, 1, 1), torch.zeros(1, 1)), Distribution)


@pytest.mark.parametrize("paper", ["feature_averaging", "feature_amplification", "midpoint_mixup"])
def test_data_module_imports_no_other_paper(paper):
    package = ["featlab", "papers", paper]  # data.py's package
    for node in ast.walk(ast.parse((PAPERS / paper / "data.py").read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            names = [".".join(base + ([node.module] if node.module else []))]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            assert not name.startswith("featlab.papers.") or name.startswith(f"featlab.papers.{paper}"), name
