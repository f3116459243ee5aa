"""Estimates that measure: the meter's shortened loops (featlab.meter), the timing of an experiment's own steps and
its cache (featlab.runs.timing), and the estimate against the run it estimates, as a ratio."""

from __future__ import annotations

import contextlib
import tempfile
import time
from pathlib import Path

import pytest
import torch

import featlab
from featlab import meter
from featlab.runs import timing
from featlab.runs.runner import resolve_config

STEP = 0.002  # seconds of one sleeping iteration: sleep is wall time, whatever else the machine runs


@pytest.fixture(autouse=True)
def cache_here(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("FEATLAB_CACHE_DIR", raising=False)


@pytest.fixture
def no_short_loops(monkeypatch):
    monkeypatch.setattr(meter, "SHORT_S", 0.0)  # every loop is cut after its budget, however short


def test_outside_metering_the_loops_are_plain():
    assert list(meter.steps(4)) == [0, 1, 2, 3] and list(meter.steps(5, 2)) == [2, 3, 4]
    assert list(meter.each(iter("abc"), 3)) == ["a", "b", "c"]
    with meter.every(10):
        pass
    assert not meter.metering_now()


def test_a_long_loop_runs_a_few_steps_and_the_meter_adds_the_rest(no_short_loops):
    done = []
    with meter.metering() as m:
        for i in meter.steps(100):
            time.sleep(STEP)
            done.append(i)
    assert done == [0, 1, 2] and m.loops == 1 and m.iterations == 3
    assert 0.5 < m.extra / (97 * STEP) < 3


def test_a_loop_inside_a_loop_is_scaled_first(no_short_loops):
    with meter.metering() as m:
        for _ in meter.steps(10):
            for _ in meter.steps(20):
                time.sleep(STEP)
    assert m.iterations == 3 + 3 * 3
    assert 0.5 < (m.extra + 9 * STEP) / (200 * STEP) < 3  # 9 inner steps ran; 200 in the whole run


def test_a_block_at_a_cadence_is_scaled_to_its_count(no_short_loops):
    with meter.metering() as m:
        for step in meter.steps(100):
            if step % 10 == 0:
                with meter.every(10):
                    time.sleep(10 * STEP)
    assert 0.5 < (m.extra + 10 * STEP) / (100 * STEP) < 3  # 10 probes; the steps themselves cost nothing


def test_a_loop_its_caller_ends_adds_nothing(no_short_loops):
    with meter.metering() as m:
        for step in meter.steps(100):
            if step == 1:
                break
    assert m.extra == 0.0


def test_a_short_loop_runs_to_its_end():
    with meter.metering() as m:
        done = list(meter.steps(30))
    assert len(done) == 30 and m.extra == 0.0


def test_image_training_times_its_tests_and_scales_them_to_eval_every(no_short_loops, one_thread, monkeypatch):
    """A test every 10 epochs, none among the 3 a timing runs: the timing tests at each of them anyway (the history
    ends on a test, as a run's does) and counts the test 3 times, as the run of 30 epochs does. CPU seconds at one
    thread, as below; the 3 tests (a fixed product, repeated) cost about twice the 480 steps, so that a timing
    without them is off by 2.5×."""
    from torch import nn

    from featlab.train.image_trainer import FitSpec, fit

    monkeypatch.setattr(time, "perf_counter", time.process_time)
    spec, a = FitSpec(epochs=30, batch_size=64, eval_every=10), torch.randn(256, 256)
    x, y = torch.randn(1024, 64), torch.arange(1024) % 2  # 16 batches an epoch: the timing runs 3 of them

    def train(**kw):
        model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 2))
        return fit(model, lambda idx, g: (x[idx], y[idx]), len(x), spec, device=torch.device("cpu"), **kw)

    def evaluate(model):
        for _ in range(1000):
            a @ a
        return {"acc": 1.0}

    train()  # the warm-ups (the optimizer's first steps) paid before either clock runs
    t0 = time.perf_counter()
    assert [h["epoch"] for h in train(evaluate=evaluate).history if "acc" in h] == [10, 20, 30]
    run = time.perf_counter() - t0
    with meter.metering() as m:
        t0 = time.perf_counter()
        res = train(evaluate=evaluate)
        est = time.perf_counter() - t0 + m.extra
    assert [h["epoch"] for h in res.history if "acc" in h] == [1, 2, 3]
    assert 0.5 < est / run < 2, (est, run)


