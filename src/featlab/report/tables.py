"""Plain-text tables for the terminal: the claims table and headline metrics."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..errors import UnknownExperimentError
from ..runs.claims import diagnosis_for
from ..runs.diagnosis import Diagnosis
from ..runs.record import check_counts, counts_text, is_check, is_counted, is_uncontrolled, status
from ..runs.registry import get_experiment
from ..text import fmt_value, table


def interval_text(c: dict[str, Any]) -> str:
    """'[0.41, 0.58] (8 seeds)' — the 95 % interval of a judged claim; 'exact' when it has none."""
    iv = c.get("interval")
    if not iv:
        return "exact"
    unit = c.get("unit") or "units"
    if c.get("n") == 1 and unit.split(" ")[0].endswith("s"):  # '1 seed', never '1 seeds'
        first, _, rest = unit.partition(" ")
        unit = first[:-1] + (f" {rest}" if rest else "")
    return f"[{fmt_value(iv[0])}, {fmt_value(iv[1])}] ({c.get('n')} {unit})"


def verdict_text(c: dict[str, Any]) -> str:
    """held / FAILED / inconclusive (with the units that would settle it) / unverified."""
    s = status(c)
    if c.get("kind") == "measurement":  # the paper gives no number: no verdict
        return "reported (no verdict: the paper gives no number)"
    if s == "failed":
        return "FAILED"
    unit = (c.get("unit") or "units").split(" (share passing")[0]  # a per-seed pass count settles in seeds
    if s == "inconclusive" and c.get("by_rule"):  # the minimum-units rule: too few nets to decide
        more = (f"~{c['settle']} {unit} would settle it" if c.get("settle") else
                "at this estimate no number of units settles it")
        return f"inconclusive (fewer than 5 nets; the interval alone: {c['by_rule']}; {more})"
    if s == "inconclusive" and c.get("settle"):
        return f"inconclusive (~{c['settle']} {unit} would settle it)"
    return s


def claims_table(claims: Iterable[dict[str, Any]], with_experiment: bool = False, title: str = "claim") -> str:
    rows = []
    for c in claims:
        row = [c.get("experiment", "")] if with_experiment else []
        row += [c["statement"], c["source"], fmt_value(c["measured"]), interval_text(c), c["threshold"],
                verdict_text(c)]
        rows.append(row)
    header = (["experiment"] if with_experiment else []) + [title, "paper", "measured", "95% interval",
                                                            "threshold", "verdict"]
    widths = ([18] if with_experiment else []) + [46, 14, 10, 26, 22, 14]
    if not rows:
        return "(no claims)"
    return table(rows, header, widths)


def metrics_table(metrics: dict[str, float], keys: list[str] | None = None) -> str:
    keys = keys or list(metrics)
    rows = [[k, fmt_value(metrics[k])] for k in keys if k in metrics]
    return table(rows, ["metric", "value"])


def run_report(summary: dict[str, Any], run_dir: str, headline: list[str] | None = None) -> str:
    lines = []
    status = summary.get("status")
    lines.append(f"{summary['experiment']}  [{status}]  {run_dir}  ({summary.get('elapsed_s', 0):.1f} s)")
    if summary.get("message"):
        lines.append(f"  {summary['message']}")
    lines.append("")
    claims = summary.get("claims", [])
    lines.append(claims_table([c for c in claims if is_counted(c)]))
    lines.append(f"\nclaims: {counts_text(claims)}.")
    if any(is_uncontrolled(c) for c in claims):  # apart: no control has shown they can fail for the paper's reason
        lines += ["", claims_table([c for c in claims if is_uncontrolled(c)],
                                   title="premise or unsettled (not counted)")]
    if any(is_check(c) for c in claims):  # listed apart: they hold by construction or test the generator
        lines += ["", claims_table([c for c in claims if is_check(c)], title="check (not counted)")]
        lines.append("\n{}/{} checks hold (by construction or of the generator; not counted).".format(
            *check_counts(claims)))
    m = summary.get("metrics", {})
    keys = headline or [k for k in m if "@" not in k][:16]
    if m:
        lines.append("")
        lines.append(metrics_table(m, keys))
    if summary.get("figures"):
        lines.append("\nfigures:")
        lines += [f"  {run_dir}/{f}" for f in summary["figures"]]
    return "\n".join(lines)


def mechanism_controls(exp, claim_id: str) -> list:
    """The mechanism controls (net trained, mechanism removed) that target a claim."""
    return [k for k in exp.controls if k.kind == "mechanism" and claim_id in k.targets(exp.claims)]


def rival_plan(exp, claim_id: str) -> list[dict[str, Any]]:
    """Per rival (mechanism control) of ``exp``: whether it must fail the claim, else the paper's reason it is exempt
    ('' where none is written yet)."""
    out = []
    for k in exp.controls:
        if k.kind == "mechanism":
            must = claim_id in k.targets(exp.claims)
            out.append({"name": k.name, "must_fail": must, **({} if must else {"exempt": k.exempt.get(claim_id, "")})})
    return out


KIND_NAMES = {"claim": "mechanism claim", "premise": "premise", "check": "check", "measurement": "measurement"}


def declared_claims_rows(experiments, kind: str = "claim") -> list[list[str]]:
    """One row per declared claim of this kind ("claim", "premise" or "check"): experiment, id, statement, source,
    threshold (as declared), why, and the rivals that must fail it ('none' when no rival must)."""
    return [[e.id, c.id, c.statement, c.source, c.threshold.text(), c.why,
             ", ".join(k.name for k in mechanism_controls(e, c.id)) or "none"]
            for e in experiments for c in e.claims if c.kind == kind]


def assumption_rows(exp) -> list[list[str]]:
    """experiment, assumption, what it requires, then per preset ✓ (met) / ✗ (broken on purpose), and how."""
    return [[exp.id, a.ref, a.text, " ".join(f"{p} {'✓' if m else '✗'}" for p, m in a.met.items()), a.why]
            for a in exp.assumptions]


def claims_markdown(experiments, papers: dict[str, str], results: dict[str, list] | None = None) -> str:
    """docs/claims.md: every declared claim with its controls, per paper and experiment, then each paper's coverage
    table (every numbered result → the claims that check it, or why none does). ``featlab claims --markdown``."""
    esc = lambda s: str(s).replace("|", "\\|")
    lines = ["# Claims", "",
             "Generated by `featlab claims --markdown > docs/claims.md`; a test fails when this file is stale.",
             "Each claim is a statement of the paper with the threshold fixed before any run; `featlab run` judges it",
             "on the run's measurement. A threshold written `·unit` is a multiple of that quantity at the run's",
             "setting (e.g. `in [0.6, 1.4]·√(d/k)`). Every claim is targeted by a control — a setting where the",
             "paper's statement should be false — and the test suite fails when a targeted claim holds there. A",
             "**mechanism** control keeps the network trained (named metrics within a margin of the claim's own",
             "run) and removes the mechanism or a premise of the theorem; a **sanity** control (an untrained net, a",
             "tie) only shows the claim is not vacuous. A claim counts among the results only when a mechanism",
             "control targets it. Each verdict is decided by the 95 % bootstrap interval of its measurement: held,",
             "failed, or inconclusive when the interval straddles the threshold; unverified when the search it",
             "rests on did not converge.",
             "A row marked (check) holds by construction or only tests the data generator or a hand-built model: it",
             "is judged and shown, but listed apart and never counted among the claims that hold.", ""]
    for key, title in papers.items():
        exps = [e for e in experiments if e.paper == key]
        if not exps:
            continue
        lines += [f"## {title}", ""]
        for e in exps:
            lines += [f"### `{e.id}` — {esc(e.reference)}", ""]
            if not e.claims:
                lines += ["No claims (a pipeline check: it draws figures and records metrics).", ""]
                continue
            for c in e.controls:
                ov = " ".join(f"{k}={v}" for k, v in c.overrides.items())
                which = "every claim" if not c.claims else ", ".join(f"`{t}`" for t in c.claims)
                what = (f"mechanism control, removes: {esc(c.premise)}; trained: "
                        f"{', '.join(c.trained)} within {c.margin:g}" if c.kind == "mechanism" else "sanity control")
                lines += [f"- Control `{c.name}` ({what}; `featlab run {e.id} --control-name {c.name}`, `{ov}`): "
                          f"{esc(c.why)}. Must defeat: {which}."]
            if not e.controls:
                lines.append("- No control declared yet: these claims have not been shown able to fail.")
            if e.assumptions:
                lines += ["", "| assumption | requires | " + " | ".join(e.presets) + " | how |",
                          "|---|---|" + "---|" * len(e.presets) + "---|"]
                lines += [f"| {esc(a.ref)} | {esc(a.text)} | "
                          + " | ".join({True: "✓", False: "✗"}.get(a.met.get(p), "") for p in e.presets)
                          + f" | {esc(a.why)} |" for a in e.assumptions]
            lines += ["", "| id | statement | paper | threshold | why this threshold |", "|---|---|---|---|---|"]
            lines += [f"| `{c.id}`{' (check)' if c.kind == 'check' else ''} | {esc(c.statement)} | {esc(c.source)} "
                      f"| {esc(c.threshold.text())} | {esc(c.why)} |" for c in e.claims]
            lines.append("")
        if results and results.get(key):
            where = {c.id: e.id for e in exps for c in e.claims}
            lines += ["### Coverage: every numbered result of the paper", "",
                      "| result | content | checked by | or why not |", "|---|---|---|---|"]
            for r in results[key]:
                by = ", ".join(f"`{cid}` ({where.get(cid, '?')})" for cid in r.claims)
                lines.append(f"| {esc(r.ref)} | {esc(r.what)} | {by} | {esc(r.reason)} |")
            lines.append("")
    return "\n".join(lines)


def diagnosis_of(experiment_id: str, claim_id: str, preset: str | None) -> Diagnosis | None:
    """The declared diagnosis of a claim of a registered experiment at ``preset`` (None when there is none)."""
    try:
        exp = get_experiment(experiment_id)
    except UnknownExperimentError:  # an experiment of another featlab version, or unregistered: nothing to say
        return None
    return diagnosis_for(next((c for c in exp.claims if c.id == claim_id), None), preset)


_SHORT = {"held": "✓ holds", "failed": "✗ fails", "inconclusive": "? inconclusive", "unverified": "∼ unverified",
          "exempt": "exempt", "not run": "not run", "rival untrained": "rival untrained",
          "not measured": "not measured (NaN)"}


def matrix_rows(rec) -> tuple[list[str], list[list[str]]] | None:
    """The discrimination matrix of a paper-net run (runs/discrimination.py): claim × rival, the claim's role, and
    a first row with each rival's trained metrics; None when the run's claims carry no rival cells."""
    claims = [c for c in rec.claims if c.get("rivals")]
    if not claims:
        return None
    names = [x["rival"] for x in claims[0]["rivals"]]
    ran = {r.get("name"): r for r in rec.summary.get("rivals") or []}

    def net(name: str) -> str:
        r = ran.get(name)
        if r is None:
            return "not run"
        acc = ", ".join(f"{k} {v:.3g}" if isinstance(v, (int, float)) else f"{k} {v}"
                        for k, v in (r.get("trained") or {}).items())
        return f"{acc} ({r.get('preset')})" + (f" — untrained: {r['untrained']}" if r.get("untrained") else "")

    header = ["claim", "role", "paper's net", *names]
    rows = [["(the net)", "", "", *[net(n) for n in names]]]
    for c in claims:
        cells = {x["rival"]: x for x in c["rivals"]}
        rows.append([c.get("id", "?"), c.get("role", ""), _SHORT.get(c.get("status", ""), c.get("status", "")),
                     *[_SHORT.get(cells[n]["state"], cells[n]["state"]) if n in cells else "" for n in names]])
    return header, rows
