"""Device correctness without a GPU, and GPU-vs-CPU equality where a GPU is present (``-m gpu``).

Without a GPU a tensor on the wrong device cannot crash, so the guard below makes the mistake visible: every
tensor factory called from featlab's code (``torch.zeros``, ``torch.tensor``, ``torch.randn``, ...) must say its
``device=`` (or be a ``*_like``/``new_*`` call, which follows its input). A factory without one lands on the default
device, the CPU, beside inputs that may live on a GPU: exactly the bug that made PGD crash on CUDA.

Every registered experiment runs under the guard at the ``tiny`` setting it declares in ``@experiment`` (overrides
of its quick preset), so a new experiment is covered without editing this file.
"""

import json
import sys
from pathlib import Path

import matplotlib.figure
import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._device import _device_constructors

import featlab
from featlab.nn.twolayer import EnsembleTwoLayer, signed_readout
from featlab.probes.robustness import pgd_l2, robust_masks
from featlab.train.loop import train

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny runs: one thread is fastest (tests/conftest.py)

ROOT = str(Path(featlab.__file__).parent)
EXPERIMENTS = [e.id for e in featlab.list_experiments()]  # every registered one, each at its own tiny setting


class ExplicitDevice(TorchFunctionMode):
    """Records featlab's tensor factories called without ``device=`` (module-level constants aside)."""

    def __init__(self, roots: tuple[str, ...] = (ROOT,)):
        super().__init__()
        self.roots = tuple(str(r) for r in roots)  # featlab's code, and an outside paper's when a test adds it
        self.missing: list[str] = []
        self.devices: set[str] = set()  # the device types tensors were created on

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _device_constructors() and kwargs.get("device") is not None:
            self.devices.add(torch.device(kwargs["device"]).type)
        if func in _device_constructors() and kwargs.get("device") is None \
                and not (args and isinstance(args[0], torch.Tensor)):  # as_tensor(t) keeps t's device
            f = sys._getframe(1)
            while f is not None and "torch" in f.f_code.co_filename and not self._ours(f.f_code.co_filename):
                f = f.f_back  # through torch's own wrappers to the caller
            if f is not None and self._ours(f.f_code.co_filename) and f.f_code.co_name != "<module>":
                where = Path(f.f_code.co_filename).name if not f.f_code.co_filename.startswith(ROOT) \
                    else f.f_code.co_filename[len(ROOT) + 1:]
                self.missing.append(f"{where}:{f.f_lineno} torch.{func.__name__}")
        return func(*args, **kwargs)

    def _ours(self, filename: str) -> bool:
        return filename.startswith(self.roots)


def _net_and_data():
    net = EnsembleTwoLayer.init([0, 1], 8, signed_readout(3, 3, 1 / 3), sigma_w=0.5, sigma_b=0.1)
    x = torch.randn(2, 10, 8, generator=torch.Generator().manual_seed(0), device="cpu")
    return net, x, torch.sign(x[..., 0])


def test_attacks_and_trainer_create_every_tensor_on_their_inputs_device():
    net, x, y = _net_and_data()
    with ExplicitDevice() as guard:
        pgd_l2(net, x, y, 0.5, steps=3, step_size=0.1, generator=torch.Generator().manual_seed(1))  # the old bug
        robust_masks(net, x, y, [0.0, 0.5, 1.0], steps=2, generator=torch.Generator().manual_seed(2))
        train([net.W], lambda step: (net(x) * y).neg().exp().mean(-1), 3, seeds=[0, 1], lr=0.1,
              probe=lambda step: {"w": net.W.norm(dim=(1, 2))}, probe_every=2)
    assert guard.missing == []


def test_the_guard_catches_a_factory_without_device():
    def buggy(x):
        return x * torch.as_tensor(2.0, dtype=x.dtype)  # what pgd_l2 did with step_size

    buggy.__code__ = buggy.__code__.replace(co_filename=str(Path(ROOT) / "probes" / "fake.py"))
    with ExplicitDevice() as guard:
        buggy(torch.ones(2))
    assert guard.missing and "torch.as_tensor" in guard.missing[0]


def test_every_experiment_declares_a_tiny_setting():
    missing = [e.id for e in featlab.list_experiments() if e.tiny is None]
    assert missing == [], f"declare tiny={{...}} in @experiment (quick-preset overrides that run in ~1 s): {missing}"


def _tiny(exp_id: str) -> dict:
    return dict(featlab.get_experiment(exp_id).tiny or {})


@pytest.fixture
def unrendered(monkeypatch):
    """Figures are built (their code runs under the guard) but not rasterised: PNG encoding is half the cost of a
    tiny run and creates no tensor."""
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda self, path, **kw: open(path, "wb").close())


@pytest.mark.parametrize("exp", EXPERIMENTS)
def test_experiments_create_every_tensor_on_the_run_device(exp, out, unrendered):
    with ExplicitDevice() as guard:
        rec = featlab.run(exp, "quick", out=out, quiet=True, device="cpu", **_tiny(exp))
    assert rec.status == "complete" and guard.missing == []
    summary = json.loads((rec.dir / "summary.json").read_text())
    assert guard.devices == {"cpu"}  # every tensor featlab created is on the run's device...
    assert summary["device_type"] == "cpu" and summary["device"].startswith("cpu")  # ...and the record says so


@pytest.mark.gpu
@pytest.mark.parametrize("exp", EXPERIMENTS)
def test_cuda_run_matches_cpu(exp, out):
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    kw = _tiny(exp)
    cpu = featlab.run(exp, "quick", out=out / "cpu", quiet=True, device="cpu", dtype="float64", **kw)
    gpu = featlab.run(exp, "quick", out=out / "cuda", quiet=True, device="cuda", dtype="float64", **kw)
    assert gpu.summary["device_type"] == "cuda"
    for k, v in cpu.summary["metrics"].items():  # the same draws (CPU generators); float64 kernels differ slightly
        assert gpu.summary["metrics"][k] == pytest.approx(v, rel=1e-6, abs=1e-9, nan_ok=True), k
