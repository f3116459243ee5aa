"""The report's Markdown twin: the same content as the HTML page, with the figures copied beside it
(``report_files/``) and linked relatively, so the folder can be committed or opened in any Markdown viewer.

What a record holds (statements, notes, config values, messages) is text, never markup: ``<``, ``>`` and ``&`` are
escaped as the HTML page escapes them (:func:`_t`), and code spans cannot be closed from inside (:func:`_code`), so
raw HTML in a record never reaches a Markdown renderer. featlab's own markup (tables, code spans, links) is kept.
"""

from __future__ import annotations

import re
import shutil
from html import escape
from pathlib import Path

from .._version import __version__
from ..runs.record import tally_short
from ..text import fmt_value
from ..utils import atomic_write
from .scorecard_text import QUICK_NOTE, card_markdown
from .summary import ExpView, Report, RunView
from .tables import matrix_rows


def _t(v) -> str:
    """Free text from a record: ``<``, ``>`` and ``&`` escaped (as in the HTML page), newlines flattened, and no
    Markdown link can be formed (``](`` and ``]:`` escaped): a ``[x](javascript:...)`` in a note stays text."""
    text = " ".join(escape(str(v), quote=False).split())
    return text.replace("](", "]\\(").replace("]:", "]\\:")


def _code(v) -> str:
    """A code span of ``v``; one holding a backtick (which would close the span early) is escaped text instead."""
    text = " ".join(str(v).split())
    return f"`{text}`" if text and "`" not in text else _t(text)


def _c(v) -> str:
    """A table cell (callers escape what they put in): pipes escaped, newlines flattened."""
    return str(v).replace("|", "\\|").replace("\n", " ")


def files_dir(md_path: str | Path) -> Path:
    """The folder beside the Markdown file holding its figures: ``report.md`` → ``report_files/``."""
    md_path = Path(md_path)
    return md_path.with_name(md_path.stem + "_files")


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(_c(x) for x in r) + " |" for r in rows), ""]


class _Figures:
    """Copies each figure into the files folder under a unique, readable name and returns its relative link."""

    def __init__(self, md_path: Path):
        self.dir = files_dir(md_path)
        self.rel = self.dir.name
        self.used: set[str] = set()

    def link(self, src: Path, name: str) -> str | None:
        if not src.is_file():
            return None
        base, n = re.sub(r"[^\w.+-]+", "_", name), 1  # a plain file name: the link needs no escaping
        name = base
        while name in self.used:
            n += 1
            name = f"{Path(base).stem}-{n}{Path(base).suffix}"
        self.used.add(name)
        atomic_write(self.dir / name, lambda tmp: shutil.copyfile(src, tmp))  # never a truncated figure
        return f"{self.rel}/{name}"


def _claims(rv: RunView) -> list[str]:
    if not rv.claims:
        return ["No claims judged in this run (a pipeline check).", ""]
    with_ctl = any(c.controls for c in rv.claims)
    with_paper = any(c.paper_value is not None for c in rv.claims)
    with_stable = any(c.stable for c in rv.claims)  # a stability table of this run exists
    rows = []
    for c in rv.claims:
        tag = {"check": " (check, not counted)",
               "measurement": " (measurement, no verdict)",
               "uncontrolled": " (not counted: premise or unsettled)"}.get(c.kind, "")
        row = [_code(c.id) + tag, _t(c.statement), _t(c.source)]
        row += [_t(fmt_value(c.paper_value))] if with_paper else []
        mark = {"held": "✓ holds", "failed": "✗ fails", "unverified": "∼ unverified"}.get(c.status, "? " + c.verdict)
        mark += f" — diagnosis: {c.diagnosis}" if c.diagnosis else ""
        row += [_t(fmt_value(c.measured)), _t(c.interval), _t(c.threshold), _t(mark),
                *([_t(c.stable or "—")] if with_stable else [])]
        if with_ctl:
            row.append("; ".join(f"{_t(n)}: {_t(fmt_value(m))} ({'holds: a defect' if h else 'fails, as it should'})"
                                 for n, m, h in c.controls) or "—")
        rows.append(row)
    header = ["id", "claim", "paper ref", *(["paper's value"] if with_paper else []), "measured", "95% interval",
              "threshold", "verdict", *(["stable under"] if with_stable else [])]
    out = _table(header + (["control"] if with_ctl else []), rows)
    matrix = matrix_rows(rv.rec)
    if matrix:
        out += ["Discrimination matrix: each claim on the paper's net and on every rival net (trained as well, by "
                "another mechanism). A claim is counted (**mechanism**) only when it fails for every rival that "
                "must fail it; one that holds for such a rival is a **premise**; **unsettled**: a rival is missing, "
                "inconclusive or untrained.", "", *_table(matrix[0], [[_t(x) for x in r] for r in matrix[1]])]
    return out


