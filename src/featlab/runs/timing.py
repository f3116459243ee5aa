"""Time estimates that measure: an experiment's own code run on the chosen device with its loops cut to a few timed
iterations (:mod:`featlab.meter`) and scaled to the config's step counts, cached per machine and code version.

``timed(exp, cfg, device)`` runs ``exp.fn`` once, quietly, in a temporary folder (its checkpoints too), at the
config's shapes: the data, the probes after training and the figures at full size, each training or attack loop for
a few iterations (seconds in all). The result is kept in ``$XDG_CACHE_HOME/featlab/step_times.json`` (default
``~/.cache/featlab``; ``FEATLAB_CACHE_DIR`` replaces the folder) under a key of the experiment, its whole config,
the device, torch's version, featlab's version and a digest of its source files, and this machine: a second
estimate of the same run is read from there.

Figures: a timed run draws a figure only while its cost is unknown on this machine. The first timing of an
experiment here draws and saves each figure (PNG and PDF, as a run does), times it and keeps the seconds in the
same cache under :func:`figure_key` (the experiment, this machine, PDF or not: any config, any code version, since
a figure's cost hardly depends on either); every later timing skips the drawing and the meter adds that cost where
the figure would have been saved (:func:`featlab.meter.figure`). Chosen over one per-machine constant because the
figures differ tenfold (a 3-panel heat map against rfa-amplification's ~6 s one), and over timing the first figure
of each run because most experiments draw one or two: only a cache saves their time. A cost measured under
another load is off by that load's factor, as any cached timing is.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import json
import math
import os
import platform
import random
import signal
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .. import meter
from .._version import __version__
from ..config import build_config
from ..errors import ConfigError, TrainingDiverged
from ..utils import atomic_write
from .context import RunContext
from .resources import duration, lower_bound

CACHE_FILE = "step_times.json"
KEEP = 400  # entries kept in the cache (the newest)
LIMIT_S = 120.0  # a timing that runs longer stops at its next metered step (what ran is then a lower bound)
CAPPED = f"the {LIMIT_S:.0f} s cap"  # why such a timing stopped (then retimed at fewer seeds: by_seeds)
# ``reproduce --dry-run``: all its timings share DRY_RUN_S, each given at least MIN_SHARE_S (a floor, "≥", past it)
# and, cheapest first, up to SOLO_S of what the others' MIN_SHARE_S leave (a whole timing rather than all floors)
DRY_RUN_S, MIN_SHARE_S, SOLO_S = 40.0, 3.0, 15.0
BUDGET = "the dry run's time budget"  # why a timing given a share of it stopped: not cached (a longer one may end)


@dataclass
class Timing:
    """``seconds``: the estimated wall time of the run; ``timed_s``: what measuring it took; ``loops``/
    ``iterations``: the metered loops and the iterations that ran; ``cached``: read from the cache."""

    seconds: float
    timed_s: float
    loops: int
    iterations: int
    cached: bool = False
    stopped: str = ""  # why the shortened run stopped before its end ("" if it ran to it): ``seconds`` is then a floor
    scaled: str = ""  # how a run that did not fit the cap was timed smaller and scaled up ("" if it was not)

    def how(self) -> str:
        what = f"{self.iterations} steps" if self.iterations else "its whole run (no loop to shorten)"
        what += f" {self.scaled}" if self.scaled else ""
        tail = f", stopped at {self.stopped}: a lower bound" if self.stopped else ""
        return f"cached: timed here before, {what}{tail}" if self.cached else \
            f"timed {what} here" + (tail or f" in {self.timed_s:.1f} s")


def cache_path() -> Path:
    folder = os.environ.get("FEATLAB_CACHE_DIR") or Path(os.environ.get("XDG_CACHE_HOME") or
                                                        Path.home() / ".cache") / "featlab"
    return Path(folder).expanduser() / CACHE_FILE


@functools.cache
def _source_digest(*files: str) -> str:
    """featlab's version and a digest of its source files (and of the experiment's module when it lives outside
    featlab): an edit anywhere times the runs afresh."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha1(__version__.encode())
    for p in [*sorted(root.rglob("*.py")), *map(Path, files)]:
        with contextlib.suppress(OSError):
            h.update(str(p).encode() + p.read_bytes())
    return f"{__version__}+{h.hexdigest()[:12]}"


