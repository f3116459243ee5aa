"""Issue 45 on FA §6.2: fa.deep_fine_minus_coarse, the fine labels' own share of the robustness gap — the 10-class
arm against the same k-logit network and read-out trained on the 2-class labels, paired per test point and resampled
by seed (a Clustered sample) — with fa.deep_kclass_more_robust kept as a premise. The quick preset leaves the coarse
arm off (the suite's time); a tiny run trains it here."""

import numpy as np
import pytest
import torch

import featlab
from featlab.papers.feature_averaging import deep_measures as dm
from featlab.papers.feature_averaging.deep_claims import CLAIMS, FINE_MINUS_COARSE


class _Ctx:
    """The part of a run context the judge uses: the radii, metrics and the claim's verdict."""

    def __init__(self, radii):
        self.cfg = type("Cfg", (), {"radii": radii})()
        self.metrics, self.verdict = {}, None

    def metric(self, name, value):
        self.metrics[name] = value

    def claim(self, cid, measured, **kw):
        assert cid == FINE_MINUS_COARSE.id
        self.verdict = FINE_MINUS_COARSE.judge(measured, **kw)


def _masks(seeds: int, n: int, p_fine: float, p_coarse: float, radii=(0, 0.5, 1.0)):
    """Per seed (1 + R, n) robust masks: clean row all True, each radius robust with the given rate (nested)."""
    fine, coarse = [], []
    for s in range(seeds):
        g = torch.Generator().manual_seed(s)
        u = torch.rand(n, generator=g)
        rows_f = [torch.ones(n, dtype=torch.bool)] + [u < p_fine / (1 + i) for i in range(len(radii))]
        rows_c = [torch.ones(n, dtype=torch.bool)] + [u < p_coarse / (1 + i) for i in range(len(radii))]
        fine.append(torch.stack(rows_f))
        coarse.append(torch.stack(rows_c))
    return fine, coarse


def test_the_current_gap_is_a_premise_and_the_new_claim_counts():
    kinds = {c.id: c.kind for c in CLAIMS}
    assert kinds["fa.deep_kclass_more_robust"] == "premise" and kinds["fa.deep_fine_minus_coarse"] == "claim"
    exp = featlab.get_experiment("fa-resnet-mnist")
    targets = {c.name: c.targets(exp.claims) for c in exp.controls}
    assert "fa.deep_fine_minus_coarse" in targets["fine-shuffled"]  # the rival that changes the labels' content
    assert "fa.deep_fine_minus_coarse" in exp.control("coarse-labels").exempt  # its arm is the claim's comparison
    assert featlab.get_experiment("fa-resnet-digits").control("same-labels").kind == "sanity"  # a forced tie


def test_identical_arms_fail_and_a_more_robust_fine_arm_holds_clustered_by_seed():
    ctx = _Ctx([0, 0.5, 1.0])
    fine, _ = _masks(6, 200, 0.8, 0.8)
    dm.judge_fine_minus_coarse(ctx, fine, fine)  # a forced tie
    assert ctx.verdict.measured == 0 and ctx.verdict.status != "held"
    fine, coarse = _masks(6, 200, 0.9, 0.5)
    dm.judge_fine_minus_coarse(ctx, fine, coarse)
    v = ctx.verdict
    assert v.status == "held" and v.n == 6 and v.unit.startswith("seeds"), v  # n: the seeds, not the 1200 points
    assert v.measured == pytest.approx(ctx.metrics["fine_vs_coarse.mean_gap_pp"]) and v.measured > 10
    assert ctx.metrics["fine_vs_coarse.points"] == 1200
    fine, coarse = _masks(3, 200, 0.9, 0.5)
    dm.judge_fine_minus_coarse(ctx, fine, coarse)
    assert ctx.verdict.status == "inconclusive" and ctx.verdict.by_rule == "held"  # 3 seeds: the 5-net rule


def test_points_either_arm_misclassifies_clean_are_left_out():
    ctx = _Ctx([0, 1.0])
    fine, coarse = _masks(5, 50, 0.9, 0.5, radii=(0, 1.0))
    for m in coarse:
        m[0, :10] = False  # ten points the coarse arm gets wrong clean
    dm.judge_fine_minus_coarse(ctx, fine, coarse)
    assert ctx.metrics["fine_vs_coarse.points"] == 5 * 40
    assert np.isfinite(ctx.verdict.measured)


def test_a_tiny_run_trains_the_coarse_arm_and_judges_the_claim(tmp_path):
    tiny = dict(featlab.get_experiment("fa-resnet-digits").tiny or {})
    rec = featlab.run("fa-resnet-digits", out=tmp_path, quiet=True, **{**tiny, "seeds": 2, "coarse_arm": True})
    assert rec.ok, rec.summary.get("message")
    c = next(c for c in rec.claims if c["id"] == "fa.deep_fine_minus_coarse")
    assert c["n"] == 2 and c["unit"].startswith("seeds") and c["status"] != "held"  # 2 seeds: never held
    m = rec.summary["metrics"]
    assert "coarse.clean_acc" in m and m["fine_vs_coarse.points"] >= 0 and "coarse.attack.passes" in m
    off = featlab.run("fa-resnet-digits", out=tmp_path, quiet=True, **{**tiny, "coarse_arm": False})
    assert "fa.deep_fine_minus_coarse" not in {c["id"] for c in off.claims}
