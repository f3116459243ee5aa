"""Device correctness without a GPU (the simulated device of featlab.devicecheck), and GPU-vs-CPU equality where a
GPU is present (``-m gpu``).

On a CPU-only machine the run device *is* the host, so a tensor on the wrong device cannot crash. Under
:class:`~featlab.devicecheck.SimulatedDevice` the run device is ``torch.device("cpu", 0)`` and host tensors are
marked: an op mixing the two, a run tensor reaching numpy, or a CPU generator drawing onto the run device is reported
with the file and line that made it. Every registered experiment runs under it at the ``tiny`` setting it declares,
and so does every control (at its own ``tiny`` sizes), in the common battery (tests/test_common_checks.py), so a new
experiment is covered without editing a test.
The crashes a real GPU found are planted back below: the check must report each one.
"""

from dataclasses import replace
from pathlib import Path

import matplotlib.figure
import numpy as np
import pytest
import torch

import featlab
from featlab import placement
from featlab.devicecheck import RUN, SimulatedDevice, check_experiment, is_host
from featlab.nn.twolayer import EnsembleTwoLayer, signed_readout
from featlab.probes.robustness import pgd_l2, robust_masks
from featlab.train.loop import train

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny runs: one thread is fastest (tests/conftest.py)

ROOT = Path(featlab.__file__).parent
RUNS = [e.id for e in featlab.list_experiments()]  # every experiment (its GPU-vs-CPU equality, -m gpu)


@pytest.fixture
def unrendered(monkeypatch):
    """Figures are built (their code runs under the check) but not rasterised: PNG encoding is half the cost of a
    tiny run and creates no tensor."""
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda self, path, **kw: open(path, "wb").close())


def _fake(fn, rel: str):
    """``fn`` as if written in featlab's file ``rel`` (the check reports featlab's own lines)."""
    fn.__code__ = fn.__code__.replace(co_filename=str(ROOT / rel))
    return fn


# ------------------------------------------------------------------------------------------ the check itself
def test_the_check_reports_each_kind_with_its_file_and_line():
    def mixes(x):
        return x + torch.ones(3)  # (a): a host tensor beside a run tensor

    def converts(x):
        return np.asarray(x)  # (b): a run tensor to numpy

    def draws(x):
        return torch.randn(3, generator=torch.Generator().manual_seed(0), device=x.device)  # (c)

    for fn, kind in ((mixes, "(a)"), (converts, "(b)"), (draws, "(c)")):
        with SimulatedDevice() as dev:
            _fake(fn, "probes/fake.py")(torch.zeros(3, device=RUN))
        assert len(dev.problems) == 1 and kind in dev.problems[0], (kind, dev.problems)
        assert dev.problems[0].startswith(f"probes/fake.py:{fn.__code__.co_firstlineno + 1} "), dev.problems


def test_the_check_allows_what_cuda_allows():
    lin = torch.nn.Linear(3, 2)
    with SimulatedDevice() as dev:
        x = torch.arange(6.0).reshape(2, 3).to(RUN)
        assert not is_host(x) and is_host(torch.ones(2)) and x.device == RUN
        y = x * torch.tensor(2.0)  # a host 0-dim scalar
        y[torch.tensor([0])]  # a host index into a run tensor
        assert not is_host(lin.to(RUN).weight) and not is_host(lin(y))  # module.to moves its parameters
        assert is_host(x.cpu()) and not is_host(x)  # .cpu() is a host copy; the run tensor stays where it was
        a = placement.to_numpy(y)  # the one conversion
        z = torch.zeros(2, 3, device=x.device) + x  # device=x.device follows the run tensor
        placement.to_run(torch.randn(3, generator=torch.Generator().manual_seed(0)), RUN) + z[0]  # drawn, moved
    assert dev.problems == [] and a.shape == (2, 3)
    assert placement.on_host(x) and not is_host(torch.ones(1))  # outside the check every CPU tensor is the host


def test_attacks_and_trainer_keep_every_tensor_on_their_inputs_device():
    with SimulatedDevice() as dev:
        net = EnsembleTwoLayer.init([0, 1], 8, signed_readout(3, 3, 1 / 3), sigma_w=0.5, sigma_b=0.1, device=RUN)
        x = torch.randn(2, 10, 8, generator=torch.Generator().manual_seed(0)).to(RUN)
        y = torch.sign(x[..., 0])
        pgd_l2(net, x, y, 0.5, steps=3, step_size=0.1, generator=torch.Generator().manual_seed(1))
        robust_masks(net, x, y, [0.0, 0.5, 1.0], steps=2, generator=torch.Generator().manual_seed(2))
        train([net.W], lambda step: (net(x) * y).neg().exp().mean(-1), 3, seeds=[0, 1], lr=0.1,
              probe=lambda step: {"w": net.W.norm(dim=(1, 2))}, probe_every=2)
    assert dev.problems == []


# ------------------------------------------------------------------------------------------ planted crashes
def test_it_catches_plots_fed_with_run_tensors(out, unrendered, monkeypatch):
    """fa-synthetic's figure once took the device's curves straight to numpy (a crash on CUDA after training)."""
    monkeypatch.setattr(featlab.runs.context.RunContext, "numpy", staticmethod(lambda x, dtype=None: x))  # as was
    monkeypatch.setattr(featlab.plotting, "to_numpy", lambda x, dtype=None: np.asarray(x, dtype=dtype))
    rec, problems = check_experiment("fa-synthetic", out)
    assert rec.status == "complete" and any(p.startswith("plotting.py:") and "(b)" in p for p in problems), problems


