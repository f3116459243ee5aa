"""The scorecard as text (the terminal: ``featlab scorecard``, the end of ``featlab reproduce``) and as Markdown
(the report's first screen, docs/results/README.md, the README's headline lines)."""

from __future__ import annotations

from ..text import table
from .scorecard import COUNTED_STATUS, Card, Entry

QUICK_NOTE = ("quick presets are not counted: beside each committed verdict, whether this run's quick verdict on "
              "the paper's net agrees (agree / differ / not run)")


def _status(e: Entry) -> str:
    if e.status == COUNTED_STATUS:
        return f"{e.verdict} ({e.tier})"
    return e.status + (f" ({e.verdict})" if e.verdict else "")


def _claims(e: Entry, quick: bool) -> str:
    if not e.found:
        return e.reason
    twice = {f.claim for f in e.found if sum(g.claim == f.claim for g in e.found) > 1}
    parts = [f"{f.claim}" + (f" ({f.experiment})" if f.claim in twice else "") + f" {f.bucket}"
             + (f" [quick: {e.quick.get(f.claim, 'not run')}]" if quick else "") for f in e.found]
    return ", ".join(parts) + (f" — {e.reason}" if e.reason else "")


def card_text(card: Card, *, quick: bool = False, width: int = 120) -> str:
    """The card's headline line, then one row per numbered result: its reference, status and claims (and, with
    ``quick``, each claim's agreement with this run's quick verdict)."""
    rows = [[e.ref, _status(e), _claims(e, quick)] for e in card.entries]
    return card.line() + "\n" + table(rows, ["result", "status", "claims (bucket) / why"],
                                      [22, 26, max(30, width - 52)])


def card_markdown(card: Card, *, level: str = "###", quick: bool = False) -> list[str]:
    """The card as a Markdown section: the line, then a table of every numbered result (``quick``: each claim's
    agreement with this run's quick verdict beside it)."""
    out = [f"{level} {card.title}", "", f"**{card.line()}**", "", "| result | status | claims / why |", "|---|---|---|"]
    for e in card.entries:
        out.append(f"| {_esc(e.ref)} | {_esc(_status(e))} | {_esc(_claims(e, quick))} |")
    return out + [""]


def card_rows(card: Card, *, quick: bool = False) -> list[list[str]]:
    """[result, status, claims / why] per numbered result, as plain text (the HTML page escapes it)."""
    return [[e.ref, _status(e), _claims(e, quick)] for e in card.entries]


def _esc(x: object) -> str:
    return str(x).replace("|", "\\|").replace("\n", " ")
