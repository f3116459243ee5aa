"""FA §6 claims at the quick presets, with their expected verdicts (fa-resnet-digits: Fig 3 on 8×8 digits;
fa-embeddings: Figs 2c/2d on the digits' pixels), and the measurements behind them against closed forms.

fa-resnet-digits at quick costs ≈ 60–70 s of CPU (3 seeds × 2 small CNNs × 30 epochs, the attack ensemble
minimum-norm first — DDN, FMN, ALMA — on 300 test images at 11 radii, the stronger budget's and another family's
checks on 50 of one seed's points); it runs once per session. A
claim that stops holding turns its test red; a claim known to fail (or be unverified) at quick is marked
``xfail(strict=True)`` with its numbers, so that it is noticed when it starts to hold."""

import math

import pytest
import torch

import featlab
from featlab.papers.feature_averaging import deep_measures as dm


@pytest.fixture(scope="session")
def digits(shared_out):
    return featlab.run("fa-resnet-digits", "quick", out=shared_out, quiet=True)  # shared with its controls' test


@pytest.fixture(scope="session")
def embeddings(shared_out):
    return featlab.run("fa-embeddings", "quick", out=shared_out, quiet=True)


def verdict(rec, claim_id):
    return next(c for c in rec.claims if c["id"] == claim_id)


# ------------------------------------------------------------------------------------------ fa-resnet-digits
def test_digits_more_robust_holds_at_quick(digits):
    """10.2 pp, 95 % interval [8.6, 11.7] over 827 points (11.1 before the minimum-norm stage had FMN and ALMA and
    APGD-T all five targets: issue 49; it was unverified while the stronger budget's 2-point drop on the 10-class
    curve was read as a failure without its interval)."""
    c = verdict(digits, "fa.deep_kclass_more_robust")
    assert c["status"] == "held" and c["interval"][0] > 0, c


@pytest.mark.xfail(strict=True, reason="failed at quick: smallest gap -0.73 pp, paired 95 % interval "
                   "[-1.57, -0.12] over 827 test points (δ = 0.9); inconclusive (+0.12) while DDN alone and APGD-T "
                   "with one target left the 10-class curve up to 2.2 points too high (issue 49)")
def test_digits_above_every_radius_holds_at_quick(digits):
    c = verdict(digits, "fa.deep_kclass_above_every_radius")
    assert c["status"] == "held", c


def test_digits_claims_rest_on_the_ensemble_and_its_indicators(digits):
    m = digits.summary["metrics"]
    for h in ("binary", "multiclass"):
        for k in ("eps0_gap", "monotone_rise", "acc_at_large_radius", "unverified", "zero_grad_share"):
            assert m[f"{h}.attack.{k}"] == 0, (h, k)
    flagged = m["binary.attack.flagged"] + m["multiclass.attack.flagged"] > 0
    for c in digits.claims:  # a claim on a flagged curve is unverified, and only then
        assert (c["status"] == "unverified") == flagged, c
    assert m["both_correct.mean_gap_pp"] > 0 and m["binary.attack.passes"] > 0  # minimum-norm first: no PGD-alone
    assert not any(k.startswith(("binary.pgd_robust_acc", "both_correct.pgd")) for k in m)  # curve to compare


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
    c = verdict(digits, "fa.deep_kclass_more_robust")
    # pooled over the seeds' points (the bootstrap's units); the seed-mean curves weigh seeds equally: close
    assert c["measured"] == pytest.approx(m["both_correct.mean_gap_pp"]) and c["n"] == m["both_correct.points"]
    assert c["measured"] == pytest.approx(sum(gaps) / len(gaps), abs=0.5) and c["unit"] == "test points"
    # the 2-class small CNN is less accurate clean: the reason the claims condition on common correct points
    assert m["multiclass.clean_acc"] > m["binary.clean_acc"]


