"""What is there to run: ``featlab list``, ``featlab claims``, ``featlab config`` (read-only)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

from ..errors import ConfigError
from ..report.tables import KIND_NAMES, assumption_rows, claims_markdown, declared_claims_rows, rival_plan
from ..runs.registry import Experiment, get_experiment, list_experiments, paper_results, papers
from ..runs.threshold_log import changelog_markdown, load_log
from ..text import fmt_value, table
from .options import dump_json


def register(sub) -> None:
    p = sub.add_parser("list", help="every experiment with its paper reference")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(handler=cmd_list)

    c = sub.add_parser("claims", help="every claim an experiment judges: statement, source, threshold and why")
    c.add_argument("id", nargs="?", help="one experiment (default: all)")
    c.add_argument("--markdown", action="store_true", help="print docs/claims.md instead of a table")
    c.add_argument("--json", action="store_true", help="every claim as data: statement, source, threshold (kind, "
                   "bounds, unit), why, and the controls that target it")
    c.add_argument("--changelog", action="store_true", help="print docs/claims-changelog.md: every threshold change "
                   "recorded in docs/thresholds.json")
    c.add_argument("--log", default="docs/thresholds.json", metavar="FILE",
                   help="the threshold log --changelog reads (default docs/thresholds.json)")
    c.add_argument("--preset", default="quick", help="the preset whose values fill the statements' settings, e.g. "
                   "'{k}-class net' (default quick; an experiment without it: its defaults)")
    c.set_defaults(handler=cmd_claims)

    g = sub.add_parser("config", help="every config field of an experiment: type, default, preset value, description")
    g.add_argument("id")
    g.add_argument("--preset", default="quick", help="the preset whose values are shown (default quick)")
    g.add_argument("--json", action="store_true", help="print JSON instead of a table")
    g.set_defaults(handler=cmd_config)


def cmd_list(a: argparse.Namespace) -> int:
    exps = list_experiments()
    if a.json:
        dump_json([{"id": e.id, "paper": e.paper, "reference": e.reference, "summary": e.summary,
                    "presets": list(e.presets), "preset_kinds": e.preset_kinds(), "cites": dict(e.cites),
                    "claims": [c.id for c in e.claims], "controls": [c.name for c in e.controls]} for e in exps])
        return 0
    rows = [[e.id, e.paper, e.reference, ", ".join(_kind_label(e, p) for p in e.presets), e.summary] for e in exps]
    print(table(rows, ["id", "paper", "figure/table", "presets", "what it shows"], [22, 21, 22, 22, 54]))
    print("\npresets: quick = CPU default; paper = the paper's own settings (only where the paper ran it; "
          "'featlab config ID --preset paper' cites each value); theory = the theorem's assumptions as far as the "
          "CPU allows; (demo) = named for what it shows, not the paper's settings")
    return 0


def _kind_label(exp: Experiment, preset: str) -> str:
    return preset if exp.preset_kind(preset) != "demo" else f"{preset} (demo)"


def cmd_claims(a: argparse.Namespace) -> int:
    exps = [e.listed(a.preset) for e in ([get_experiment(a.id)] if a.id else list_experiments())]
    if a.json:
        dump_json([{"experiment": e.id, "id": c.id, "kind": KIND_NAMES[c.kind], "statement": c.statement,
                    "source": c.source, "threshold": c.threshold.to_dict(), "why": c.why, "exact": c.exact or None,
                    "rivals": rival_plan(e, c.id) if c.kind == "claim" else [],
                    "controls": [{"name": k.name, "kind": k.kind, "overrides": k.overrides, "why": k.why,
                                  "premise": k.premise or None, "trained": list(k.trained) or None}
                                 for k in e.controls if c.id in k.targets(e.claims)],
                    "assumptions": [a.to_dict() for a in e.assumptions]}
                   for e in exps for c in e.claims])
        return 0
    if a.changelog:
        if not Path(a.log).is_file():
            raise ConfigError(f"--log: no threshold log {a.log!r}; pass the path of docs/thresholds.json")
        print(changelog_markdown(load_log(a.log)), end="")
        return 0
    if a.markdown:
        print(claims_markdown(exps, papers(), {k: paper_results(k) for k in papers()}))
        return 0
    header = ["experiment", "id", "statement", "paper", "threshold", "why", "rivals that must fail it"]
    widths = [18, 24, 34, 12, 20, 36, 18]
    rows, checks = declared_claims_rows(exps), declared_claims_rows(exps, "check")
    premises = declared_claims_rows(exps, "premise")
    print(table(rows, header, widths))
    bare = sum(r[-1] == "none" for r in rows)
    print(f"\n{len(rows)} mechanism claims in {len(exps)} experiment{'s' if len(exps) != 1 else ''}: each is counted "
          "only where it holds for the paper's net and fails for every trained rival that must fail it"
          + (f"; {bare} with no rival (a premise until one is declared)." if bare else "."))
    ex = [[e.id, c.id, k["name"], k["exempt"] or "(no reason written yet)"] for e in exps for c in e.claims
          if c.kind == "claim" for k in rival_plan(e, c.id) if not k["must_fail"]]
    if ex:
        print("\nExemptions (a rival that need not fail a claim, and the paper's reason):\n")
        print(table(ex, ["experiment", "claim", "rival", "why it is exempt"], [18, 26, 20, 70]))
    ctl = [[e.id, k.name, k.premise, ", ".join(k.trained), ", ".join(k.targets(e.claims))]
           for e in exps for k in e.controls if k.kind == "mechanism"]
    if ctl:
        print("\nRivals (a net trained as well by another mechanism: the premise below is removed):\n")
        print(table(ctl, ["experiment", "rival", "removes", "trained", "must fail"], [18, 16, 50, 18, 40]))
    if premises:
        print("\nPremises (what the paper's net must satisfy; a trained rival satisfies them too; not counted):\n")
        print(table(premises, header, widths))
    regime = [r for e in exps for r in assumption_rows(e)]
    if regime:
        print("\nAssumptions of the theorems, met (✓) or broken on purpose (✗) by each preset:\n")
        print(table(regime, ["experiment", "assumption", "requires", "presets", "how"], [18, 14, 40, 26, 46]))
    if checks:  # apart: they hold by construction or test the generator, and are never counted
        print("\nChecks (by construction, or of the data generator; judged and shown, not counted):\n")
        print(table(checks, header, widths))
        print(f"\n{len(checks)} checks.")
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


def config_fields(exp: Experiment, preset: str) -> list[dict[str, Any]]:
    """One row per config field: name, type with its bounds, default, the preset's value, where that value comes from
    (the paper preset's citation; "" elsewhere), description."""
    values = exp.preset(preset)
    cites = exp.cites if exp.preset_kind(preset) == "paper" else {}
    rows = []
    for name, f in exp.config.model_fields.items():
        default = "required" if f.is_required() else f.get_default(call_default_factory=True, validated_data={})
        rows.append({"field": name, "type": " ".join(x for x in (_type_name(f.annotation), _bounds(f)) if x),
                     "default": default, "preset": values[name] if name in values else None,
                     "in_preset": name in values, "source": cites.get(name, ""), "description": f.description or ""})
    return rows


def cmd_config(a: argparse.Namespace) -> int:
    exp = get_experiment(a.id)
    rows = config_fields(exp, a.preset)
    kind = exp.preset_kind(a.preset)
    if a.json:
        dump_json({"experiment": exp.id, "preset": a.preset, "kind": kind, "fields": rows})
        return 0
    kinds = ", ".join(_kind_label(exp, p) for p in exp.presets)
    print(f"{exp.id} — {exp.reference}; preset {a.preset!r}, kind {kind} (presets: {kinds})\n")
    body = [[r["field"], r["type"], fmt_value(r["default"]), fmt_value(r["preset"]) if r["in_preset"] else "",
             r["source"], r["description"]] for r in rows]
    print(table(body, ["field", "type", "default", a.preset, "source", "description"], [18, 22, 14, 14, 26, 50]))
    if kind == "paper":
        print("\nsource: where the paper gives the value; a field the preset leaves at its default is featlab's "
              "choice where its description says so (the paper is silent)")
    elif kind == "demo":
        print(f"\n{a.preset!r} is a demo preset: featlab's own settings, named for what they show, not the paper's")
    print(f"\nOverride any field with key=value: featlab run {exp.id} {rows[0]['field']}=... ; "
          f"the effective config: featlab run {exp.id} --print-config")
    return 0
