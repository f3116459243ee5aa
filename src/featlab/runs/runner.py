"""``featlab.run``: config layering, run-id, skip/force/resume, and the run record."""

from __future__ import annotations

import errno
import json
import os
import shutil
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

import pandas as pd
import torch

from ..config import build_config, load_yaml
from ..errors import ConfigError, RunRecordError, TrainingDiverged
from ..text import safe_print
from .claims import Control
from .context import RunContext
from .provenance import collect_provenance, versions
from .record import RunRecord
from .registry import get_experiment
from .resources import fields_text, is_out_of_memory, lower_bound, oom_message, size
from .store import RunWriter
from .timing import MEASURE_ABOVE_S, estimate
from .units import WORKER_ENV, UnitStore, WorkerFinished, units_folder

_DISK_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS}  # a full or read-only disk while writing
WARN_S, REFUSE_S = 86_400.0, 30 * 86_400.0  # warn above a day of work, refuse above a month
# featlab itself beside the tensors its estimate counts: torch and the libraries (0.4 GiB at start), allocator and
# thread arenas, figures (measured: 0.55-0.85 GB peak for quick runs whose tensors are a few MiB)
PROCESS_BYTES = 0.75 * 2**30


def resolve_config(experiment_id: str, preset: str = "quick", config_file: str | Path | None = None,
                   overrides: Mapping[str, Any] | None = None, control: bool | str | Control = False):
    """The effective config: preset < YAML < key=value, then a control's overrides when asked (``control=True``:
    the first declared control, or its name)."""
    exp = get_experiment(experiment_id)
    layers = [exp.preset(preset)]
    if config_file is not None:
        layers.append(load_yaml(config_file))
    layers.append(dict(overrides or {}))
    if control:
        layers.append(exp.control(None if control is True else control).overrides)  # last: cannot be undone
    return exp, build_config(exp.config, exp.id, *layers)


# ------------------------------------------------------------------------------------------ checks before any work
def preflight(exp, cfg, out: str | Path, quiet: bool = False, timed: bool = True) -> torch.device:
    """Refuse a run that cannot succeed before anything is written: a CUDA device the machine lacks, an output
    folder that is a file or not writable, a ``*_dir`` field naming a file, more memory than the machine has
    available, or months of work (``cfg.estimate()``). Each refusal is one line naming the field or flag to fix.
    Returns the run's device: ``cfg.device`` resolved, here and only here, for the whole run."""
    device = cfg.run_device()
    check_out(Path(out) / exp.id)
    for name, value in cfg:
        if name.endswith("_dir") and isinstance(value, str) and value and os.path.lexists(value) \
                and not os.path.isdir(value):
            raise ConfigError(f"the {name!r} field of {exp.id} names {value!r}, which is not a folder; pass a folder")
    check_resources(exp.id, cfg, quiet, device, timed)
    return device


def check_out(folder: Path) -> None:
    """The run's experiment folder must be creatable: its nearest existing ancestor a writable folder."""
    p = Path(folder).expanduser()
    while not os.path.lexists(p) and p != p.parent:
        p = p.parent
    if not p.is_dir():
        raise ConfigError(f"--out: {str(p)!r} is not a folder (a file or a device); pass a folder for the runs, "
                          f"e.g. --out runs")
    if not os.access(p, os.W_OK | os.X_OK):
        raise ConfigError(f"--out: the folder {str(p)!r} is not writable; pass a folder you can write to")


def available_memory(device: torch.device) -> float | None:
    """Bytes the run can still allocate on its device: CUDA's free memory, Linux's MemAvailable, else None."""
    if device.type == "cuda":
        return float(torch.cuda.mem_get_info(device)[0])
    try:
        with open("/proc/meminfo") as f:
            kb = next((int(line.split()[1]) for line in f if line.startswith("MemAvailable:")), None)
    except (OSError, ValueError, IndexError):
        return None
    return None if kb is None else kb * 1024.0


