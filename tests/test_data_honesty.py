"""One resolver answers "where is dataset X" (featlab.data.images.locate) for `data check`, the loader, reproduce's
plan and reasons and the runs' estimates; a damaged copy anywhere on the search path is reported even when a good
one comes later (a folder or a looping link in a file's place included), `data check` exits 2 on one; and
`featlab run` never trains an experiment named after a dataset on 8×8 digits by default. Tiny fabricated IDX files."""

import os

import pytest

import featlab
from featlab.cli import main
from featlab.data import image_files, images
from featlab.runs.resources import missing_dataset
from test_img_data import make_mnist


@pytest.fixture
def good_and_bad(tmp_path, monkeypatch):
    """FashionMNIST: a damaged copy under $FEATLAB_DATA, a good one as the 'system copy' searched after it."""
    make_mnist(tmp_path / "good", monkeypatch, name="fashionmnist")
    make_mnist(tmp_path / "bad", monkeypatch, name="fashionmnist")
    bad = tmp_path / "bad" / "FashionMNIST" / "raw"
    (bad / "t10k-images-idx3-ubyte.gz").write_bytes(b"not the file")
    monkeypatch.setenv("FEATLAB_DATA", str(tmp_path / "bad"))
    good = tmp_path / "good" / "FashionMNIST" / "raw"
    monkeypatch.setattr(image_files, "SYSTEM_COPIES", {"fashionmnist": ("dataset-fashion-mnist", str(good))})
    return good, bad


def test_a_damaged_copy_is_reported_beside_the_good_one_found_later(good_and_bad, tmp_path, capsys):
    good, bad = good_and_bad
    loc = images.locate("fashionmnist", tmp_path / "empty")
    assert loc.status == "ok" and loc.found == str(good) and len(loc.bad) == 1 and str(bad) in loc.bad[0]
    assert len(images.load_images("fashionmnist", tmp_path / "empty").y_train) == 12  # the good copy is used
    assert main(["data", "check", "--root", str(tmp_path)]) == 2
    io = capsys.readouterr()
    assert "also a damaged copy" in io.out and "t10k-images-idx3-ubyte.gz: corrupt" in io.out
    assert io.err.count("\n") == 1 and "damaged dataset files for fashionmnist" in io.err


@pytest.mark.parametrize("how", ["folder", "loop"])
def test_a_folder_or_a_link_loop_in_a_files_place_is_damage_not_missing(tmp_path, monkeypatch, capsys, how):
    make_mnist(tmp_path, monkeypatch)
    f = tmp_path / "MNIST" / "raw" / "train-labels-idx1-ubyte.gz"
    f.unlink()
    f.mkdir() if how == "folder" else os.symlink(f.name, f)  # a link to itself: a loop
    loc = images.locate("mnist", tmp_path)
    assert loc.status == "corrupt" and "not a readable file" in loc.text()
    assert main(["data", "check", "--root", str(tmp_path)]) == 2
    capsys.readouterr()


def test_estimates_and_reasons_ask_the_same_resolver(good_and_bad, tmp_path, monkeypatch):
    assert missing_dataset("fashionmnist", str(tmp_path / "empty")) == ""
    reason = featlab.get_experiment("fa-resnet-fmnist").smoke_reason()
    assert "fashionmnist is found in" in reason and "needs its dataset" not in reason
    monkeypatch.setattr(image_files, "SYSTEM_COPIES", {})
    monkeypatch.delenv("FEATLAB_DATA")
    make_mnist(tmp_path / "root", monkeypatch, name="fashionmnist")
    (tmp_path / "root" / "FashionMNIST" / "raw" / "train-images-idx3-ubyte.gz").write_bytes(b"x")  # folder, bad file
    assert "needs the fashionmnist files" in missing_dataset("fashionmnist", str(tmp_path / "root"))
    assert "needs its dataset" in featlab.get_experiment("fa-resnet-fmnist").smoke_reason()


@pytest.mark.parametrize("exp", ["mm-spurious-fmnist", "mm-spurious-cifar10", "fa-resnet-fmnist", "fa-resnet-mnist"])
def test_an_experiment_named_after_a_dataset_never_trains_on_digits_by_default(exp, tmp_path, capsys):
    assert main(["run", exp, "--out", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pipeline smoke test on 8×8 digits" in err[0] and "--preset quick" in err[0], err
    assert "download" in err[0] or "apt-get install" in err[0]  # how to get the real files (none here)
    assert not (tmp_path / "runs").exists()


def test_a_sweep_of_such_an_experiment_is_refused_too(tmp_path, capsys):
    assert main(["sweep", "mm-spurious-cifar10", "seeds=1,2", "--out", str(tmp_path / "runs")]) == 2
    assert "pipeline smoke test on 8×8 digits" in capsys.readouterr().err and not (tmp_path / "runs").exists()


def test_named_presets_and_explicit_datasets_still_run():
    from featlab.cli.options import DEFAULT_PRESET, refuse_stand_in

    refuse_stand_in("mm-spurious-fmnist", "quick", {}, None)  # --preset quick typed: the smoke test, as asked
    refuse_stand_in("mm-spurious-fmnist", DEFAULT_PRESET, {"dataset": "digits"}, None)
    refuse_stand_in("mm-spurious-digits", DEFAULT_PRESET, {}, None)  # named for digits: its quick preset is digits


def test_the_report_asks_again_where_a_recorded_smoke_reasons_data_are(good_and_bad, tmp_path):
    from featlab.report.summary import live_reason

    exp = featlab.get_experiment("fa-resnet-fmnist")
    old = "not run here: needs its dataset; its quick preset is a pipeline smoke test; featlab run fa-resnet-fmnist"
    assert "fashionmnist is found in" in live_reason(exp, old)  # reproduce.json written before the data came
    assert live_reason(exp, "could not run: out of memory") == "could not run: out of memory"
