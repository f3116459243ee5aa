"""Timing an experiment's own work in a few iterations: the hook behind the time estimates of ``featlab reproduce
--dry-run`` and of the resource check (:mod:`featlab.runs.timing` runs an experiment under :func:`metering`).

The loops that carry a run's work say so: ``for step in steps(n)`` instead of ``range(n)`` (``each(items, n)`` for
another iterable), and a block run at a cadence inside such a loop (a probe every k steps) sits in
``with every(times):``, ``times`` being how often the whole loop runs it. Outside :func:`metering` they are
``range``, ``items`` and nothing. Inside it a loop runs its first iterations (``budget``: 3, or 20 of a loop of
1000 or more), each timed; if the rest would take over ``SHORT_S`` (or more than is left of ``SPARE_S`` for the
whole run) it stops there and the meter adds what the iterations left would have taken: the first iteration once
(it pays the warm-ups), the mean of the others (``typical``) for each one left; a shorter loop runs to its end, so
that the probes after it see a trained net. A loop inside a loop (a trainer's batches in its epochs, a probe's
attack steps) is scaled first, so the outer loop's iterations count it in full; a block's time is taken out of the
iteration that ran it and scaled to ``times`` on its own. Whatever runs outside these loops (data, the probes after
training) runs at full size and is timed as it is; a figure is saved through :func:`figure`, which draws it only
when its cost is not known yet (:mod:`featlab.runs.timing` keeps each figure's cost per machine).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")

FEW, MANY, LONG = 3, 20, 1000  # iterations run: FEW of a loop, MANY of one of LONG iterations or more
SHORT_S, SPARE_S = 5.0, 15.0  # a loop that would end within SHORT_S more runs to its end, SPARE_S in all a run


def budget(total: int) -> int:
    """How many iterations of a loop of ``total`` run while metering: a count fixed by the config, never by the
    clock, so that the shortened run has the same structure each time (every seed's curve as long)."""
    return MANY if total >= LONG else FEW


def typical(times: list[float]) -> float:
    """An iteration's time: the mean of those after the first (which pays the warm-ups), without the ones over
    three times their median (a thread descheduled on a busy machine); the first alone if it is the only one."""
    rest = sorted(times[1:]) or times or [0.0]
    kept = [t for t in rest if t <= 3 * rest[len(rest) // 2]] or rest
    return sum(kept) / len(kept)


class OverBudget(Exception):
    """Raised at a metered loop's step once a metering's ``limit_s`` has passed: what ran is a lower bound."""


@dataclass
class _Frame:
    """A loop (or a block) being timed."""

    total: int
    times: list[float] = field(default_factory=list)  # per iteration: wall + inner extras − blocks' wall
    inner: float = 0.0  # extras of inner loops and blocks during the current iteration (seconds not run)
    blocks_wall: float = 0.0  # wall time of blocks during the current iteration
    extra: float = 0.0  # all extras received so far (passed up when the frame ends)
    blocks: dict[float, list[float]] = field(default_factory=dict)  # times → [runs, cost, wall]


class Meter:
    """The timing of one metered run: ``extra`` (seconds the skipped iterations would have taken), ``loops`` and
    ``iterations`` (how many ran, all loops together)."""

    def __init__(self, sync: Callable[[], None] | None = None, limit_s: float | None = None,
                 spare_s: float | None = None):
        self.sync = sync
        self.deadline = None if limit_s is None else time.perf_counter() + limit_s
        self.stack: list[_Frame] = [_Frame(1)]
        self.loops = self.iterations = 0
        self.spare = SPARE_S if spare_s is None else spare_s
        self.short = min(SHORT_S, self.spare)  # a loop that would end within this runs to its end
        self.decisions: dict[tuple[object, int], bool] = {}  # (call site, size) → runs to its end
        self.trace: list[tuple[int, int, int, float, float]] = []  # per loop: depth, total, ran, seconds, added
        self.sites: dict[object, int] = {}  # a metered loop's call site (file, line) → how many times it ran
        self.figure_s: dict[str, float] = {}  # a figure's cost (seconds) known before: not drawn, added
        self.figures_timed: dict[str, float] = {}  # the figures drawn and timed in this run: name → seconds
        self.figures_skipped = 0

    @property
    def extra(self) -> float:
        root = self.stack[0]
        return root.extra + root.inner + _blocks_extra(root)

    def now(self) -> float:
        if self.sync is not None:
            self.sync()  # a GPU's queue drained: its time is counted where it was spent
        return time.perf_counter()

    def loop(self, items: Iterable[Any], total: int, site: object = None) -> Iterator[Any]:
        frame = _Frame(max(0, total))
        self.stack.append(frame)
        self.loops += 1
        self.sites[site] = self.sites.get(site, 0) + 1
        runs, ended = budget(frame.total), False
        try:
            for item in items:
                frame.inner = frame.blocks_wall = 0.0
                t0 = self.now()
                yield item  # the caller breaking out raises GeneratorExit here: it ended the loop, nothing is added
                frame.times.append(self.now() - t0 + frame.inner - frame.blocks_wall)
                frame.extra, frame.inner = frame.extra + frame.inner, 0.0
                self.iterations += 1
                self.check()
                if len(frame.times) == runs:
                    rest = (frame.total - runs) * typical(frame.times)
                    fresh = rest <= min(self.short, self.spare)
                    first = self.decisions.setdefault((site, frame.total), fresh)
                    # near the line, as the loop's first run here decided: every seed's curve as long as the others'
                    if not (fresh if rest > 4 * self.short or rest < self.short / 4 else first):
                        break
                    self.spare -= rest  # a short loop runs to its end: the probes after it see its real state
            ended = True
        finally:
            if frame in self.stack:
                self.stack.remove(frame)
            left = max(0, frame.total - len(frame.times)) if ended else 0
            add = frame.extra + frame.inner + _blocks_extra(frame) + left * typical(frame.times)
            self.stack[-1].inner += add
            self.trace.append((len(self.stack), frame.total, len(frame.times), sum(frame.times), add))

    def check(self) -> None:
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise OverBudget("the shortened run took longer than its time limit")

    @contextmanager
    def block(self, times: float) -> Iterator[None]:
        inner = _Frame(1)
        self.stack.append(inner)
        t0 = self.now()
        try:
            yield
        finally:
            wall = self.now() - t0
            self.stack.pop()
            outer = self.stack[-1]
            outer.blocks_wall += wall
            runs = outer.blocks.setdefault(float(times), [0.0, 0.0, 0.0])
            runs[0] += 1
            runs[1] += wall + inner.inner + inner.extra
            runs[2] += wall
        self.check()


def _blocks_extra(frame: _Frame) -> float:
    """What a frame's blocks add: each run ``times`` times in all, at the mean cost of the runs timed."""
    return sum(times * cost / n - wall for times, (n, cost, wall) in frame.blocks.items())


_active: ContextVar[Meter | None] = ContextVar("featlab_meter", default=None)


def steps(stop: int, start: int = 0) -> Iterable[int]:
    """``range(start, stop)``; inside :func:`metering`, its first iterations, timed and scaled to all of them."""
    m = _active.get()
    return range(start, stop) if m is None else m.loop(range(start, stop), stop - start, _site())


def each(items: Iterable[T], total: int) -> Iterable[T]:
    """``items`` (``total`` of them); inside :func:`metering`, the first few, timed and scaled to ``total``."""
    m = _active.get()
    return items if m is None else m.loop(items, total, _site())


def _site() -> tuple[str, int]:
    caller = sys._getframe(2)  # the loop's own line: steps()/each() are called from it
    return caller.f_code.co_filename, caller.f_lineno


@contextmanager
def every(times: float) -> Iterator[None]:
    """A block the whole loop around it runs ``times`` times (a probe at a cadence); nothing outside metering."""
    m = _active.get()
    if m is None:
        yield
        return
    with m.block(times):
        yield


def figure(name: str, save: Callable[[], object]) -> bool:
    """``save()`` (a figure's drawing and saving) and True; inside :func:`metering`, a figure whose cost is known
    (``Meter.figure_s``, per machine: :mod:`featlab.runs.timing`) is not drawn: its cost is added where it would
    have been spent (inside a loop's iteration, scaled with it) and False returned; an unknown one is drawn, timed
    and its cost kept in ``Meter.figures_timed``."""
    m = _active.get()
    if m is None:
        save()
        return True
    known = m.figure_s.get(name)
    if known is None:
        t0 = m.now()
        save()
        m.figures_timed[name] = m.now() - t0
        return True
    m.stack[-1].inner += known
    m.figures_skipped += 1
    return False


def metering_now() -> bool:
    return _active.get() is not None


@contextmanager
def metering(sync: Callable[[], None] | None = None, limit_s: float | None = None,
             spare_s: float | None = None, figure_s: dict[str, float] | None = None) -> Iterator[Meter]:
    """Run the loops inside in a few timed iterations; the meter's ``extra`` is what the rest would have taken.
    ``limit_s``: past it, the next metered step raises :class:`OverBudget` (``extra`` then covers what ran);
    ``spare_s``: the seconds short loops may take running to their end (default ``SPARE_S``); ``figure_s``: the
    known cost of each figure by name (those are not drawn: :func:`figure`)."""
    meter = Meter(sync, limit_s, spare_s)
    meter.figure_s = dict(figure_s or {})
    token = _active.set(meter)
    try:
        yield meter
    finally:
        _active.reset(token)
