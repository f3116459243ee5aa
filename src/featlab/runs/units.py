"""Runs that advance call by call: a long run is cut into *units* (one method × seed of an image table), each unit's
final results are kept as soon as it finishes, and a run given a time budget stops after its last complete unit.

    featlab run mm-spurious-fmnist --preset paper --budget 9m     # a 10-minute call: as many units as fit
    featlab run mm-spurious-fmnist --preset paper --budget 9m     # the next call resumes from the kept units
    featlab pack runs row.tgz; featlab unpack row.tgz runs        # carries them to another machine

* Units are ``ctx.units_of({name: compute})``: each ``compute()`` returns the unit's results as a dict of numbers,
  strings, lists and numpy arrays (its final metrics, never a checkpoint); they are written to
  ``OUT/<experiment>/.units/<run-id>/<name>.json`` with the run id, the featlab version, the seconds the unit took
  and a SHA-256 of the results. A later call of the same config (the same run id) reads them back instead of
  computing them, so a run resumed any number of times gives the record an uninterrupted run gives (the
  experiment draws nothing outside its units' ``compute``).
* The budget (seconds from the start of the call) is checked between units, never inside one (a unit is never
  half recorded): the first unit a call computes always runs, so every call advances; each further one starts only
  if the time left covers the longest unit this call has computed. When
  the budget stops a run, :class:`BudgetReached` says how many units are done; no run record is written until
  every unit is done, and the units folder is deleted once the run's record is published.
* A unit file that is unreadable, of another run id or whose hash does not match its content is never used: it is
  computed again (and the message says why).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._version import __version__
from ..errors import ConfigError
from ..text import safe_print
from ..utils import atomic_write

UNITS_DIR = ".units"
FORMAT = "featlab-unit/1"
WORKER_ENV = "FEATLAB_UNIT_WORKER"  # set in a worker process: the budget's deadline (epoch seconds) or ""
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.=-]*$")


class BudgetReached(Exception):
    """A budgeted run stopped after its last complete unit; the next call of the same command resumes it. Not a
    user error: ``featlab run`` prints :attr:`message` and exits with code 3."""

    def __init__(self, experiment_id: str, run_id: str, done: int, total: int | None, folder: Path, spent_s: float):
        self.experiment_id, self.run_id, self.done, self.total = experiment_id, run_id, done, total
        self.folder, self.spent_s = folder, spent_s
        of = f" of {total}" if total else ""
        super().__init__(f"{experiment_id}: its budget is spent ({spent_s:.0f} s): {done}{of} units done, kept in "
                         f"{folder}; run the same command again to continue (on another machine: 'featlab pack' "
                         f"the runs folder here, 'featlab unpack' it there)")

    @property
    def message(self) -> str:
        return str(self)


class WorkerFinished(Exception):
    """A worker process has computed every unit it could claim (its parent assembles the run)."""


def parse_budget(text: str | float | None) -> float | None:
    """Seconds from ``--budget``: a number of seconds or one with a unit (``540``, ``540s``, ``9m``, ``1.5h``)."""
    if text is None or isinstance(text, (int, float)):
        return None if text is None else float(text)
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(s|m|h)?\s*", str(text))
    if not m:
        raise ConfigError(f"--budget: {text!r} is not a duration; give seconds or a unit, e.g. --budget 540s, 9m "
                          f"or 1.5h")
    return float(m.group(1)) * {"s": 1, "m": 60, "h": 3600}[m.group(2) or "s"]


# ------------------------------------------------------------------------------------------ encoding
def _encode(v: Any) -> Any:
    """JSON-able form of a unit's results: numpy arrays as {dtype, shape, base64 bytes}, exactly."""
    if isinstance(v, np.ndarray):
        a = np.ascontiguousarray(v)
        return {"__array__": a.dtype.str, "shape": list(a.shape), "data": base64.b64encode(a.tobytes()).decode()}
    if isinstance(v, dict):
        return {str(k): _encode(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_encode(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


def _decode(v: Any) -> Any:
    if isinstance(v, dict) and "__array__" in v:
        raw = base64.b64decode(v["data"])
        return np.frombuffer(raw, dtype=np.dtype(v["__array__"])).reshape(v["shape"]).copy()
    if isinstance(v, dict):
        return {k: _decode(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_decode(x) for x in v]
    return v


def content_hash(results: Any) -> str:
    return hashlib.sha256(json.dumps(results, sort_keys=True).encode()).hexdigest()


# ------------------------------------------------------------------------------------------ the store
@dataclass
class UnitStore:
    """The units of one run (``folder``: OUT/<experiment>/.units/<run-id>) and its budget."""

    folder: Path | None  # None: units are computed and not kept (a context made outside the runner)
    run_id: str = ""
    experiment_id: str = ""
    budget_s: float | None = None
    quiet: bool = False
    started: float = field(default_factory=time.monotonic)
    total: int | None = None
    computed: list[float] = field(default_factory=list)  # seconds of each unit this call computed
    done: set[str] = field(default_factory=set)
    workers: int = 1  # processes computing units side by side (``featlab run --workers``)
    spawn: list[str] | None = None  # the featlab command words that rerun this run, for the worker processes
    worker: bool = False  # this process is one of them

    def expect(self, total: int) -> None:
        """How many units the run has (for the budget's message)."""
        self.total = total

    def map(self, computes: dict[str, Callable[[], dict[str, Any]]]) -> dict[str, dict[str, Any]]:
        """Every unit's results, in order (:meth:`run` each). With ``workers`` > 1 the pending units are computed
        first by that many processes side by side (each claims the next unclaimed unit: on a GPU, several small
        models train concurrently), then read back here."""
        self.expect(len(computes))
        if self.worker:
            self._work(computes)
            raise WorkerFinished
        pending = [n for n in computes if self.folder is not None and not (self.where / f"{n}.json").is_file()]
        if self.workers > 1 and len(pending) > 1 and self.spawn:
            self._run_workers(min(self.workers, len(pending)))
            if self.budget_s is not None and any(not (self.where / f"{n}.json").is_file() for n in computes):
                spent = time.monotonic() - self.started
                done = len(list(self.where.glob("*.json")))
                raise BudgetReached(self.experiment_id, self.run_id, done, self.total, self.where, spent)
        return {n: self.run(n, c) for n, c in computes.items()}

    def _work(self, computes: dict[str, Callable[[], dict[str, Any]]]) -> None:
        """A worker: claim (an exclusive ``.<unit>.claim`` file) and compute each pending unit in turn."""
        for name, compute in computes.items():
            claim = self.where / f".{name}.claim"
            if (self.where / f"{name}.json").is_file():
                continue
            try:
                os.close(os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                continue  # another worker has it
            try:
                self.run(name, compute)
            finally:
                claim.unlink(missing_ok=True)

    def _run_workers(self, n: int) -> None:
        """``n`` processes running this command as workers (the budget's deadline passed on), waited for."""
        self.where.mkdir(parents=True, exist_ok=True)
        self._clear_claims()  # a killed worker's claim: nobody holds it now
        deadline = "" if self.budget_s is None else str(time.time() + self.budget_s - (time.monotonic() - self.started))
        env = {**os.environ, WORKER_ENV: deadline}
        words = list(self.spawn or [])
        procs = [subprocess.Popen([sys.executable, "-m", "featlab.cli", *words], env=env) for _ in range(n)]
        try:
            codes = [p.wait() for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.terminate()
            self._clear_claims()
            for scratch in self.where.parent.parent.glob(f".worker-{self.run_id}-*"):  # a killed worker's
                shutil.rmtree(scratch, ignore_errors=True)
        if bad := [c for c in codes if c not in (0, 3)]:
            raise RuntimeError(f"{len(bad)} of {n} unit workers of {self.experiment_id} failed (exit codes {bad}); "
                               f"their messages are above")

    @property
    def where(self) -> Path:
        """The units folder (asked for only where units are kept)."""
        if self.folder is None:
            raise RuntimeError("this context keeps no units")
        return self.folder

    def _clear_claims(self) -> None:
        for f in self.where.glob(".*.claim"):
            f.unlink(missing_ok=True)

    def run(self, name: str, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """The unit's results: kept ones if this run has them, else computed now (if the budget allows) and kept."""
        if not _NAME.match(name):
            raise ValueError(f"unit name {name!r}: letters, digits and _ . = - only")
        if self.folder is None:
            return compute()
        kept = self._load(name)
        if kept is not None:
            self.done.add(name)
            return kept
        self._check_budget()
        t0 = time.monotonic()
        results = compute()
        elapsed = time.monotonic() - t0
        self.computed.append(elapsed)
        enc = _encode(results)
        atomic_write(self.where / f"{name}.json", json.dumps(
            {"format": FORMAT, "experiment": self.experiment_id, "run_id": self.run_id, "unit": name,
             "featlab": __version__, "elapsed_s": round(elapsed, 3), "sha256": content_hash(enc), "results": enc}))
        # (keys in the order the experiment gave them: a resumed run's records list its metrics in the same order)
        self.done.add(name)
        return _decode(enc)  # exactly what a resumed call reads back (float64 round-trips through JSON)

    def _check_budget(self) -> None:
        """The first unit a call computes always runs (every call advances); a further one only if the time left
        covers the longest unit this call computed (units of other machines may be faster or slower)."""
        if self.budget_s is None or not self.computed:
            return
        spent = time.monotonic() - self.started
        if spent + max(self.computed) > self.budget_s:
            done = len(list(self.where.glob("*.json")))  # this call's and earlier calls' (or other processes')
            raise BudgetReached(self.experiment_id, self.run_id, done, self.total, self.where, spent)

    def _load(self, name: str) -> dict[str, Any] | None:
        f = self.where / f"{name}.json"
        if not f.is_file():
            return None
        try:
            u = json.loads(f.read_text(encoding="utf-8"))
            ok = (u.get("format") == FORMAT and u.get("run_id") == self.run_id and u.get("unit") == name
                  and u.get("sha256") == content_hash(u["results"]))
            why = "" if ok else "another run id, or its content does not match its hash"
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            u, why = None, f"unreadable ({type(e).__name__})"
        if why:  # said even when quiet: a damaged result is never passed over in silence
            safe_print(f"featlab: warning: unit {f} is not used ({why}); it is computed again", file=sys.stderr)
            return None
        if u.get("featlab") != __version__:
            self._say(f"featlab: warning: unit {name} of {self.experiment_id} was made by featlab {u.get('featlab')} "
                      f"(this is {__version__})")
        return _decode(u["results"])

    def _say(self, text: str) -> None:
        if not self.quiet:
            safe_print(text, file=sys.stderr)

    def discard(self) -> None:
        """Delete the units folder (the run's record now holds everything), and the .units folder if empty."""
        if self.folder is None:
            return
        shutil.rmtree(self.folder, ignore_errors=True)
        try:
            self.where.parent.rmdir()
        except OSError:
            pass


def units_folder(out: str | Path, experiment_id: str, run_id: str) -> Path:
    return Path(out) / experiment_id / UNITS_DIR / run_id
