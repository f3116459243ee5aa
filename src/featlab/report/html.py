"""The report as one self-contained HTML file: figures embedded as base64 PNGs, inline CSS, no script and no
network, so it can be mailed to a colleague and read offline."""

from __future__ import annotations

import base64
from collections.abc import Set
from html import escape
from pathlib import Path
from typing import Any

from .._version import __version__
from ..runs.record import tally_short
from ..text import fmt_value
from ..utils import atomic_write
from .scorecard_text import QUICK_NOTE, card_rows
from .summary import ExpView, PaperView, Report, RunView
from .tables import matrix_rows

CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d1d1f;max-width:1180px;
margin:0 auto;padding:24px 28px 80px;background:#fff}
h1{font-size:26px;margin:0 0 4px}h2{font-size:22px;border-bottom:2px solid #ddd;padding-bottom:4px;margin-top:42px}
h3{font-size:18px;margin:30px 0 4px}h4{font-size:15px;margin:18px 0 6px;color:#333}
.sub{color:#666;margin:0 0 14px}table{border-collapse:collapse;margin:6px 0 14px;font-size:13.5px}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}th{background:#f4f5f7}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.ok{color:#11772d;font-weight:600}.bad{color:#c62828;font-weight:600}.warn{color:#a15c00}
.pill{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12.5px;font-weight:600}
.pill.ok{background:#e3f4e8}.pill.bad{background:#fde7e7}.pill.warn{background:#fff1dc}
figure{margin:10px 0 18px}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:12.5px;color:#555}code{font-size:12.5px;background:#f4f5f7;padding:1px 4px;border-radius:3px}
.run{border-left:4px solid #e3e6ea;padding-left:14px;margin:10px 0 24px}ul.notes li{margin:3px 0}
.muted{color:#777}.chips{font-size:13.5px;margin:4px 0}.nw{white-space:nowrap}
"""


def _e(v: Any) -> str:
    return escape(str(v), quote=True)


def _anchor(*parts: str) -> str:
    return "-".join(p.replace(".", "-").replace("/", "-") for p in parts)


_MARK = {"held": ("ok", "✓ holds"), "failed": ("bad", "✗ fails"), "inconclusive": ("warn", "? inconclusive"),
         "unverified": ("warn", "∼ unverified")}


def _verdict(c) -> str:
    cls, text = _MARK.get(c.status, ("bad", "✗ fails"))
    extra = c.verdict.removeprefix(c.status) if c.status == "inconclusive" else ""
    return (f'<span class="{cls} nw">{text}</span>' + (f'<br><span class="muted">{_e(extra.strip())}</span>'
                                                        if extra.strip() else "")
            + (f'<br><span class="muted">diagnosis — {_e(c.diagnosis)}</span>' if c.diagnosis else ""))


def _img(path: Path, caption: str) -> str:
    try:
        if not path.is_file():  # a FIFO or a device (a link to /dev/zero) would never end
            raise FileNotFoundError(path)
        data = base64.b64encode(path.read_bytes()).decode("ascii")
    except OSError:
        return f'<p class="bad">figure missing: {_e(path)}</p>'
    return (f'<figure><img src="data:image/png;base64,{data}" alt="{_e(caption)}">'
            f"<figcaption>{_e(caption)}</figcaption></figure>")


def _table(header: list[str], rows: list[list[str]], num: Set[int] = frozenset()) -> str:
    """Cells are trusted HTML (callers escape what they put in)."""
    head = "".join(f"<th>{h}</th>" for h in header) if any(header) else ""
    body = "".join("<tr>" + "".join(f'<td class="num">{c}</td>' if i in num else f"<td>{c}</td>"
                                    for i, c in enumerate(r)) + "</tr>" for r in rows)
    thead = f"<thead><tr>{head}</tr></thead>" if head else ""
    return f"<table>{thead}<tbody>{body}</tbody></table>"


def _scorecards(report: Report) -> list[str]:
    """The scorecards first: every numbered result of each paper with its status (report/scorecard.py)."""
    if not report.cards:
        return []
    out = [f"<p>Scorecards: every numbered result of each paper, from the committed verdicts at the paper and "
           f"theory tiers (and the runs here); {_e(QUICK_NOTE)}.</p>"]
    for card in report.cards:
        out += [f"<h3>{_e(card.title)}</h3>", f"<p><b>{_e(card.line())}</b></p>",
                _table(["result", "status", "claims / why"], [[_e(c) for c in r] for r in card_rows(card, quick=True)])]
    return out


def _first_screen(report: Report) -> str:
    rows = []
    for pv in report.papers:
        held, total = pv.held
        sc = pv.statuses
        cls = "ok" if total and held == total else ("bad" if total else "warn")
        shown = tally_short(pv.tally)
        ran = sum(bool(e.runs) for e in pv.experiments)
        missing = ", ".join(f'<a href="#{_anchor(e.id)}">{_e(e.id)}</a>'
                            + (" (needs data and a GPU)" if "GPU" in e.not_run else "") for e in pv.missing) or "—"
        failed = ", ".join(f'<a href="#{_anchor(e.id)}">{_e(e.id)}</a>' for e in pv.failed) or "—"
        never = "; ".join(f"<code>{_e(p)}</code>: {_e(', '.join(ids))}" for p, ids in pv.never_run()) or "—"
        ch, ct = pv.checks
        rows.append([f'<a href="#{_anchor(pv.key)}">{_e(pv.title)}</a>',
                     f'<span class="pill {cls}">{_e(shown)}</span>',
                     f"{sc['failed']} / {sc['inconclusive']} / {sc['unverified']}", f"{ch}/{ct}" if ct else "—",
                     f"{ran}/{len(pv.experiments)}", missing, failed, f'<span class="muted">{never}</span>'])
    out = ["<h2 id='summary'>Does it reproduce?</h2>", *_scorecards(report),
           "<h3>Runs under this folder</h3>",
           _table(["paper", "claims held", "failed / inconclusive / unverified", "checks (not counted)",
                   "experiments run", "runs missing", "runs failed", "presets never run"], rows, {1, 2, 3, 4})]
    if report.headline():
        out += ["<p>Headline per preset kind (quick presets are never counted; each demo preset on its own line, "
                "never with the papers'):</p><ul class='headline'>"
                + "".join(f"<li>{_e(h)}</li>" for h in report.headline()) + "</ul>"]
    for pv in report.papers:  # every experiment one click away, with its verdict
        chips = []
        for e in pv.experiments:
            held, total = e.runs[0].held if e.runs else (0, 0)
            cls = "muted" if not e.runs else ("ok" if held == total and e.runs[0].rec.ok else "bad")
            count = tally_short(e.runs[0].rec.tally) if e.runs else "not run"
            side = f' <span class="muted">({_e(e.presets_text())})</span>' if len(e.by_preset) > 1 else ""
            chips.append(f'<a href="#{_anchor(e.id)}">{_e(e.id)}</a> <span class="{cls}">'
                         f'{_e(count)}</span>{side}')
        out.append(f"<p class='chips'><b>{_e(pv.title.split(' (')[0])}</b>: {' · '.join(chips)}</p>")
    if report.problems:
        out.append("<p class='warn'>Unreadable run folders (not in this report):</p><ul>"
                   + "".join(f"<li><code>{_e(p)}</code>: {_e(why)}</li>" for p, why in report.problems) + "</ul>")
    return "\n".join(out)


def _claims(rv: RunView) -> str:
    if not rv.claims:
        return ("<p class='muted'>No claims judged in this run (a pipeline check: it draws figures and records "
                "metrics).</p>")
    with_ctl = any(c.controls for c in rv.claims)
    with_paper = any(c.paper_value is not None for c in rv.claims)
    with_stable = any(c.stable for c in rv.claims)  # a stability table of this run exists
    rows = []
    for c in rv.claims:
        tag = {"check": "check, not counted",
               "measurement": "measurement, no verdict",
               "uncontrolled": "not counted: premise or unsettled"}.get(c.kind)
        row = [f"<code>{_e(c.id)}</code>" + (f" <span class='muted'>{tag}</span>" if tag else ""), _e(c.statement),
               _e(c.source)]
        row += [_e(fmt_value(c.paper_value))] if with_paper else []
        row += [_e(fmt_value(c.measured)), _e(c.interval), _e(c.threshold), _verdict(c)]
        row += [_e(c.stable or "—")] if with_stable else []
        if with_ctl:
            row.append("<br>".join(f"{_e(n)}: {_e(fmt_value(m))} "
                                   + ('<span class="bad">holds (a defect)</span>' if h
                                      else '<span class="ok">fails, as it should</span>')
                                   for n, m, h in c.controls) or "—")
        rows.append(row)
    header = ["id", "claim", "paper ref", *(["paper's value"] if with_paper else []), "measured", "95% interval",
              "threshold", "verdict", *(["stable under"] if with_stable else [])]
    out = _table(header + (["control"] if with_ctl else []), rows, {3, 4} if with_paper else {3})
    matrix = matrix_rows(rv.rec)
    if matrix:  # claim × rival: counted only where every rival that must fail a claim fails it
        out += ("<p class='muted'>Discrimination matrix: each claim on the paper's net and on every rival net. "
                "<b>mechanism</b>: fails for every rival that must fail it (counted); <b>premise</b>: holds for a "
                "rival too; <b>unsettled</b>: a rival missing, inconclusive or untrained.</p>"
                + _table(matrix[0], [[_e(x) for x in r] for r in matrix[1]]))
    return out


def _assumptions(s: dict) -> str:
    """The theorem's premises as this run's preset meets or breaks them."""
    rows = [[_e(a.get("ref", "")), _e(a.get("text", "")),
             '<span class="ok">✓ met</span>' if a.get("met") else '<span class="warn">✗ broken on purpose</span>',
             _e(a.get("why", ""))] for a in s.get("assumptions") or []]
    if not rows:
        return ""
    return "<p>Assumptions of the theorems in this preset:</p>" + _table(["assumption", "requires", "here", "how"],
                                                                          rows)


def _run(ev: ExpView, rv: RunView) -> str:
    rec, s = rv.rec, rv.rec.summary
    held, total = rv.held
    status = ('<span class="pill ok">complete</span>' if rec.ok
              else f'<span class="pill bad">{_e(rec.status)}</span>')
    out = [f"<div class='run' id='{_anchor(ev.id, rec.dir.name)}'>",
           f"<h4>run <code>{_e(rec.dir.name)}</code> · preset <code>{_e(s.get('preset', '?'))}</code> · {status} · "
           f"{held}/{total} claims hold · {_e(rv.provenance.get('date', ''))}</h4>"]
    if regime := _assumptions(s):
        out.append(regime)
    if s.get("message"):
        out.append(f"<p class='bad'>{_e(s['message'])}</p>")
    if not rec.verified:
        out.append(f"<p class='warn'>{_e(rec.integrity)}: made before featlab recorded content hashes, its files "
                   f"could not be checked</p>")
    if made := rec.made_by:
        out.append(f"<p class='bad'>made by featlab {_e(made)}, not this version: "
                   f"<code>featlab run {_e(ev.id)} --force</code> redoes it</p>")
    out.append(_claims(rv))
    if rv is ev.runs[0]:  # the latest run's figures are embedded; older ones (--all) named: a page stays small
        out += [_img(f, f"{ev.id}: {f.stem}") for f in rec.figures]
    elif rec.figures:
        out.append(f"<p class='muted'>figures (embedded for the latest run only): "
                   f"{', '.join(f'<code>{_e(f)}</code>' for f in rec.figures)}</p>")
    notes = [n for n in s.get("notes") or [] if str(n).strip()]
    if notes:
        out.append("<h4>Notes (assumptions in force, what does not reproduce and why)</h4><ul class='notes'>"
                   + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul>")
    out.append("<h4>Config: changes from the preset</h4>")
    if rv.diff:
        out.append(_table(["field", f"preset {_e(s.get('preset', '?'))}", "this run"],
                          [[f"<code>{_e(k)}</code>", _e(fmt_value(a)), _e(fmt_value(b))] for k, a, b in rv.diff]))
    else:
        out.append(f"<p class='muted'>none: the {_e(s.get('preset', '?'))} preset as declared "
                   f"(<code>featlab config {_e(ev.id)} --preset {_e(s.get('preset', 'quick'))}</code>).</p>")
    out.append("<h4>Provenance</h4>" + _table(["", ""], [[_e(k), f"<code>{_e(v)}</code>"]
                                                         for k, v in rv.provenance.items()]))
    out.append("</div>")
    return "\n".join(out)


def _sweeps(ev: ExpView) -> str:
    out = []
    for sw in ev.sweeps:
        axes = " ".join(sw.meta.get("axes", []))
        out.append(f"<h4>Sweep ({_e(sw.meta.get('preset', '?'))}): <code>{_e(axes)}</code></h4>")
        rows = [[_e(fmt_value(v)) for v in r] for r in sw.table[sw.columns].values.tolist()]
        out.append(_table([_e(c) for c in sw.columns], rows))
        if sw.plot is not None:
            out.append(_img(sw.plot, f"sweep of {ev.id}: {sw.plot.stem}"))
    return "\n".join(out)


def _experiment(ev: ExpView) -> str:
    out = [f"<h3 id='{_anchor(ev.id)}'><code>{_e(ev.id)}</code> — {_e(ev.reference)}</h3>"]
    if ev.shows:
        out.append(f"<p class='sub'>{_e(ev.shows)}</p>")
    if ev.not_run:
        out.append(f"<p class='warn'>{_e(ev.not_run)}</p>")
    if ev.never_run:
        out.append(f"<p class='muted'>presets never run here: {_e(', '.join(ev.never_run))}</p>")
    out += [_run(ev, rv) for rv in ev.runs]
    out.append(_sweeps(ev))
    return "\n".join(out)


def _paper(pv: PaperView) -> str:
    held, total = pv.held
    return "\n".join([f"<h2 id='{_anchor(pv.key)}'>{_e(pv.title)} <span class='muted'>· {held}/{total} claims "
                      f"hold</span></h2>", *(_experiment(ev) for ev in pv.experiments)])


def render_html(report: Report) -> str:
    return "\n".join([
        "<!DOCTYPE html>", "<html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>featlab report — {_e(report.out)}</title><style>{CSS}</style></head><body>",
        "<h1>featlab report</h1>",
        f"<p class='sub'>runs under <code>{_e(report.out)}</code> · written {_e(report.created)} · "
        f"featlab {_e(__version__)}</p>",
        _first_screen(report), *(_paper(pv) for pv in report.papers),
        "</body></html>"])


def write_html(report: Report, path: str | Path) -> Path:
    return atomic_write(path, render_html(report))
