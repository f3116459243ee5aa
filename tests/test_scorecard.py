"""The scorecard (report/scorecard.py): every numbered result of every paper gets one status — counted (paper or
theory tier), judged not counted, or not tested — from the committed records; the README's headline is one line
per paper from the same records; quick verdicts only say whether they agree."""

from __future__ import annotations

import json
import re
from pathlib import Path

from featlab.cli import main
from featlab.report.scorecard import COUNTED_STATUS, JUDGED, NOT_TESTED, Found, agreement, entry, scorecards
from featlab.report.scorecard_sources import published
from featlab.runs.claims import PaperResult
from featlab.runs.registry import paper_results, papers
from featlab.runs.verdict import Verdict

ROOT = Path(__file__).parents[1]


def _found(cid: str, status: str, tier: str = "paper", role: str = "mechanism", diagnosis: str = "") -> Found:
    v = Verdict(cid, "s", "Thm 1", 1.0, ">= 1", status == "held", status=status, role=role)
    return Found(v, "exp", tier if tier != "quick" else "quick", tier, diagnosis)


def test_every_numbered_result_of_every_paper_has_one_status(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(["scorecard", "--json"]) == 0
    cards = json.loads(capsys.readouterr().out)["papers"]
    assert [c["paper"] for c in cards] == list(papers())
    for c in cards:
        refs = [r.ref for r in paper_results(c["paper"])]
        assert [e["ref"] for e in c["results"]] == refs
        assert all(e["status"] in (COUNTED_STATUS, JUDGED, NOT_TESTED) for e in c["results"])
        assert all(e["reason"] for e in c["results"] if e["status"] != COUNTED_STATUS)  # always with why
        assert all(e["tier"] in ("paper", "theory") for e in c["results"] if e["status"] == COUNTED_STATUS)
        n = c["counts"]
        assert sum(n["counted"].values()) + n["judged"] + n["not_tested"] == len(refs)
    assert main(["scorecard", "rfa"]) == 0
    out = capsys.readouterr().out
    assert "Random Feature Amplification:" in out and "Feature Averaging:" not in out and "0/0" not in out


def test_the_readme_headline_is_the_scorecards_lines():
    block = re.search(r"<!-- results: (\S+) -->\n(.*?)<!-- /results -->", (ROOT / "README.md").read_text(), re.S)
    lines = [c.line() for c in scorecards(*published(ROOT / block[1]))]
    assert len(lines) == len(papers()) and all(f"- {line}" in block[2] for line in lines)
    page = (ROOT / block[1] / "README.md").read_text()
    assert page.index("## Scorecards") < page.index("## Verdicts") and all(line in page for line in lines)


def test_a_result_counts_its_best_tier_and_a_formulation_failure_is_not_held_against_the_paper():
    r = PaperResult("Thm 1", "x", claims=("p.a", "p.b"))
    e = entry(r, [_found("p.a", "held"), _found("p.b", "failed"), _found("p.a", "failed", "theory")], {})
    assert (e.status, e.verdict, e.tier) == (COUNTED_STATUS, "failed", "paper")  # paper first, never mixed
    e = entry(r, [_found("p.a", "held", "theory"), _found("p.b", "held", "demo")], {})
    assert (e.status, e.verdict, e.tier) == (COUNTED_STATUS, "held", "theory")
    e = entry(r, [_found("p.b", "failed", diagnosis="formulation")], {})
    assert (e.status, e.verdict) == (JUDGED, "formulation") and "formulation" in e.reason
    e = entry(r, [_found("p.a", "held", role="unsettled"), _found("p.b", "held", "demo")], {})
    assert (e.status, e.verdict) == (JUDGED, "unsettled")
    assert entry(r, [], {}).status == NOT_TESTED and entry(PaperResult("Fig 1", "x", reason="a schematic"), [],
                                                           {}).reason.endswith("a schematic")


def test_quick_verdicts_only_say_whether_they_agree():
    committed = [_found("p.a", "held"), _found("p.b", "failed"), _found("p.c", "held")]
    quick = [_found("p.a", "held", "quick", role="unsettled"), _found("p.b", "inconclusive", "quick")]
    assert agreement(committed, quick) == {"p.a": "agree", "p.b": "differ (quick: inconclusive)", "p.c": "not run"}


def test_no_counted_published_verdict_is_exact_or_rests_on_fewer_than_5_nets():
    """Every counted verdict in docs/results carries its interval (never 'exact') and, when its units are seeds or
    nets, at least 5 of them unless it is inconclusive; no published verdict would need over 10⁶ units to settle."""
    from featlab.runs.uncertainty import MIN_UNITS

    for f in (ROOT / "docs" / "results").rglob("verdicts.json"):
        for r in json.loads(f.read_text(encoding="utf-8"))["rows"]:
            v = Verdict.from_dict(r)
            assert (v.settle or 0) <= 10 ** 6, (f, v.id, v.settle)
            if not v.counted:
                continue
            assert v.interval is not None, (f, v.id)  # not 'exact'
            few = (v.n or 0) < MIN_UNITS and v.unit.split(" ")[0] in ("seeds", "nets", "runs")
            assert not few or v.status == "inconclusive", (f, v.id, v.n)


def test_reproduce_ends_with_the_scorecards_and_the_quick_runs_agreement(tmp_path):
    """The end of `featlab reproduce`: the committed scorecards, each claim with this run's quick verdict beside it
    (agree / differ / not run), one line saying quick presets are not counted; never a bare 0/0."""
    from featlab.report.scorecard_text import QUICK_NOTE
    from featlab.report.summary import build, console_summary
    from featlab.runs.runner import resolve_config

    d = tmp_path / "fa-ablation-n" / "aaaa1111"
    d.mkdir(parents=True)
    claim = {"id": "fa.ablation_n.fa_everywhere", "statement": "s", "source": "Fig 5", "measured": 1.2,
             "threshold": ">= 1", "holds": False, "kind": "claim", "status": "inconclusive", "controlled": True}
    (d / "summary.json").write_text(json.dumps({
        "experiment": "fa-ablation-n", "status": "complete", "preset": "quick", "claims": [claim],
        "config": resolve_config("fa-ablation-n", "quick")[1].to_dict(), "metrics": {}}))
    text = console_summary(build(tmp_path, "feature-averaging", results=ROOT / "docs" / "results"))
    assert QUICK_NOTE in text and "0/0" not in text
    tail = text[text.index("Scorecards"):]
    assert "Feature Averaging: " in tail and "[quick: agree]" in tail and "[quick: not run]" in tail


def test_a_formulation_failure_is_listed_apart_until_its_reformulation_has_run():
    """Issue 45: a failure diagnosed 'formulation' is its own bucket whatever its role (unsettled, inconclusive with
    a failing seed), never counted against the paper; its pre-registered reformulation counts once it has run."""
    r = PaperResult("Fig 9", "x", claims=("p.old", "p.new"))
    old = Found(Verdict("p.old", "s", "Fig 9", 0.7, ">= 1", False, status="inconclusive", role="unsettled"), "exp",
                "paper", "paper", "formulation", "p.new")
    assert old.bucket == "formulation" and old.to_dict()["reformulation"] == "p.new"
    e = entry(r, [old], {})
    assert (e.status, e.verdict) == (JUDGED, "formulation")
    assert "reformulated as p.new, not yet run at the paper tier" in e.reason
    e = entry(r, [old, _found("p.new", "held")], {})
    assert (e.status, e.verdict, e.tier) == (COUNTED_STATUS, "held", "paper")  # the reformulation counts
    assert "run at the paper tier (held), counted in its place" in e.reason
    e = entry(r, [old, _found("p.new", "failed")], {})
    assert e.verdict == "failed"  # the reformulation's own failure is the paper's
    held = Found(Verdict("p.old", "s", "Fig 9", 1.2, ">= 1", True, status="held", role="mechanism"), "exp", "paper",
                 "paper", "formulation", "p.new")
    assert held.bucket == "held"  # a diagnosis never turns a held verdict into anything else
    bare = Found(old.verdict, "exp", "paper", "paper", "formulation")
    assert "no reformulation pre-registered yet" in entry(r, [bare], {}).reason


def test_a_published_verdict_whose_threshold_moved_is_not_counted_and_says_so():
    """The committed pages keep a verdict judged at its run's threshold; once the declared threshold moves (claims
    change log) the scorecard lists it apart, 'rerun pending', never counted."""
    from featlab.report.scorecard_sources import published
    from test_publish import PENDING_RERUN

    rows, _ = published(Path(__file__).resolve().parents[1] / "docs" / "results")
    found = {f.claim: f for f in rows if f.experiment == "fa-synthetic" and f.tier == "paper"}
    for _, claim in PENDING_RERUN:
        assert found[claim].moved and found[claim].bucket == "moved", claim
    assert not found["fa.binary_in_class"].moved and found["fa.binary_in_class"].bucket != "moved"
