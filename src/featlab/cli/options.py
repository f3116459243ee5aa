"""What several commands share: the run options (--preset, --out, --force, --strict), JSON output, a run's printout."""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from ..config import load_yaml
from ..errors import ConfigError
from ..report.tables import run_report
from ..runs.record import RunRecord
from ..runs.registry import get_experiment
from ..utils import json_dumps


class _DefaultPreset(str):
    """The preset a command takes when none is named: 'quick', told apart from the same word typed."""


DEFAULT_PRESET = _DefaultPreset("quick")


def refuse_stand_in(experiment_id: str, preset: str, overrides: dict[str, Any], config_file: str | None) -> None:
    """``featlab run mm-spurious-fmnist`` (no --preset, no dataset= given) refuses, in one line, a default preset
    that would train on another dataset than the experiment's name says (Experiment.stand_in)."""
    if preset is not DEFAULT_PRESET or "dataset" in overrides or (config_file and "dataset" in load_yaml(config_file)):
        return
    if why := get_experiment(experiment_id).stand_in(preset):
        raise ConfigError(why)


def add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", default=DEFAULT_PRESET, help="quick (CPU, about a minute per experiment; default), "
                   "theory (the theorems' assumptions, where an experiment has it), paper; reproduce takes several, "
                   "comma-separated, and shows their verdicts side by side")
    p.add_argument("--out", default="runs", help="output folder (default ./runs)")
    p.add_argument("--force", action="store_true", help="retrain even if an identical complete run exists")
    p.add_argument("--strict", action="store_true", help="exit 1 when a claim does not hold")


def dump_json(obj: Any) -> None:
    print(json_dumps(obj, indent=2, default=str, ensure_ascii=False))  # strict: NaN as "NaN", never bare


def print_run(rec: RunRecord, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    if rec.skipped:
        print("(an identical complete run exists, every file matching its hash; not retrained — use --force to "
              "retrain)", file=out)
    print(run_report(rec.summary, str(rec.dir)), file=out)


def note_unverified(rec: RunRecord) -> None:
    """One line on stderr for a record whose files could not be checked (made before content hashes)."""
    if not rec.verified:
        print(f"featlab: note: {rec.dir} is {rec.integrity}: made before featlab recorded content hashes, its files "
              f"could not be checked; the next 'featlab run' of its config redoes it", file=sys.stderr)


def warn_other_version(rec: RunRecord) -> None:
    """The notes a reader prints under a run: no content hashes to check; made by another featlab version."""
    note_unverified(rec)
    if made := rec.made_by:
        print(f"featlab: warning: this run was made by featlab {made}, not this version; "
              f"`featlab run {rec.experiment} --force` redoes it", file=sys.stderr)
