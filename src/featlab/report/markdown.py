"""The report's Markdown twin: the same content as the HTML page, with the figures copied beside it
(``report_files/``) and linked relatively, so the folder can be committed or opened in any Markdown viewer."""

from __future__ import annotations

import shutil
from pathlib import Path

from .._version import __version__
from ..text import fmt_value
from ..utils import atomic_write
from .summary import ExpView, Report, RunView


def _c(v) -> str:
    """A table cell: pipes escaped, newlines flattened."""
    return str(v).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(_c(x) for x in r) + " |" for r in rows), ""]


class _Figures:
    """Copies each figure into the files folder under a unique, readable name and returns its relative link."""

    def __init__(self, md_path: Path):
        self.dir = md_path.with_name(md_path.stem + "_files")
        self.rel = self.dir.name
        self.used: set[str] = set()

    def link(self, src: Path, name: str) -> str | None:
        if not src.is_file():
            return None
        self.dir.mkdir(parents=True, exist_ok=True)
        base, n = name, 1
        while name in self.used:
            n += 1
            name = f"{Path(base).stem}-{n}{Path(base).suffix}"
        self.used.add(name)
        shutil.copyfile(src, self.dir / name)
        return f"{self.rel}/{name}"


def _claims(rv: RunView) -> list[str]:
    if not rv.claims:
        return ["No claims judged in this run (a pipeline check).", ""]
    with_ctl = any(c.controls for c in rv.claims)
    with_paper = any(c.paper_value is not None for c in rv.claims)
    with_stable = any(c.stable for c in rv.claims)  # a stability table of this run exists
    rows = []
    for c in rv.claims:
        tag = {"check": " (check, not counted)", "uncontrolled": " (no mechanism control, not counted)"}.get(c.kind, "")
        row = [f"`{c.id}`" + tag, c.statement, c.source]
        row += [fmt_value(c.paper_value)] if with_paper else []
        mark = {"held": "✓ holds", "failed": "✗ fails", "unverified": "∼ unverified"}.get(c.status, "? " + c.verdict)
        mark += f" — diagnosis: {c.diagnosis}" if c.diagnosis else ""
        row += [fmt_value(c.measured), c.interval, c.threshold, mark, *([c.stable or "—"] if with_stable else [])]
        if with_ctl:
            row.append("; ".join(f"{n}: {fmt_value(m)} ({'holds: a defect' if h else 'fails, as it should'})"
                                 for n, m, h in c.controls) or "—")
        rows.append(row)
    header = ["id", "claim", "paper ref", *(["paper's value"] if with_paper else []), "measured", "95% interval",
              "threshold", "verdict", *(["stable under"] if with_stable else [])]
    return _table(header + (["control"] if with_ctl else []), rows)


def _run(ev: ExpView, rv: RunView, figs: _Figures) -> list[str]:
    rec, s = rv.rec, rv.rec.summary
    held, total = rv.held
    out = [f"#### run `{rec.dir.name}` · preset `{s.get('preset', '?')}` · {rec.status} · {held}/{total} claims hold "
           f"· {rv.provenance.get('date', '')}", ""]
    if s.get("message"):
        out += [f"**{rec.status}:** {s['message']}", ""]
    if made := rec.made_by:
        out += [f"**made by featlab {made}**, not this version: `featlab run {s.get('experiment')} --force` redoes it",
                ""]
    regime = s.get("assumptions") or []
    if regime:
        out += ["Assumptions of the theorems in this preset:", "",
                *_table(["assumption", "requires", "here", "how"],
                        [[a.get("ref", ""), a.get("text", ""), "✓ met" if a.get("met") else "✗ broken on purpose",
                          a.get("why", "")] for a in regime])]
    out += _claims(rv)
    for f in rec.figures:
        link = figs.link(f, f"{ev.id}-{rec.dir.name}-{f.name}")
        out += [f"![{ev.id}: {f.stem}]({link})" if link else f"*figure missing: {f}*", ""]
    notes = [n for n in s.get("notes") or [] if str(n).strip()]
    if notes:
        out += ["Notes (assumptions in force, what does not reproduce and why):", "", *(f"- {n}" for n in notes), ""]
    if rv.diff:
        out += ["Config, changes from the preset:", "",
                *_table(["field", f"preset {s.get('preset', '?')}", "this run"],
                        [[f"`{k}`", fmt_value(a), fmt_value(b)] for k, a, b in rv.diff])]
    else:
        out += [f"Config: the `{s.get('preset', '?')}` preset as declared.", ""]
    out += ["Provenance:", "", *_table(["", ""], [[k, f"`{v}`"] for k, v in rv.provenance.items()])]
    return out


def render_markdown(report: Report, md_path: str | Path) -> str:
    """The Markdown text; figures are copied next to ``md_path`` as a side effect."""
    figs = _Figures(Path(md_path))
    out = ["# featlab report", "", f"Runs under `{report.out}` · written {report.created} · featlab {__version__}", "",
           "## Does it reproduce?", ""]
    rows = []
    for pv in report.papers:
        held, total = pv.held
        never = "; ".join(f"{p}: {', '.join(ids)}" for p, ids in pv.never_run()) or "—"
        missing = ", ".join(e.id + (" (needs data and a GPU)" if "GPU" in e.not_run else "") for e in pv.missing)
        ran = sum(bool(e.runs) for e in pv.experiments)
        failed = ", ".join(e.id for e in pv.failed)
        ch, ct = pv.checks
        sc = pv.statuses
        rows.append([pv.title, f"{held}/{total}", f"{sc['failed']} / {sc['inconclusive']} / {sc['unverified']}",
                     f"{ch}/{ct}" if ct else "—", f"{ran}/{len(pv.experiments)}", missing or "—", failed or "—",
                     never])
    out += _table(["paper", "claims held", "failed / inconclusive / unverified", "checks (not counted)",
                   "experiments run", "runs missing", "runs failed", "presets never run"], rows)
    if report.problems:
        out += ["Unreadable run folders (not in this report):", "", *(f"- `{p}`: {w}" for p, w in report.problems), ""]
    for pv in report.papers:
        held, total = pv.held
        out += [f"## {pv.title} — {held}/{total} claims hold", ""]
        for ev in pv.experiments:
            out += [f"### `{ev.id}` — {ev.reference}", ""]
            if len(ev.by_preset) > 1:
                out += [f"Presets side by side: {ev.presets_text()}.", ""]
            out += [ev.shows, ""] if ev.shows else []
            out += [f"*{ev.not_run}*", ""] if ev.not_run else []
            out += [f"Presets never run here: {', '.join(ev.never_run)}.", ""] if ev.never_run else []
            for rv in ev.runs:
                out += _run(ev, rv, figs)
            for sw in ev.sweeps:
                out += [f"#### Sweep ({sw.meta.get('preset', '?')}): `{' '.join(sw.meta.get('axes', []))}`", ""]
                out += _table(sw.columns, [[fmt_value(v) for v in r] for r in sw.table[sw.columns].values.tolist()])
                if sw.plot is not None:
                    link = figs.link(sw.plot, f"{ev.id}-{sw.plot.name}")
                    out += [f"![sweep of {ev.id}]({link})", ""]
    return "\n".join(out)


def write_markdown(report: Report, path: str | Path) -> Path:
    path = Path(path)  # figures are overwritten by name, never deleted: the folder may hold a user's files
    return atomic_write(path, render_markdown(report, path))
