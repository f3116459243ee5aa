"""Every command and the Python API count a run's claims through one function (runs/record.py ``tally``): the same
record gives the same count in ``run`` (its table), ``reproduce``, ``runs``, ``show``, ``compare`` (by folder and by
run id), ``load_run(...).held`` and the report."""

from __future__ import annotations

import json

import pytest

from featlab.cli import main
from featlab.report.summary import build
from featlab.report.tables import run_report
from featlab.runs.claims import Verdict
from featlab.runs.compare import compare
from featlab.runs.index import find_runs, index_rows
from featlab.runs.record import counts_text, load_run, read_run, tally, tally_short
from featlab.runs.runner import resolve_config

EXP, CLAIM = "fa-ablation-n", "fa.ablation_n.fa_everywhere"


def _claim(status: str, **more) -> dict:
    return {"id": CLAIM, "statement": "s", "source": "Fig 5", "measured": 1.2 if status == "held" else 0.5,
            "threshold": ">= 1", "holds": status == "held", "kind": "claim", "status": status, "controlled": True,
            **more}


def _write(out, name: str, claims: list[dict], control: dict | None = None, date: str = "2026-01-01T00:00:00"):
    cfg = resolve_config(EXP, "quick")[1].to_dict()
    if control:
        cfg.update(control["overrides"])
    d = out / EXP / name
    d.mkdir(parents=True)
    summary = {"experiment": EXP, "status": "complete", "preset": "quick", "config": cfg,
               "metrics": {"binary.clean_acc_min": 1.0}, "claims": claims, "control": control, "date": date}
    (d / "summary.json").write_text(json.dumps(summary))
    return d


@pytest.fixture
def out(tmp_path):
    check = {"id": "fa.x_check", "statement": "c", "source": "Def 3.1", "measured": 1.0, "threshold": ">= 1",
             "holds": True, "kind": "check", "status": "held"}
    _write(tmp_path, "aaaa1111", [_claim("held"), check])
    _write(tmp_path, "aaaa2222", [_claim("failed"), check], date="2026-01-02T00:00:00")
    _write(tmp_path, "bbbb1111", [_claim("failed")], date="2026-01-03T00:00:00",
           control={"name": "large-init", "overrides": {"sigma_w": 0.001, "sigma_b": 0.001},
                    "trained_values": {"binary.clean_acc_min": 1.0}, "margin": 0.05})
    _write(tmp_path, "cccc1111", [_claim("failed")], date="2026-01-03T00:00:00",
           control={"name": "lazy", "overrides": {"init": "lazy"},
                    "trained_values": {"binary.clean_acc_min": 1.0}, "margin": 0.05})
    return tmp_path


def test_every_command_counts_the_same(out, capsys):
    d = out / EXP / "aaaa1111"
    rec = load_run(d)
    assert rec.held == (1, 1) and tally(rec.claims)["check"] == 1  # the rival failed it: a mechanism claim
    text = counts_text(rec.claims)
    assert text.startswith("1 of 1 mechanism claim held")
    assert text in run_report(rec.summary, str(d))  # what `featlab run` and `reproduce` print
    row = next(r for r in index_rows(find_runs(out)) if r["run_id"] == "aaaa1111")
    assert row["claims_held"] == tally_short(rec.tally) == "1/1 held"
    assert main(["show", "aaaa1111", "--out", str(out)]) == 0
    assert text in capsys.readouterr().out
    assert main(["show", str(d)]) == 0
    assert text in capsys.readouterr().out
    other = load_run(out / EXP / "aaaa2222")
    assert compare(rec, other)["a"]["claims"] == text  # by folder
    assert main(["compare", "aaaa1111", "aaaa2222", "--out", str(out)]) == 0  # by run id
    assert text in capsys.readouterr().out
    paper = next(p for p in build(out).papers if any(e.runs for e in p.experiments))
    assert paper.counts_text() == counts_text(other.claims)  # the report: the latest run of each experiment
    assert paper.held == other.held == (0, 1)


def test_a_record_read_alone_is_unsettled_not_zero_over_zero(out):
    rec = read_run(out / EXP / "aaaa1111")  # no rival read: the claim is unsettled, never a bare 0/0
    assert rec.held == (0, 0)
    assert counts_text(rec.claims) == "no mechanism claim counted; not counted: 1 unsettled, 1 check"
    assert tally_short(rec.tally) == "none counted (1 unsettled, 1 check)"


def test_verdict_round_trip_and_bucket():
    c = _claim("failed", role="mechanism", rivals=[{"rival": "large-init", "state": "failed"}], extra_key=3)
    v = Verdict.from_dict(c)
    assert v.bucket == "failed" and v.to_dict()["extra_key"] == 3 and Verdict.from_dict(v.to_dict()) == v
    assert Verdict.from_dict({**c, "role": "premise"}).bucket == "premise"
    assert Verdict.from_dict({**c, "kind": "measurement"}).bucket == "measurement"
    assert Verdict.from_dict({**c, "controlled": False, "role": ""}).bucket == "premise"
    row = {"claim": CLAIM, "kind": "uncontrolled", "role": "unsettled", "status": "held"}  # a published row
    assert Verdict.from_dict(row).bucket == "unsettled"
    assert Verdict.from_dict({"claim": CLAIM, "kind": "claim", "role": "mechanism claim", "status": "held"}
                             ).bucket == "held"
