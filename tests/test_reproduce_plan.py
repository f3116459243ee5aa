"""``featlab reproduce --dry-run``: the plan — each experiment's estimated time (its own steps timed here, cached,
or a run measured here) and how it was made, what is skipped (missing data, needs a GPU) and why, with the estimate
it can make — printed before anything runs, and nothing else done."""

from __future__ import annotations

import re
import time

import pytest
import torch

from featlab.cli import main, reproduce
from featlab.errors import ConfigError
from featlab.runs import timing
from featlab.runs.registry import list_experiments
from featlab.runs.resources import lower_bound
from featlab.runs.runner import check_resources, resolve_config

FACTOR = 50.0  # a fixed machine: each run "timed" at 50× its lower bound, never measured (no test waits on it)


def fake_measure(exp, cfg, device, limit_s=None):
    return timing.Timing(FACTOR * lower_bound(cfg.estimate(), device.type), 0.01, 1, 3)


@pytest.fixture
def cpu_machine(monkeypatch, tmp_path):
    monkeypatch.setenv("FEATLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(timing, "measure", fake_measure)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def _rows(out: str) -> dict[str, str]:
    row = r"\s+([a-z0-9-]+)\s+\S+\s+(≈|≥|not timed)"  # a time only where one was measured
    return {m.group(1): line for line in out.splitlines() if (m := re.match(row, line))}


def test_dry_run_prints_the_paper_plan_and_runs_nothing(cpu_machine, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(reproduce, "run", lambda *a, **k: pytest.fail("a dry run ran an experiment"))
    out_dir = tmp_path / "runs"
    code = main(["reproduce", "all", "--preset", "paper", "--dry-run", "--out", str(out_dir),
                 f"data_root={tmp_path / 'no-data'}", f"embeddings={tmp_path / 'none.npz'}"])
    out = capsys.readouterr().out
    assert code == 0 and not out_dir.exists()
    rows = _rows(out)
    assert set(rows) == {e.id for e in list_experiments() if "paper" in e.presets}
    for exp_id in ("fa-resnet-cifar10", "mm-spurious-cifar10", "mm-spurious-fmnist"):  # the estimate it can make
        assert "skipped: needs the" in rows[exp_id] and "files" in rows[exp_id], rows[exp_id]
        assert "data missing" in rows[exp_id] and "scaled from its quick preset timed here" in rows[exp_id]
    assert "skipped: needs the embeddings file" in rows["fa-embeddings"]
    assert "skipped" not in rows["fa-synthetic"] and "skipped" not in rows["rfa-fig1"]
    assert "(timed 3 steps here in 0.0 s)" in rows["rfa-fig1"]
    assert "mm-multiview" not in rows  # no paper preset: the paper did not run it (its cpu-long preset is a demo)
    assert re.search(r"\n\s+mm-multiview\s+not run: no paper preset: the paper did not run it", out), out
    assert re.search(r"total ≈ .* for \d+ experiment runs?; \d+ skipped", out)
    main(["reproduce", "feature-amplification", "--preset", "paper", "--dry-run", "--out", str(out_dir)])
    assert "(cached: timed here before, 3 steps)" in _rows(capsys.readouterr().out)["rfa-fig1"]


def test_an_experiment_over_a_day_on_this_cpu_is_left_to_a_gpu(cpu_machine, capsys, monkeypatch):
    presets = {"mm-multiview": "cpu-long", "rfa-fig1": "paper"}
    exps = [e for e in list_experiments() if e.id in presets]
    todo = [(e, presets[e.id]) for e in exps]
    configs = [resolve_config(e.id, presets[e.id])[1] for e in exps]
    secs = {e.id: FACTOR * lower_bound(c.estimate()) for e, c in zip(exps, configs)}
    assert secs["mm-multiview"] > secs["rfa-fig1"]
    monkeypatch.setattr(reproduce, "GPU_S", (secs["mm-multiview"] + secs["rfa-fig1"]) / 2)  # between the two
    not_run: dict[str, str] = {}
    kept = reproduce.print_plan(todo, configs, not_run)
    out = capsys.readouterr().out
    assert [e.id for e, _ in kept] == ["rfa-fig1"]
    assert "needs a GPU" in _rows(out)["mm-multiview"] and "needs a GPU" in not_run["mm-multiview"]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # with a GPU nothing is left out
    assert len(reproduce.print_plan(todo, configs, {})) == 2


def test_quick_plan_skips_nothing(cpu_machine, tmp_path, capsys):
    assert main(["reproduce", "feature-amplification", "--estimate", "--out", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert "skipped" not in out and len(_rows(out)) == len(list_experiments("feature-amplification"))


def test_a_reproduction_times_only_what_might_need_a_gpu(cpu_machine, capsys, monkeypatch):
    """Before a real reproduction the plan decides what needs a GPU: a run whose lower bound is short cannot take a
    day, so it is not timed (its line says so); the dry run times it."""
    monkeypatch.setattr(timing, "measure", lambda *a: pytest.fail("a short run was timed"))
    e = next(x for x in list_experiments() if x.id == "rfa-fig1")
    reproduce.print_plan([(e, "quick")], [resolve_config(e.id, "quick")[1]], {}, measure=None)
    out = capsys.readouterr().out
    line = _rows(out)["rfa-fig1"]
    assert "not timed: --dry-run times it; a lower bound" in line and "≈" not in line  # no time it does not have
    assert "total: not timed (0 of 1 experiment run timed here" in out and "total ≈" not in out


def test_a_run_measured_here_gives_or_scales_the_estimate(cpu_machine, tmp_path, capsys, monkeypatch):
    """A run of the same config under OUT is the estimate; a run of another preset scales the lower bound of one
    that cannot be timed here (its data missing), and the plan says which."""
    import featlab

    out = tmp_path / "runs"
    rec = featlab.run("fa-embeddings", "quick", out=out, quiet=True, seeds=1)
    e = next(x for x in list_experiments() if x.id == "fa-embeddings")
    quick = resolve_config(e.id, "quick", overrides={"seeds": 1})[1]
    monkeypatch.setattr(timing, "measure", lambda *a: pytest.fail("a run measured here was timed again"))
    reproduce.print_plan([(e, "quick")], [quick], {}, out)
    row = _rows(capsys.readouterr().out)["fa-embeddings"]
    assert f"measured: its quick run took {reproduce.duration(rec.summary['elapsed_s'])} here" in row, row
    paper = resolve_config(e.id, "paper", overrides={"embeddings": str(tmp_path / "none.npz")})[1]
    reproduce.print_plan([(e, "paper")], [paper], {}, out)
    row = _rows(capsys.readouterr().out)["fa-embeddings"]
    factor = rec.summary["elapsed_s"] / lower_bound(quick.estimate())
    assert "skipped: needs the embeddings file" in row and f"lower bound × {factor:.3g}, scaled from its quick run " \
           f"measured here" in row, row


def test_the_resource_check_times_a_long_run_and_warns_past_a_day(cpu_machine, capsys, monkeypatch):
    """A run whose lower bound is over ten minutes has its steps timed before it starts: past a day a warning, past
    a month a refusal, each naming the fields to lower."""
    _, cfg = resolve_config("mm-phase", "full-grid")
    assert timing.MEASURE_ABOVE_S < lower_bound(cfg.estimate()) < 86_400  # long enough to be timed
    monkeypatch.setattr(timing, "measure", lambda *a: timing.Timing(2 * 86_400.0, 1.0, 1, 3))
    check_resources("mm-phase", cfg)
    err = capsys.readouterr().err
    assert err.startswith("featlab: warning:") and "would take about 2 days on this cpu" in err, err
    _, cfg = resolve_config("mm-phase", "full-grid", overrides={"seed": 1})  # another config: not the cached one
    monkeypatch.setattr(timing, "measure", lambda *a: timing.Timing(40 * 86_400.0, 1.0, 1, 3))
    with pytest.raises(ConfigError, match="would take about 40 days on this cpu .*; lower '"):
        check_resources("mm-phase", cfg)


def test_a_smoke_preset_names_the_presets_that_give_a_result():
    import featlab

    assert featlab.get_experiment("fa-resnet-mnist").smoke_reason().endswith(
        "featlab run fa-resnet-mnist --preset paper")
    fmnist = featlab.get_experiment("fa-resnet-fmnist").smoke_reason()  # no paper preset: the real-data one
    assert "--preset cpu-real" in fmnist and "--preset paper" not in fmnist and "GPU" not in fmnist


def test_a_recorded_missing_data_reason_is_dropped_once_the_data_are_found(tmp_path, monkeypatch):
    """docs/results keeps reproduce's reasons; "needs the … files" stops being true when the files arrive."""
    import json

    import featlab
    from test_img_data import make_mnist

    root = tmp_path / "runs"
    root.mkdir()
    why = "not run here: needs the fashionmnist files under 'data/FashionMNIST/raw' (…)"
    (root / reproduce.NOT_RUN_FILE).write_text(json.dumps({"not_run": {"mm-spurious-fmnist": why}}))
    exp = featlab.get_experiment("mm-spurious-fmnist")
    monkeypatch.chdir(tmp_path)  # the paper preset reads ./data
    assert reproduce._not_run_reason(root, exp, "paper") == why  # still missing: the record stands
    make_mnist(tmp_path / "data", monkeypatch, "fashionmnist", n=(40, 20))
    now = reproduce._not_run_reason(root, exp, "paper")
    assert now != why and now.startswith("not run here yet: estimated") and "featlab run mm-spurious-fmnist" in now


def test_a_dry_run_shares_one_time_budget_and_times_no_more(cpu_machine, tmp_path, capsys, monkeypatch):
    """Each timing gets at most what is left of DRY_RUN_S; once it is spent the rest say "not timed" (no time
    printed for them), and what was timed is cached for the next dry run."""
    limits = []

    def slow(exp, cfg, device, limit_s=None):
        limits.append(limit_s)
        time.sleep(0.3)
        return timing.Timing(1.0, 0.3, 1, 3)

    monkeypatch.setattr(timing, "measure", slow)
    monkeypatch.setattr(timing, "DRY_RUN_S", 1.0)
    monkeypatch.setattr(timing, "MIN_SHARE_S", 0.2)
    main(["reproduce", "feature-amplification", "--dry-run", "--out", str(tmp_path / "o")])
    out = capsys.readouterr().out
    assert limits and all(lim <= 1.0 for lim in limits) and len(limits) < 5, limits
    assert "the dry run's time budget is spent" in out and "total: not timed" in out, out
    main(["reproduce", "feature-amplification", "--dry-run", "--out", str(tmp_path / "o")])
    assert len(limits) < 10 and "cached: timed here before" in capsys.readouterr().out