def device_name(device: torch.device) -> str:
    if device.type == "cuda" and torch.cuda.is_available():
        return torch.cuda.get_device_name(device)
    return f"cpu ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"


def cache_key(exp: Any, cfg: Any, device: torch.device) -> str:
    mod = sys.modules.get(getattr(exp.fn, "__module__", ""), None)
    own = getattr(mod, "__file__", None) or ""
    blob = {"experiment": exp.id, "config": cfg.to_dict(), "device": device_name(device), "torch": torch.__version__,
            "code": _source_digest(*([own] if own and "featlab" not in Path(own).parts else [])),
            "machine": [platform.node(), platform.machine(), os.cpu_count()]}
    return hashlib.sha256(json.dumps(blob, sort_keys=True, default=str).encode()).hexdigest()[:24]


def figure_key(exp: Any) -> str:
    """The cache key of ``exp``'s figure costs on this machine (any config, any code version: a figure's cost
    hardly depends on either), PDF or not."""
    blob = [exp.id, platform.node(), platform.machine(), os.cpu_count(), os.environ.get("FEATLAB_PDF", "1")]
    return "figures:" + hashlib.sha256(json.dumps(blob).encode()).hexdigest()[:24]


def figure_costs(exp: Any) -> dict[str, float]:
    """The seconds each of ``exp``'s figures took to draw and save here (name → seconds), from the cache."""
    entry = _read_cache().get(figure_key(exp))
    costs = entry.get("figures") if isinstance(entry, dict) else None
    try:
        return {str(k): float(v) for k, v in costs.items()} if isinstance(costs, dict) else {}
    except (TypeError, ValueError):
        return {}


