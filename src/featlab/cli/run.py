"""``featlab run``: one experiment (its quick preset by default), its controls, or its effective config."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..config import parse_overrides
from ..runs.registry import get_experiment
from ..runs.runner import resolve_config, run
from ..runs.units import WORKER_ENV, BudgetReached, WorkerFinished, parse_budget
from ..text import fmt_value
from .options import add_run_options, print_run, refuse_stand_in

BUDGET_EXIT = 3  # a budgeted run stopped with units left: run the same command again


def register(sub) -> None:
    r = sub.add_parser("run", help="run one experiment")
    r.add_argument("id")
    r.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides, e.g. seeds=8 k=20")
    add_run_options(r)
    r.add_argument("--config", metavar="FILE.yaml", help="YAML file of field: value (applied before key=value)")
    r.add_argument("--control", action="store_true",
                   help="run every control setting, where the paper's statements should be false (no claim it "
                   "targets may hold); --control-name picks one")
    r.add_argument("--control-name", metavar="NAME", help="run only this control (see 'featlab claims ID')")
    r.add_argument("--print-config", action="store_true", help="print the effective config as YAML and exit")
    r.add_argument("--budget", metavar="DURATION", help="stop after the last unit (an image table's method x seed) "
                   "that fits in this time, e.g. 540s, 9m, 1.5h; the same command again resumes (exit 3 while "
                   "units remain); 'featlab pack' carries the kept units to another machine")
    r.add_argument("--workers", type=int, default=1, metavar="N", help="compute the units in N processes side by "
                   "side (on a GPU: several small models train concurrently; default 1)")
    r.set_defaults(handler=cmd_run, trailing="overrides")


def cmd_run(a: argparse.Namespace) -> int:
    overrides = parse_overrides(a.overrides)
    if a.print_config:
        return print_config(a, overrides)
    if a.control or a.control_name:
        return run_controls(a, overrides)
    refuse_stand_in(a.id, a.preset, overrides, a.config)  # no digits filed under a FashionMNIST experiment by default
    try:
        rec = run(a.id, a.preset, out=a.out, config_file=a.config, force=a.force, budget_s=parse_budget(a.budget),
                  workers=a.workers, **overrides)
    except BudgetReached as stop:  # not an error: the kept units resume on the next call
        if WORKER_ENV not in os.environ:  # a unit worker's parent says it once
            print(f"featlab: {stop.message}", file=sys.stderr)
        return BUDGET_EXIT
    except WorkerFinished:  # a unit worker of another featlab run (featlab.runs.units): its parent reports
        return 0
    print_run(rec)
    return 0 if rec.passes(a.strict) else 1


def print_config(a: argparse.Namespace, overrides: dict[str, Any]) -> int:
    """``featlab run ID --print-config``: the effective YAML (preset < --config < key=value [< control]), no run."""
    control = a.control_name or bool(a.control)
    _, cfg = resolve_config(a.id, a.preset, a.config, overrides, control)
    sys.stdout.write(cfg.to_yaml())
    return 0


def run_controls(a: argparse.Namespace, overrides: dict[str, Any]) -> int:
    """Each control in turn (or the one named): exit 1 when a run fails or a targeted claim holds."""
    exp = get_experiment(a.id)
    chosen = [exp.control(a.control_name)] if a.control_name else [exp.control(c.name) for c in exp.controls]
    code = 0
    for ctl in chosen:
        rec = run(a.id, a.preset, out=a.out, config_file=a.config, force=a.force, control=ctl.name, **overrides)
        print_run(rec)
        targets = set(ctl.targets(exp.claims))
        held = [c["id"] for c in rec.claims if c["holds"] and c["id"] in targets]
        judged = sum(c["id"] in targets for c in rec.claims)
        print(f"\n{ctl.kind} control {ctl.name!r} ({ctl.why}): {len(held)}/{judged} claims hold; none may"
              + (f" — a defect: {', '.join(held)}" if held else ""))
        if ctl.kind == "mechanism":
            trained = (rec.summary.get("control") or {}).get("trained_values") or {}
            print(f"  removes: {ctl.premise}; the net still trains: "
                  + ", ".join(f"{m} = {fmt_value(v)}" for m, v in trained.items())
                  + f" (the claims' own run must not be higher by more than {ctl.margin:g})")
        code = max(code, 1 if not rec.ok or held else 0)
    return code
