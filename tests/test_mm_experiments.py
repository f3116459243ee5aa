"""Midpoint Mixup experiments: config validation through the CLI, replica = seed, the claims at quick scale."""

import pytest
import torch

from featlab.cli import main
from featlab.papers.midpoint_mixup.linear import CLAIMS as LINEAR_CLAIMS
from featlab.papers.midpoint_mixup.multiview import CLAIMS as MULTIVIEW_CLAIMS
from featlab.papers.midpoint_mixup.multiview import MultiViewConfig, _data, fit


@pytest.mark.parametrize("exp,override,field", [
    ("mm-multiview", "d=10", "'d'"),             # d < 2k
    ("mm-multiview", "P=2", "'P'"),              # P < 2·C_P + 1 (no noise patch)
    ("mm-multiview", "delta1=1.5", "'delta1'"),  # δ1 > δ2/2
    ("mm-multiview", "rho=0", "'rho'"),
    ("mm-multiview", "alpha=0.5", "'alpha'"),
    ("mm-multiview", "Q=10", "'Q'"),             # Q >= k
    ("mm-multiview", "mixup_a=0", "'mixup_a'"),  # Beta parameter <= 0
    ("mm-multiview", "positions=diagonal", "'positions'"),
    ("mm-linear", "beta_params=[1,-2]", "'beta_params'"),
])
def test_bad_input_names_the_field_and_exits_2(exp, override, field, capsys, tmp_path):
    code = main(["run", exp, override, "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and field in err[0], err


def test_replica_i_equals_seed_i_alone():
    kw = dict(k=4, d=400, N=12, P=5, m=2, steps=30, probe_every=10, eta=20.0, n_test_per_class=5, rho=0.2)
    for method in ("erm", "midpoint", "mixup"):
        cfg = MultiViewConfig(**kw, seeds=2, seed=3, pairs="all" if method != "mixup" else "sampled")
        dist, tr, te = _data(cfg, cfg.seed_list())
        net2, _, _ = fit(method, cfg, cfg.seed_list(), torch.float64, dist, tr, te)
        cfg1 = MultiViewConfig(**kw, seeds=1, seed=4, pairs=cfg.pairs)
        dist1, tr1, te1 = _data(cfg1, cfg1.seed_list())
        net1, _, _ = fit(method, cfg1, cfg1.seed_list(), torch.float64, dist1, tr1, te1)
        assert not torch.allclose(net2.W[0], net2.W[1])
        assert torch.allclose(net2.W[1], net1.W[0], rtol=1e-12, atol=1e-15), method


def quick_claims_hold(exp: str, declared, out):
    """Run ``exp`` at its quick preset: every declared claim is judged, in the declared order, and holds."""
    from featlab.runs.runner import run

    rec = run(exp, "quick", out=out, force=True)
    assert rec.status == "complete"
    assert [c["id"] for c in rec.claims] == [c.id for c in declared]
    failed = [c["id"] for c in rec.claims if not c["holds"]]
    assert not failed, failed
    return rec


def test_multiview_claims_at_quick_scale(tmp_path):
    rec = quick_claims_hold("mm-multiview", MULTIVIEW_CLAIMS, tmp_path)
    assert {"erm.frac_classes_both", "midpoint.frac_classes_both", "mixup.frac_classes_both", "erm.train_acc",
            "midpoint.train_acc", "mixup.train_acc"} <= set(rec.summary["metrics"])


def test_linear_claims_at_quick_scale(tmp_path):
    quick_claims_hold("mm-linear", LINEAR_CLAIMS, tmp_path)


def test_reduced_simulation_runs_at_theory_scale_d():
    # d = 10^12 (the theory's k^20 at k = 4): the cost does not depend on d, only the init scale 1/√d does
    cfg = MultiViewConfig(k=4, d=10**12, N=12, P=5, m=2, steps=5, probe_every=5, n_test_per_class=5, seeds=2)
    dist, tr, te = _data(cfg, cfg.seed_list())
    net, res, _ = fit("midpoint", cfg, cfg.seed_list(), torch.float64, dist, tr, te)
    assert res.status == "complete"
    assert net.W.shape == (2, 8, 8)  # (E, k·m, 2k): no d axis
    assert 0.5e-6 < float(net.W.detach().std()) < 2e-6
    assert torch.isfinite(torch.tensor(res.frame().value.to_numpy())).all()
