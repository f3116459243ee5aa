"""FA §6 claims at the quick presets, with their expected verdicts (fa-resnet-digits: Fig 3 on 8×8 digits;
fa-embeddings: Figs 2c/2d on the digits' pixels), and the measurements behind them against closed forms.

fa-resnet-digits at quick costs ≈ 35 s of CPU (3 seeds × 2 small CNNs × 30 epochs, PGD on 300 test images at 11
radii); it runs once per module. A claim that stops holding turns its test red; a claim known to fail at quick
would be marked ``xfail(strict=True)`` with its numbers, so that it is noticed when it starts to hold."""

import math

import pytest
import torch

import featlab
from featlab.papers.feature_averaging import deep_measures as dm


@pytest.fixture(scope="session")
def digits(tmp_path_factory):
    return featlab.run("fa-resnet-digits", "quick", out=tmp_path_factory.mktemp("runs"), quiet=True)


@pytest.fixture(scope="session")
def embeddings(tmp_path_factory):
    return featlab.run("fa-embeddings", "quick", out=tmp_path_factory.mktemp("runs"), quiet=True)


def verdict(rec, claim_id):
    return next(c for c in rec.claims if c["id"] == claim_id)


# ------------------------------------------------------------------------------------------ fa-resnet-digits
@pytest.mark.parametrize("claim_id", ["fa.deep_kclass_more_robust", "fa.deep_kclass_above_every_radius"])
def test_digits_claim_holds_at_quick(digits, claim_id):
    c = verdict(digits, claim_id)
    assert c["holds"], c


def test_digits_claims_are_measured_on_the_points_both_classify_correctly(digits):
    m, radii = digits.summary["metrics"], digits.config["radii"]
    assert {c["id"] for c in digits.claims} == {"fa.deep_kclass_more_robust", "fa.deep_kclass_above_every_radius"}
    assert 0.85 < m["both_correct_fraction"] <= min(m["binary.clean_acc"], m["multiclass.clean_acc"]) + 0.05
    for h in ("binary", "multiclass"):
        plain = [m[f"{h}.robust_acc@{r:g}"] for r in radii]
        both = [m[f"{h}.robust_acc_both_correct@{r:g}"] for r in radii]
        assert both[0] == 1.0  # δ = 0 on the points both classify correctly
        assert all(a >= b for a, b in zip(plain, plain[1:])) and all(a >= b for a, b in zip(both, both[1:]))
        assert all(b >= p - 1e-12 for b, p in zip(both, plain))  # conditioning on correct points only helps
    gaps = [100 * (m[f"multiclass.robust_acc_both_correct@{r:g}"] - m[f"binary.robust_acc_both_correct@{r:g}"])
            for r in radii if r > 0]
    assert verdict(digits, "fa.deep_kclass_more_robust")["measured"] == pytest.approx(sum(gaps) / len(gaps))
    # the 2-class small CNN is less accurate clean: the reason the claims condition on common correct points
    assert m["multiclass.clean_acc"] > m["binary.clean_acc"]


# ------------------------------------------------------------------------------------------ fa-embeddings
@pytest.mark.parametrize("claim_id", ["fa.emb_kclass_decouples", "fa.emb_binary_blocks", "fa.emb_binary_averages"])
def test_embeddings_claim_holds_at_quick(embeddings, claim_id):
    c = verdict(embeddings, claim_id)
    assert c["holds"], c


def test_embeddings_claims_and_metrics(embeddings):
    m = embeddings.summary["metrics"]
    assert len(embeddings.claims) == 3 and "fa.emb_within_gt_between" not in {c["id"] for c in embeddings.claims}
    assert verdict(embeddings, "fa.emb_binary_averages")["measured"] == pytest.approx(
        m["binary.diag_excess"] / m["multiclass.diag_excess"])
    assert m["embeddings.cos_within_class"] > m["embeddings.cos_between_class"]  # Fig 10, kept as metrics
    assert min(m["binary.test_acc"], m["multiclass.test_acc"]) > 0.9


# ------------------------------------------------------------------------------------------ closed forms
def test_comparison_of_curves():
    radii = [0, 0.5, 1, 2]
    S = {"multiclass": torch.tensor([[1.0, 0.9, 0.5, 0.0], [1.0, 0.7, 0.3, 0.0]]),
         "binary": torch.tensor([[1.0, 0.8, 0.2, 0.0], [1.0, 0.6, 0.2, 0.0]])}
    mean_gap, min_gap, n = dm.comparison(radii, S)
    assert mean_gap == pytest.approx(100 * (0.1 + 0.2 + 0) / 3) and min_gap == pytest.approx(10) and n == 2
    same = {"multiclass": S["binary"], "binary": S["binary"]}
    assert dm.comparison(radii, same)[:2] == (0.0, 0.0)  # identical arms: no strict advantage
    nan = {h: torch.full((1, 4), math.nan) for h in S}  # no point classified correctly by both
    assert all(math.isnan(v) for v in dm.comparison(radii, nan)[:2])


def test_balanced_accuracy():
    y = torch.tensor([True, True, True, False])
    assert dm.balanced_accuracy(torch.ones(4, dtype=torch.bool), y) == 0.5  # a constant prediction
    assert dm.balanced_accuracy(y.clone(), y) == 1.0
    assert math.isnan(dm.balanced_accuracy(torch.ones(3, dtype=torch.bool), y[:3]))  # one label missing


def test_robust_points_start_clean_and_shrink():
    from featlab.papers.feature_averaging.deep import FAResNetConfig

    cfg = FAResNetConfig(pgd_steps=5, eval_batch=7)
    g = torch.Generator().manual_seed(0)
    x = torch.rand(20, 1, 4, 4, generator=g)
    w = torch.randn(16, generator=g)
    score = lambda z: z.flatten(1) @ w - (x.flatten(1) @ w).median()  # a linear model
    y = torch.where(score(x) > 0, 1.0, -1.0)
    y[:3] = -y[:3]  # three points misclassified clean
    masks = dm.robust_points(score, x, y, [0, 0.05, 0.5, 5], cfg, seed=0, device="cpu")
    assert masks.shape == (4, 20) and masks[0].sum() == 17 and not masks[0, :3].any()  # row 0: clean
    assert all((masks[i + 1] <= masks[i]).all() for i in range(3))  # monotone in the radius
    margin = (score(x) * y) / w.norm()  # signed ℓ2 distance to the boundary: no attack within it can flip a point
    for i, r in enumerate([0.05, 0.5]):
        assert masks[i + 1][margin > r].all()
    assert masks[2].sum() < masks[0].sum() and masks[3].sum() < masks[2].sum()  # PGD breaks points within reach
