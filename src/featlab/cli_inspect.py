"""Finding things without reading code: ``featlab config``, ``runs``, ``show``, ``compare``, ``list --json`` and
``run --print-config``. Read-only: none of these trains or writes anything."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any, Literal, get_args, get_origin

from .errors import ConfigError
from .report.records import claims_held, find_runs, index_rows, overrides_text, resolve, run_date
from .report.summary import fmt_value
from .report.tables import run_report, table
from .runs.runner import other_version


def add_commands(sub) -> None:
    c = sub.add_parser("config", help="every config field of an experiment: type, default, preset value, description")
    c.add_argument("id")
    c.add_argument("--preset", default="quick", help="the preset whose values are shown (default quick)")
    c.add_argument("--json", action="store_true", help="print JSON instead of a table")

    r = sub.add_parser("runs", help="an index of the runs under OUT: experiment, run id, preset, overrides, status, "
                       "claims held, date, elapsed")
    r.add_argument("root", nargs="?", default="runs", metavar="OUT", help="output folder (default ./runs)")
    r.add_argument("--json", action="store_true", help="print JSON instead of a table")

    m = sub.add_parser("compare", help="two runs: config diff, metric deltas, claims that changed verdict")
    m.add_argument("a", help="a run folder, a run id, or an experiment id (its latest run)")
    m.add_argument("b")
    m.add_argument("--out", default="runs", help="where run ids and experiment ids are looked up (default ./runs)")
    m.add_argument("--json", action="store_true", help="print JSON instead of tables")


def _dump(obj: Any) -> None:
    print(json.dumps(obj, indent=2, default=str, ensure_ascii=False))


# ---------------------------------------------------------------------------------------------- list / config
def cmd_list_json() -> int:
    from .runs.registry import list_experiments

    _dump([{"id": e.id, "paper": e.paper, "reference": e.reference, "summary": e.summary, "presets": list(e.presets),
            "claims": [c.id for c in e.claims], "controls": [c.name for c in e.controls]}
           for e in list_experiments()])
    return 0


def _type_name(ann: Any) -> str:
    if get_origin(ann) is Literal:
        return " | ".join(str(a) for a in get_args(ann))
    if get_origin(ann) is Annotated:  # the bare type; its constraints are the field's
        return _type_name(get_args(ann)[0])
    if get_origin(ann) in (list, tuple) and get_args(ann):
        return f"{get_origin(ann).__name__}[{', '.join(_type_name(a) for a in get_args(ann))}]"
    if isinstance(ann, type):
        return ann.__name__
    return str(ann).replace("typing.", "")


def _bounds(field) -> str:
    ops = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}
    return " ".join(f"{ops[k]} {getattr(m, k)}" for m in field.metadata for k in ops if hasattr(m, k))


def config_fields(exp, preset: str) -> list[dict[str, Any]]:
    from pydantic_core import PydanticUndefined

    values = exp.preset(preset)
    rows = []
    for name, f in exp.config.model_fields.items():
        default = f.default if f.default is not PydanticUndefined else (
            f.default_factory() if f.default_factory else "required")
        rows.append({"field": name, "type": " ".join(x for x in (_type_name(f.annotation), _bounds(f)) if x),
                     "default": default, "preset": values[name] if name in values else None,
                     "in_preset": name in values, "description": f.description or ""})
    return rows


def cmd_config(a) -> int:
    from .runs.registry import get_experiment

    exp = get_experiment(a.id)
    rows = config_fields(exp, a.preset)
    if a.json:
        _dump({"experiment": exp.id, "preset": a.preset, "fields": rows})
        return 0
    print(f"{exp.id} — {exp.reference}; preset {a.preset!r} (presets: {', '.join(exp.presets)})\n")
    body = [[r["field"], r["type"], fmt_value(r["default"]), fmt_value(r["preset"]) if r["in_preset"] else "",
             r["description"]] for r in rows]
    print(table(body, ["field", "type", "default", a.preset, "description"], [18, 22, 14, 14, 62]))
    print(f"\nOverride any field with key=value: featlab run {exp.id} {rows[0]['field']}=... ; "
          f"the effective config: featlab run {exp.id} --print-config")
    return 0


def print_config(a, overrides: dict[str, Any]) -> int:
    """``featlab run ID --print-config``: the effective YAML (preset < --config < key=value [< control]), no run."""
    from .runs.runner import resolve_config

    control = a.control_name or bool(a.control)
    _, cfg = resolve_config(a.id, a.preset, a.config, overrides, control)
    sys.stdout.write(cfg.to_yaml())
    return 0


# ---------------------------------------------------------------------------------------------- runs / show
def cmd_runs(a) -> int:
    runs = find_runs(a.root)
    rows = index_rows(runs)
    if a.json:
        _dump({"out": str(a.root), "runs": rows, "unreadable": [{"dir": d, "why": w} for d, w in runs.problems]})
        return 0
    if not rows:
        print(f"no runs under {str(a.root)!r}; start one with 'featlab run ID --out {a.root}'")
    else:
        body = [[r["experiment"], r["run_id"], r["preset"], r["overrides"], r["status"], r["claims_held"], r["date"],
                 fmt_value(r["elapsed_s"])] for r in rows]
        print(table(body, ["experiment", "run id", "preset", "overrides", "status", "claims", "date", "elapsed s"],
                    [20, 12, 26, 36, 8, 6, 16, 9]))
        print(f"\n{len(rows)} run{'s' if len(rows) != 1 else ''} under {a.root}; 'featlab show EXP' reprints the "
              f"latest run of EXP, 'featlab report {a.root}' writes a page of them")
    for d, why in runs.problems:
        print(f"featlab: note: {why}", file=sys.stderr)
    return 0


def cmd_show(a) -> int:
    rec = resolve(a.run_dir, getattr(a, "out", "runs"))
    if getattr(a, "json", False):
        _dump({"dir": str(rec.dir), **rec.summary})
        return 0
    print(run_report(rec.summary, str(rec.dir)))
    if made := other_version(rec.summary):
        print(f"featlab: warning: this run was made by featlab {made}, not this version; "
              f"`featlab run {rec.summary.get('experiment')} --force` redoes it", file=sys.stderr)
    return 0


# ---------------------------------------------------------------------------------------------- compare
def _label(rec) -> str:
    return f"{rec.summary['experiment']}/{rec.dir.name} ({rec.summary.get('preset', '?')}, {run_date(rec)})"


def compare(a_rec, b_rec) -> dict[str, Any]:
    ca, cb = a_rec.summary.get("config") or {}, b_rec.summary.get("config") or {}
    config = [{"field": k, "a": ca.get(k), "b": cb.get(k)} for k in dict.fromkeys([*ca, *cb]) if ca.get(k) != cb.get(k)]
    ma, mb = a_rec.summary.get("metrics") or {}, b_rec.summary.get("metrics") or {}
    metrics = []
    for k in ma:
        x, y = ma.get(k), mb.get(k)
        if k not in mb or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (x, y)):
            continue
        if x == y or (x != x and y != y):  # unchanged (nan on both sides included)
            continue
        rel = (y - x) / abs(x) if x != 0 and x == x else None
        metrics.append({"metric": k, "a": x, "b": y, "delta": y - x, "relative": rel})
    # largest relative change first; a change from 0 or nan has no relative size and goes first too
    metrics.sort(key=lambda r: -float("inf") if r["relative"] is None else -abs(r["relative"]))
    cla = {c["id"]: c for c in a_rec.claims}
    clb = {c["id"]: c for c in b_rec.claims}
    claims = [{"id": i, "a": cla.get(i, {}).get("holds"), "b": clb.get(i, {}).get("holds"),
               "a_measured": cla.get(i, {}).get("measured"), "b_measured": clb.get(i, {}).get("measured")}
              for i in dict.fromkeys([*cla, *clb]) if cla.get(i, {}).get("holds") != clb.get(i, {}).get("holds")]

    def side(r):
        return {"dir": str(r.dir), "claims_held": "%d/%d" % claims_held(r), "overrides": overrides_text(r)}

    return {"a": side(a_rec), "b": side(b_rec), "config": config, "metrics": metrics, "claims_changed": claims}


def cmd_compare(a) -> int:
    ra, rb = resolve(a.a, a.out), resolve(a.b, a.out)
    if ra.dir.resolve() == rb.dir.resolve():
        raise ConfigError(f"both arguments name the same run ({ra.dir}); pass two runs (folders or run ids, "
                          f"'featlab runs {a.out}' lists them)")
    d = compare(ra, rb)
    if a.json:
        _dump(d)
        return 0
    verdict = {True: "✓", False: "✗", None: "—"}
    print(f"A: {_label(ra)}  claims {d['a']['claims_held']}\nB: {_label(rb)}  claims {d['b']['claims_held']}\n")
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
        print(table([[r["id"], f"{verdict[r['a']]} {fmt_value(r['a_measured'])}",
                      f"{verdict[r['b']]} {fmt_value(r['b_measured'])}"] for r in d["claims_changed"]],
                    ["claim that changed verdict", "A", "B"]))
    else:
        print("no claim changed verdict")
    return 0
