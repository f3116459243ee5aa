"""``featlab scorecard [PAPER]``: which of each paper's numbered results reproduce — every Definition … Table with
its status (counted / judged, not counted / not tested) from the committed results (docs/results) or a runs folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import ConfigError
from ..report.scorecard import scorecards
from ..report.scorecard_sources import from_runs, published
from ..report.scorecard_text import card_text
from ..runs.registry import list_experiments, papers
from .options import dump_json

RESULTS = "docs/results"


def register(sub) -> None:
    p = sub.add_parser("scorecard", help="every numbered result of each paper (Definition … Table): counted (held / "
                       "failed / inconclusive / unverified, with its claims and tier), judged not counted, or not "
                       "tested, with why")
    p.add_argument("paper", nargs="?", help="a paper key or claim prefix (fa, mm, rfa); default: every paper")
    p.add_argument("--out", help="read the runs under OUT (the latest run of each experiment at each preset) instead "
                   "of the committed results")
    p.add_argument("--results", default=RESULTS, help=f"the committed results folder (default ./{RESULTS})")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(handler=cmd_scorecard)


def _paper(name: str | None) -> str | None:
    """A paper key from its key or its claim prefix ('fa'); None for every paper."""
    if name in (None, "all"):
        return None
    keys = {k: k for k in papers()} | {c.id.split(".")[0]: e.paper for e in list_experiments() for c in e.claims}
    if name not in keys:
        raise ConfigError(f"unknown paper {name!r}; choose one of: {', '.join(papers())} (or fa, mm, rfa), all")
    return keys[name]


def cmd_scorecard(a: argparse.Namespace) -> int:
    key = _paper(a.paper)
    if a.out:
        if not Path(a.out).is_dir():
            raise ConfigError(f"--out: no runs folder {a.out!r}; pass the OUT of 'featlab run/reproduce'")
        not_run: dict = {}
        found, source = from_runs(a.out, quick=False), f"the runs under {a.out}"
    else:
        if not Path(a.results).is_dir():
            raise ConfigError(f"no committed results at {a.results!r}; run from the repository's root, or pass "
                              f"--results DIR or --out OUT")
        (found, not_run), source = published(a.results), f"the committed results in {a.results}"
    cards = scorecards(found, not_run, paper=key)
    if a.json:
        dump_json({"source": source, "papers": [c.to_dict() for c in cards]})
        return 0
    print(f"Scorecards from {source} (paper and theory tiers counted, each on its own; demo and quick presets "
          f"never):\n")
    print("\n\n".join(card_text(c) for c in cards))
    return 0
