"""FA rivals at a cheap setting, in the default suite: the rival's net trains as well as the paper's, and the claims
the rival targets fail there while they hold on the paper's net (the matrix of runs/discrimination.py on real runs).

Both runs of a test use the same overrides, so the rival differs from the paper's net by its mechanism alone:
* fa-ablation-n's ``large-init`` (σ_w = σ_b = 1e-3, Fig 7) at n ∈ {1000, 2000} instead of Fig 5's {1000, 10000,
  50000} (the quick run takes minutes): FA margin 1.24 on the paper's net, 0.28 on the rival's (measured);
* fa-synthetic's ``fine-binary`` (the binary net trained on the cluster labels, fine_binary.py) and ``large-init``
  (Fig 7's σ = 1e-3: the averaging mechanism plus a frozen init) at d = 1024, n = 400, 5 seeds, short attacks and a
  short longer run (η·long_T = 10, as at quick);
* the ``lazy`` rival (init='lazy') trained alone at d = 256: its learned part is small and is not averaging.
"""

import pytest

import featlab
from test_mechanism_controls import SYNTHETIC, check_mechanism_control

pytestmark = pytest.mark.usefixtures("one_thread")

ABLATION_N = dict(values=[1000, 2000], n_test=100)


def _rival(exp_id: str, name: str, out, kw: dict):
    """The paper net's run and the rival's at the same overrides, checked as every rival is checked
    (tests/test_mechanism_controls.py's check_mechanism_control); returns (paper run, rival run, its targets)."""
    return check_mechanism_control(exp_id, name, out, out, None, cheap=kw)


def _cell(claim: dict, rival: str) -> dict:
    return next(c for c in claim["rivals"] if c["rival"] == rival)


def test_ablation_n_large_init_fails_averaging_at_every_n(tmp_path):
    own, ctl, targets = _rival("fa-ablation-n", "large-init", tmp_path / "runs", ABLATION_N)
    assert set(ctl.summary["control"]["overrides"]) == {"sigma_w", "sigma_b"}  # the mechanism, nothing else
    cid = "fa.ablation_n.fa_everywhere"
    assert cid in targets
    main = next(c for c in own.claims if c["id"] == cid)
    rival = next(c for c in ctl.claims if c["id"] == cid)
    # App. E.1 (Fig 5): averaging at every n, in every seed; Fig 7: no averaging from the large init, in no seed. A
    # claim about every seed is a per-seed pass count: at quick's few seeds both are inconclusive by their
    # Clopper–Pearson intervals, so the claim stays unsettled there (6 seeds a side settle it)
    assert main["measured"] >= 1.1 and main["interval"][1] == 1.0 and "passing: 1 of 1" in main["unit"]
    assert rival["measured"] < 0.7 and rival["interval"][0] == 0.0 and "passing: 0 of 1" in rival["unit"]
    assert _cell(main, "large-init")["state"] == "inconclusive" and main["role"] == "unsettled"


def test_fine_binary_rival_decouples_and_fails_the_averaging_claims(shared_out):
    # (shared_out: these two runs are tests/test_mechanism_controls.py's fa-synthetic runs at its CHEAP setting)
    own, ctl, targets = _rival("fa-synthetic", "fine-binary", shared_out, SYNTHETIC)
    assert ctl.summary["control"]["overrides"] == {"binary_supervision": "fine"}
    m, r = own.summary["metrics"], ctl.summary["metrics"]
    assert m["binary.clean_acc"] >= 0.99 and r["binary.clean_acc"] >= 0.99  # both binary read-outs classify
    assert r["binary.cos_in_class_mean"] < 0.6 * m["binary.cos_in_class_mean"]  # decoupled: ≈ 1/|J_s|, not 1/√|J_s|
    counted = ("fa.binary_in_class", "fa.lemma55_all_active", "fa.lambda_log", "fa.binary_breaks",
               "fa.binary_breaks_direction")  # the last two: the derived edge 1.14·√(d/k) and cut 0.89 (issue 45)
    assert set(counted) <= targets
    main = {c["id"]: c for c in own.claims}
    rival = {c["id"]: c for c in ctl.claims}
    for cid in counted:
        assert main[cid]["status"] == "held", (cid, main[cid]["measured"])
        assert rival[cid]["status"] == "failed", (cid, rival[cid]["measured"])
        assert _cell(main[cid], "fine-binary")["state"] == "failed"
    # the claims it is exempt from keep their reasons, and the k-class net is the paper's (same numbers)
    for cid in ("fa.binary_off_class", "fa.kclass_diag", "fa.kclass_holds"):
        cell = _cell(main[cid], "fine-binary")
        assert cell["state"] == "exempt" and cell["reason"], cid
    assert r["multiclass.cos_diag_mean"] == pytest.approx(m["multiclass.cos_diag_mean"])


def test_fine_binary_needs_a_neuron_per_cluster():
    from featlab.papers.feature_averaging.common import FASyntheticConfig

    with pytest.raises(ValueError, match="max\\(\\|J\\+\\|, \\|J−\\|\\) = 5"):
        FASyntheticConfig(binary_supervision="fine", m=4)
    assert FASyntheticConfig(binary_supervision="fine", m=5).binary_supervision == "fine"


