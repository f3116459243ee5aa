"""Thresholds are fixed before the run and their history is kept: docs/thresholds.json must lead, claim by claim,
to the threshold the registry declares, and docs/claims-changelog.md must be its rendering."""

import copy
import json
from pathlib import Path

from featlab.cli import main
from featlab.runs.registry import list_experiments
from featlab.runs.threshold_log import changelog_markdown, current_thresholds, load_log, problems

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "docs" / "thresholds.json"


def test_every_threshold_is_where_its_log_leads():
    found = problems(load_log(LOG), current_thresholds(list_experiments()))
    assert found == [], "\n".join(found)


def test_changelog_page_is_generated_and_fresh(capsys):
    assert main(["claims", "--changelog", "--log", str(LOG)]) == 0
    on_disk = (ROOT / "docs" / "claims-changelog.md").read_text(encoding="utf-8")
    assert capsys.readouterr().out == on_disk, "stale: featlab claims --changelog > docs/claims-changelog.md"


def test_a_threshold_changed_without_an_entry_fails():
    """The check can fail: a moved threshold, a broken chain, an undeclared claim and a silent retirement."""
    current = current_thresholds(list_experiments())
    log = load_log(LOG)
    cid = next(iter(current))
    moved = copy.deepcopy(current)
    moved[cid]["threshold"]["text"] = "<= 123"
    assert any(p.startswith(f"{cid}: the registry says '<= 123'") for p in problems(log, moved))

    broken = copy.deepcopy(log)
    broken[cid]["history"].append({"date": "2026-11-24", "old": "<= 7", "new": current[cid]["threshold"]["text"],
                                   "verdict_before": None, "verdict_after": None, "why": "planted"})
    assert any("starts from '<= 7'" in p for p in problems(broken, current))

    unlogged = {k: v for k, v in log.items() if k != cid}
    assert any(p.startswith(f"{cid}: not in the log") for p in problems(unlogged, current))

    retired = {k: v for k, v in current.items() if k != cid}
    assert any(p.startswith(f"{cid}: no longer declared") for p in problems(log, retired))


def test_claims_json_lists_thresholds_as_data_and_the_controls_that_target_each(capsys):
    assert main(["claims", "fa-synthetic", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    row = next(r for r in rows if r["id"] == "fa.binary_clean")
    assert row["threshold"] == {"kind": "AtLeast", "text": ">= 0.99", "of": None, "strict": False, "lo": 0.99}
    assert [c["name"] for c in row["controls"]] and all("why" in c for c in row["controls"])


def test_changelog_lists_changes_newest_first():
    log = {"a.x": {"history": [{"date": "2026-01-01", "old": None, "new": ">= 1", "verdict_before": None,
                                "verdict_after": None, "why": "registered"},
                               {"date": "2026-02-01", "old": ">= 1", "new": ">= 2", "verdict_before": "holds (3)",
                                "verdict_after": "holds (3)", "why": "the paper's value"}]},
           "a.y": {"history": [{"date": "2026-01-01", "old": None, "new": "<= 1", "verdict_before": None,
                                "verdict_after": None, "why": "registered"},
                               {"date": "2026-03-01", "old": "<= 1", "new": "<= 2 | or", "verdict_before": "fails",
                                "verdict_after": "holds", "why": "w"}]}}
    page = changelog_markdown(log)
    assert page.index("`a.y`") < page.index("`a.x`") and "<= 2 \\| or" in page
    assert "0 of 2 declared claims keep the threshold they were registered with; 0 retired." in page
