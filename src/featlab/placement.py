"""Where tensors live: the run's device for the computation, the host for draws and for everything read by people.

A run has two places. Random draws are made on per-replica CPU generators (the *host*) and cross to the *run
device* once, when they become data or weights (:func:`to_run`); measurements cross back once, when they leave the
computation for a plot, a table, a metric or a claim (:func:`to_numpy`, :func:`to_host`). Only these functions move
tensors between the two: papers call them (or the run context's ``ctx.to_run`` / ``ctx.to_host`` / ``ctx.numpy``)
and never ``.cpu()`` or ``np.asarray`` on a tensor, so a run on a GPU takes the same paths as a run on the CPU.

A low-level module: it imports no other part of featlab, so the core, the papers and the plots can all use it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

HOST = torch.device("cpu")  # where draws are made and where numbers go to be read


def _map(x: Any, fn: Callable[[torch.Tensor], Any]) -> Any:
    """Apply ``fn`` to every tensor in ``x`` (a tensor, or dicts / lists / tuples of them); other leaves pass."""
    if isinstance(x, torch.Tensor):
        return fn(x)
    if isinstance(x, dict):
        return {k: _map(v, fn) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(x, "_fields"):  # a namedtuple keeps its type
        return type(x)(*(_map(v, fn) for v in x))
    if isinstance(x, list | tuple):
        return type(x)(_map(v, fn) for v in x)
    return x


def to_run(x: Any, device: torch.device | str, dtype: torch.dtype | None = None) -> Any:
    """``x`` (tensors, possibly nested in dicts / lists / tuples) on the run device; ``dtype`` casts floating ones."""
    def move(t: torch.Tensor) -> torch.Tensor:
        cast = dtype if dtype is not None and t.is_floating_point() else None
        return t.to(device=device, dtype=cast)
    return _map(x, move)


def to_host(x: Any) -> Any:
    """``x`` (tensors, possibly nested) detached and on the host, for host-side work (numpy, sorting, plotting)."""
    return _map(x, lambda t: t.detach().to(HOST))


def to_numpy(x: Any, dtype: Any = None) -> Any:
    """The one tensor → numpy conversion: a tensor becomes an array (``dtype``, e.g. ``float``, casts it); dicts,
    lists and tuples holding tensors keep their shape with arrays inside; anything else goes through
    ``np.asarray`` (so a caller need not know whether it holds a tensor or a list of floats)."""
    if isinstance(x, torch.Tensor):
        a = x.detach().to(HOST).numpy()
        return a if dtype is None else a.astype(dtype)
    if isinstance(x, dict):
        return {k: to_numpy(v, dtype) for k, v in x.items()}
    if isinstance(x, list | tuple) and any(isinstance(v, torch.Tensor | list | tuple | dict) for v in x):
        return type(x)(to_numpy(v, dtype) for v in x)
    return np.asarray(x, dtype=dtype)


def on_host(t: torch.Tensor) -> bool:
    """Whether ``t`` lives on the host (a CPU-only path, like numba's kernel, may read it in place). Under the
    simulated device of :mod:`featlab.devicecheck` a run tensor is not on the host although its memory is."""
    return t.device.type == "cpu" and _HOOK[0](t)


_HOOK: list[Callable[[torch.Tensor], bool]] = [lambda t: True]  # replaced only by featlab.devicecheck
