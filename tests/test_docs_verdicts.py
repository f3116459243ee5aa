"""The docs' measured tables tell one story: a claim has one verdict per experiment and preset on every page, a block
is filled only from a run of its preset's own config (not a run with ``seeds=4`` or a stability variant filed under
the same preset), and a statement's ``{field:g}`` is filled as ``{field}`` is."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import featlab
from featlab.report.docs_sync import _CELL, blocks, sync_docs
from featlab.runs.claims import fill_fields

ROOT = Path(__file__).resolve().parents[1]


def verdicts(pages: list[Path]) -> dict[tuple[str, str, str], set[str]]:
    """(experiment, preset, claim) → the verdicts its measured blocks show (held, failed, inconclusive, ...)."""
    found: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for page in pages:
        for exp, preset, body in blocks(page.read_text(encoding="utf-8")):
            for line in body.splitlines():
                cells = [c.strip() for c in _CELL.split(line)[1:-1]]
                if len(cells) == 6 and cells[0].startswith("`"):
                    word = re.match(r"\w+", cells[5])
                    found[(exp, preset, cells[0].split("`")[1])].add(word.group(0).lower() if word else cells[5])
    return found


def test_no_docs_table_shows_a_claim_with_two_verdicts_at_one_preset():
    seen = verdicts(sorted((ROOT / "docs").rglob("*.md")))
    assert seen, "no measured block found under docs/"
    twice = {k: v for k, v in seen.items() if len(v) > 1}
    assert not twice, twice


def test_two_verdicts_of_one_claim_are_caught(tmp_path):
    row = "| `x.c` | s | 1 | exact | >= 1 | {} |"
    head = "| claim | statement | measured | 95% interval | threshold | verdict |\n|---|---|---|---|---|---|"
    for i, v in enumerate(("held", "inconclusive (~5 seeds would settle it)")):
        (tmp_path / f"p{i}.md").write_text(f"<!-- measured: e quick -->\n{head}\n{row.format(v)}\n"
                                           "<!-- /measured -->\n", encoding="utf-8")
    assert verdicts(sorted(tmp_path.glob("*.md")))[("e", "quick", "x.c")] == {"held", "inconclusive"}


def test_a_block_is_filled_from_its_presets_own_run_only(tmp_path):
    """A newer run at the same preset name with an override (seeds=2) does not fill the preset's block."""
    out, docs = tmp_path / "runs", tmp_path / "docs"
    docs.mkdir()
    page = docs / "p.md"
    page.write_text("<!-- measured: rfa-fig1 quick -->\n<!-- /measured -->\n", encoding="utf-8")
    own = featlab.run("rfa-fig1", "quick", out=out, quiet=True)
    featlab.run("rfa-fig1", "quick", out=out, quiet=True, seeds=own.config["seeds"] + 1)
    assert sync_docs(out, docs) == [(page, "rfa-fig1", "quick", True)]
    text = page.read_text(encoding="utf-8")
    n = own.config["seeds"]
    assert f"({n} seed{'s' if n != 1 else ''}," in text and f"({n + 1} seeds," not in text, text[:400]
    (out / "only-override").mkdir()
    featlab.run("rfa-fig1", "quick", out=out / "only-override", quiet=True, seeds=own.config["seeds"] + 1)
    assert sync_docs(out / "only-override", docs) == [(page, "rfa-fig1", "quick", False)]


def test_a_format_spec_in_a_statement_is_filled():
    assert fill_fields("Beta({a:g},{a:g}) at {T}; λ_{s,r} {other}", {"a": 1.0, "T": 3}) == \
        "Beta(1,1) at 3; λ_{s,r} {other}"