def test_it_catches_a_noise_rate_left_on_the_host(out, unrendered, monkeypatch):
    """rfa-amplification's η stayed a host tensor and met the run's data in Lemma 5's check."""
    from featlab.papers.feature_amplification import data

    moved = data.XORClusterDistribution.to
    monkeypatch.setattr(data.XORClusterDistribution, "to", lambda self, d: replace(moved(self, d), eta=self.eta))
    _, problems = check_experiment("rfa-amplification", out)
    assert any(p.startswith("papers/feature_amplification/lemmas.py:") and "(a)" in p for p in problems), problems


def test_it_catches_probe_values_on_the_host(out, unrendered, monkeypatch):
    """rfa-phase's probe built its test error from host copies, and the trainer stacked it with the losses."""
    from featlab.papers.feature_amplification import phase_measure

    def planted(net, tr, steps, alpha, reps, probe, *args, **kw):  # the probe's test error as a host copy
        return trainer(net, tr, steps, alpha, reps, lambda t: {**probe(t), "test_err": probe(t)["test_err"].cpu()},
                       *args, **kw)

    trainer = phase_measure.gd_logspaced
    monkeypatch.setattr(phase_measure, "gd_logspaced", planted)
    _, problems = check_experiment("rfa-phase", out)
    assert any(p.startswith("train/loop.py:") and "stack" in p for p in problems), problems


# ------------------------------------------------------------------------------------------ every run
# Every registered experiment at its tiny setting, and every control and rival at theirs, runs under the check in
# the common battery (tests/test_common_checks.py::check_tiny_run), generated from the registry.


def test_run_identity_follows_the_resolved_device():
    exp, cfg = featlab.runs.runner.resolve_config("fa-synthetic", "quick", None, {}, False)
    assert cfg.digest(exp.id, "cpu") != cfg.digest(exp.id, "cuda")  # a CUDA request never reuses a CPU run
    _, explicit = featlab.runs.runner.resolve_config("fa-synthetic", "quick", None, {"device": "cpu"}, False)
    if not torch.cuda.is_available():  # auto resolves to the CPU here: the same run as device=cpu
        assert cfg.digest(exp.id) == explicit.digest(exp.id, "cpu")


@pytest.mark.gpu
@pytest.mark.parametrize("exp", RUNS)
def test_cuda_run_matches_cpu(exp, out):
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    kw = dict(featlab.get_experiment(exp).tiny or {})
    if "autocast" in featlab.runs.runner.resolve_config(exp, "quick", None, kw, False)[1].model_fields:
        kw["autocast"] = "off"  # the same arithmetic on both devices (float16 autocast is a GPU-only choice)
    cpu = featlab.run(exp, "quick", out=out / "cpu", quiet=True, device="cpu", dtype="float64", **kw)
    gpu = featlab.run(exp, "quick", out=out / "cuda", quiet=True, device="cuda", dtype="float64", **kw)
    assert gpu.summary["device_type"] == "cuda" and gpu.dir.name != cpu.dir.name
    for k, v in cpu.summary["metrics"].items():  # the same draws (CPU generators); float64 kernels differ slightly
        assert gpu.summary["metrics"][k] == pytest.approx(v, rel=1e-6, abs=1e-9, nan_ok=True), k


def _host_moves(tree) -> list[int]:
    """Lines calling ``.cpu()``, ``.numpy()`` or ``.to("cpu")`` / ``.to(device="cpu")``."""
    import ast

    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            if n.func.attr in ("cpu", "numpy") and not n.args and not n.keywords:
                out.append(n.lineno)
            elif n.func.attr == "to" and any(isinstance(a, ast.Constant) and a.value == "cpu"
                                             for a in [*n.args, *(k.value for k in n.keywords)]):
                out.append(n.lineno)
    return out


def _tensor_constants(tree) -> list[int]:
    """Lines of module-level assignments that build a tensor at import time."""
    import ast

    return [n.lineno for n in tree.body if isinstance(n, ast.Assign | ast.AnnAssign)
            for c in ast.walk(n) if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
            and isinstance(c.func.value, ast.Name) and c.func.value.id == "torch" and c.func.attr[0].islower()
            and c.func.attr not in ("device", "dtype", "Generator")]


def test_only_placement_moves_tensors_and_no_module_keeps_a_tensor():
    import ast

    bad = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        tree = ast.parse(path.read_text())
        if rel not in ("placement.py", "devicecheck.py"):
            bad += [f"{rel}:{ln} moves a tensor to the host: use featlab.placement" for ln in _host_moves(tree)]
        bad += [f"{rel}:{ln} builds a tensor at import time (it sits on the host)" for ln in _tensor_constants(tree)]
    assert bad == [], "\n".join(bad)
    planted = ast.parse('X = torch.tensor([1.0])\ndef f(t):\n    return t.cpu().numpy() + t.to("cpu")\n')
    assert _tensor_constants(planted) == [1] and _host_moves(planted) == [3, 3, 3]