def check_resources(experiment_id: str, cfg, quiet: bool = False,
                    device: torch.device | None = None, timed: bool = True) -> None:
    """Refuse (one line, exit 2) a run whose estimated memory exceeds what is available, or whose work exceeds a
    month; warn when it exceeds a day. The work's lower bound (``cfg.estimate()``) refuses at once; a run whose lower
    bound exceeds ten minutes (and not a day) has its own steps timed here (featlab.runs.timing, cached), and that
    estimate decides (``timed=False``: a budgeted run, which stops by itself, is not timed first)."""
    needs = cfg.estimate() if hasattr(cfg, "estimate") else []
    dev = device if device is not None else cfg.run_device()
    # On the CPU every term shares one memory. On a GPU every tensor ends on the device, and the data terms are
    # also drawn (or read) in host memory first: each memory is checked against its own free space.
    host_terms = needs if dev.type != "cuda" else [n for n in needs if n.host]
    _check_memory(experiment_id, cfg, host_terms, PROCESS_BYTES, available_memory(torch.device("cpu")), "")
    if dev.type == "cuda":
        _check_memory(experiment_id, cfg, needs, 0.0, available_memory(dev), "GPU ")
    if any(n.missing for n in needs):  # its data are missing: the loader's one-line error says so, no time warning
        return
    floor = lower_bound(needs, dev.type)
    secs, how = floor, "at least"
    if floor > REFUSE_S:  # a floor above a month: refused without timing it
        big = max(needs, key=lambda n: lower_bound([n], dev.type))
        raise ConfigError(f"{experiment_id} would take at least {secs / 86_400:.3g} days ({big.what}); lower "
                          f"{fields_text(cfg, big.fields)}")
    if timed and MEASURE_ABOVE_S < floor <= WARN_S:  # might take a day: its own steps timed here (seconds, cached)
        secs, how = estimate(get_experiment(experiment_id), cfg).seconds, "about"
    if secs > WARN_S:
        big = max(needs, key=lambda n: lower_bound([n], dev.type))
        text = f"{experiment_id} would take {how} {secs / 86_400:.3g} days on this {dev.type} ({big.what}); lower " \
               f"{fields_text(cfg, big.fields)}"
        if secs > REFUSE_S:
            raise ConfigError(text)
        if not quiet:
            safe_print(f"featlab: warning: {text}", file=sys.stderr)


def _check_memory(experiment_id: str, cfg, terms: list, base: float, avail: float | None, kind: str) -> None:
    mem = sum(n.bytes for n in terms) + base
    if terms and avail is not None and mem > avail:
        big = max(terms, key=lambda n: n.bytes)
        raise ConfigError(f"{experiment_id} needs about {size(mem)} of {kind}memory ({big.what}) but {size(avail)} "
                          f"is available; lower {fields_text(cfg, big.fields)}")


class OutOfMemory(ConfigError):
    """An allocation failed during the run (its estimate was too low); the failed run record was written."""


