"""Real images: the training subset of the CPU presets, and FashionMNIST's experiments end to end on the real files
(Debian's dataset-fashion-mnist; skipped where it is not installed) with the paper's numbers printed beside."""

import pytest

import featlab
from featlab.cli import main
from featlab.report.publish import publish
from featlab.runs.context import BESIDE_PAPER
from featlab.train.image_config import load_run_data

pytestmark = pytest.mark.usefixtures("one_thread")


class _Ctx:
    def __init__(self, **cfg):
        self.experiment_id = "mm-spurious-digits"
        self.cfg = featlab.get_experiment(self.experiment_id).config(**cfg)


def test_train_subset_is_class_stratified_and_the_same_every_time(capsys, tmp_path):
    full = load_run_data(_Ctx(dataset="digits"))
    a, b = load_run_data(_Ctx(dataset="digits", train_subset=500)), load_run_data(_Ctx(dataset="digits",
                                                                                        train_subset=500))
    assert len(a.y_train) == 500 and (a.x_train == b.x_train).all() and (a.y_test == full.y_test).all()
    assert len(load_run_data(_Ctx(dataset="digits", train_subset=7)).y_train) == 7  # exactly n, whatever n
    share, full_share = a.y_train.bincount() / 500, full.y_train.bincount() / len(full.y_train)
    assert (share - full_share).abs().max() < 0.01  # each class keeps its share
    rc = main(["run", "mm-spurious-digits", "--out", str(tmp_path / "runs"), "train_subset=5000", "epochs=1"])
    err = capsys.readouterr().err
    assert rc == 2 and "train_subset" in err and "1198" in err and err.count("\n") == 1


def test_mm_spurious_fmnist_cpu_real_on_the_real_images(real_fmnist, out, tmp_path):
    """The CPU preset judges the orderings, not Table 1's errors (its setting departs), and prints Table 1 beside
    its own errors; the published page gathers that table."""
    rec = featlab.run("mm-spurious-fmnist", "cpu-real", out=out, quiet=True, seeds=2, epochs=1, width=4,
                      train_subset=1000, batch_size=100)
    assert rec.ok and rec.config["dataset"] == "fashionmnist" and rec.config["judge_table1"] is False
    assert {c["id"] for c in rec.claims} == {"mm.mixup_below_erm", "mm.midpoint_below_erm"}
    beside = [n for n in rec.summary["notes"] if n.startswith(BESIDE_PAPER)]
    assert len(beside) == 1 and "16.55 ± 2" in beside[0] and "9.66 ± ?" in beside[0]
    erm = 100 * rec.summary["metrics"]["erm.test_err"]
    assert f"{erm:.2f}" in beside[0]
    assert any("not judged" in n and "departs" in n for n in rec.summary["notes"])
    publish(out, tmp_path / "results", preset="cpu-real")
    page = (tmp_path / "results" / "README.md").read_text()
    assert "## Beside the paper" in page and "16.55 ± 2" in page and "`mm-spurious-fmnist`" in page


def test_fa_resnet_fmnist_cpu_real_on_the_real_images(real_fmnist, out):
    rec = featlab.run("fa-resnet-fmnist", "cpu-real", out=out, quiet=True, seeds=1, epochs=1, width=4,
                      train_subset=1000, radii=[0, 0.4, 0.8], n_attack=40, pgd_steps=2, apgd_steps=2,
                      apgd_targets=1, square_queries=2, ddn_steps=2, fmn_steps=2, alma_steps=2, min_norm_starts=1,
                      check_points=10, coarse_arm=False)  # the coarse arm: tests/test_fa_fine_minus_coarse.py
    assert rec.ok and rec.config["dataset"] == "fashionmnist"
    assert {c["id"] for c in rec.claims} == {"fa.deep_kclass_more_robust", "fa.deep_kclass_above_every_radius"}
    m = rec.summary["metrics"]
    for h in ("binary", "multiclass"):
        assert 0 <= m[f"{h}.robust_acc@0.8"] <= m[f"{h}.robust_acc@0"] <= 1
    assert all(f.is_file() for f in rec.figures) and "fashionmnist" in rec.figures[0].name
