"""Finished runs, read back: ``featlab runs`` (the index of OUT), ``featlab show`` and ``featlab compare``.
Read-only: none of these trains or writes anything."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import ConfigError, RunRecordError
from ..report.tables import run_report
from ..runs.compare import compare
from ..runs.index import Runs, find_runs, index_rows, resolve, runs_command
from ..runs.integrity import UNVERIFIED
from ..runs.record import RunRecord
from ..text import fmt_value, table
from .options import dump_json, note_unverified, warn_other_version


def register(sub) -> None:
    s = sub.add_parser("show", help="reprint a finished run's claims and headline metrics")
    s.add_argument("run_dir", metavar="EXP|RUN", help="an experiment id (its latest run), a run folder or a run id")
    s.add_argument("--out", default="runs", help="where experiment and run ids are looked up (default ./runs)")
    s.add_argument("--json", action="store_true", help="print the run's summary as JSON")
    s.add_argument("--any-run", action="store_true", help="for an experiment id: its latest run of any kind "
                   "(default: the latest that is neither a control nor a sweep point)")
    s.set_defaults(handler=cmd_show)

    r = sub.add_parser("runs", help="an index of the runs under OUT: experiment, run id, preset, overrides, status, "
                       "claims held, date, elapsed")
    r.add_argument("root", nargs="?", default="runs", metavar="OUT", help="output folder (default ./runs)")
    r.add_argument("--json", action="store_true", help="print JSON instead of a table")
    r.add_argument("--verify", action="store_true", help="check every run's files against the hashes in its "
                   "summary.json: one line per run (verified, unverified: no hashes, damaged or unreadable); exit 2 "
                   "when any run is damaged or unreadable")
    r.set_defaults(handler=cmd_runs)

    m = sub.add_parser("compare", help="two runs: config diff, metric deltas, claims that changed verdict")
    m.add_argument("a", help="a run folder, a run id, or an experiment id (its latest run)")
    m.add_argument("b")
    m.add_argument("--out", default="runs", help="where run ids and experiment ids are looked up (default ./runs)")
    m.add_argument("--json", action="store_true", help="print JSON instead of tables")
    m.add_argument("--any-run", action="store_true", help="for an experiment id: its latest run of any kind "
                   "(default: the latest that is neither a control nor a sweep point)")
    m.add_argument("--across", action="store_true", help="compare runs of two different experiments anyway")
    m.set_defaults(handler=cmd_compare)


def _note(text: str) -> None:
    print(f"featlab: note: {text}", file=sys.stderr)


def cmd_show(a: argparse.Namespace) -> int:
    rec = resolve(a.run_dir, a.out, any_run=a.any_run, warn=_note)
    if a.json:
        dump_json({"dir": str(rec.dir), "integrity": rec.integrity, **rec.summary})
        return 0
    print(run_report(rec.summary, str(rec.dir)))
    warn_other_version(rec)
    return 0


def cmd_runs(a: argparse.Namespace) -> int:
    if not Path(a.root).is_dir():
        raise RunRecordError(f"no runs folder {str(a.root)!r}; pass the OUT of 'featlab run/reproduce' "
                             f"(default ./runs)")
    runs = find_runs(a.root)
    if a.verify:
        return _verify(runs, a.json)
    rows = index_rows(runs)
    if a.json:
        dump_json({"out": str(a.root), "runs": rows, "unreadable": [{"dir": d, "why": w} for d, w in runs.problems]})
        return 0
    if not rows and runs.problems:  # not "no runs": the folders are there, and each is named below
        print(f"no readable runs under {str(a.root)!r}; {len(runs.problems)} unreadable (named on stderr)")
    elif not rows:
        print(f"no runs under {str(a.root)!r}; start one with 'featlab run ID --out {a.root}'")
    else:
        body = [[r["experiment"], r["run_id"], r["preset"], r["overrides"], r["status"], r["claims_held"], r["date"],
                 fmt_value(r["elapsed_s"])] for r in rows]
        print(table(body, ["experiment", "run id", "preset", "overrides", "status", "claims", "date", "elapsed s"],
                    [20, 12, 26, 36, 8, 18, 16, 9]))
        print(f"\n{len(rows)} run{'s' if len(rows) != 1 else ''} under {a.root}; 'featlab show EXP' reprints the "
              f"latest run of EXP, 'featlab report {a.root}' writes a page of them")
    for _, why in runs.problems:
        print(f"featlab: note: {why}", file=sys.stderr)
    return 0


def _verify(runs: Runs, as_json: bool) -> int:
    """``featlab runs --verify OUT``: each run's integrity, one line each; exit 2 when any is damaged/unreadable."""
    rows = [{"dir": str(r.dir), "integrity": r.integrity} for r in runs.records]
    rows += [{"dir": d, "integrity": "damaged" if "is damaged:" in why else "unreadable", "why": why}
             for d, why in runs.problems]
    rows.sort(key=lambda r: r["dir"])
    bad = sum(r["integrity"] in ("damaged", "unreadable") for r in rows)
    if as_json:
        dump_json({"out": str(runs.out), "runs": rows, "damaged_or_unreadable": bad})
    else:
        for r in rows:
            print(f"{r['integrity']:22s} {r['dir']}" + (f": {' '.join(r['why'].split())}" if "why" in r else ""))
        old = sum(r["integrity"] == UNVERIFIED for r in rows)
        print(f"{len(rows)} run{'s' if len(rows) != 1 else ''} under {runs.out}: {len(rows) - bad - old} verified, "
              f"{old} unverified (no hashes), {bad} damaged or unreadable"
              + (" (each is redone on the next 'featlab run' of its config)" if bad else ""))
    return 2 if bad else 0


