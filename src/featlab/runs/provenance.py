"""Where and how a run ran, as its record keeps it: the versions of featlab and its stack, the date, featlab's git
commit when it runs from a checkout, and the device's name."""

from __future__ import annotations

import datetime as _dt
import platform
import subprocess
from pathlib import Path

import numpy
import pandas as pd
import torch

from .._version import __version__


def versions() -> dict[str, str]:
    return {"featlab": __version__, "python": platform.python_version(), "torch": torch.__version__,
            "numpy": numpy.__version__, "pandas": pd.__version__}


def _git_commit() -> str | None:
    """featlab's commit when it runs from its own checkout (``+dirty`` with uncommitted changes), else None."""
    here = Path(__file__).resolve().parent

    def git(*a: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *a], cwd=here, capture_output=True, text=True, timeout=5)

    try:
        head = git("rev-parse", "--short=12", "HEAD")
        tracked = git("ls-files", "--error-unmatch", Path(__file__).name)  # featlab's own checkout, not any repo
        if head.returncode == 0 and tracked.returncode == 0:
            dirty = git("status", "--porcelain", "--untracked-files=no").stdout.strip()
            return head.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return None


def collect_provenance(device: torch.device) -> dict[str, str]:
    """The device the run resolved (``auto`` → cuda or cpu) as ``device_type``, its name (the GPU's model, or the
    CPU's) as ``device``, the date, and ``git_commit`` when featlab runs from a checkout."""
    if device.type == "cuda" and torch.cuda.is_available():
        name = torch.cuda.get_device_name(device)
    else:
        name = f"cpu ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"
    out = {"device_type": device.type, "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
           "device": name}
    commit = _git_commit()
    if commit:
        out["git_commit"] = commit
    return out
