"""One sweep point on another machine (a Ray worker, a SLURM job): run it, ship the record back, publish it.

A worker runs the point into a private temporary folder and returns the finished run folder as bytes (a tar);
the driver publishes it into its own ``--out`` with the same atomic rename as a local run. So no shared file
system is needed, and a relative ``--out`` means the driver's folder, whatever the worker's cwd. With
``shared_fs`` (a shared file system) the worker writes straight into the driver's absolute ``--out``.
Any exception in a point becomes a failed row carrying its error; the other points go on.
"""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ..errors import RunRecordError
from .runner import resolve_config, run
from .store import SUMMARY, RunRecord, RunWriter, load_run


@dataclass(frozen=True)
class PointRequest:
    """One sweep point, built once by the driver and handed to whatever looks it up, runs or publishes it."""

    experiment_id: str
    preset: str
    overrides: dict[str, Any]  # the point's config values
    out: str | None  # the driver's --out; None on a worker that ships the record back instead
    force: bool = False  # rerun even when the point's run is complete

    def out_dir(self) -> str:
        """``out`` where it is set: on the driver, and on a worker that shares its file system."""
        assert self.out is not None, "a request without --out is only run by a worker, in a temporary folder"
        return self.out


def point_row(rec: RunRecord) -> dict[str, Any]:
    return {"dir": str(rec.dir), "status": rec.status, "skipped": rec.skipped, "metrics": rec.summary["metrics"],
            "claims": rec.claims, "error": rec.summary.get("message", "") if not rec.ok else ""}


def failed_row(error: str) -> dict[str, Any]:
    return {"dir": "", "status": "failed", "skipped": False, "metrics": {}, "claims": [], "error": error}


def existing_point(req: PointRequest) -> RunRecord | None:
    """The complete run of this point already in ``req.out``, if any: checked by the driver before sending work."""
    exp, cfg = resolve_config(req.experiment_id, req.preset, overrides=req.overrides)
    rec = RunWriter(req.out_dir(), exp.id, cfg.digest(exp.id)).existing()
    if rec is not None:
        rec.skipped = True
    return rec


def run_point(req: PointRequest, threads: int | None = None) -> dict[str, Any]:
    """The worker's side. ``req.out`` None: run in a temporary folder and return the record as ``tar`` bytes;
    otherwise write there (a shared file system). Never raises: an error is returned as a failed row."""
    if threads:
        torch.set_num_threads(max(1, int(threads)))  # what the scheduler granted, not the whole node
    tmp = tempfile.mkdtemp(prefix="featlab-point-") if req.out is None else None
    try:
        rec = run(req.experiment_id, req.preset, out=tmp or req.out_dir(), force=req.force, quiet=True, **req.overrides)
        row = point_row(rec)
        if tmp is not None:
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w:gz") as tar:
                tar.add(rec.dir, arcname=".")
            row["tar"], row["run_id"] = buf.getvalue(), rec.dir.name
        return row
    except Exception as e:  # a point's failure is data for the sweep table, not a crash
        return failed_row(f"{type(e).__name__}: {' '.join(str(e).split())}")
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def publish_point(row: dict[str, Any], req: PointRequest) -> dict[str, Any]:
    """The driver's side: unpack a shipped record into ``req.out/<experiment>/<run-id>`` atomically."""
    if "tar" not in row:
        return row
    data, run_id = row.pop("tar"), row.pop("run_id")
    writer = RunWriter(req.out_dir(), req.experiment_id, run_id)
    with writer.locked():
        writer.recover()
        stage = writer.open()
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            _safe_extract(tar, stage)
        try:
            summary = load_run(stage).summary
        except RunRecordError as e:
            writer.abandon()
            return failed_row(f"the shipped record is unreadable: {e}")
        os.remove(stage / SUMMARY)  # publish writes it last, as for a local run
        rec = writer.publish(summary)
    return {**row, "dir": str(rec.dir)}


def _safe_extract(tar: tarfile.TarFile, dest: Path) -> None:
    """Only regular files and folders inside ``dest``: a record never writes elsewhere."""
    root = Path(dest).resolve()
    for m in tar.getmembers():
        target = (root / m.name).resolve()
        if not (m.isfile() or m.isdir()) or (target != root and root not in target.parents):
            raise RunRecordError(f"a shipped run record holds an unexpected entry {m.name!r}")
    tar.extractall(root)
