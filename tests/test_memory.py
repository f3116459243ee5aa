"""Memory before it is allocated: every experiment refuses an impossible size in one line (exit 2) before any
work, its quick and paper presets fit a 24 GiB machine, and an allocation failure that still happens becomes one
line and a failed run record, never a traceback."""

from __future__ import annotations

import json

import pytest
import torch

from featlab.cli import main
from featlab.runs import runner, timing
from featlab.runs.registry import get_experiment, list_experiments
from featlab.runs.resources import is_out_of_memory, lower_bound, memory_fields, tried_bytes

BUDGET = 24 * 2**30  # a fixed machine: the tests never read this one's free memory

# the size field a user would blow up, per experiment, and an absurd value of it
HUGE = {
    "fa-synthetic": ("n", 10**9), "fa-ablation-n": ("n", 10**9), "fa-ablation-lr": ("n", 10**9),
    "fa-ablation-init": ("n", 10**9), "fa-ablation-snr": ("n", 10**9), "fa-ablation-cosine": ("n", 10**9),
    "fa-resnet-digits": ("width", 10**8), "fa-resnet-mnist": ("width", 10**8), "fa-resnet-cifar10": ("width", 10**8),
    "fa-resnet-fmnist": ("width", 10**8),
    "fa-embeddings": ("width", 6 * 10**9), "fa-phase": ("n", 10**9),
    "mm-multiview": ("N", 3 * 10**8), "mm-linear": ("N", 10**8), "mm-spurious-digits": ("width", 10**8),
    "mm-spurious-fmnist": ("width", 10**8), "mm-spurious-cifar10": ("width", 10**8),
    "mm-spurious-cifar100": ("width", 10**8), "mm-phase": ("n_per_class", 10**7),
    "rfa-theorem1": ("n", 10**9), "rfa-amplification": ("n", 10**9), "rfa-fig1": ("grid", 10**6),
    "rfa-fig2": ("d_high", 10**9), "rfa-phase": ("n", 10**9),
}
IDS = [e.id for e in list_experiments()]
# the demo presets that were called "paper" before issue 32 (the papers did not run these experiments): checked too
FORMER_PAPER = {"fa-resnet-digits": "cpu-full", "fa-phase": "full-grid", "mm-multiview": "cpu-long",
                "mm-linear": "extended", "mm-spurious-digits": "cpu-full", "mm-phase": "full-grid",
                "rfa-theorem1": "app-e", "rfa-amplification": "demo", "rfa-phase": "full-grid"}


@pytest.fixture
def budget(monkeypatch):
    monkeypatch.setattr(runner, "available_memory", lambda device: float(BUDGET))
    # a long preset's steps are timed before it runs (featlab.runs.timing): here at its lower bound, never measured
    monkeypatch.setattr(timing, "measure", lambda e, cfg, d: timing.Timing(lower_bound(cfg.estimate()), 0.0, 0, 0))


def test_every_experiment_has_an_absurd_size_here():
    assert sorted(set(IDS) - set(HUGE)) == [], "add the new experiment's size field to HUGE"


@pytest.mark.parametrize("exp_id", IDS)
def test_an_absurd_size_is_refused_in_one_line_before_any_work(exp_id, budget, tmp_path, capsys, monkeypatch):
    field, value = HUGE[exp_id]
    monkeypatch.setattr(get_experiment(exp_id), "fn", lambda ctx: pytest.fail("the run started"))
    # --preset quick named: an experiment named after a dataset refuses its digits smoke preset when only implied
    code = main(["run", exp_id, "--preset", "quick", f"{field}={value}", "--out", str(tmp_path / "runs")])
    err = capsys.readouterr().err
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("featlab: error:"), err
    assert f"'{field}'" in lines[0] and ("memory" in lines[0] or "days" in lines[0]), lines[0]
    assert not list((tmp_path / "runs").glob(f"{exp_id}/*")), "nothing may be written"