def _read_cache() -> dict[str, Any]:
    try:
        data = json.loads(cache_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_cache(key: str, entry: dict[str, Any]) -> None:
    data = _read_cache()
    data[key] = entry
    newest = sorted(data.items(), key=lambda kv: str(kv[1].get("date", "")) if isinstance(kv[1], dict) else "")
    with contextlib.suppress(OSError):  # a read-only home: the estimate stands, it is only timed again next time
        atomic_write(cache_path(), json.dumps(dict(newest[-KEEP:]), indent=1))


def cached(exp: Any, cfg: Any, device: torch.device, limit_s: float | None = None) -> Timing | None:
    """The cached timing of this run on this machine and code, or None; None too for a floor that a dry run's
    budget stopped at ``limit`` s when ``limit_s`` is half as long again (given that, the timing may end now)."""
    entry = _read_cache().get(cache_key(exp, cfg, device))
    if isinstance(entry, dict) and limit_s is not None and limit_s > 1.5 * float(entry.get("limit") or math.inf):
        return None
    try:
        return Timing(float(entry["seconds"]), float(entry["timed_s"]), int(entry["loops"]),
                      int(entry["iterations"]), cached=True, stopped=str(entry.get("stopped") or ""),
                      scaled=str(entry.get("scaled") or "")) \
            if isinstance(entry, dict) else None
    except (KeyError, TypeError, ValueError):
        return None


@contextlib.contextmanager
def _isolated():
    """No output, no progress bars, no warnings, and the global random states as they were (a run that follows is
    the same with or without its estimate)."""
    py, np_state, bars = random.getstate(), np.random.get_state(), os.environ.get("FEATLAB_PROGRESS")
    os.environ["FEATLAB_PROGRESS"] = "0"
    try:
        with torch.random.fork_rng(devices=[]), warnings.catch_warnings(), \
                contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        random.setstate(py)
        np.random.set_state(np_state)
        if bars is None:
            os.environ.pop("FEATLAB_PROGRESS", None)
        else:
            os.environ["FEATLAB_PROGRESS"] = bars


@contextlib.contextmanager
def _alarm(seconds: float):
    """Past ``seconds``, :class:`~featlab.meter.OverBudget` raised wherever the run is (work outside the metered
    loops too); on the main thread of a POSIX process, else nothing."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise meter.OverBudget("the shortened run took longer than its time limit")

    old = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def measure(exp: Any, cfg: Any, device: torch.device, limit_s: float = LIMIT_S) -> Timing:
    """Run ``exp`` at ``cfg`` with its loops cut to a few timed iterations; the estimated seconds of the whole run.
    A run that stops early (``limit_s``: the cap, or a share of a dry run's budget; or code after a shortened loop
    that needs all its steps) gives what it reached, a lower bound that says so. Under ``limit_s`` short loops run
    to their end (:mod:`featlab.meter`) only within a quarter of it."""
    run_cfg = cfg.model_copy(update={"checkpoint_dir": ""}) if "checkpoint_dir" in type(cfg).model_fields else cfg
    sync = torch.cuda.synchronize if device.type == "cuda" else None
    with tempfile.TemporaryDirectory(prefix="featlab-timing-") as tmp, _isolated():
        stage = Path(tmp) / "run"
        (stage / "figures").mkdir(parents=True)
        ctx = RunContext(exp.id, run_cfg, stage, quiet=True, declared=exp.claims, run_device=device)
        known = figure_costs(exp)
        with meter.metering(sync, limit_s, spare_s=min(meter.SPARE_S, limit_s / 4), figure_s=known) as m, \
                _alarm(limit_s + min(5.0, limit_s / 4)):
            t0, stopped = time.perf_counter(), ""
            try:
                exp.fn(ctx)
            except TrainingDiverged:  # a few steps of a config that diverges: what ran is what it costs
                pass
            except meter.OverBudget:
                stopped = CAPPED if limit_s >= LIMIT_S else f"{BUDGET} ({limit_s:.0f} s)"
            except Exception as e:  # code after a shortened loop that needs all its steps (a curve's length)
                stopped = f"a {type(e).__name__} of the shortened run"
            wall = time.perf_counter() - t0
    if m.figures_timed:
        _write_cache(figure_key(exp), {"experiment": exp.id, "figures": {**known, **m.figures_timed},
                                       "date": time.strftime("%Y-%m-%dT%H:%M:%S")})
    return Timing(wall + m.extra, wall, m.loops, m.iterations, stopped=stopped)


def by_seeds(exp: Any, cfg: Any, device: torch.device) -> Timing | None:
    """A run of S > 2 seeds whose timing hit the cap, timed at 1 and 2 seeds and extended linearly,
    T(S) = T(1) + (S − 1)·(T(2) − T(1)): the image experiments train their seeds one after another, each as costly
    (a replica-batched run costs less a seed, and this over-estimates it); None if either timing hits the cap too."""
    n = int(getattr(cfg, "seeds", 0) or 0)
    if n <= 2:
        return None
    one = measure(exp, cfg.model_copy(update={"seeds": 1}), device)
    two = None if one.stopped else measure(exp, cfg.model_copy(update={"seeds": 2}), device)
    if two is None or two.stopped:  # one seed alone over the cap: not timed at two
        return None
    per_seed = max(two.seconds - one.seconds, 0.0)
    return Timing(one.seconds + (n - 1) * per_seed, one.timed_s + two.timed_s, one.loops + two.loops,
                  one.iterations + two.iterations, scaled=f"at 1 and 2 seeds, extended to {n}")


def timed(exp: Any, cfg: Any, device: torch.device, limit_s: float = LIMIT_S) -> Timing:
    """The cached timing of this run, else :func:`measure` it here (within ``limit_s``) and cache it; a timing that
    stopped at its share of a dry run's budget is cached with that share (a dry run with more to spare retimes it)."""
    hit = cached(exp, cfg, device, limit_s)
    if hit is not None:
        return hit
    t = measure(exp, cfg, device, min(limit_s, LIMIT_S))
    if t.stopped == CAPPED:
        t = by_seeds(exp, cfg, device) or t
    _write_cache(cache_key(exp, cfg, device), {
        "experiment": exp.id, "seconds": round(t.seconds, 3), "timed_s": round(t.timed_s, 3), "loops": t.loops,
        "iterations": t.iterations, "stopped": t.stopped, "scaled": t.scaled, "device": device_name(device),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S"), "limit": round(limit_s, 1) if t.stopped.startswith(BUDGET)
        else None})
    return t


class Budget:
    """The seconds a dry run spends timing, shared among the runs it times: each gets what is left divided by the
    runs left to time (those cached cost nothing), or more: up to ``SOLO_S`` while ``MIN_SHARE_S`` stays for each
    run after it (on a loaded machine equal shares stopped every timing: all floors, none within 2× of its run;
    this way the cheapest finish); one that takes longer stops there and its estimate is a floor ("≥"); once less
    than ``MIN_SHARE_S`` is left, the rest are not timed (a next dry run times them: what was timed is cached)."""

    def __init__(self, total_s: float = DRY_RUN_S, runs: int = 1):
        self.end, self.left = time.perf_counter() + total_s, max(1, runs)

    def share(self) -> float:
        """What is left over the runs left to time, or up to ``SOLO_S`` of what leaves ``MIN_SHARE_S`` to each of
        the others; at least ``MIN_SHARE_S`` while that much is left."""
        left = self.end - time.perf_counter()
        return max(min(MIN_SHARE_S, left), left / self.left, min(SOLO_S, left - MIN_SHARE_S * (self.left - 1)))

    def spent(self) -> None:
        self.left = max(1, self.left - 1)


def dry_run_budget(pairs: list[tuple[Any, Any]], total_s: float | None = None) -> Budget:
    """The budget of a dry run over (experiment, config) ``pairs`` (``DRY_RUN_S`` unless ``total_s``), shared among
    those not cached here yet."""
    total_s, left = DRY_RUN_S if total_s is None else total_s, 0
    for exp, cfg in pairs:
        try:
            left += cached(exp, cfg, cfg.run_device(), total_s) is None
        except Exception:  # no such device here: nothing to time
            continue
    return Budget(total_s, left)


# ------------------------------------------------------------------------------------------ the estimate of a run
# a run whose lower bound is under ten minutes ends within a day (runs here took at most ~100× theirs): timed only
# when asked (--dry-run), not before a run nor by a reproduction that only decides what needs a GPU
MEASURE_ABOVE_S = 600.0


@dataclass
class Estimate:
    """A run's estimated ``seconds`` and ``bytes``, ``how`` it was made (for the plan line), and ``missing``: what
    this machine lacks to run it ("" if nothing)."""

    seconds: float
    bytes: float
    how: str
    missing: str = ""
    measured: str = ""  # "run": a run of this config took it here; "timed": its steps timed here (cached or now);
    # "floor": timed, but the shortened run stopped early (at least this); "": not timed (a model's lower bound,
    # perhaps scaled by another run) — the plan then prints no time for it

    def time_text(self) -> str:
        """'≈ 12 s' (measured), '≥ 3.5 min' (a timing that stopped early) or 'not timed' (nothing measured)."""
        return {"run": "≈ ", "timed": "≈ ", "floor": "≥ "}.get(self.measured, "") + duration(self.seconds) \
            if self.measured else "not timed"


def calibration(runs: Any, exp: Any, cfg: Any, device_type: str) -> tuple[float, dict[str, Any]] | None:
    """(measured / lower bound, summary) of ``exp``'s run under ``runs`` at ``cfg`` if there is one, else of its
    newest: a complete run (not a control) on this kind of device that recorded its time. The lower bound's per-step
    costs are generic; a run on this machine says what each step of this experiment costs."""
    found = []
    for r in runs.of(exp.id):
        el, s = r.summary.get("elapsed_s"), r.summary
        if not (r.ok and isinstance(el, (int, float)) and el > 0) or s.get("device_type", device_type) != device_type:
            continue
        try:
            model = lower_bound(exp.config(**(s.get("config") or {})).estimate(), device_type)
        except Exception:  # a record from another version of the config: not comparable, try an older one
            continue
        if model > 0:
            found.append((el / model, s))
    same = [f for f in found if f[1].get("config") == cfg.to_dict()]
    pick = same or found
    return pick[0] if pick else None


def estimate(exp: Any, cfg: Any, *, runs: Any = None, measure: bool | None = True,
             budget: Budget | None = None) -> Estimate:
    """How long ``exp`` takes at ``cfg`` on its device, best first: the time of a run of this very config under
    ``runs`` (an index of run records made here); its own steps timed here (cached, else measured: ``measure`` True
    always, None when its lower bound exceeds ``MEASURE_ABOVE_S``, False never); the lower bound scaled by a run of
    another config under ``runs``, or by its quick preset timed here (its data missing, or no such device here); the
    lower bound alone. ``budget``: what a timing made here may take (a share of a dry run's), else ``LIMIT_S``."""
    needs = cfg.estimate()
    mem, missing = sum(n.bytes for n in needs), next((n.missing for n in needs if n.missing), "")
    try:
        device, why_not = cfg.run_device(), ""
    except ConfigError:
        device, why_not = None, f"no {cfg.device} device here"
    kind = device.type if device is not None else str(cfg.device)
    floor = lower_bound(needs, kind)
    cal = calibration(runs, exp, cfg, kind) if runs is not None else None
    if cal is not None and cal[1].get("config") == cfg.to_dict():
        return Estimate(cal[0] * floor, mem, f"measured: its {cal[1].get('preset')} run took "
                        f"{duration(cal[0] * floor)} here", missing, "run")
    if device is not None and not missing:
        try:
            t, why_not = _timing(exp, cfg, device, measure or (measure is None and floor > MEASURE_ABOVE_S), budget)
        except Exception as e:  # a bug of the shortened run must not hide the plan: the model stands in
            t, why_not = None, f"timing failed: {type(e).__name__}"
        if t is not None:
            return Estimate(t.seconds, mem, t.how(), missing, "floor" if t.stopped else "timed")
    base = "data missing, nothing to time" if missing else why_not or "not timed: --dry-run times it"
    if cal is not None:
        return Estimate(cal[0] * floor, mem, f"{base}; lower bound × {cal[0]:.3g}, scaled from its "
                        f"{cal[1].get('preset')} run measured here ({duration(float(cal[1]['elapsed_s']))})", missing)
    quick = _quick_factor(exp, cfg, device, measure is True, budget)
    if quick is not None:
        return Estimate(quick * floor, mem, f"{base}; lower bound × {quick:.3g}, scaled from its quick preset "
                        f"timed here", missing)
    return Estimate(floor, mem, f"{base}; a lower bound", missing)


SPENT = "not timed: the dry run's time budget is spent (run it again: what it timed is cached)"


def _timing(exp: Any, cfg: Any, device: torch.device, now: bool, budget: Budget | None) -> tuple[Timing | None, str]:
    """(the cached timing, else one made now if ``now`` within ``budget``'s share, or None; why none was made)."""
    limit = LIMIT_S if budget is None else min(LIMIT_S, budget.share())
    t = cached(exp, cfg, device, limit)
    if t is not None or not now:
        return t, ""
    if limit < MIN_SHARE_S:
        return None, SPENT
    t = timed(exp, cfg, device, limit)
    if budget is not None:
        budget.spent()
    return t, ""


def _quick_factor(exp: Any, cfg: Any, device: torch.device | None, measure: bool,
                  budget: Budget | None = None) -> float | None:
    """timed / lower bound of ``exp``'s quick preset on this machine (for a config that cannot be timed here)."""
    if device is None:  # no such device here: a CPU's timing says nothing of it
        return None
    try:
        qcfg = build_config(exp.config, exp.id, exp.preset("quick"))
        qdev = device
        if qcfg.to_dict() == cfg.to_dict() or any(n.missing for n in qcfg.estimate()):
            return None
        t = _timing(exp, qcfg, qdev, measure, budget)[0]
        floor = lower_bound(qcfg.estimate(), qdev.type)
    except Exception:
        return None
    return t.seconds / floor if t is not None and not t.stopped and floor > 0 else None