# ------------------------------------------------------------------------------------------ running
def run(experiment_id: str, preset: str = "quick", *, out: str | Path = "runs", config_file: str | Path | None = None,
        force: bool = False, quiet: bool = False, control: bool | str | Control = False, budget_s: float | None = None,
        workers: int = 1, **overrides: Any) -> RunRecord:
    """Run an experiment (or return its existing complete run) and return the run record.

    ``budget_s``: stop after the last unit that fits in this many seconds (an experiment cut into units, e.g. an
    image table's method × seed) and raise :class:`~featlab.runs.units.BudgetReached`; the same call again resumes.
    ``workers``: processes that compute those units side by side (each one a ``featlab run`` of this config).

    ``control=True`` (or a control's name) runs a control setting (see ``@experiment(controls=...)``), where the
    claims it targets should fail; only those are judged, and the record says so under ``summary["control"]``.

    >>> res = featlab.run("fa-synthetic", preset="quick", seeds=2)
    >>> res.summary["metrics"]["binary.cos_in_class_mean"], res.metrics.head(), res.figures
    """
    started = time.monotonic()  # a budget counts from here
    exp, cfg = resolve_config(experiment_id, preset, config_file, overrides, control)
    try:
        # every user mistake is refused here, before anything is written (a budgeted run is not timed first)
        device = preflight(exp, cfg, out, quiet=quiet, timed=budget_s is None and WORKER_ENV not in os.environ)
    except ConfigError:  # e.g. a read-only --out: a complete run of this config there is still shown (it only reads)
        if force or (done := _complete_run(exp, cfg, out)) is None:
            raise
        return _reused(done, quiet)
    run_id = cfg.digest(exp.id, device.type)  # the resolved device: a CUDA request never reuses a CPU run
    if WORKER_ENV in os.environ:  # a worker process of a parent run: compute units, write no record
        _work_units(exp, cfg, out, run_id, device)  # raises WorkerFinished
    if workers < 1 or workers > 1 and control:
        raise ConfigError(f"--workers: {workers} is not a positive count (and controls run with one); pass 1 or more")
    units = UnitStore(units_folder(out, exp.id, run_id), run_id, exp.id, budget_s, quiet, started, workers=workers,
                      spawn=_command_words(exp.id, preset, out, config_file, overrides))
    if force:
        units.discard()  # --force retrains: units kept by earlier calls are not reused
    writer = RunWriter(out, exp.id, run_id)
    try:  # the first write: a folder that cannot be made (a read-only or virtual file system) is one line
        writer.final.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        if not force and (done := writer.existing()) is not None:
            return _reused(done, quiet)
        raise ConfigError(f"--out: cannot create {str(writer.final.parent)!r} ({e.strerror}); pass a folder you can "
                          f"write to") from None
    try:
        with writer.locked(on_wait=None if quiet else lambda: safe_print(
                f"featlab: another process is running {exp.id}/{run_id} into this folder; waiting for it to finish",
                file=sys.stderr)):
            writer.recover()
            if not force and (done := writer.existing()) is not None:
                return _reused(done, quiet)
            return _run_locked(exp, cfg, run_id, writer, preset, quiet, control, device, units)
    except OSError as e:
        # the lock or the repair could not write (a read-only mount, EROFS even for root): a complete run is
        # only read, so it is shown as on any other rerun
        if not force and (done := writer.existing()) is not None:
            return _reused(done, quiet)
        if e.errno not in _DISK_ERRORS:
            raise
        where = e.filename or writer.final.parent
        raise RunRecordError(f"cannot write {str(where)!r} ({e.strerror}); free some space, fix its permissions "
                             f"or pass another --out") from None


def _command_words(experiment_id: str, preset: str, out, config_file, overrides: Mapping[str, Any]) -> list[str]:
    """``featlab run`` words giving this run's config (a worker process's command line; JSON values parse as YAML)."""
    conf = ["--config", str(config_file)] if config_file is not None else []
    return ["run", experiment_id, "--preset", preset, "--out", str(out), *conf,
            *(f"{k}={json.dumps(v)}" for k, v in (overrides or {}).items())]


def _work_units(exp, cfg, out, run_id: str, device: torch.device) -> NoReturn:
    """A worker process (:mod:`.units`): the experiment runs until its units are computed (those it claims, in its
    parent's budget), in a scratch folder beside the runs that is removed after; no record is written, and
    :class:`~.units.WorkerFinished` (or :class:`~.units.BudgetReached`) says so."""
    deadline = os.environ[WORKER_ENV]
    budget = None if not deadline else max(float(deadline) - time.time(), 0.0)
    units = UnitStore(units_folder(out, exp.id, run_id), run_id, exp.id, budget, True, worker=True)
    scratch = Path(out) / exp.id / f".worker-{run_id}-{os.getpid()}"
    (scratch / "figures").mkdir(parents=True, exist_ok=True)
    try:
        exp.fn(RunContext(exp.id, cfg, scratch, quiet=True, declared=exp.claims, run_device=device, units=units))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    raise WorkerFinished  # an experiment without units: nothing was left to compute