# ------------------------------------------------------------------------------------------ fa-embeddings
@pytest.mark.parametrize("claim_id", ["fa.emb_kclass_decouples", "fa.emb_binary_blocks"])
def test_embeddings_claim_holds_at_quick(embeddings, claim_id):
    c = verdict(embeddings, claim_id)
    # 4 seeds: inconclusive by the minimum-units rule (5 nets), with its interval alone on the holding side
    assert c["status"] == "inconclusive" and c["by_rule"] == "held" and c["unit"] == "seeds" and c["n"] == 4, c


@pytest.mark.xfail(strict=True, reason="fails at quick (permutation-invariant measure): the 2-class neurons' "
                   "selectivity is 0.42 vs the k-class neurons' 0.66, ratio 0.64 >= 0.5 (exact averages of the "
                   "digits' class means score 0.23, ratio 0.35): on 8×8 pixels the 2-class neurons do not just average")
def test_embeddings_binary_averages_holds_at_quick(embeddings):
    assert verdict(embeddings, "fa.emb_binary_averages")["status"] == "held"


def test_embeddings_claims_and_metrics(embeddings):
    m = embeddings.summary["metrics"]
    assert len(embeddings.claims) == 3 and "fa.emb_within_gt_between" not in {c["id"] for c in embeddings.claims}
    assert verdict(embeddings, "fa.emb_binary_averages")["measured"] == pytest.approx(
        m["binary.neuron_selectivity"] / m["multiclass.neuron_selectivity"])
    assert m["embeddings.cos_within_class"] > m["embeddings.cos_between_class"]  # Fig 10, kept as metrics
    assert min(m["binary.test_acc"], m["multiclass.test_acc"]) > 0.9


def test_selectivity_is_permutation_invariant_and_zero_for_averages():
    from featlab.papers.feature_averaging.embeddings import selectivity
    from featlab.papers.feature_averaging.measures import cosine_matrix

    k, d = 4, 8
    mu = torch.eye(d, dtype=torch.float64)[:k] * 3  # orthogonal class features; J+ = classes 0, 1
    pos_r = torch.tensor([True, True, False, False])
    avg = torch.stack([mu[:2].sum(0)] * 2 + [mu[2:].sum(0)] * 2)[None]  # averaging neurons (Thm 4.5 (2))
    dec = mu[None].clone()  # one neuron per class: decoupled (Thm 4.7 (2))
    npos = torch.tensor([True, True, False, False])
    assert selectivity(cosine_matrix(mu[None], avg), pos_r, npos).item() == pytest.approx(0)
    s = selectivity(cosine_matrix(mu[None], dec), pos_r, npos).item()
    assert s == pytest.approx(1.0)
    perm = torch.tensor([3, 0, 2, 1])  # any order of the neurons (the 2-class head's grouping is arbitrary)
    assert selectivity(cosine_matrix(mu[None], dec[:, perm]), pos_r, npos[perm]).item() == pytest.approx(s)


def test_fine_labels_reassigned_within_their_coarse_class():
    from featlab.papers.feature_averaging.deep import within_coarse

    pos = torch.tensor([True] * 5 + [False] * 5)
    y = torch.arange(10).repeat(400)
    z = within_coarse(y, pos, torch.Generator().manual_seed(0))
    assert (pos[z] == pos[y]).all()  # the coarse label is kept
    counts = torch.bincount(z[y == 0], minlength=10)[:5].double()  # class 0's images spread over J+ uniformly
    assert (counts / counts.sum() - 0.2).abs().max() < 0.08


