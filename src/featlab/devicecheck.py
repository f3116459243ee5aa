"""A simulated second device: what would crash on a GPU, caught on a machine without one.

On a CPU-only run the run device *is* the host, so tensors cannot mix and the bugs that crash a CUDA run stay
invisible. Under :class:`SimulatedDevice` the run device is ``torch.device("cpu", 0)``: factories accept it, it
compares unequal to ``"cpu"``, and a ``TorchFunctionMode`` marks every tensor created on the *host* (the plain CPU:
no ``device=``, ``device="cpu"``, ``.cpu()``, numpy) and follows the marks through every op. It reports, with the
file and line of featlab's code that made the call, what CUDA would refuse:

- (a) an op mixing a host tensor of dimension > 0 with a run tensor (CUDA's exemptions: host 0-dim scalars, and host
  index tensors indexing a run tensor);
- (b) a run tensor reaching numpy (``np.asarray``, ``.numpy()``) other than through :func:`featlab.placement.to_numpy`;
- (c) a CPU generator feeding a run-device factory or a random op on a run tensor.

Use it as ``with SimulatedDevice() as dev: featlab.run(exp, device="cpu", ...)``; ``dev.problems`` lists what it
found. It is what the common checks (tests/test_common_checks.py) run over every experiment, control and rival.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten

from . import config, placement
from .runs import runner

RUN = torch.device("cpu", 0)  # the simulated run device
ROOT = str(Path(__file__).parent)
_TAG = "_featlab_host"
_NUMPY: set[Any] = {torch.Tensor.__array__, torch.Tensor.numpy}
_INDEXING: set[Any] = {torch.Tensor.__getitem__, torch.Tensor.__setitem__}
_TRANSFER = {torch.Tensor.copy_}  # copies across devices are legal
_QUERIES = {torch._has_compatible_shallow_copy_type}  # compare two tensors' types, compute nothing (module.to)
_UNDISPATCHED = ("from_numpy", "frombuffer")  # host factories that bypass TorchFunctionMode


def _on_host(fn: Callable) -> Callable:
    """A factory torch does not dispatch to modes (it reads numpy or bytes): its tensors are marked host."""
    def wrapped(*args, **kwargs):
        out = fn(*args, **kwargs)
        setattr(out, _TAG, True)
        return out
    return wrapped


def _keeps_place(new: Callable) -> Callable:
    """``Parameter.__new__`` that marks the parameter as its data is marked (torch makes it without dispatch)."""
    def wrapped(cls, data=None, requires_grad=True):
        out = new(cls, data, requires_grad)
        if data is not None:
            setattr(out, _TAG, is_host(data))
        return out
    return wrapped


def is_host(t: torch.Tensor) -> bool:
    """Marked on the host; an unmarked tensor (made by autograd, or a Parameter around a run tensor) is a run
    tensor, and so is a tensor made before the check began: featlab keeps no tensor constants at module level."""
    return bool(getattr(t, _TAG, False))


def _mark(x: Any, host: bool, inputs: list[torch.Tensor]) -> None:
    """Mark the tensors of an op's result (not those it returned in place: an input keeps its place)."""
    for t in tree_flatten(x)[0]:
        if isinstance(t, torch.Tensor) and not any(t is i for i in inputs):
            try:
                setattr(t, _TAG, host)
            except (AttributeError, RuntimeError):  # a tensor type without __dict__: left unmarked (run)
                pass


def _target(device: Any) -> bool | None:
    """Whether a ``device=`` argument names the host (True), the run device (False) or neither (None)."""
    if device is None:
        return None
    dev = torch.device(device) if not isinstance(device, torch.device) else device
    return dev.type == "cpu" and dev.index is None


