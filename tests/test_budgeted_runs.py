"""Runs that advance call by call (featlab.runs.units) and carry between machines (featlab.runs.pack): a tiny image
table stopped by its budget after every unit and resumed gives the record an uninterrupted run gives; a pack
round-trips a runs folder; a damaged or foreign pack or unit is refused."""

from __future__ import annotations

import json
import tarfile

import pandas as pd
import pytest

import featlab
from featlab.cli import main
from featlab.errors import ConfigError
from featlab.runs.pack import PackError, pack, pack_files, unpack
from featlab.runs.units import BudgetReached, parse_budget

pytestmark = pytest.mark.usefixtures("one_thread")

EXP = "mm-spurious-digits"
TINY = dict(seeds=2, epochs=1, width=2, batch_size=200, methods=["erm", "midpoint"])  # 4 units


def _same_record(a, b) -> None:
    """Equal records but for the clock (images/s, elapsed time)."""
    def numbers(rec):
        return rec.metrics[~rec.metrics.metric.str.endswith("images_per_s")].reset_index(drop=True)

    pd.testing.assert_frame_equal(numbers(a), numbers(b))
    for key in ("metrics", "claims", "config", "status", "run_id"):
        assert a.summary[key] == b.summary[key], key


def _advance(out, budget=0.0):
    """One budgeted call: the record when it completes, else the number of units done."""
    try:
        return featlab.run(EXP, out=out, quiet=True, budget_s=budget, **TINY)
    except BudgetReached as stop:
        assert stop.total == 4
        return stop.done


def test_interrupted_three_times_equals_uninterrupted(tmp_path):
    whole = featlab.run(EXP, out=tmp_path / "whole", quiet=True, **TINY)
    steps = [_advance(tmp_path / "cut") for _ in range(4)]
    assert steps[:3] == [1, 2, 3]  # a zero budget: each call computes one unit (every call advances)
    _same_record(whole, steps[3])
    assert not (tmp_path / "cut" / EXP / ".units").exists()  # the record holds the units now
    assert not (tmp_path / "whole" / EXP / ".units").exists()


def test_worker_processes_give_the_same_record(tmp_path):
    whole = featlab.run(EXP, out=tmp_path / "whole", quiet=True, **TINY)
    _same_record(whole, featlab.run(EXP, out=tmp_path / "two", quiet=True, workers=2, **TINY))
    assert not list((tmp_path / "two" / EXP).glob(".worker-*"))  # the workers' scratch folders are gone


def test_pack_carries_units_to_another_folder(tmp_path):
    whole = featlab.run(EXP, out=tmp_path / "whole", quiet=True, **TINY)
    assert _advance(tmp_path / "a") == 1 and _advance(tmp_path / "a") == 2
    assert main(["pack", str(tmp_path / "a"), str(tmp_path / "p.tgz")]) == 0
    assert all("/.units/" in f.as_posix() for f in pack_files(tmp_path / "a"))  # no checkpoint travels
    assert main(["unpack", str(tmp_path / "p.tgz"), str(tmp_path / "b")]) == 0
    assert _advance(tmp_path / "b", budget=None) is not None  # the rest, on the "other machine"
    _same_record(whole, featlab.run(EXP, out=tmp_path / "b", quiet=True, **TINY))
    # a complete record round-trips too, byte for byte
    pack(tmp_path / "b", tmp_path / "q.tgz")
    assert unpack(tmp_path / "q.tgz", tmp_path / "c") == (len(pack_files(tmp_path / "b")), 0)
    assert unpack(tmp_path / "q.tgz", tmp_path / "c") == (0, len(pack_files(tmp_path / "b")))  # idempotent
    carried = featlab.run(EXP, out=tmp_path / "c", quiet=True, **TINY)
    assert carried.skipped  # the carried record verifies (its files' hashes) and is reused, not retrained
    _same_record(whole, carried)


def test_damaged_and_foreign_packs_are_refused(tmp_path, capsys):
    (tmp_path / "runs" / EXP / ".units" / "abc").mkdir(parents=True)
    (tmp_path / "runs" / EXP / ".units" / "abc" / "erm-seed0.json").write_text("{}")
    pack(tmp_path / "runs", tmp_path / "p.tgz")
    raw = (tmp_path / "p.tgz").read_bytes()
    (tmp_path / "cut.tgz").write_bytes(raw[: len(raw) // 2])
    foreign = tmp_path / "foreign.tgz"
    with tarfile.open(foreign, "w:gz") as tar:
        tar.add(tmp_path / "runs" / EXP / ".units" / "abc" / "erm-seed0.json", arcname="x/y.json")
    for bad in ("cut.tgz", "foreign.tgz"):
        assert main(["unpack", str(tmp_path / bad), str(tmp_path / "dst")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "featlab unpack" in err
    assert not (tmp_path / "dst").exists()  # nothing written
    # a file there with other bytes: refused, nothing overwritten
    (tmp_path / "runs" / EXP / ".units" / "abc" / "erm-seed0.json").write_text('{"other": 1}')
    with pytest.raises(PackError, match="other content"):
        unpack(tmp_path / "p.tgz", tmp_path / "runs")


def test_a_tampered_unit_is_computed_again(tmp_path, capsys):
    assert _advance(tmp_path) == 1
    (unit,) = (tmp_path / EXP / ".units").glob("*/*.json")
    doc = json.loads(unit.read_text())
    doc["results"]["train_acc"] = 1.0  # its hash no longer matches
    unit.write_text(json.dumps(doc))
    assert _advance(tmp_path) == 1  # recomputed (that call's one unit), not trusted
    assert "not used" in capsys.readouterr().err
    assert json.loads(unit.read_text())["results"]["train_acc"] != 1.0


def test_budget_values():
    assert parse_budget("540s") == 540 and parse_budget("9m") == 540 and parse_budget("1.5h") == 5400
    assert parse_budget("120") == 120 and parse_budget(None) is None
    with pytest.raises(ConfigError, match="--budget"):
        parse_budget("ten minutes")


def test_cli_budget_exit_code(tmp_path, capsys):
    args = ["run", EXP, "--out", str(tmp_path), "--budget", "0s", "seeds=2", "epochs=1", "width=2",
            "batch_size=200", "methods=[erm,midpoint]"]
    assert main(args) == 3
    assert "1 of 4 units done" in capsys.readouterr().err
    assert main([*args[:4], "--budget", "soon"]) == 2


def test_the_published_gpu_share_resumes_with_this_code():
    """docs/results/gpu-paper's pack reads back whole, and its units belong to the paper preset's run id today (a
    change to the preset's fields would orphan them: this test then says so)."""
    from pathlib import Path

    from featlab.runs.pack import read_pack
    from featlab.runs.runner import resolve_config

    pack_file = Path(__file__).parents[1] / "docs/results/gpu-paper/mm-spurious-fmnist-paper.pack.tgz"
    blobs = read_pack(pack_file)
    exp, cfg = resolve_config("mm-spurious-fmnist", "paper", overrides={"device": "cuda"})
    run_id = cfg.digest(exp.id, "cuda")
    units = [json.loads(v) for k, v in blobs.items() if "/.units/" in k]
    assert len(units) >= 5 and {u["run_id"] for u in units} == {run_id}
    assert all(len(u["results"]["curve"]) == 100 for u in units)  # every kept unit trained its 100 epochs
