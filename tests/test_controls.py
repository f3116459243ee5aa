"""Every claim can fail: each experiment's controls (settings where the paper's statements should be false) are run
at quick scale, and a targeted claim that holds there is a defect. (That every claim is targeted by a control, and
pointed to by a numbered result of its paper, is checked by the common battery: tests/test_common_checks.py.)"""

import pytest

import featlab
from featlab.cli import main
from featlab.runs.registry import list_experiments

# Experiments whose quick preset is a smoke test judging no claims (their datasets cannot be shipped): their
# controls run at the paper preset on tiny files in the real formats, at toy size (see CONTROL_INPUTS).
# mm-phase's λ-endpoints control trains the whole quick map (minutes here); its claims' other sanity control
# (untrained) runs in the default suite, this one with -m slow.
# mm-multiview's λ ∈ {0, 1} and mm-spurious-digits' λ = 1 became sanity controls (issue 46): at quick they train
# the all-pairs losses / 15 small CNNs for minutes, so they run with -m slow too
SLOW = {("mm-phase", "lambda-endpoints"), ("mm-multiview", "lambda-endpoints"), ("mm-spurious-digits", "lambda-one")}
CONTROLS = [pytest.param(e.id, c.name, id=f"{e.id}:{c.name}",
                         marks=[pytest.mark.slow] if (e.id, c.name) in SLOW else [])
            for e in list_experiments() for c in e.controls if c.kind == "sanity"]


def control_inputs(exp_id, tmp_path, monkeypatch):
    """(preset, overrides) for running ``exp_id``'s controls in the test suite."""
    from test_img_data import make_cifar, make_cifar100, make_mnist

    toy_img = dict(seeds=1, epochs=1, width=2, batch_size=10, device="cpu")
    if exp_id in ("fa-resnet-mnist", "mm-spurious-fmnist", "fa-resnet-fmnist"):
        make_mnist(tmp_path, monkeypatch, "mnist" if "mnist" in exp_id and "fmnist" not in exp_id
                   else "fashionmnist", n=(40, 20))
    elif exp_id in ("fa-resnet-cifar10", "mm-spurious-cifar10"):
        make_cifar(tmp_path, monkeypatch)
    elif exp_id == "mm-spurious-cifar100":
        make_cifar100(tmp_path, monkeypatch)
    else:
        return "quick", {}
    extra = (dict(n_attack=4, pgd_steps=2, apgd_steps=2, apgd_targets=1, square_queries=2, ddn_steps=2, fmn_steps=2,
                  alma_steps=2, min_norm_starts=1)
             if exp_id.startswith("fa-") else {})
    if exp_id == "fa-resnet-fmnist":  # no paper preset (the paper did not run FashionMNIST): its real-data one
        return "cpu-real", dict(toy_img, data_root=str(tmp_path), train_subset=None, **extra)
    return "paper", dict(toy_img, data_root=str(tmp_path), **extra)


@pytest.mark.parametrize("exp_id,name", CONTROLS)
def test_no_targeted_claim_holds_under_the_sanity_control(exp_id, name, out, tmp_path, monkeypatch):
    preset, kw = control_inputs(exp_id, tmp_path, monkeypatch)
    rec = featlab.run(exp_id, preset, out=out, control=name, quiet=True, **kw)
    assert rec.ok and rec.summary["control"]["name"] == name
    targets = set(rec.summary["control"]["claims"])
    judged = {c["id"] for c in rec.claims}
    assert judged == targets, f"the control {name} of {exp_id} did not judge {sorted(targets - judged)}"
    held = [c["id"] for c in rec.claims if c["holds"]]
    assert held == [], f"claims that hold under the control {name} of {exp_id} cannot fail: {held}"


def test_control_flag_runs_the_control_and_says_so(out, capsys):
    tiny = ["seeds=1", "k=4", "d=64", "n=80", "n_test=40", "radii=[0,2,4]", "pgd_steps=2", "thm46_starts=2",
            "thm46_steps=2", "long_T=20"]
    code = main(["run", "fa-synthetic", "--control-name", "untrained", "--out", str(out), *tiny])
    text = capsys.readouterr().out
    assert "control 'untrained' (T = 0" in text and "claims hold; none may" in text
    assert code == 0  # no claim held: the control did its job
    rec = featlab.run("fa-synthetic", out=out, control=True, **dict(a.split("=", 1) for a in tiny[:3]),
                      n=80, n_test=40, radii=[0, 2, 4], pgd_steps=2, thm46_starts=2, thm46_steps=2, long_T=20)
    assert rec.config["T"] == 0 and rec.skipped


def test_control_cannot_be_overridden_away(out):
    rec = featlab.run("fa-synthetic", out=out, control=True, T=50, seeds=1, k=4, d=64, n=80, n_test=40,
                      radii=[0, 2], pgd_steps=2, thm46_starts=2, thm46_steps=2, long_T=0)
    assert rec.config["T"] == 0


def test_unknown_control_is_a_user_error(capsys, out):
    assert main(["run", "fa-synthetic", "--control-name", "nope", "--out", str(out)]) == 2
    assert "has no control 'nope'" in capsys.readouterr().err
