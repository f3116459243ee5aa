"""Where a sweep's points run: here one after another, as Ray tasks, or as SLURM jobs (submitit).

Every executor has the same semantics: points already complete in ``out`` are read back before any work is sent;
each point asks for ``cpus`` CPUs and ``gpus`` GPUs and sets its torch thread count to its CPUs; a remote point
ships its finished record back and the driver publishes it into ``out`` (``shared_fs=True``: the worker writes
there itself); a point that fails becomes a failed row with its error while the others go on.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import ConfigError, FeatlabError
from ..text import safe_print
from .remote import PointRequest, existing_point, failed_row, point_row, publish_point, run_point

EXECUTORS = ("local", "ray", "slurm")


def default_gpus(device: str, cluster_gpus: float) -> float:
    """GPUs per point from the config's device: cuda → 1, cpu → 0, auto → 1 when the cluster has any."""
    if device == "cuda":
        return 1.0
    return 1.0 if device == "auto" and cluster_gpus > 0 else 0.0


def execute(requests: list[PointRequest], *, executor: str = "local", devices: list[str] | None = None,
            cpus: float | None = None, gpus: float | None = None, shared_fs: bool = False,
            ray_address: str | None = None, slurm: dict[str, Any] | None = None,
            progress: bool = True) -> list[dict[str, Any]]:
    """One result row per point, in order (see the module doc)."""
    if executor not in EXECUTORS:
        raise ConfigError(f"unknown executor {executor!r}; choose one of {', '.join(EXECUTORS)}")
    for name, v in (("--cpus-per-point", cpus), ("--gpus-per-point", gpus)):
        if v is not None and not v >= 0:
            raise ConfigError(f"{name} must be a number >= 0; got {v!r} instead")
    if executor == "local":
        rows = []
        for i, req in enumerate(requests, 1):
            if progress:
                values = " ".join(f"{k}={v}" for k, v in req.overrides.items())
                safe_print(f"[{i}/{len(requests)}] {req.experiment_id} {values}")
            rows.append(run_point(req, threads=int(cpus) if cpus else None))
        return rows
    results: list[dict[str, Any] | None] = [None] * len(requests)
    todo = []
    for i, req in enumerate(requests):  # complete points are read back here: no task is sent for them
        rec = None if req.force else existing_point(req)
        if rec is not None:
            results[i] = point_row(rec)
        else:
            todo.append(i)
    devices = devices or ["auto"] * len(requests)
    if todo:
        run_remote = _ray if executor == "ray" else _slurm
        # a worker writes into the driver's --out (absolute) only on a shared file system; else it ships the record
        sent = [replace(requests[i], out=str(Path(requests[i].out_dir()).resolve()) if shared_fs else None)
                for i in todo]
        first = requests[todo[0]]
        shipped = run_remote(sent, [devices[i] for i in todo], cpus, gpus, ray_address=ray_address,
                             slurm=slurm or {}, log_dir=Path(first.out_dir()) / first.experiment_id / "sweeps")
        for i, row in zip(todo, shipped):
            results[i] = publish_point(row, requests[i])
    return results  # type: ignore[return-value]


def _ray(requests, devices, cpus, gpus, *, ray_address, **_) -> list:
    try:
        import ray
    except ImportError:
        raise FeatlabError("the ray executor needs Ray: pip install 'featlab[ray]' (or use --executor local)") \
            from None
    if not ray.is_initialized():
        ray.init(address=ray_address, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    cluster_gpus = ray.cluster_resources().get("GPU", 0.0)
    task = ray.remote(_ray_point)
    refs = []
    for req, dev in zip(requests, devices):
        c = 1.0 if cpus is None else float(cpus)
        g = default_gpus(dev, cluster_gpus) if gpus is None else float(gpus)
        refs.append(task.options(num_cpus=c, num_gpus=g, max_retries=0).remote(req))
    rows = []
    for r in refs:
        try:
            rows.append(ray.get(r))
        except Exception as e:  # a worker lost or killed: that point failed, the others go on
            rows.append(failed_row(f"{type(e).__name__}: {' '.join(str(e).split())[:500]}"))
    return rows


def _ray_point(req: PointRequest):
    import ray

    granted = ray.get_runtime_context().get_assigned_resources().get("CPU", 1.0)
    return run_point(req, threads=max(1, int(granted)))


def _slurm(requests, devices, cpus, gpus, *, slurm, log_dir, **_) -> list:
    try:
        import submitit
    except ImportError:
        raise FeatlabError("the slurm executor needs submitit: pip install 'featlab[slurm]' (or use --executor "
                           "local)") from None
    opts = dict(slurm)
    cluster = opts.pop("cluster", None)  # None: SLURM when sbatch is there; "local" runs the jobs on this machine
    folder = opts.pop("folder", None) or Path(log_dir) / "slurm-logs"
    ex = submitit.AutoExecutor(folder=str(folder), cluster=cluster)
    c = 1 if cpus is None else max(1, int(cpus))
    jobs = []
    for req, dev in zip(requests, devices):
        g = (1 if dev == "cuda" else 0) if gpus is None else int(gpus)  # no cluster-wide view before submitting
        ex.update_parameters(cpus_per_task=c, gpus_per_node=g, **opts)
        jobs.append(ex.submit(run_point, req, c))
    rows = []
    for j in jobs:
        try:
            rows.append(j.result())
        except Exception as e:  # a job killed or lost: that point failed, the others go on
            rows.append(failed_row(f"{type(e).__name__}: {' '.join(str(e).split())[:500]}"))
    return rows

