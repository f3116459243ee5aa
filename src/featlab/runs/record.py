"""The run record: ``OUT/<experiment>/<run-id>/`` read back as a :class:`RunRecord`.

This module is the one reader and validator of summary.json (``load_run``: with its claims' roles from the rival
runs beside it) and, through runs/verdict.py's ``tally``, of how a record's claims are counted; the rules that
depend on them live here (``RunRecord.passes``: the ``--strict`` rule; ``RunRecord.made_by``: the record of
another featlab version). Every command and page reads
records through it, so ``run``, ``show``, ``runs`` and ``report`` always agree on whether a record is readable and
how many of its claims hold.
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .._version import __version__
from ..errors import FeatlabError, RunRecordError
from ..utils import json_loads
from .discrimination import annotate
from .integrity import FILES, UNVERIFIED, VERIFIED, damage
from .registry import get_experiment
from .uncertainty import STATUSES
from .verdict import (  # noqa: F401  the one count, read by every command through this module too
    COUNTED,
    Verdict,
    bucket,
    check_counts,
    claim_counts,
    counts_text,
    is_check,
    is_counted,
    is_uncontrolled,
    role_text,
    status,
    status_counts,
    tally,
    tally_short,
    tally_text,
    verdict,
)

SUMMARY = "summary.json"
METRICS = "metrics.parquet"
CONFIG = "config.yaml"

_REQUIRED = {"experiment": str, "status": str, "config": dict, "metrics": dict, "claims": list}
_CLAIM_KEYS = ("statement", "source", "measured", "threshold", "holds")
_NUMBER = (int, float)
# fields a reader formats, when present: their types (a tampered record is refused by name, never mis-printed)
_OPTIONAL: dict[str, tuple[type, ...]] = {
    "run_id": (str,), "preset": (str,), "message": (str,), "date": (str,), "device": (str,), "device_type": (str,),
    "command": (str, type(None)), "elapsed_s": _NUMBER, "figures": (list,), "notes": (list,),
    "control": (dict, type(None)), "versions": (dict,)}
_CLAIM_TYPES: dict[str, tuple[type, ...]] = {
    "id": (str,), "statement": (str,), "source": (str,), "threshold": (str,), "holds": (bool,),
    "measured": (*_NUMBER, str, type(None)), "status": (str,), "interval": (list, type(None)),
    "paper_value": (*_NUMBER, type(None))}


def other_version(summary: dict[str, Any]) -> str | None:
    """The featlab version that made a run record, when it is not this one (else None)."""
    made = (summary.get("versions") or {}).get("featlab")
    return made if made and made != __version__ else None


@dataclass
class RunRecord:
    """A finished run, as read back from its folder."""

    dir: Path
    summary: dict[str, Any]
    skipped: bool = False  # True when an identical complete run was found and nothing was trained
    integrity: str = VERIFIED  # every file matched its hash in summary.json; UNVERIFIED: an old record, no hashes
    _metrics: pd.DataFrame | None = field(default=None, repr=False)

    @property
    def experiment(self) -> str:
        return self.summary["experiment"]

    @property
    def status(self) -> str:
        return self.summary.get("status", "unknown")

    @property
    def ok(self) -> bool:
        return self.status == "complete"

    @property
    def claims(self) -> list[dict[str, Any]]:
        return self.summary.get("claims", [])

    @property
    def verdicts(self) -> list[Verdict]:
        """The claims as Verdicts (their roles from the rival runs read with the record)."""
        return [Verdict.from_dict(c) for c in self.claims]

    @property
    def tally(self) -> dict[str, int]:
        """{bucket: how many}: the one count (:func:`tally`)."""
        return tally(self.claims)

    @property
    def held(self) -> tuple[int, int]:
        """(mechanism claims that hold, mechanism claims counted): the count every command prints."""
        return claim_counts(self.claims)

    @property
    def statuses(self) -> dict[str, int]:
        """{held, failed, inconclusive, unverified: how many} of the claims (checks apart)."""
        return status_counts(self.claims)

    @property
    def checks(self) -> tuple[int, int]:
        """(checks that hold, checks judged)."""
        return check_counts(self.claims)

    @property
    def all_hold(self) -> bool:
        """Every claim and every check holds (a failed check is a defect of the setting or the code)."""
        return all(status(c) == "held" for c in self.claims)

    def passes(self, strict: bool = False) -> bool:
        """The exit rule of every command: the run completed and, under ``--strict``, every claim holds."""
        return self.ok and (not strict or self.all_hold)

    @property
    def is_control(self) -> bool:
        return bool(self.summary.get("control"))

    @property
    def made_by(self) -> str | None:
        """The other featlab version that made this record, or None when this version did."""
        return other_version(self.summary)

    @property
    def figures(self) -> list[Path]:
        return [self.dir / p for p in self.summary.get("figures", [])]

    @property
    def config(self) -> dict[str, Any]:
        return self.summary.get("config", {})

    @property
    def metrics(self) -> pd.DataFrame:
        """The tidy metrics table: seed, step, metric, value."""
        if self._metrics is None:
            f = self.dir / METRICS
            try:
                self._metrics = pd.read_parquet(f) if f.exists() else pd.DataFrame(
                    columns=["seed", "step", "metric", "value"])
            except Exception as e:  # an unverified (old) record's damaged table: one line, never pyarrow's error
                raise RunRecordError(f"{str(f)!r} cannot be read ({type(e).__name__}): the record is damaged; "
                                     f"it is redone on the next run of its config, or delete that folder") from None
        return self._metrics

    @property
    def verified(self) -> bool:
        """Every file of the record matched the hash its summary.json carries (False: an old record without
        hashes, read but never reused)."""
        return self.integrity == VERIFIED

    def metric(self, name: str) -> float:
        return self.summary["metrics"][name]

    @property
    def finished_at(self) -> float:
        """When the run finished (a POSIX time): its recorded date, else when its summary.json was written."""
        date = self.summary.get("date")
        if isinstance(date, str):
            try:  # a tampered date (not ISO, or out of range once in local time) falls back to the file's time
                t = _dt.datetime.fromisoformat(date).timestamp()
                _dt.datetime.fromtimestamp(t)
                return t
            except (ValueError, OverflowError, OSError):
                pass
        try:
            return (self.dir / SUMMARY).stat().st_mtime
        except OSError:
            return 0.0

    @property
    def date(self) -> str:
        return _dt.datetime.fromtimestamp(self.finished_at).strftime("%Y-%m-%d %H:%M")


def summary_problem(summary: Any) -> str | None:
    """What makes a parsed summary.json unusable (not a mapping, a key missing or of the wrong type), or None."""
    if not isinstance(summary, dict):
        return f"holds a {type(summary).__name__}, not a mapping"
    for key, kind in _REQUIRED.items():
        if not isinstance(summary.get(key), kind):
            return f"has no {key!r} {kind.__name__}" if key not in summary else f"has a {key!r} that is not a " \
                f"{kind.__name__}"
    for key, kinds in _OPTIONAL.items():
        if key in summary and (not isinstance(summary[key], kinds) or isinstance(summary[key], bool)):
            return f"has a {key!r} of type {type(summary[key]).__name__}"
    if not all(isinstance(x, str) for k in ("figures", "notes") for x in summary.get(k, [])):
        return "has a figure or note that is not text"
    bad = next((k for k, v in summary["metrics"].items() if not isinstance(v, (*_NUMBER, type(None)))
                or isinstance(v, bool)), None)
    if bad is not None:
        return f"has a metric {bad!r} that is not a number"
    return next((p for p in map(claim_problem, summary["claims"]) if p), None)


def claim_problem(c: Any) -> str | None:
    """What makes one recorded claim unusable, or None: a missing key, a wrong type, an unknown verdict, an interval
    that is not two numbers, or a verdict other than failed / unverified on a measured value that is not a number
    (NaN, text, none) or an interval of NaN (the judge gives failed there: anything else was written by hand)."""
    if not isinstance(c, dict):
        return f"has a claim that is a {type(c).__name__}, not a mapping"
    name = c.get("id", c.get("statement", "?"))
    if missing := [k for k in _CLAIM_KEYS if k not in c]:
        return f"has a claim {name!r} without {', '.join(map(repr, missing))}"
    for key, kinds in _CLAIM_TYPES.items():
        if key in c and not isinstance(c[key], kinds):
            return f"has a claim {name!r} whose {key!r} is of type {type(c[key]).__name__}"
    if "status" in c and c["status"] not in STATUSES:
        return f"has a claim {name!r} with an unknown verdict {c['status']!r}"
    iv = c.get("interval")
    if iv is not None and not (len(iv) == 2 and all(isinstance(x, _NUMBER) and not isinstance(x, bool) for x in iv)):
        return f"has a claim {name!r} whose interval is not two numbers"
    m = c["measured"]
    number = isinstance(m, _NUMBER) and not isinstance(m, bool) and not (isinstance(m, float) and math.isnan(m))
    if not number and status(c) not in ("failed", "unverified"):  # the judge fails a NaN or a text it cannot judge
        return f"has a claim {name!r} that says {status(c)!r} on a measured value of {m!r}"
    if iv is not None and all(x != x for x in iv) and status(c) not in ("failed", "unverified"):
        return f"has a claim {name!r} that says {status(c)!r} on an interval of [nan, nan]"  # the judge: failed
    return None


def load_run(run_dir: str | Path) -> RunRecord:
    """A run folder → RunRecord, its claims' roles read from the rival runs beside it (the control runs of the same
    experiment in the same runs folder: runs/discrimination.py), as ``featlab runs``/``show``/``report`` read them;
    RunRecordError names the file and the fix when summary.json is unusable."""
    return with_rivals(read_run(run_dir))


def with_rivals(rec: RunRecord, controls: list[RunRecord] | None = None) -> RunRecord:
    """``rec`` with every claim's ``role`` from its rival runs (``controls``, newest first; default: the readable
    control runs in ``rec``'s experiment folder). A control run, or a run of an experiment this install lacks, is
    left as recorded."""
    if rec.is_control:
        return rec
    try:
        exp = get_experiment(rec.experiment)
    except FeatlabError:
        return rec
    if controls is None:
        controls = []
        for f in rec.dir.parent.glob(f"*/{SUMMARY}"):
            if f.parent == rec.dir or f.parent.name.startswith("."):
                continue
            try:
                other = read_run(f.parent)
            except RunRecordError:  # an unreadable neighbour: `featlab runs` lists it as a problem
                continue
            if other.is_control and other.experiment == rec.experiment:
                controls.append(other)
        controls.sort(key=lambda r: r.finished_at, reverse=True)
    annotate(rec, controls, exp)
    return rec


def read_run(run_dir: str | Path) -> RunRecord:
    """A run folder → RunRecord as recorded (no rival runs read): :func:`load_run` without the roles."""
    run_dir = Path(run_dir)
    f = run_dir / SUMMARY
    if not f.is_file():
        raise RunRecordError(f"{str(run_dir)!r} holds no {SUMMARY}; pass the folder of a finished run "
                             f"(OUT/<experiment>/<run-id>) or an experiment id")
    fix = "rerun the experiment with --force (an unreadable run is redone) or delete that folder"
    try:
        summary = json_loads(f.read_bytes().decode("utf-8"))
    except OSError as e:
        raise RunRecordError(f"{str(f)!r} cannot be read ({e.strerror or e}); check its permissions") from None
    except (UnicodeDecodeError, ValueError, RecursionError):  # binary, not JSON, or absurdly nested
        raise RunRecordError(f"{str(f)!r} is not valid JSON; {fix}") from None
    problem = summary_problem(summary)
    if problem:
        raise RunRecordError(f"{str(f)!r} {problem}; {fix}")
    if FILES not in summary:
        return RunRecord(run_dir, summary, integrity=UNVERIFIED)
    why = damage(run_dir, summary[FILES], [CONFIG, METRICS, *summary.get("figures", [])])
    if why:
        raise RunRecordError(f"{str(run_dir)!r} is damaged: {why}; it is redone on the next 'featlab run' of its "
                             f"config (or delete that folder)")
    return RunRecord(run_dir, summary)
