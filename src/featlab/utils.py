"""Small shared helpers: per-replica random generators, the replica description, dtype/device, threads, the one
atomic file writer."""

from __future__ import annotations

import functools
import hashlib
import os
import sys
import uuid
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from .errors import ConfigError


def resolve_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if str(device).startswith("cuda") and not torch.cuda.is_available():  # never a CPU run labelled cuda
        raise ConfigError(f"device={device} but this machine has no CUDA device (or torch was built without CUDA); "
                          f"use device=auto or device=cpu")
    return torch.device(device)


def resolve_dtype(dtype: str) -> torch.dtype:
    return {"float32": torch.float32, "float64": torch.float64}[dtype]


def generator(seed: int, role: str) -> torch.Generator:
    """An independent CPU generator for (seed, role): data, init, test, attack... never the global RNG.

    Streams are keyed by role so that changing e.g. the init draws never changes the data of the same seed.
    """
    h = int.from_bytes(hashlib.sha256(f"{seed}/{role}".encode()).digest()[:8], "little") & ((1 << 63) - 1)
    return torch.Generator().manual_seed(h)


def cpu_draws(fn):
    """Run ``fn`` with the CPU as the default device: random draws come from CPU generators, so they give the
    same numbers whatever device the run uses; the caller moves the result to its device."""
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        with torch.device("cpu"):
            return fn(*args, **kwargs)
    return wrapped


def per_replica(seeds: list[int], role: str, fn, *, device=None, dtype=None) -> torch.Tensor:
    """Stack ``fn(generator)`` over replicas: replica i draws from its own (seed_i, role) stream.

    Drawing per replica (on CPU, then moving) is what makes replica i identical to training seed i alone.
    """
    out = torch.stack([fn(generator(s, role)) for s in seeds])
    return out.to(device=device, dtype=dtype) if (device is not None or dtype is not None) else out


class Replicas(tuple):
    """The E replicas of one batched computation: replica i trains seed ``seeds[i]`` and, when the replicas also
    differ in a setting (a learning rate, a noise rate, a scale), carries ``labels[i]``, the metric prefix that
    names that setting (e.g. ``"eta=0.1."``).

    Data, models and trainers all take it (it is a tuple of the seeds, so code that wants seeds just iterates);
    the trainer writes each replica's rows under its own seed and label, so no caller re-derives E or relabels.
    """

    labels: tuple[str, ...]
    values: list[Any] | None

    def __new__(cls, seeds, labels=None, values=None):
        self = super().__new__(cls, (int(s) for s in seeds))
        self.labels = tuple(labels) if labels is not None else ("",) * len(self)
        self.values = list(values) if values is not None else None  # the varied setting per replica, if any
        if len(self.labels) != len(self):
            raise ValueError(f"Replicas: {len(self)} seeds but {len(self.labels)} labels")
        return self

    @classmethod
    def grid(cls, values, seeds, label) -> Replicas:
        """(value, seed) for every value and seed, value-major; ``label(value)`` → metric prefix. ``.values``."""
        pairs = [(v, s) for v in values for s in seeds]
        return cls([s for _, s in pairs], [label(v) for v, _ in pairs], [v for v, _ in pairs])

    @property
    def E(self) -> int:
        return len(self)

    def __reduce__(self):  # picklable for Ray / multiprocessing
        return (Replicas, (tuple(self), self.labels, self.values))


@contextmanager
def torch_threads(n: int | None):
    """Run a block with n torch intra-op threads (None or 0 = leave as is), restoring the previous count."""
    old = torch.get_num_threads()
    if n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def silence_stdout() -> None:
    """After a BrokenPipeError (``featlab ... | head -1``): send the rest of stdout to devnull, so neither later
    prints nor the interpreter's final flush raise again; the work goes on (or ends) quietly."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real descriptor (captured): nothing to redirect
        pass


def _progress_enabled() -> bool | None:
    env = os.environ.get("FEATLAB_PROGRESS")
    if env is None:
        return None  # tqdm: on for terminals, off for pipes and logs
    return env not in ("0", "false", "no")


def progress_bar(total: int, desc: str) -> tqdm:
    """A bar with step, loss and ETA on stderr. FEATLAB_PROGRESS=1/0 forces it on/off (default: terminals)."""
    on = _progress_enabled()
    return tqdm(total=total, desc=desc, disable=None if on is None else not on, leave=False, dynamic_ncols=True)


def atomic_write(path: str | Path, content: str | bytes | Callable[[Path], None]) -> Path:
    """Write ``content`` (UTF-8 text, bytes, or a function writing a given file) to a temporary sibling and rename it
    into place: a reader sees the old file or the new one, never half of one; the temporary file never stays."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        if isinstance(content, str):
            tmp.write_text(content, encoding="utf-8")
        elif isinstance(content, bytes):
            tmp.write_bytes(content)
        else:
            content(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path
