"""The docs' measured sections, written from run records: ``featlab report OUT --sync-docs docs``.

A page marks each measured section with a pair of comments naming an experiment and a preset::

    <!-- measured: fa-synthetic quick -->
    (generated: do not edit by hand)
    <!-- /measured -->

and the command replaces what is between them with the latest complete run of that experiment at that preset
under OUT: its claims (measured, 95 % interval, threshold, verdict), its checks apart, and where the numbers come
from. A block whose experiment has no such run says so, and keeps nothing stale. ``blocks`` parses a page (the
test suite checks every block against the declared claims, so a changed threshold or a new claim makes it stale).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..runs.claims import fill_fields
from ..runs.index import find_runs
from ..runs.record import RunRecord, check_counts, counts_text, is_check, is_uncontrolled, status
from ..runs.runner import resolve_config
from ..text import fmt_value
from ..utils import atomic_write
from .tables import diagnosis_of, interval_text, verdict_text

_BLOCK = re.compile(r"(<!-- measured: (?P<exp>[\w.-]+) (?P<preset>[\w-]+) -->\n)(?P<body>.*?)(<!-- /measured -->)",
                    re.S)
_CELL = re.compile(r"(?<!\\)\|")  # a column bar (an escaped one, inside a cell, is text)


def blocks(text: str) -> list[tuple[str, str, str]]:
    """(experiment, preset, body) of every measured block of a page."""
    return [(m["exp"], m["preset"], m["body"]) for m in _BLOCK.finditer(text)]


def block_rows(body: str) -> dict[str, str]:
    """claim id → threshold text, as a generated block lists them."""
    out = {}
    for line in body.splitlines():
        cells = [c.strip() for c in _CELL.split(line)[1:-1]]
        if len(cells) == 6 and cells[0].startswith("`"):
            out[cells[0].split("`")[1]] = cells[4].replace("\\|", "|")
    return out


def _esc(x: object) -> str:
    return str(x).replace("|", "\\|")


def render_block(exp_id: str, preset: str, rec: RunRecord | None) -> str:
    if rec is None:
        return (f"*Not run here at the `{preset}` preset: `featlab run {exp_id} --preset {preset}` and "
                f"`featlab report OUT --sync-docs docs` fill this section.*\n")
    s, cfg = rec.summary, rec.config
    seeds = cfg.get("seeds")
    made = (s.get("versions") or {}).get("featlab", "?")
    commit = str(s.get("git_commit") or "")[:10]
    lines = [f"*Generated from the run record of `featlab run {exp_id} --preset {preset}` "
             f"({seeds} seed{'s' if seeds != 1 else ''}, featlab {made}{', commit ' + commit if commit else ''}, "
             f"{rec.date}, {s.get('elapsed_s', 0):.0f} s on {s.get('device', 'cpu')}) by `featlab report OUT "
             f"--sync-docs docs`; do not edit by hand.* Claims: **{counts_text(rec.claims)}**"
             + ("; checks (not counted): {}/{} held.".format(*check_counts(rec.claims))
                if any(is_check(c) for c in rec.claims) else "."), "",
             "| claim | statement | measured | 95% interval | threshold | verdict |", "|---|---|---|---|---|---|"]
    for c in sorted(rec.claims, key=lambda c: (is_check(c), is_uncontrolled(c))):
        tag = (" (measurement, no verdict)" if c.get("kind") == "measurement" else " (check)" if is_check(c)
               else f" ({c.get('role') or 'no rival'}: not counted)" if is_uncontrolled(c) else "")
        found = diagnosis_of(exp_id, c["id"], preset) if status(c) in ("failed", "inconclusive") else None
        verdict = verdict_text(c) + (f" — diagnosis: {found.text()}" if found else "")
        said = fill_fields(c["statement"], cfg)  # a record of an older featlab may carry {field:g} unfilled
        lines.append(f"| `{c['id']}`{tag} | {_esc(said)} | {_esc(fmt_value(c['measured']))} | "
                     f"{_esc(interval_text(c))} | {_esc(c['threshold'])} | {_esc(verdict)} |")
    return "\n".join(lines) + "\n"


def latest(out: Path, exp_id: str, preset: str) -> RunRecord | None:
    """The newest complete run of ``featlab run EXP --preset PRESET`` itself under ``out``: not a control, and with
    the preset's own config (a run with ``seeds=4`` or a stability study's variant is another run: a block filled
    from it would show the preset's claims with another run's verdicts)."""
    return next((r for r in find_runs(out).of(exp_id) if r.ok and r.summary.get("preset") == preset
                 and not r.summary.get("control") and _of_preset(r, exp_id, preset)), None)


def _of_preset(rec: RunRecord, exp_id: str, preset: str) -> bool:
    """Whether ``rec``'s config is ``preset``'s (fields added since it ran aside, which it could not record)."""
    try:
        want = resolve_config(exp_id, preset)[1].to_dict()
    except Exception:  # an experiment or preset gone since: the record alone says what it ran
        return True
    return all(k not in want or want[k] == v for k, v in (rec.config or {}).items())


def sync_docs(out: str | Path, docs: str | Path) -> list[tuple[Path, str, str, bool]]:
    """Rewrite every measured block under ``docs`` from the runs under ``out``: (page, experiment, preset, found)."""
    out, done = Path(out), []
    for page in sorted(Path(docs).glob("*.md")):
        text = page.read_text(encoding="utf-8")
        if "<!-- measured:" not in text:
            continue

        def fill(m: re.Match, page: Path = page) -> str:
            rec = latest(out, m["exp"], m["preset"])
            done.append((page, m["exp"], m["preset"], rec is not None))
            return m.group(1) + render_block(m["exp"], m["preset"], rec) + m.group(5)

        new = _BLOCK.sub(fill, text)
        if new != text:
            atomic_write(page, new)
    return done
