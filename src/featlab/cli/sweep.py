"""``featlab sweep``: the cartesian product of config values, each point a cached run, on this machine, a Ray
cluster or SLURM; a table (and a plot) of the results."""

from __future__ import annotations

import argparse
import sys

from ..plotting import SWEEP_BOOKKEEPING
from ..runs.sweep import sweep
from ..text import fmt_value, table
from .options import add_run_options, refuse_stand_in


def register(sub) -> None:
    sw = sub.add_parser("sweep", help="the cartesian product of config values, each point a cached run")
    sw.add_argument("id")
    sw.add_argument("axes", nargs="*", metavar="key=v1,v2", help="e.g. k=10,20,40 eta=1e-3,1e-4")
    add_run_options(sw)
    sw.add_argument("--executor", default="local", choices=["local", "ray", "slurm"],
                    help="local (default), ray (a Ray cluster) or slurm (jobs through submitit)")
    sw.add_argument("--ray-address", default=None, help="address of an existing Ray cluster (default: start one)")
    sw.add_argument("--cpus-per-point", type=float, default=None, metavar="N",
                    help="CPUs each Ray task / SLURM job asks for and uses as torch threads (default 1)")
    sw.add_argument("--gpus-per-point", type=float, default=None, metavar="N",
                    help="GPUs each point asks for (default: 1 when its device is cuda, or auto on a GPU cluster)")
    sw.add_argument("--shared-fs", action="store_true",
                    help="workers write into --out themselves (default: they ship each record back to this one)")
    sw.add_argument("--slurm-partition", default=None, help="SLURM partition of the jobs")
    sw.add_argument("--slurm-time", type=int, default=None, metavar="MIN", help="SLURM time limit per job, minutes")
    sw.add_argument("--show", default="", metavar="M1,M2", help="metrics to print (default: the first few)")
    sw.add_argument("--plot", nargs="+", metavar="x=AXIS", help="x=AXIS y=METRIC [hue=AXIS] [kind=line|heatmap]: "
                    "a PNG beside the table")
    sw.set_defaults(handler=cmd_sweep, trailing="axes")


def cmd_sweep(a: argparse.Namespace) -> int:
    axes_named = {ax.partition("=")[0]: True for ax in a.axes}
    refuse_stand_in(a.id, a.preset, axes_named, None)  # no digits swept under a FashionMNIST experiment by default
    slurm = {k: v for k, v in (("slurm_partition", a.slurm_partition), ("timeout_min", a.slurm_time)) if v}
    df = sweep(a.id, a.axes, preset=a.preset, out=a.out, executor=a.executor, force=a.force,
               ray_address=a.ray_address, show=[m for m in a.show.split(",") if m], plot=a.plot,
               cpus_per_point=a.cpus_per_point, gpus_per_point=a.gpus_per_point, shared_fs=a.shared_fs, slurm=slurm)
    names = {ax.partition("=")[0] for ax in a.axes}
    axes = [c for c in df.columns if c in names]
    shown = [m for m in a.show.split(",") if m] or [c for c in df.columns
                                                    if c not in (*axes, *SWEEP_BOOKKEEPING) and "@" not in c][:4]
    missing = [m for m in shown if m not in df.columns]
    if missing:
        print(f"featlab: note: no metric {missing[0]!r} in these runs", file=sys.stderr)
    body = df.assign(claims_held=[f"{h}/{t}" for h, t in zip(df["claims_held"], df["claims"])])
    cols = axes + ["status", "claims_held"] + [m for m in shown if m in df.columns]
    rows = [[fmt_value(v) for v in r] for r in body[cols].values.tolist()]
    print(table(rows, cols))
    print(f"\nsweep table: {df.attrs['table']}")
    if "plot" in df.attrs:
        print(f"sweep plot:  {df.attrs['plot']}")
    for _, r in df[df["status"] != "complete"].iterrows():  # each failed point's error, one line each
        where = " ".join(f"{k}={r[k]}" for k in axes)
        print(f"featlab: point {where} failed: {r.get('error') or r['status']}", file=sys.stderr)
    failed = (df["status"] != "complete").any()
    every_claim_holds = bool((df["claims_held"] == df["claims"]).all())
    return 1 if failed or (a.strict and not every_claim_holds) else 0
