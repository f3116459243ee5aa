"""Experiments and their records: the registry, the run context, claims, run records, sweeps."""

from .claims import AtLeast, AtMost, Claim, Near, Within
from .record import RunRecord, load_run
from .registry import experiment, get_experiment, list_experiments, register_paper

__all__ = ["RunRecord", "load_run", "Claim", "AtLeast", "AtMost", "Within", "Near", "experiment", "register_paper",
           "get_experiment", "list_experiments"]