class SimulatedDevice(TorchFunctionMode):
    """Records ops that would fail on a real second device (see the module's docstring)."""

    def __init__(self, roots: tuple[str, ...] = (ROOT,)):
        super().__init__()
        self.roots = tuple(str(r) for r in roots)  # featlab's code, and an outside paper's when a test adds it
        self.problems: list[str] = []
        self._saved: list[Any] = []
        self._parameter: Any = None

    # ------------------------------------------------------------------ entering: the run device is RUN
    def __enter__(self):
        # a run resolves device="cpu" (the config's run_device) to the simulated device while this is active
        self._saved = [placement._HOOK[0], config.resolve_device, *(getattr(torch, f) for f in _UNDISPATCHED)]
        placement._HOOK[0] = is_host
        config.resolve_device = lambda device: RUN if str(device) in ("cpu", "auto") else self._saved[1](device)
        for name, fn in zip(_UNDISPATCHED, self._saved[2:]):
            setattr(torch, name, _on_host(fn))
        self._parameter = torch.nn.Parameter.__new__  # a Parameter keeps its data's place (modules built on the host)
        torch.nn.Parameter.__new__ = _keeps_place(self._parameter)
        return super().__enter__()

    def __exit__(self, *exc):
        placement._HOOK[0], config.resolve_device = self._saved[:2]
        for name, fn in zip(_UNDISPATCHED, self._saved[2:]):
            setattr(torch, name, fn)
        torch.nn.Parameter.__new__ = self._parameter
        return super().__exit__(*exc)

    # ------------------------------------------------------------------ every op
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        owner = getattr(getattr(func, "__self__", None), "__name__", "")
        if getattr(func, "__name__", "") == "__get__" and owner == "device":  # a run tensor's device is RUN
            return func(*args, **kwargs) if is_host(args[0]) else RUN
        if getattr(func, "__name__", "") == "__set__" and owner == "data":  # module.to(): param.data = moved
            func(*args, **kwargs)
            setattr(args[0], _TAG, is_host(args[1]))
            return None
        if func in _NUMPY:
            if not is_host(args[0]):
                self._report("(b) a run tensor converted to numpy: use featlab.placement.to_numpy (or ctx.numpy)")
            return func(*args, **kwargs)
        flat = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        host = self._placement(func, args, kwargs, flat)
        self._check_generator(func, args, kwargs, flat, host)
        out = func(*args, **kwargs)
        if host and isinstance(out, torch.Tensor) and args and out is args[0] and not is_host(out):
            out = out.view_as(out)  # .cpu() of a run tensor: on a real device a copy, here an alias to mark
        if host is not None:
            _mark(out, host, flat)
        return out

    def _placement(self, func: Callable, args: tuple, kwargs: dict, flat: list[torch.Tensor]) -> bool | None:
        """Whether the op's result lives on the host (True), the run device (False) or is not a tensor (None); an
        op mixing the two places is reported."""
        if func is torch.Tensor.cpu:
            return True
        if func in _QUERIES:
            return None
        if func is torch.Tensor.to:
            dev, _, _, _ = torch._C._nn._parse_to(*args[1:], **kwargs)
            if len(args) > 1 and isinstance(args[1], torch.Tensor):
                return is_host(args[1])
            return is_host(args[0]) if dev is None else _target(dev)
        explicit = _target(kwargs.get("device"))
        if explicit is not None:
            return explicit
        if not flat:
            return True  # a factory without device= lands on the default device: the host
        if func in _TRANSFER:
            return is_host(args[0])
        if func in _INDEXING:
            index = [t for t in tree_flatten(args[1])[0] if isinstance(t, torch.Tensor)]
            if is_host(args[0]) and any(not is_host(t) for t in index):
                self._report(f"(a) a host tensor {tuple(args[0].shape)} indexed by a run tensor")
            if func is torch.Tensor.__setitem__ and index and isinstance(args[2], torch.Tensor):
                self._mixing(func, [args[0], args[2]])
            return is_host(args[0])
        self._mixing(func, flat)
        return all(is_host(t) for t in flat)

    def _mixing(self, func: Callable, tensors: list[torch.Tensor]) -> None:
        """(a): a host tensor of dimension > 0 beside a run tensor (a host 0-dim scalar is legal on CUDA)."""
        run = [t for t in tensors if not is_host(t)]
        bad = [t for t in tensors if is_host(t) and t.dim() > 0]
        if run and bad:
            self._report(f"(a) {_name(func)} mixes a host tensor {tuple(bad[0].shape)} with a run tensor "
                         f"{tuple(run[0].shape)}: move it with featlab.placement.to_run (or ctx.to_run)")

    def _check_generator(self, func: Callable, args: tuple, kwargs: dict, flat: list[torch.Tensor],
                         host: bool | None) -> None:
        """(c): a CPU generator drawing onto the run device."""
        gens = [g for g in (*args, *kwargs.values()) if isinstance(g, torch.Generator)]
        if gens and (host is False or any(not is_host(t) for t in flat)) and gens[0].device.type == "cpu":
            self._report(f"(c) {_name(func)} draws from a CPU generator onto the run device: draw on the host, "
                         f"then move the result")

    def _report(self, what: str) -> None:
        f: Any = sys._getframe(2)
        while f is not None and not (f.f_code.co_filename.startswith(self.roots)
                                     and not f.f_code.co_filename.endswith(("devicecheck.py", "placement.py"))):
            f = f.f_back  # through torch's wrappers to featlab's caller
        where = "?" if f is None else f"{_short(f.f_code.co_filename)}:{f.f_lineno}"
        line = f"{where} {what}"
        if line not in self.problems:
            self.problems.append(line)


def _name(func: Callable) -> str:
    return str(getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func)))


def _short(filename: str) -> str:
    return filename[len(ROOT) + 1:] if filename.startswith(ROOT) else Path(filename).name


def check_experiment(experiment_id: str, out: str | Path, control: str | None = None,
                     roots: tuple[str, ...] = (ROOT,)) -> tuple[Any, list[str]]:
    """Run an experiment's ``tiny`` setting (or one of its controls, at the control's ``tiny`` sizes) on the
    simulated device; returns (its run record, the problems found)."""
    exp = runner.get_experiment(experiment_id)
    ctl: Any = False
    if control is not None:
        c = exp.control(control)
        ctl = replace(c, overrides={**c.overrides, **c.tiny})
    with SimulatedDevice(roots) as dev:
        rec = runner.run(experiment_id, "quick", out=out, quiet=True, device="cpu", control=ctl, force=True,
                         **dict(exp.tiny or {}))
    return rec, dev.problems
