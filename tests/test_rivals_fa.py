"""FA rivals at a cheap setting, in the default suite: the rival's net trains as well as the paper's, and the claims
the rival targets fail there while they hold on the paper's net (the matrix of runs/discrimination.py on real runs).

Both runs of a test use the same overrides, so the rival differs from the paper's net by its mechanism alone:
* fa-ablation-n's ``large-init`` (σ_w = σ_b = 1e-3, Fig 7) at n ∈ {1000, 2000} instead of Fig 5's {1000, 10000,
  50000} (the quick run takes minutes): FA margin 1.24 on the paper's net, 0.28 on the rival's (measured);
* fa-synthetic's ``fine-binary`` (the binary net trained on the cluster labels, fine_binary.py) at d = 1024, n = 400,
  5 seeds, short attacks and a short longer run (η·long_T = 10, as at quick).
"""

import pytest

import featlab
from featlab.runs.discrimination import annotate
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
    counted = ("fa.binary_in_class", "fa.lemma55_all_active", "fa.lambda_log")
    assert set(counted) <= targets
    main = {c["id"]: c for c in own.claims}
    rival = {c["id"]: c for c in ctl.claims}
    for cid in counted:
        assert main[cid]["status"] == "held", (cid, main[cid]["measured"])
        assert rival[cid]["status"] == "failed", (cid, rival[cid]["measured"])
        assert _cell(main[cid], "fine-binary")["state"] == "failed"
    # the claims it is exempt from keep their reasons, and the k-class net is the paper's (same numbers)
    for cid in ("fa.binary_off_class", "fa.binary_breaks", "fa.kclass_diag", "fa.kclass_holds"):
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


def test_the_large_init_net_holds_no_mechanism_claim(shared_out):
    """The issue's referee check: fa-synthetic run with the paper's own "large" init (σ_w = σ_b = 1e-3: trained, not
    averaging) as if it were the paper's net, its rivals beside it, credits it with no held mechanism claim. Its
    large-init rival is that very net (the run of it is the same run): what the net holds, that rival holds."""
    out, kw = shared_out, dict(SYNTHETIC, sigma_w=1e-3, sigma_b=1e-3)
    own = featlab.run("fa-synthetic", "quick", out=out, quiet=True, **kw)
    exp = featlab.get_experiment("fa-synthetic")
    rivals = [featlab.run("fa-synthetic", "quick", out=out, control=c.name, quiet=True, **kw)
              for c in exp.controls if c.kind == "mechanism"]
    annotate(own, rivals, exp)
    held = [c["id"] for c in own.claims if c.get("role") == "mechanism" and c["status"] == "held"]
    assert held == [], held
    kept = [c["id"] for c in own.claims if c.get("role") == "premise" and c["status"] == "held"]
    assert "fa.binary_off_class" in kept and "fa.lambda_log" in kept, kept  # it holds them: premises, not counted