def _complete_run(exp, cfg, out: str | Path) -> RunRecord | None:
    """The complete run of this config already in ``out``, found without writing anything (no lock, no repair)."""
    try:
        run_id = cfg.digest(exp.id, cfg.run_device().type)
    except ConfigError:  # the device itself is the mistake: the preflight's error stands
        return None
    return RunWriter(out, exp.id, run_id).existing()


def _reused(done: RunRecord, quiet: bool) -> RunRecord:
    done.skipped = True
    made = done.made_by
    if made and not quiet:  # same config, other code: its numbers may differ from this version's
        safe_print(f"featlab: warning: reusing {done.experiment}/{done.dir.name}, made by featlab {made} (this is "
                   f"{versions()['featlab']}); --force redoes it", file=sys.stderr)
    return done


def _run_locked(exp, cfg, run_id: str, writer: RunWriter, preset: str, quiet: bool, control,
                device: torch.device, units: UnitStore) -> RunRecord:
    stage = writer.open()
    try:
        writer.write_config(cfg.to_yaml())
        ctl = exp.control(None if control is True else control) if control else None
        ctx = RunContext(exp.id, cfg, stage, quiet=quiet, declared=exp.claims,  # a rival judges every claim
                         judged=set(ctl.targets(exp.claims)) if ctl and ctl.kind == "sanity" else None,
                         control=ctl.name if ctl else "", run_device=device, units=units)
        t0 = time.perf_counter()
        oom = ""
        try:
            exp.fn(ctx)
        except TrainingDiverged as e:  # a scientific outcome: recorded as a failed run, not a crash
            ctx.fail(str(e))
        except (MemoryError, RuntimeError) as e:  # the estimate was too low: one line and a failed record
            if not is_out_of_memory(e):
                raise
            oom = oom_message(exp.id, cfg, e)
            ctx.fail(oom)
        elapsed = time.perf_counter() - t0
        frame = pd.concat(ctx.frames, ignore_index=True) if ctx.frames else pd.DataFrame(
            columns=["seed", "step", "metric", "value"])
        writer.write_metrics(frame)
        summary = {
            "experiment": exp.id,
            "run_id": run_id,
            "preset": preset,
            "status": ctx.status,
            "message": ctx.message,
            "config": cfg.to_dict(),
            "metrics": ctx.metrics,
            "claims": [_with_control_kind(c.to_dict(), exp) for c in ctx.claims],
            "control": _control_record(ctl, exp, ctx) if ctl else None,
            "assumptions": exp.regime(preset),
            "figures": ctx.figures,
            "notes": ctx.notes,
            "versions": versions(),
            **collect_provenance(ctx.device),
            "command": " ".join(sys.argv) if sys.argv and sys.argv[0].endswith("featlab") else None,
            "elapsed_s": round(elapsed, 3),
        }
        rec = writer.publish(summary)
        units.discard()  # the record holds every unit's results now
        if oom:  # after the record: the failure is kept, and the command says it in one line (exit 2)
            raise OutOfMemory(f"{oom}; failed run recorded in {rec.dir}")
        return rec
    except OutOfMemory:
        raise
    except BaseException:
        writer.abandon()
        raise


def _with_control_kind(claim: dict, exp) -> dict:
    """Mark a claim no mechanism control targets (``controlled: false``): shown, not counted."""
    if claim.get("kind") == "claim":
        claim["controlled"] = any(k.kind == "mechanism" and claim["id"] in k.targets(exp.claims)
                                  for k in exp.controls)
    return claim


def _control_record(ctl, exp, ctx: RunContext) -> dict:
    """The control as data, with the values of the metrics that show its net trained (mechanism controls)."""
    out = ctl.to_dict(exp.claims)
    if ctl.trained:
        out["trained_values"] = {m: ctx.metrics.get(m) for m in ctl.trained}
    return out