# ------------------------------------------------------------------------------------------ closed forms
def test_above_every_radius_interval_is_that_of_the_minimum():
    """The smallest paired gap's interval: each resample takes its own minimum over the radii."""
    from featlab.runs.uncertainty import interval

    g = torch.Generator().manual_seed(0)
    a = (torch.rand(400, generator=g) < 0.2).double().numpy() * 100  # a radius with a 20 pp gap
    b = torch.zeros(400, dtype=torch.float64).numpy()  # a radius where the curves coincide
    iv = interval((a, b), dm._min_of_means, unit="test points")
    assert iv.hi <= 0 + 1e-12 and dm._min_of_means(a, b) == 0  # the minimum is pinned by the tied radius
    iv = interval((a, a + 5), dm._min_of_means, unit="test points")
    assert 14 < iv.lo < 20 < iv.hi < 26


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

    cfg = FAResNetConfig(pgd_steps=5, eval_batch=7, apgd_steps=5, apgd_targets=1, square_queries=5, ddn_steps=10,
                         attack_schedule="full")
    g = torch.Generator().manual_seed(0)
    x = torch.rand(20, 1, 4, 4, generator=g)
    w = torch.randn(16, generator=g)
    score = lambda z: z.flatten(1) @ w - (x.flatten(1) @ w).median()  # a linear model
    y = torch.where(score(x) > 0, 1.0, -1.0)
    y[:3] = -y[:3]  # three points misclassified clean
    radii = [0, 0.05, 0.5, 5]
    att = dm.robust_points(score, x, y, radii, cfg, seed=0, device="cpu", check=True)
    masks = att.worst
    assert masks.shape == (4, 20) and masks[0].sum() == 17 and not masks[0, :3].any()  # row 0: clean
    assert all((masks[i + 1] <= masks[i]).all() for i in range(3))  # monotone in the radius
    assert (masks <= att.pgd).all() and torch.equal(att.pgd[0], masks[0])  # the ensemble includes margin PGD
    margin = (score(x) * y) / w.norm()  # signed ℓ2 distance to the boundary: no attack within it can flip a point
    for i, r in enumerate([0.05, 0.5]):
        assert masks[i + 1][margin > r].all()
        # on a linear model every attack finds the boundary: robust exactly where the margin exceeds the radius
        assert torch.equal(masks[i + 1][3:], (margin > r)[3:])
    assert masks[3].sum() == 0 and att.indicators["converged"], att.indicators["flagged"]
    assert set(att.indicators["checks"]) >= {"eps0_clean", "monotone", "verified", "masking", "convergence"}
    # the same seed draws the same PGD starts: two identical nets get identical masks (the paired comparison)
    again = dm.robust_points(score, x, y, radii, cfg, seed=0, device="cpu")
    assert torch.equal(again.worst, masks) and torch.equal(again.pgd, att.pgd)
    assert torch.equal(dm.robust_points(score, x, y, radii, cfg.model_copy(update={"attack": "pgd"}), seed=0,
                                        device="cpu").worst, att.pgd)  # 'pgd': the former protocol alone
    # minimum-norm first (the default): DDN then the rest descending; on a linear model the same exact masks, no
    # PGD-alone curve, every attack's passes counted, the check on a 8-point subsample with its interval
    mnf = dm.robust_points(score, x, y, radii, cfg.model_copy(update={"attack_schedule": "min-norm-first",
                                                                     "check_points": 8}), seed=0, device="cpu",
                           check=True)
    assert torch.equal(mnf.worst, masks) and mnf.pgd is None and list(mnf.result.masks)[0] == "ddn"
    assert {"ddn", "apgd-ce", "square", "check.ddn"} <= set(mnf.passes) and "pgd" not in mnf.passes
    assert mnf.indicators["checks"]["convergence"]["n"] == 8


def test_attack_budget_is_one_for_both_nets_and_doubles_for_the_check():
    from featlab.papers.feature_averaging.deep import FAResNetConfig

    cfg = FAResNetConfig(apgd_steps=7, apgd_restarts=1, square_queries=11, ddn_steps=13, apgd_targets=3,
                         check_factor=3)
    b, s = dm.attack_budget(cfg), dm.attack_budget(cfg, strong=True)
    assert b.attacks == dm.ENSEMBLE and "pgd" not in s.attacks  # minimum-norm first: AutoAttack's and DDN
    assert dm.attack_budget(cfg.model_copy(update={"attack_schedule": "full"})).attacks == ("pgd", *dm.ENSEMBLE)
    assert (b.steps, b.queries, b.ddn_steps, b.n_targets, b.pgd_steps) == (7, 11, 13, 3, cfg.pgd_steps)
    assert (s.steps, s.restarts, s.queries, s.ddn_steps, s.n_targets) == (21, 3, 33, 39, 3)
