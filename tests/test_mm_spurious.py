"""mm-spurious-*: the untrained control compares equal networks (the init depends on the seed only), Table 1's
entries are shown as printed, and the mechanism controls remove what they say: λ = 1 is ERM through the Mixup code
path, and 'no-spurious' trains on the test view."""

import matplotlib.figure
import pytest
import torch

import featlab
from featlab.devicecheck import RUN, check_experiment
from featlab.papers.midpoint_mixup import spurious
from featlab.papers.midpoint_mixup.spurious import PAPER_TABLE1, MMSpuriousConfig, _objective, paper_cell
from featlab.papers.midpoint_mixup.spurious_claims import BELOW_ERM, lambda_one, no_spurious
from featlab.papers.midpoint_mixup.spurious_data import SpuriousChannels
from featlab.train.image_config import build_model
from featlab.train.image_trainer import predict


def test_untrained_control_gives_every_method_the_same_network(out):
    rec = featlab.run("mm-spurious-digits", "quick", out=out, quiet=True, control="untrained", seeds=1)
    assert rec.ok and rec.config["epochs"] == 0
    m = rec.summary["metrics"]
    assert m["mixup.test_err"] == m["midpoint.test_err"] == m["erm.test_err"] > 0.5  # near chance (0.9)
    assert m["mixup.train_acc"] == m["midpoint.train_acc"] == m["erm.train_acc"] < 0.5
    assert [c["holds"] for c in rec.claims] == [False, False]  # strict '<' fails on a tie


def test_table1_entries_as_printed():
    assert paper_cell(PAPER_TABLE1["fashionmnist"]["mixup"]) == "9.66 ± ?"  # Table 1 prints no ± there
    assert paper_cell(PAPER_TABLE1["cifar100"]["erm"]) == "69.28 ± 2"


def test_lambda_one_is_erm_through_the_mixup_code_path():
    cfg = MMSpuriousConfig(mix_lambda=1.0)
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(16, 2, 8, 8, generator=g), torch.arange(16) % 10
    model = build_model("smallcnn", 2, 10, 4, seed=0)
    erm = _objective(cfg, "erm", 10)(model, x, y, torch.Generator().manual_seed(1))
    for method in ("mixup", "midpoint"):
        loss = _objective(cfg, method, 10)(model, x, y, torch.Generator().manual_seed(1))
        assert loss.item() == pytest.approx(erm.item(), rel=1e-6)
    paper = _objective(MMSpuriousConfig(), "midpoint", 10)(model, x, y, torch.Generator().manual_seed(1))
    assert paper.item() != pytest.approx(erm.item(), rel=1e-5)  # the paper's λ = 1/2 does mix


def test_no_spurious_trains_on_the_test_view_with_the_same_draws():
    g = torch.Generator().manual_seed(0)
    x, y = torch.rand(40, 1, 8, 8, generator=g), torch.arange(40) % 10
    paper, ctl = SpuriousChannels(x, y, 10, seed=3), SpuriousChannels(x, y, 10, seed=3, spurious=False)
    idx = torch.arange(0, 40, 3)
    ga, gb = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    (xa, ya), (xb, yb) = paper.batch(idx, ga), ctl.batch(idx, gb)
    assert torch.equal(xb, SpuriousChannels.test_view(x[idx])) and torch.equal(ya, yb)
    assert xa[:, 1:].abs().sum() > 0 and torch.equal(ga.get_state(), gb.get_state())  # same RNG stream after


def test_mechanism_controls_target_what_they_can_defeat():
    """λ = 1 defeats the orderings and the Table 1 Mixup entries whose band is disjoint from ERM's; the spurious
    channel removed defeats ERM's entry and any entry more than 3 pp above Uniform Mixup's."""
    below = {c.id for c in BELOW_ERM}
    assert set(lambda_one().claims) == below
    assert set(lambda_one("fashionmnist").claims) == below | {"mm.table1_mixup"}
    assert set(lambda_one("cifar10").claims) == below | {"mm.table1_mixup"}
    assert set(lambda_one("cifar100").claims) == below | {"mm.table1_mixup", "mm.table1_midpoint"}
    assert set(no_spurious("digits").claims) == below  # measured at quick: the orderings are not significant
    assert set(no_spurious("fashionmnist").claims) == {"mm.table1_midpoint", "mm.table1_erm"}
    assert set(no_spurious("cifar10").claims) == {"mm.table1_midpoint", "mm.table1_erm"}
    assert set(no_spurious("cifar100").claims) == {"mm.table1_erm"}
    for exp_id in ("mm-spurious-digits", "mm-spurious-fmnist", "mm-spurious-cifar10", "mm-spurious-cifar100"):
        exp = featlab.get_experiment(exp_id)
        full = "cpu-full" if exp_id == "mm-spurious-digits" else "paper"  # the paper did not run digits
        assert all(set(a.met) == set(exp.presets) == {"quick", full} | ({"cpu-real"} if "fmnist" in exp_id else set())
                   for a in exp.assumptions)  # every preset says which premise it meets
        if exp_id != "mm-spurious-digits":  # quick is a smoke test there: it meets §5's protocol nowhere
            assert not next(a for a in exp.assumptions if a.ref == "§5 protocol").met["quick"]


def test_untrained_control_evaluates_on_the_run_device(out, monkeypatch):
    """epochs = 0 once left the networks on the host, where fit() moves the trained ones to the run device: a GPU
    run evaluated them on the CPU. The simulated device cannot see it (a Parameter drops the host mark), so the
    networks' moves are recorded: every evaluated one went to the run device."""
    moved: dict[int, object] = {}

    def built(*args, **kw):
        model = build_model(*args, **kw)
        to = model.to

        def recorded(device, *a, **k):
            moved[id(model)] = device
            return to(device, *a, **k)

        model.to = recorded
        return model

    def evaluated(model, *args, **kw):
        assert moved.get(id(model)) == RUN, "a network evaluated where it was built"
        return predict(model, *args, **kw)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda self, path, **kw: open(path, "wb").close())
    monkeypatch.setattr(spurious, "build_model", built)
    monkeypatch.setattr(spurious, "predict", evaluated)
    rec, problems = check_experiment("mm-spurious-digits", out, "untrained")
    assert rec.status == "complete", rec.summary.get("message")
    assert problems == [] and len(moved) == 3  # one network per method
