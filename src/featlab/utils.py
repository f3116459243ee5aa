"""Small shared helpers: per-replica random generators, the replica description, dtype/device, threads, the one
atomic file writer."""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import math
import os
import sys
import uuid
from collections.abc import Callable
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from .errors import ConfigError, FeatlabError


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


def atomic_write(path: str | Path, content: str | bytes | Callable[[Path], object]) -> Path:
    """Write ``content`` (UTF-8 text, bytes, or a function writing a given file) to a temporary sibling and rename it
    into place: a reader sees the old file or the new one, never half of one; the temporary file never stays.

    An OS error (a full disk, a read-only folder, a folder at ``path``...) is raised naming ``path``, not the
    temporary file, so the caller's message (see :func:`writing`) names the file the user asked for."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:  # the parent is a file: say so, not "File exists"
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(path.parent)) from None
        if isinstance(content, str):
            tmp.write_text(content, encoding="utf-8")
        elif isinstance(content, bytes):
            tmp.write_bytes(content)
        else:
            content(tmp)
        os.replace(tmp, path)
    except OSError as e:
        names = {str(n) for n in (e.filename, e.filename2) if n is not None}  # shutil.copyfile: (source, target)
        if e.errno is None or (names and str(tmp) not in names):
            raise  # about another file (e.g. a source a callable reads): as it is
        raise OSError(e.errno, os.strerror(e.errno), str(path)) from e  # OSError(errno) picks the subclass
    finally:
        with suppress(OSError):  # never hide the write's own error behind a failed clean-up
            tmp.unlink(missing_ok=True)
    return path


# an OS error while writing, and its fix; any other errno is not the destination's fault and keeps its traceback
_WRITE_FIX = {
    errno.ENOSPC: "free some space or pass another {flag}",
    errno.EDQUOT: "free some space (disk quota exceeded) or pass another {flag}",
    errno.EFBIG: "the file is too large for its file system; pass another {flag}",
    errno.EROFS: "its file system is read-only; pass another {flag} on a writable disk",
    errno.EACCES: "fix the folder's permissions or pass another {flag}",
    errno.EPERM: "fix the folder's permissions or pass another {flag}",
    errno.EISDIR: "it is a folder; pass a file name to {flag}",
    errno.ENOTDIR: "a part of its path is a file, not a folder; pass another {flag}",
    errno.ENAMETOOLONG: "the name is too long; pass a shorter {flag}",
}


@contextmanager
def writing(flag: str, kept: str = ""):
    """Run a block of writes; an OS error of the destination (see ``_WRITE_FIX``) becomes one line naming the file
    and the fix (a :class:`FeatlabError`: exit 2, no traceback), as `featlab run` does. ``flag``: the option naming
    the destination; ``kept``: what the user keeps (e.g. the runs a sweep made), said after the fix."""
    try:
        yield
    except OSError as e:
        code = e.errno
        fix = _WRITE_FIX.get(code) if code is not None else None
        if code is None or fix is None:
            raise
        where = f" {str(e.filename)!r}" if e.filename else ""
        raise FeatlabError(f"cannot write{where} ({os.strerror(code)}); {fix.format(flag=flag)}"
                           + (f"; {kept}" if kept else "")) from None


def check_writable(path: str | Path, flag: str, *, folder: bool = False, example: str = "") -> Path:
    """Before the work, refuse (one line, :class:`ConfigError`) a destination that cannot be written: a folder where
    a file is meant (``example``: a file name to suggest), a file where a folder is meant, a part of its path a file,
    or the folder that would hold it not writable (permissions, a read-only disk). Creates nothing."""
    p = Path(path).expanduser()
    if folder and os.path.lexists(p) and not p.is_dir():
        raise ConfigError(f"{flag}: {str(p)!r} is a file, not a folder; pass a folder")
    if not folder and p.is_dir():
        raise ConfigError(f"{flag}: {str(p)!r} is a folder; pass a file name"
                          + (f", e.g. {str(p / example)!r}" if example else ""))
    if not folder and os.path.lexists(p) and not p.is_file():
        raise ConfigError(f"{flag}: {str(p)!r} is not a regular file (a device or a socket); pass a file name")
    d = p if folder else p.parent
    while not os.path.lexists(d) and d != d.parent:  # the nearest folder that exists holds what is created
        d = d.parent
    if not d.is_dir():
        raise ConfigError(f"{flag}: {str(d)!r} is a file, not a folder; pass another {flag}")
    if not os.access(d, os.W_OK | os.X_OK):
        why = "read-only file system" if os.statvfs(d).f_flag & os.ST_RDONLY else "permission denied"
        raise ConfigError(f"{flag}: cannot write in {str(d)!r} ({why}); pass {'a' if folder else 'a file in a'} "
                          f"folder you can write to")
    return p


# ------------------------------------------------------------------------------------------ strict JSON
NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}  # how a non-finite float is written


def _finite_json(o: Any) -> Any:
    if isinstance(o, float) and not math.isfinite(o):
        return "NaN" if o != o else ("Infinity" if o > 0 else "-Infinity")
    if isinstance(o, dict):
        return {k: _finite_json(v) for k, v in o.items()}
    if isinstance(o, list | tuple):
        return [_finite_json(v) for v in o]
    return o


def json_dumps(obj: Any, **kw: Any) -> str:
    """JSON any strict parser reads (RFC 8259: no bare NaN / Infinity). The rule: a non-finite float is written as
    the string "NaN", "Infinity" or "-Infinity"; :func:`json_loads` reads those strings back as floats."""
    default = kw.pop("default", None)
    if default is not None:  # numpy/torch scalars first, so their non-finite values follow the rule too
        obj = json.loads(json.dumps(obj, default=default))
    return json.dumps(_finite_json(obj), allow_nan=False, **kw)


def _nonfinite_back(o: Any) -> Any:
    if isinstance(o, str) and o in NONFINITE:
        return NONFINITE[o]
    if isinstance(o, dict):
        return {k: _nonfinite_back(v) for k, v in o.items()}
    if isinstance(o, list):
        return [_nonfinite_back(v) for v in o]
    return o


def json_loads(text: str | bytes) -> Any:
    """Read JSON written by :func:`json_dumps` (or older featlab files with bare NaN): non-finite floats come back."""
    return _nonfinite_back(json.loads(text))
