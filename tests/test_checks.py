"""Checks (statements that hold by construction or only test the data generator) are judged and shown, but listed
apart and never counted among the claims that hold."""

import json

from featlab.cli import main
from featlab.report.tables import run_report
from featlab.runs.claims import AtLeast, Claim
from featlab.runs.record import check_counts, claim_counts, load_run
from featlab.runs.registry import list_experiments


def _claim(cid, holds, kind="claim"):  # a claim the rival runs showed to be a mechanism claim
    return {"id": cid, "statement": cid, "source": "Thm 1", "measured": 1.0, "threshold": ">= 0", "holds": holds,
            "kind": kind, **({"role": "mechanism"} if kind == "claim" else {})}


def test_a_check_is_judged_and_shown_but_not_counted(tmp_path):
    claims = [_claim("a.x", True), _claim("a.y", False), _claim("a.z", True, "check"), _claim("a.w", False, "check")]
    assert claim_counts(claims) == (1, 2) and check_counts(claims) == (1, 2)
    summary = {"experiment": "e", "status": "complete", "config": {}, "metrics": {}, "claims": claims}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    rec = load_run(tmp_path)
    assert rec.held == (1, 2) and rec.checks == (1, 2) and not rec.all_hold
    text = run_report(summary, str(tmp_path))
    assert "claims: 1 of 2 mechanism claims held (1 failed); not counted: 2 checks." in text
    assert "1/2 checks hold" in text and "check (not counted)" in text
    assert text.index("a.y") < text.index("check (not counted)") < text.index("a.w")  # listed apart, after


def test_a_failed_check_fails_strict_like_a_claim(tmp_path):
    summary = {"experiment": "e", "status": "complete", "config": {}, "metrics": {},
               "claims": [_claim("a.x", True), _claim("a.z", False, "check")]}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    rec = load_run(tmp_path)
    assert rec.held == (1, 1) and rec.passes() and not rec.passes(strict=True)


def test_verdicts_carry_their_kind_and_the_catalogue_lists_checks_apart(capsys):
    v = Claim("a.z", "s", "Thm 1", AtLeast(lo=0), kind="check").judge(1.0)
    assert v.to_dict()["kind"] == "check"
    checks = [c.id for e in list_experiments() for c in e.claims if c.kind == "check"]
    assert "rfa.linear_chance" in checks and "mm.prop34_lower" in checks
    assert main(["claims"]) == 0
    out = capsys.readouterr().out
    assert f"{len(checks)} checks." in out and out.index("claims in") < out.index("Checks (")
