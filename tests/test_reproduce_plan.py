"""``featlab reproduce --dry-run``: the plan — each experiment's estimated time from the measured matmul rate, what
is skipped (missing data, needs a GPU) and why — printed before anything runs, and nothing else done."""

from __future__ import annotations

import re

import pytest
import torch

import featlab
from featlab.cli import main, reproduce
from featlab.runs.registry import list_experiments
from featlab.runs.resources import matmul_rate, seconds
from featlab.runs.runner import resolve_config

RATE = 1e11  # a fixed machine: the plan's numbers never depend on this one's load


@pytest.fixture
def cpu_machine(monkeypatch):
    monkeypatch.setattr(reproduce, "matmul_rate", lambda: RATE)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def _rows(out: str) -> dict[str, str]:
    return {m.group(1): line for line in out.splitlines() if (m := re.match(r"\s+([a-z0-9-]+)\s+\S+\s+≈", line))}


def test_dry_run_prints_the_paper_plan_and_runs_nothing(cpu_machine, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(reproduce, "run", lambda *a, **k: pytest.fail("a dry run ran an experiment"))
    out_dir = tmp_path / "runs"
    code = main(["reproduce", "all", "--preset", "paper", "--dry-run", "--out", str(out_dir),
                 f"data_root={tmp_path / 'no-data'}", f"embeddings={tmp_path / 'none.npz'}"])
    out = capsys.readouterr().out
    assert code == 0 and not out_dir.exists()
    rows = _rows(out)
    assert set(rows) == {e.id for e in list_experiments() if "paper" in e.presets}
    for exp_id in ("fa-resnet-cifar10", "mm-spurious-cifar10", "mm-spurious-fmnist"):
        assert "skipped: needs the" in rows[exp_id] and "files" in rows[exp_id], rows[exp_id]
    assert "skipped: needs the embeddings file" in rows["fa-embeddings"]
    assert "skipped" not in rows["fa-synthetic"] and "skipped" not in rows["rfa-fig1"]
    assert "mm-multiview" not in rows  # no paper preset: the paper did not run it (its cpu-long preset is a demo)
    _, why = reproduce._plan([featlab.get_experiment("mm-multiview")], ["paper"])
    assert why["mm-multiview"].startswith("no paper preset: the paper did not run it")
    assert re.search(r"total ≈ .* for \d+ experiment run\(s\); \d+ skipped", out)


def test_an_experiment_over_a_day_on_this_cpu_is_left_to_a_gpu(cpu_machine, capsys, monkeypatch):
    presets = {"mm-multiview": "cpu-long", "rfa-fig1": "paper"}
    exps = [e for e in list_experiments() if e.id in presets]
    todo = [(e, presets[e.id]) for e in exps]
    configs = [resolve_config(e.id, presets[e.id])[1] for e in exps]
    secs = {e.id: seconds(c.estimate(), RATE) for e, c in zip(exps, configs)}
    assert secs["mm-multiview"] > secs["rfa-fig1"]
    monkeypatch.setattr(reproduce, "GPU_S", (secs["mm-multiview"] + secs["rfa-fig1"]) / 2)  # between the two
    not_run: dict[str, str] = {}
    kept = reproduce.print_plan(todo, configs, not_run)
    out = capsys.readouterr().out
    assert [e.id for e, _ in kept] == ["rfa-fig1"]
    assert "needs a GPU" in _rows(out)["mm-multiview"] and "needs a GPU" in not_run["mm-multiview"]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # with a GPU nothing is left out
    assert len(reproduce.print_plan(todo, configs, {})) == 2


def test_the_plan_scales_with_the_measured_rate():
    cfg = resolve_config("mm-multiview", "cpu-long")[1]
    slow, fast = seconds(cfg.estimate(), RATE), seconds(cfg.estimate(), 2 * RATE)
    assert 1.5 * fast < slow < 2 * fast  # the work halves, the per-step launch cost stays


def test_quick_plan_skips_nothing(cpu_machine, tmp_path, capsys):
    assert main(["reproduce", "feature-amplification", "--estimate", "--out", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert "skipped" not in out and len(_rows(out)) == len(list_experiments("feature-amplification"))


def test_the_matmul_rate_is_measured_quickly():
    rate = matmul_rate(0.02, 128)
    assert rate > 1e8  # any machine multiplies faster than 0.1 GFLOP/s


def test_a_run_measured_here_scales_the_estimate(cpu_machine, tmp_path, capsys):
    """The model's per-step costs are generic: an experiment's newest run under OUT (its time against the same
    model) scales its estimate, and the plan says so; without a run the model stands alone."""
    import featlab

    out = tmp_path / "runs"
    rec = featlab.run("rfa-fig1", "quick", out=out, quiet=True, seeds=1)
    e = next(x for x in list_experiments() if x.id == "rfa-fig1")
    cfg = resolve_config("rfa-fig1", "paper")[1]
    model = seconds(cfg.estimate(), RATE)
    reproduce.print_plan([(e, "paper")], [cfg], {}, out)
    row = _rows(capsys.readouterr().out)["rfa-fig1"]
    factor = rec.summary["elapsed_s"] / seconds(e.config(**rec.summary["config"]).estimate(), RATE)
    assert "its quick run took" in row and f"×{factor:.2g}" in row, row
    assert reproduce._calibration(featlab.runs.index.find_runs(out), e, RATE)[0] == pytest.approx(factor)
    reproduce.print_plan([(e, "paper")], [cfg], {}, tmp_path / "empty")  # no run there: the model alone
    assert "took" not in _rows(capsys.readouterr().out)["rfa-fig1"] and model > 0