def _verdict(v: str | None, measured, iv) -> str:
    """'held 0.91 [0.88, 0.94]'; '—' for a claim the run did not judge."""
    if v is None:
        return "— (not judged)"
    return f"{v} {fmt_value(measured)}" + (f" [{fmt_value(iv[0])}, {fmt_value(iv[1])}]" if iv else "")


def _label(rec: RunRecord) -> str:
    ctl = rec.summary.get("control") or {}
    kind = f", control {ctl.get('name', '?')}" if ctl else ""
    return f"{rec.experiment}/{rec.dir.name} ({rec.summary.get('preset', '?')}{kind}, {rec.date})"


def _kind(side: dict) -> str:
    return "a plain run" if side["control"] is None else f"control {side['control']}"


def cmd_compare(a: argparse.Namespace) -> int:
    ra, rb = (resolve(x, a.out, any_run=a.any_run, warn=_note) for x in (a.a, a.b))
    if ra.dir.resolve() == rb.dir.resolve():
        raise ConfigError(f"both arguments name the same run ({ra.dir}); pass two runs (folders or run ids, "
                          f"'{runs_command(a.out)}' lists them)")
    if ra.experiment != rb.experiment and not a.across:
        raise ConfigError(f"A is a run of {ra.experiment} and B of {rb.experiment}: their claims and metrics are not "
                          f"the same quantities; pass two runs of one experiment, or --across to compare anyway")
    for rec in (ra, rb):
        note_unverified(rec)
    d = compare(ra, rb)
    # marked on stderr in both modes, so --json output stays parseable and the mark is never lost
    if not d["same_preset"] or not d["same_experiment"]:
        print(f"featlab: warning: comparing {ra.experiment} at preset {ra.summary.get('preset')} with "
              f"{rb.experiment} at preset {rb.summary.get('preset')}: differences follow from the settings",
              file=sys.stderr)
    if not d["same_kind"]:
        print(f"featlab: warning: comparing {_kind(d['a'])} (A) with {_kind(d['b'])} (B): a control judges only "
              f"the claims it targets, on a setting made to break them", file=sys.stderr)
    if a.json:
        dump_json(d)
        return 0
    print(f"A: {_label(ra)}  claims {d['a']['claims']}\nB: {_label(rb)}  claims {d['b']['claims']}\n")
    if d["config"]:
        print(table([[r["field"], fmt_value(r["a"]), fmt_value(r["b"])] for r in d["config"]], ["field", "A", "B"]))
    else:
        print("config: identical")
    shown = d["metrics"][:25]
    if shown:
        print()
        print(table([[r["metric"], fmt_value(r["a"]), fmt_value(r["b"]), fmt_value(r["delta"]),
                      "" if r["relative"] is None else f"{100 * r['relative']:+.1f}%"] for r in shown],
                    ["metric", "A", "B", "B − A", "relative"]))
        if len(d["metrics"]) > len(shown):
            print(f"({len(d['metrics']) - len(shown)} more metrics differ, by less; --json lists all)")
    else:
        print("\nmetrics: identical")
    print()
    if d["claims_changed"]:
        print(table([[r["id"], _verdict(r["a"], r["a_measured"], r["a_interval"]),
                      _verdict(r["b"], r["b_measured"], r["b_interval"])] for r in d["claims_changed"]],
                    ["claim that changed verdict", "A", "B"]))
    else:
        print("no claim changed verdict")
    return 0
