"""Checkpoints of image training: written atomically after every epoch, refused when another config wrote them.

* A checkpoint (model, optimizer, AMP scaler, history, fingerprint) is read with ``torch.load(weights_only=True)``.
  A checkpoint written under another fingerprint (another config) is refused with the fields that differ.
* A config marks the fields that do not change training in ``NOT_TRAINING``; :func:`fingerprint_of` leaves them out.
* :func:`run_checkpoints`: where a run keeps its checkpoints, and what it deletes when it completes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import torch

from ..errors import ConfigError, FeatlabError
from ..utils import atomic_write


class CheckpointError(FeatlabError):
    """A checkpoint cannot be used for this run (another config, unreadable)."""


def _diff(a: dict, b: dict) -> str:
    keys = sorted(set(a) | set(b))
    diffs = [k for k in keys if a.get(k) != b.get(k)]
    if not diffs:
        return "its fingerprint differs"
    k = diffs[0]
    shown = k.removeprefix("fingerprint.").removeprefix("config.")
    more = [d for d in diffs[1:] if not d.startswith("spec.")]  # spec.* repeats the config's training fields
    return f"field {shown!r} is {a.get(k)!r} there and {b.get(k)!r} here" + (f" (and {len(more)} more)" if more else "")


def _flatten(d: dict, prefix: str = "") -> dict:
    return {kk: vv for k, v in d.items()
            for kk, vv in (_flatten(v, f"{prefix}{k}.").items() if isinstance(v, dict) else [(f"{prefix}{k}", v)])}


def load_checkpoint(path: Path, fingerprint: dict) -> dict | None:
    """The checkpoint at ``path`` if it exists and was written under ``fingerprint``; raise if it is foreign."""
    if not path.is_file():
        return None
    try:  # any malformed file (truncated, not a checkpoint, tampered) is one line, never a traceback
        state = torch.load(path, map_location="cpu", weights_only=True)
        theirs = json.loads(state["fingerprint"])
        state["epoch"], state["history"], _ = int(state["epoch"]), list(state["history"]), state["model"]
        if not (isinstance(theirs, dict) and isinstance(state["optimizer"], dict)):
            raise TypeError("not a featlab checkpoint")
    except Exception as e:
        raise CheckpointError(f"checkpoint {str(path)!r} is unreadable or not a featlab checkpoint "
                              f"({type(e).__name__}); delete it to start this model afresh") from None
    if theirs != (ours := json.loads(json.dumps(fingerprint, default=str))):
        raise CheckpointError(f"refusing to resume from checkpoint {str(path)!r}: it was written by another config "
                              f"({_diff(_flatten(theirs), _flatten(ours))}); delete it or choose another checkpoint "
                              f"folder")
    return state


def save_checkpoint(path: Path, state: dict) -> None:
    atomic_write(path, lambda tmp: torch.save(state, tmp))  # a kill mid-write leaves the previous epoch's file


def fingerprint_of(experiment_id: str, cfg: Any, **extra: Any) -> dict:
    """What a checkpoint must have been written under: the experiment, its config minus the fields the config's
    class marks as not changing the training (``NOT_TRAINING``: where checkpoints live, the attack...) and the
    model's tag."""
    d = dict(cfg.to_dict()) if hasattr(cfg, "to_dict") else dict(cfg)
    for k in getattr(cfg, "NOT_TRAINING", ()):
        d.pop(k, None)
    return {"experiment": experiment_id, "config": d, **extra}


@contextmanager
def run_checkpoints(ctx) -> Iterator[Path]:
    """The run's checkpoint folder: OUT/<experiment>/.checkpoints/<run-id>, or with ``checkpoint_dir`` its own
    sub-folder ``featlab-<experiment>`` (the user's folder may hold anything: featlab never touches the rest). When
    the block completes, unless ``keep_checkpoints``, only the checkpoint files featlab writes (``*.pt``, their
    temporaries) are deleted, then each folder it made if empty. A run that raises keeps them: it resumes."""
    base = Path(ctx.cfg.checkpoint_dir).expanduser() if ctx.cfg.checkpoint_dir else ctx.dir.parent / ".checkpoints"
    run_id = ctx.cfg.digest(ctx.experiment_id, ctx.device.type)
    ck = base / (f"featlab-{ctx.experiment_id}" if ctx.cfg.checkpoint_dir else run_id)
    if ck.exists() and not ck.is_dir():
        raise ConfigError(f"the 'checkpoint_dir' field: {str(ck)!r} is a file; move it or choose another folder")
    made = [ck, *(p for p in ck.parents if not p.exists())] if ctx.cfg.checkpoint_dir else [ck, base]
    yield ck
    if not ctx.cfg.keep_checkpoints:
        for f in [*ck.glob("*.pt"), *ck.glob(".*.pt.*.tmp")]:
            f.unlink(missing_ok=True)
        for folder in made:  # a user's checkpoint_dir that existed before is never removed
            with suppress(OSError):
                folder.rmdir()  # only when empty
