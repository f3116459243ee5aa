"""The CPU cores this process may really use: its affinity mask and its cgroup's CPU quota (a container's
``--cpus``, a SLURM or Kubernetes limit), not the machine's core count, which ``os.cpu_count()`` and torch's
default thread count report. Thread pools sized from the machine's count oversubscribe a limited process: its
threads wait for each other's time slices, and more cores on the machine make it slower."""

from __future__ import annotations

import math
import os
from pathlib import Path

import torch

CGROUP = Path("/sys/fs/cgroup")


def cgroup_quota(root: Path = CGROUP) -> float | None:
    """The cgroup's CPU quota in cores (quota / period), or None when it has none or none is readable. cgroup v2:
    ``cpu.max`` = "max 100000" or "200000 100000"; v1: ``cpu/cpu.cfs_quota_us`` (−1: none) and ``cpu.cfs_period_us``."""
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    for folder in (root / "cpu", root / "cpu,cpuacct"):
        try:
            q = int((folder / "cpu.cfs_quota_us").read_text())
            p = int((folder / "cpu.cfs_period_us").read_text())
        except (OSError, ValueError):
            continue
        return None if q <= 0 or p <= 0 else q / p
    return None


def available_cpus(root: Path = CGROUP) -> int:
    """Cores this process can run on at once: its affinity mask's size, capped by the cgroup quota (rounded up: a
    quota of 1.5 cores lets two threads make progress); at least 1."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        n = os.cpu_count() or 1
    quota = cgroup_quota(root)
    if quota is not None:
        n = min(n, math.ceil(quota))
    return max(1, n)


def fit_torch_threads() -> int:
    """Lower torch's intra-op threads to :func:`available_cpus` when torch took more (it counts the machine's
    cores); returns the count in force. Called where a command starts, never on import."""
    n = available_cpus()
    if torch.get_num_threads() > n:
        torch.set_num_threads(n)
    return torch.get_num_threads()