def test_the_issue_commands_are_refused_for_memory(budget, tmp_path, capsys):
    for argv, field in ((["mm-multiview", "N=300000000"], "'N' (300000000)"),
                        (["mm-spurious-digits", "width=100000000"], "'width' (100000000)")):
        assert main(["run", *argv, "--out", str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert "of memory" in err and "is available" in err and field in err, err


@pytest.mark.parametrize("exp_id", IDS)
def test_quick_and_paper_presets_fit_a_24_gib_machine(exp_id, budget):
    exp = get_experiment(exp_id)
    for preset in exp.presets:
        cfg = runner.resolve_config(exp_id, preset)[1]
        needs = cfg.estimate()
        if preset in ("quick", "paper", FORMER_PAPER.get(exp_id)):
            assert 0 < sum(n.bytes for n in needs) < BUDGET, (preset, [n.what for n in needs])
            runner.check_resources(exp_id, cfg, quiet=True, device=torch.device("cpu"))  # no refusal
        named = {f for n in needs for f in n.fields}
        assert named <= set(exp.config.model_fields), f"{preset}: names no field of the config: {named}"


def test_a_larger_size_needs_more_memory(budget):
    """The estimate follows its size field (a refusal is not a constant)."""
    for exp_id, (field, _) in HUGE.items():
        cfg = runner.resolve_config(exp_id, "quick")[1]
        bigger = cfg.model_copy(update={field: getattr(cfg, field) * 100})
        assert sum(n.bytes for n in bigger.estimate()) > sum(n.bytes for n in cfg.estimate()), exp_id


def test_a_gpu_run_checks_host_draws_against_host_memory_and_tensors_against_the_gpu(monkeypatch):
    """On a GPU the data are drawn on the host first (host memory) and every tensor ends on the device (GPU memory):
    each is checked against its own free space, and the refusal says which."""
    from featlab.config import ConfigError

    cfg = runner.resolve_config("fa-synthetic", "quick", overrides={"n": 10**7})[1]
    data = sum(n.bytes for n in cfg.estimate() if n.host)
    assert 0 < data <= sum(n.bytes for n in cfg.estimate())
    cuda = torch.device("cuda")
    for host, gpu, words in ((data / 2, data * 10, "of memory"), (data * 10, data / 2, "of GPU memory")):
        monkeypatch.setattr(runner, "available_memory", lambda d, h=host, g=gpu: g if d.type == "cuda" else h)
        with pytest.raises(ConfigError, match=words):
            runner.check_resources("fa-synthetic", cfg, quiet=True, device=cuda)
    monkeypatch.setattr(runner, "available_memory", lambda d: data * 10)
    runner.check_resources("fa-synthetic", cfg, quiet=True, device=cuda)  # both fit: no refusal


# ------------------------------------------------------------------------------------------ allocation failures
CPU_OOM = RuntimeError("[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: "
                       "you tried to allocate 48000000000 bytes. Error code 12 (Cannot allocate memory)")
ERRORS = {"cpu": CPU_OOM, "numpy": MemoryError("Unable to allocate 44.7 GiB for an array"),
          "cuda": torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")}


def test_allocation_failures_are_recognised():
    assert all(is_out_of_memory(e) for e in ERRORS.values())
    assert not is_out_of_memory(RuntimeError("mat1 and mat2 shapes cannot be multiplied"))
    assert tried_bytes(CPU_OOM) == 48e9 and tried_bytes(ERRORS["cuda"]) is None


def _tiny_run_raising(monkeypatch, err: BaseException) -> list[str]:
    """rfa-fig1 at its tiny size, its data drawing made to fail the way an allocator does."""
    from featlab.papers.feature_amplification import figures

    def fail(*a, **k):
        raise err

    monkeypatch.setattr(figures, "make_dist", fail)
    tiny = get_experiment("rfa-fig1").tiny or {}
    return [f"{k}={json.dumps(v)}" for k, v in tiny.items()]


@pytest.mark.parametrize("kind", list(ERRORS))
def test_an_allocation_failure_is_one_line_and_a_failed_record(kind, tmp_path, capsys, monkeypatch):
    words = _tiny_run_raising(monkeypatch, ERRORS[kind])
    code = main(["run", "rfa-fig1", *words, "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "rfa-fig1 ran out of memory" in lines[0] and "Traceback" not in err, err
    cfg = runner.resolve_config("rfa-fig1", overrides=get_experiment("rfa-fig1").tiny)[1]
    assert f"lower '{memory_fields(cfg)[0]}'" in lines[0], lines[0]  # the fields of the biggest term of the estimate
    if kind == "cpu":
        assert "44.7 GiB" in lines[0]  # the failed allocation's size, from the allocator's message
    summaries = list(tmp_path.glob("rfa-fig1/*/summary.json"))
    assert len(summaries) == 1, "the failed run is recorded"
    summary = json.loads(summaries[0].read_text())
    assert summary["status"] == "failed" and "ran out of memory" in summary["message"]
    assert str(summaries[0].parent) in lines[0]


def test_a_failed_run_is_redone_and_other_errors_keep_their_traceback(tmp_path, capsys, monkeypatch):
    words = _tiny_run_raising(monkeypatch, CPU_OOM)
    assert main(["run", "rfa-fig1", *words, "--out", str(tmp_path)]) == 2
    capsys.readouterr()
    words = _tiny_run_raising(monkeypatch, RuntimeError("mat1 and mat2 shapes cannot be multiplied"))
    with pytest.raises(RuntimeError, match="shapes"):  # not a failed record: a bug, so the run is tried again
        main(["run", "rfa-fig1", *words, "--out", str(tmp_path)])