def _run(ev: ExpView, rv: RunView, figs: _Figures) -> list[str]:
    rec, s = rv.rec, rv.rec.summary
    preset = _code(s.get("preset", "?"))
    out = [f"#### run {_code(rec.dir.name)} · preset {preset} · {_t(rec.status)} · {_t(tally_short(rec.tally))} "
           f"· {_t(rv.provenance.get('date', ''))}", ""]
    if s.get("message"):
        out += [f"**{_t(rec.status)}:** {_t(s['message'])}", ""]
    if not rec.verified:
        out += [f"**{_t(rec.integrity)}**: made before featlab recorded content hashes, its files could not be "
                f"checked", ""]
    if made := rec.made_by:
        out += [f"**made by featlab {_t(made)}**, not this version: {_code(f'featlab run {ev.id} --force')} redoes it",
                ""]
    regime = s.get("assumptions") or []
    if regime:
        out += ["Assumptions of the theorems in this preset:", "",
                *_table(["assumption", "requires", "here", "how"],
                        [[_t(a.get("ref", "")), _t(a.get("text", "")),
                          "✓ met" if a.get("met") else "✗ broken on purpose", _t(a.get("why", ""))] for a in regime])]
    out += _claims(rv)
    if rv is not ev.runs[0] and rec.figures:  # --all: only the latest run's figures are copied beside the page
        out += [f"Figures (copied for the latest run only): {', '.join(_code(f) for f in rec.figures)}", ""]
    for f in rec.figures if rv is ev.runs[0] else []:
        link = figs.link(f, f"{ev.id}-{rec.dir.name}-{f.name}")
        alt = _t(f"{ev.id}: {f.stem}").replace("[", "(").replace("]", ")")  # a bracket would end the alt text
        out += [f"![{alt}]({link})" if link else f"*figure missing: {_t(f)}*", ""]
    notes = [n for n in s.get("notes") or [] if str(n).strip()]
    if notes:
        out += ["Notes (assumptions in force, what does not reproduce and why):", "", *(f"- {_t(n)}" for n in notes),
                ""]
    if rv.diff:
        out += ["Config, changes from the preset:", "",
                *_table(["field", f"preset {_t(s.get('preset', '?'))}", "this run"],
                        [[_code(k), _t(fmt_value(a)), _t(fmt_value(b))] for k, a, b in rv.diff])]
    else:
        out += [f"Config: the {preset} preset as declared.", ""]
    out += ["Provenance:", "", *_table(["", ""], [[_t(k), _code(v)] for k, v in rv.provenance.items()])]
    return out


def render_markdown(report: Report, md_path: str | Path) -> str:
    """The Markdown text; figures are copied next to ``md_path`` (each whole or not at all) as a side effect."""
    figs = _Figures(Path(md_path))
    out = ["# featlab report", "", f"Runs under {_code(report.out)} · written {_t(report.created)} · featlab "
           f"{__version__}", "", "## Does it reproduce?", ""]
    if report.cards:
        out += [f"Scorecards: every numbered result of each paper, from the committed verdicts at the paper and theory "
                f"tiers (and the runs here); {_t(QUICK_NOTE)}.", ""]
        for card in report.cards:
            out += card_markdown(card, quick=True)
        out += ["### Runs under this folder", ""]
    rows = []
    for pv in report.papers:
        held, total = pv.held
        never = "; ".join(f"{p}: {', '.join(ids)}" for p, ids in pv.never_run()) or "—"
        missing = ", ".join(e.id + (" (needs data and a GPU)" if "GPU" in e.not_run else "") for e in pv.missing)
        ran = sum(bool(e.runs) for e in pv.experiments)
        failed = ", ".join(e.id for e in pv.failed)
        ch, ct = pv.checks
        sc = pv.statuses
        rows.append([_t(pv.title), _t(tally_short(pv.tally)),
                     f"{sc['failed']} / {sc['inconclusive']} / {sc['unverified']}",
                     f"{ch}/{ct}" if ct else "—", f"{ran}/{len(pv.experiments)}", _t(missing or "—"),
                     _t(failed or "—"), _t(never)])
    out += _table(["paper", "claims held", "failed / inconclusive / unverified", "checks (not counted)",
                   "experiments run", "runs missing", "runs failed", "presets never run"], rows)
    if report.headline():
        out += ["Headline per preset kind (quick presets are never counted; each demo preset on its own line, never "
                "with the papers'):", "",
                *(f"- {_t(h)}" for h in report.headline()), ""]
    if report.problems:
        out += ["Unreadable run folders (not in this report):", "",
                *(f"- {_code(p)}: {_t(w)}" for p, w in report.problems), ""]
    for pv in report.papers:
        out += [f"## {_t(pv.title)} — {_t(pv.counts_text())}", ""]
        for ev in pv.experiments:
            out += [f"### {_code(ev.id)} — {_t(ev.reference)}", ""]
            if len(ev.by_preset) > 1:
                out += [f"Presets side by side: {_t(ev.presets_text())}.", ""]
            out += [_t(ev.shows), ""] if ev.shows else []
            out += [f"*{_t(ev.not_run)}*", ""] if ev.not_run else []
            out += [f"Presets never run here: {_t(', '.join(ev.never_run))}.", ""] if ev.never_run else []
            for rv in ev.runs:
                out += _run(ev, rv, figs)
            for sw in ev.sweeps:
                out += [f"#### Sweep ({_t(sw.meta.get('preset', '?'))}): {_code(' '.join(sw.meta.get('axes', [])))}",
                        ""]
                out += _table([_t(c) for c in sw.columns],
                              [[_t(fmt_value(v)) for v in r] for r in sw.table[sw.columns].values.tolist()])
                if sw.plot is not None:
                    link = figs.link(sw.plot, f"{ev.id}-{sw.plot.name}")
                    out += [f"![sweep of {_t(ev.id)}]({link})", ""]
    return "\n".join(out)


def write_markdown(report: Report, path: str | Path) -> Path:
    path = Path(path)  # figures are overwritten by name, never deleted: the folder may hold a user's files
    return atomic_write(path, render_markdown(report, path))
