"""Writing run records: ``OUT/<experiment>/<run-id>/`` with config.yaml, metrics.parquet, figures/, summary.json
(read back by :mod:`.record`).

A run is built in a hidden sibling folder and moved into place only once its summary.json has been written,
so a finished run folder is always complete: a run killed half-way leaves only the hidden folder, which the
next attempt removes; ``--force`` replaces a complete run only after the new one is complete. A lock per run id
(``.<run-id>.lock``, ``flock``) makes a second process running the same run wait and then reuse it, and keeps
every process from removing a folder that a live one is still writing.
"""

from __future__ import annotations

import os
import shutil
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]  # the optional module: None where there is no flock

import pandas as pd

from ..errors import RunRecordError
from ..text import safe_print
from ..utils import atomic_write, json_dumps
from .integrity import FILES, content_hashes
from .record import CONFIG, METRICS, SUMMARY, RunRecord, load_run


@contextmanager
def run_lock(path: Path, on_wait: Callable[[], None] | None = None, wait: bool = True) -> Iterator[bool]:
    """Hold an exclusive ``flock`` on ``path`` for the block, waiting for a process that holds it (calling
    ``on_wait`` first); with ``wait=False`` yield False at once instead. The kernel releases a lock when its process
    dies, even by SIGKILL, so a lock is never stale; the file is removed on release, so none is left behind."""
    fd = _acquire(path, on_wait, wait) if fcntl is not None else None  # no flock (Windows): unlocked, as before
    try:
        yield fd is not None or fcntl is None
    finally:
        if fd is not None and fd >= 0:
            with suppress(OSError):
                os.unlink(path)  # while still held: a waiter then sees the path moved on and locks afresh
            os.close(fd)


def _acquire(path: Path, on_wait, wait: bool) -> int | None:
    """A descriptor holding the lock of the file now at ``path``, None when busy and not ``wait``, -1 when the file
    system has no locks (some network mounts: run unlocked)."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not wait:
                os.close(fd)
                return None
            if on_wait is not None:
                on_wait()
                on_wait = None
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            os.close(fd)
            return -1
        try:
            st, now = os.fstat(fd), os.stat(path)
            if (st.st_ino, st.st_dev) == (now.st_ino, now.st_dev):
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)  # the holder removed that file on release: lock the current one


def _finished(folder: Path) -> bool:
    try:
        load_run(folder)
        return True
    except RunRecordError:
        return False


class RunWriter:
    """Writes one run into a hidden staging folder, then publishes it. Hold :meth:`locked` around all of it."""

    def __init__(self, out: str | Path, experiment_id: str, run_id: str):
        self.final = Path(out) / experiment_id / run_id
        self.stage = self.final.parent / f".{run_id}.partial-{uuid.uuid4().hex[:6]}"
        self.lock_file = self.final.parent / f".{run_id}.lock"

    def locked(self, on_wait: Callable[[], None] | None = None):
        """The run id's lock: a second process running the same run waits here, then finds it complete."""
        self.final.parent.mkdir(parents=True, exist_ok=True)
        return run_lock(self.lock_file, on_wait)

    def existing(self) -> RunRecord | None:
        """The complete run already at the final place, if any: an unreadable or damaged one (a file that does not
        match its hash) counts as unfinished, and so does one without hashes (never trusted unchecked)."""
        if (self.final / SUMMARY).is_file():
            try:
                rec = load_run(self.final)
            except RunRecordError as e:
                if "is damaged:" in str(e):
                    safe_print(f"featlab: note: {' '.join(str(e).split())}", file=sys.stderr)
                return None
            if rec.ok and not rec.verified:
                safe_print(f"featlab: note: {str(self.final)!r} is {rec.integrity} (made before featlab recorded "
                           f"content hashes): redone, not reused", file=sys.stderr)
            return rec if rec.ok and rec.verified else None
        return None

    def recover(self) -> None:
        """Under the lock: repair what a killed run left. A publish cut between its two renames leaves the final
        folder missing, the new run finished in ``.partial-*`` and the old one in ``.old-*``: the finished new
        run is put in place (else the old one is restored); every other leftover of this run id is removed. Then
        the leftovers of the experiment's other run ids, each only when no live process holds its lock."""
        _recover(self.final)
        for rid in {p.name[1:].split(".")[0] for p in _debris(self.final.parent)} - {self.final.name}:
            with run_lock(self.final.parent / f".{rid}.lock", wait=False) as free:
                if free:
                    _recover(self.final.parent / rid)

    def open(self) -> Path:
        (self.stage / "figures").mkdir(parents=True)
        return self.stage

    def write_config(self, yaml_text: str) -> None:
        atomic_write(self.stage / CONFIG, yaml_text)

    def write_metrics(self, frame: pd.DataFrame) -> None:
        frame = frame.astype({"seed": "int64", "step": "int64", "metric": "string", "value": "float64"})
        frame.to_parquet(self.stage / METRICS, index=False)

    def publish(self, summary: dict[str, Any]) -> RunRecord:
        summary = {**summary, FILES: content_hashes(self.stage, SUMMARY)}  # the content, checked by every reader
        atomic_write(self.stage / SUMMARY, json_dumps(summary, indent=2, default=_json_default))  # no bare NaN
        old = None
        if self.final.exists():  # --force, or an unfinished/unreadable folder: keep it until swapped
            old = self.final.with_name(f".{self.final.name}.old-{uuid.uuid4().hex[:6]}")
            os.replace(self.final, old)
        try:
            os.replace(self.stage, self.final)  # a SIGKILL between these renames is repaired by recover()
        except BaseException:  # interrupted (Ctrl-C) or failed here: the old run goes back in place at once
            if old is not None:
                os.replace(old, self.final)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return load_run(self.final)

    def abandon(self) -> None:
        shutil.rmtree(self.stage, ignore_errors=True)


def _debris(parent: Path) -> list[Path]:
    return [p for p in parent.glob(".*") if p.is_dir() and (".partial-" in p.name or ".old-" in p.name)]


def _recover(final: Path) -> None:
    mine = [p for p in _debris(final.parent) if p.name.startswith(f".{final.name}.")]
    if not _finished(final):
        new = sorted((p for p in mine if ".partial-" in p.name and _finished(p)), key=lambda p: p.stat().st_mtime)
        old = [p for p in mine if ".old-" in p.name and _finished(p)]
        src = (new or old)[-1] if new or old else None
        if src is not None:
            if final.exists():  # an unfinished folder of an older layout: replaced, as publish does
                shutil.rmtree(final, ignore_errors=True)
            os.replace(src, final)
    for p in mine:
        if p.exists():
            shutil.rmtree(p, ignore_errors=True)


def _json_default(o: Any) -> Any:
    if hasattr(o, "item"):
        return o.item()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(type(o).__name__)