def test_a_timing_is_cached_per_machine_code_and_config(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(timing, "measure", lambda e, c, d, *limit: calls.append(c) or timing.Timing(12.0, 1.0, 2, 6))
    exp, cfg = resolve_config("rfa-fig1", "quick")
    cpu = torch.device("cpu")
    first, again = timing.timed(exp, cfg, cpu), timing.timed(exp, cfg, cpu)
    assert len(calls) == 1 and not first.cached and again.cached and again.seconds == 12.0
    assert "cached" in again.how() and "timed 6 steps here" in first.how()
    assert timing.cache_path().is_relative_to(tmp_path / "cache" / "featlab")
    timing.timed(exp, resolve_config("rfa-fig1", "quick", overrides={"seeds": 2})[1], cpu)
    assert len(calls) == 2  # another config: timed afresh
    monkeypatch.setattr(timing, "_source_digest", lambda *a: "other code")
    timing.timed(exp, cfg, cpu)
    assert len(calls) == 3  # other code: timed afresh


def test_a_capped_timing_of_many_seeds_is_retimed_at_one_and_two_and_extended(monkeypatch):
    """A run of S seeds whose timing hits the cap is timed at 1 and 2 seeds and extended linearly (T1 + (S − 1)·
    (T2 − T1)), and says so; if a smaller timing hits the cap too, the lower bound stands, labelled as one."""
    calls = []

    def fake(e, c, d, limit_s=None, capped_from=3):  # 10 s of fixed work and 5 s a seed; the cap stops 3 seeds+
        calls.append(c.seeds)
        return timing.Timing(10.0 + 5.0 * c.seeds, 1.0, 1, 3, stopped=timing.CAPPED if c.seeds >= capped_from else "")

    monkeypatch.setattr(timing, "measure", fake)
    exp, cfg = resolve_config("mm-spurious-digits", "quick", overrides={"seeds": 5})
    t = timing.timed(exp, cfg, torch.device("cpu"))
    assert calls == [5, 1, 2] and t.seconds == 10.0 + 5.0 * 5 and not t.stopped
    assert "at 1 and 2 seeds, extended to 5" in t.how() and "lower bound" not in t.how()
    assert timing.cached(exp, cfg, torch.device("cpu")).how().count("extended to 5") == 1  # the cache keeps it
    for capped_from, tried in ((2, [4, 1, 2]), (1, [4, 1])):  # a capped one-seed timing is not retimed at two
        calls.clear()
        monkeypatch.setattr(timing, "measure", lambda e, c, d, *limit, f=capped_from: fake(e, c, d, capped_from=f))
        exp, cfg = resolve_config("mm-spurious-digits", "quick", overrides={"seeds": 4, "epochs": 10 + capped_from})
        t = timing.timed(exp, cfg, torch.device("cpu"))
        assert calls == tried and t.stopped == timing.CAPPED and "a lower bound" in t.how() and t.seconds == 30.0


@pytest.mark.parametrize("exp_id, overrides", [("fa-ablation-snr", {}), ("rfa-theorem1", {}),
                                                ("mm-spurious-digits", {"seeds": 1, "epochs": 10})])
def test_the_estimate_is_within_2x_of_the_run(exp_id, overrides, no_short_loops, one_thread, monkeypatch):
    """The timed estimate of a quick run (every loop cut after its first steps, the rest added by the meter)
    against that run's own time, as a ratio. Both clocks count this process's CPU seconds, so that what else the
    machine runs (a test worker beside this one) decides nothing; at one torch thread, since a second one spinning
    while it waits for a busy core counts CPU seconds that do no work (ratios 0.3-1.8 at two). mm-spurious-digits
    (fewer seeds and epochs, to be quick) has loops in loops: epochs of batches."""
    monkeypatch.setattr(time, "perf_counter", time.process_time)
    exp, cfg = resolve_config(exp_id, "quick", overrides=overrides)
    est = timing.measure(exp, cfg, torch.device("cpu"))
    assert est.iterations > 0
    with tempfile.TemporaryDirectory() as out:
        rec = featlab.run(exp_id, "quick", out=Path(out), quiet=True, **overrides)
    ratio = est.seconds / rec.summary["elapsed_s"]
    assert 0.5 < ratio < 2.0, (exp_id, est, rec.summary["elapsed_s"])


@pytest.fixture
def meters(monkeypatch):
    """The meters of the timings this test makes (featlab.meter.metering, spied on)."""
    made, real = [], meter.metering

    @contextlib.contextmanager
    def spy(*args, **kwargs):
        with real(*args, **kwargs) as m:
            made.append(m)
            yield m

    monkeypatch.setattr(meter, "metering", spy)
    return made


def _metered_files(m: meter.Meter) -> set[str]:
    return {Path(site[0]).name for site in m.sites if isinstance(site, tuple)}


def test_the_attacks_and_thm46_ascent_are_metered(meters, one_thread):
    """fa-synthetic's shortened run meters its minimum-norm DDN, its PGD, Thm 4.6's ascent and the exact solver's
    replicas (these ran at full size before: its shortened run took longer than its quick run's half), and dense
    PGD (the image experiments' attack) is metered too."""
    exp, cfg = resolve_config("fa-synthetic", "quick", overrides=featlab.get_experiment("fa-synthetic").tiny)
    timing.measure(exp, cfg, torch.device("cpu"))
    assert {"subspace_min_norm.py", "subspace.py", "measures.py", "exact.py", "loop.py"} <= _metered_files(meters[-1])
    from featlab.probes.robustness import pgd_l2
    x, y = torch.randn(2, 5, 3), torch.ones(2, 5)
    with meter.metering() as m:
        pgd_l2(lambda z: z.sum(-1) + 10, x, y, 0.1, steps=50)
    assert _metered_files(m) == {"robustness.py"} and m.iterations <= 51


def test_a_timed_run_draws_a_figure_only_while_its_cost_is_unknown_here(meters, one_thread):
    """The first timing of an experiment on this machine draws its figure and keeps the cost (per machine, any
    config or code version); the next one draws none and adds that cost where the figure would have been drawn."""
    exp, cfg = resolve_config("rfa-fig1", "quick", overrides=featlab.get_experiment("rfa-fig1").tiny)
    first = timing.measure(exp, cfg, torch.device("cpu"))
    drawn = meters[-1].figures_timed
    assert drawn and meters[-1].figures_skipped == 0 and timing.figure_costs(exp) == drawn
    again = timing.measure(exp, cfg.model_copy(update={"seed": cfg.seed + 1}), torch.device("cpu"))
    assert meters[-1].figures_timed == {} and meters[-1].figures_skipped == len(drawn)
    assert again.seconds >= sum(drawn.values()) and 0.3 < again.seconds / first.seconds < 3
    with meter.metering(figure_s={"known": 7.0}) as m:
        assert not meter.figure("known", lambda: pytest.fail("a figure of known cost is drawn"))
    assert m.extra == 7.0