def test_fine_binary_logits_average_each_clusters_neurons():
    import torch

    from featlab.papers.feature_averaging.fine_binary import cluster_assignment

    positive = torch.tensor([True, True, False, False, False])  # |J+| = 2, |J−| = 3
    A = cluster_assignment(positive, 4)  # neurons (+, 0..3) → clusters 0, 1, 0, 1; (−, 0..3) → 2, 3, 4, 2
    assert A.shape == (8, 5)
    assert torch.equal(A.argmax(1), torch.tensor([0, 1, 0, 1, 2, 3, 4, 2]))
    assert torch.allclose(A.sum(0), torch.ones(5, dtype=A.dtype))  # each cluster's logit is the mean of its neurons
    assert A[0, 0] == A[2, 0] == 0.5 and A[5, 3] == 1


COUNTED = ("fa.binary_breaks", "fa.kclass_holds", "fa.lemma55_all_active", "fa.lambda_log")


def test_the_central_claims_each_have_two_rivals_of_another_mechanism():
    """Issue 45's bar: Thm 4.5 (3), Thm 4.7 (3), Lemma 5.5 and Lemma B.23 each must be failed by at least two
    mechanism rivals, none of them Fig 7's large init (the averaging mechanism plus a frozen init)."""
    exp = featlab.get_experiment("fa-synthetic")
    for cid in COUNTED:
        rivals = {c.name for c in exp.controls if c.kind == "mechanism" and cid in c.targets(exp.claims)}
        assert "large-init" not in rivals and len(rivals) >= 2, (cid, rivals)
        assert next(c for c in exp.controls if c.name == "large-init").exempt[cid]  # with the measured reason


def _learned(init: str, **kw):
    """The binary net's learned-part statistics at a tiny size: (learned_stats, flipped-pattern share)."""
    import torch

    from featlab.papers.feature_averaging import measures
    from featlab.papers.feature_averaging.common import FASyntheticConfig, fit_binary, make_data

    cfg = FASyntheticConfig(k=10, d=256, m=5, n=200, n_test=10, T=100, init=init, **kw)
    seeds = [0, 1]
    dist, tr, _ = make_data(cfg, seeds, torch.float32)
    net, _ = fit_binary(cfg, seeds, dist, tr)
    return measures.learned_stats(net, dist, cfg.m), measures.flipped_patterns(net, tr.x)


def test_the_lazy_rival_is_lazy_and_learns_other_coefficients():
    """The lazy rival (init='lazy': f₀ ≡ 0 from a large init) moves W by a small fraction of W(0) and flips few
    activation patterns, and what it learns is not averaging: its off-class learned coefficients are ≈ −in-class
    (active on a random half of every cluster), where the paper's net keeps them ≈ 0 (Cor B.5). Fails if the rival
    is not lazy (a small lazy_scale) or learns like the paper's net."""
    lazy, flipped = _learned("lazy")
    paper, _ = _learned("random")
    assert float(lazy["learned_norm_ratio"].max()) < 0.05 and float(flipped.max()) < 0.05, (lazy, flipped)
    assert float(lazy["learned_lambda_off_over_in"].max()) < -0.7, lazy
    assert float(paper["learned_lambda_off_over_in"].min()) > -0.3, paper
    assert float(paper["learned_norm_ratio"].min()) > 10  # the paper's net: the init is negligible (σ = 1e-5)
    not_lazy, flipped = _learned("lazy", lazy_scale=0.3)  # the check can fail: a small init is not lazy
    assert float(not_lazy["learned_norm_ratio"].min()) > 0.05 or float(flipped.min()) > 0.05


def test_the_large_init_net_is_averaging_plus_its_init(shared_out):
    """Fig 7's σ = 1e-3 (the large-init control), beside the paper net at test_mechanism_controls' setting: its learned
    part w − w⁰ averages as the paper net's does, while cos(μ, w) is diluted by the frozen init — so it is judged on
    Fig 7's cosine claims on w only, and exempt (with that reason) from the learned-part and functional claims. Fails
    if the large init stops averaging (then it would be another mechanism, and the exemptions wrong)."""
    own, ctl, targets = _rival("fa-synthetic", "large-init", shared_out, SYNTHETIC)
    assert targets == {"fa.binary_in_class", "fa.kclass_diag"}
    m, r = own.summary["metrics"], ctl.summary["metrics"]
    assert r["binary.learned_cos_in_class_mean"] > 0.95 * m["binary.learned_cos_in_class_mean"]
    assert r["binary.cos_in_class_mean"] < m["binary.cos_in_class_mean"] - 0.02  # dilution by ‖w⁰‖
    main = {c["id"]: c for c in own.claims}
    for cid in COUNTED + ("fa.binary_learned_in_class",):
        cell = _cell(main[cid], "large-init")
        assert cell["state"] == "exempt" and "frozen random init" in cell["reason"], cid
