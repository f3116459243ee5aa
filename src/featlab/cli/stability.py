"""``featlab stability``: each paper-silent field varied over its range one at a time (plus seeds and test points),
each point a cached run through the sweep executors; per claim, whether its verdict survives."""

from __future__ import annotations

import argparse
import sys

from ..config import parse_overrides
from ..runs.stability import headline, stability, summary_text
from .options import add_run_options


def register(sub) -> None:
    st = sub.add_parser("stability", help="do the verdicts survive the values the paper never gives? (each "
                        "paper-silent field over its range, one at a time)")
    st.add_argument("id")
    st.add_argument("overrides", nargs="*", metavar="key=value", help="the base setting's overrides (e.g. seeds=8)")
    add_run_options(st)
    next(x for x in st._actions if x.dest == "strict").help = "exit 1 when a verdict flips over the tried values"
    st.add_argument("--fields", default="", metavar="A,B", help="vary only these fields (default: every paper-silent "
                    "field with a range, and seeds, seed, n_test)")
    st.add_argument("--budget", type=int, default=None, metavar="N", help="at most N runs besides the base, every "
                    "field's first value before any field's second")
    st.add_argument("--executor", default="local", choices=["local", "ray", "slurm"],
                    help="where the points run, as for featlab sweep (default local)")
    st.add_argument("--ray-address", default=None, help="address of an existing Ray cluster (default: start one)")
    st.add_argument("--cpus-per-point", type=float, default=None, metavar="N",
                    help="CPUs each Ray task / SLURM job asks for and uses as torch threads (default 1)")
    st.add_argument("--shared-fs", action="store_true",
                    help="workers write into --out themselves (default: they ship each record back to this one)")
    st.add_argument("--slurm-partition", default=None, help="SLURM partition of the jobs")
    st.add_argument("--slurm-time", type=int, default=None, metavar="MIN", help="SLURM time limit per job, minutes")
    st.set_defaults(handler=cmd_stability, trailing="overrides")


def cmd_stability(a: argparse.Namespace) -> int:
    fields = [f.strip() for f in a.fields.split(",") if f.strip()]
    slurm = {k: v for k, v in (("slurm_partition", a.slurm_partition), ("timeout_min", a.slurm_time)) if v}
    study, long, summary = stability(a.id, a.preset, parse_overrides(a.overrides), fields=fields or None,
                                     budget=a.budget, out=a.out, executor=a.executor, force=a.force,
                                     cpus=a.cpus_per_point, ray_address=a.ray_address, shared_fs=a.shared_fs,
                                     slurm=slurm)
    print(headline(study))
    print(summary_text(summary))
    for why in study.skipped:
        print(f"featlab: note: not tried: {why}", file=sys.stderr)
    print(f"\nstability table: {long.attrs['table']} (and {long.attrs['markdown']}); "
          f"{long.attrs['elapsed_s']:.0f} s")
    failed = (long["run_status"] != "complete").any()
    return 1 if failed or (a.strict and not summary["stable"].all()) else 0
