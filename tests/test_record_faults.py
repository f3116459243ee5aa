"""Damaged and tampered records are refused by name (one line, exit 2, no traceback, never "held" on a NaN), `show`
says when it skips a damaged newer run, and `compare` reads the four verdicts, refuses two experiments and takes the
latest run that is neither a control nor a sweep point. Run folders are fabricated (nothing trains)."""

import json

import pandas as pd
import pytest

from featlab.cli import main
from test_inspect import fake_run


def _one_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("featlab: error: ") and "Traceback" not in err[0], err
    return err[0]


def _tamper(run, **changes):
    f = run / "summary.json"
    s = json.loads(f.read_text())
    for k, v in changes.items():
        if k == "claim":
            s["claims"][0].update(v)
        else:
            s[k] = v
    f.write_text(json.dumps(s))


@pytest.mark.parametrize("change,words", [
    ({"elapsed_s": "12 s"}, "'elapsed_s' of type str"),
    ({"claim": {"measured": float("nan"), "status": "held"}}, "says 'held' on a measured value of nan"),
    ({"claim": {"status": "proven"}}, "unknown verdict 'proven'"),
    ({"claim": {"interval": ["a", 1]}}, "interval is not two numbers"),
    ({"metrics": {"acc": [1, 2]}}, "metric 'acc' that is not a number"),
    ({"notes": "one note"}, "'notes' of type str"),
])
def test_a_tampered_record_is_refused_by_name(out, capsys, change, words):
    run = fake_run(out, "cccccccccccc", claims=[("fa.x", 0.9, True)])
    _tamper(run, **change)
    assert main(["show", str(run)]) == 2
    line = _one_error(capsys)
    assert str(run / "summary.json") in line and words in line
    assert main(["runs", str(out)]) == 0  # the index lists it as unreadable, by name
    assert words in capsys.readouterr().err


def test_a_nan_failed_claim_stays_readable(out, capsys):
    run = fake_run(out, "dddddddddddd", claims=[("fa.x", 0.9, False)])
    _tamper(run, claim={"measured": float("nan"), "status": "failed"})
    assert main(["show", str(run)]) == 0  # a NaN measurement that failed is a result, not damage


def test_show_says_when_it_skips_a_damaged_newer_run(out, capsys):
    old = fake_run(out, "aaaaaaaaaaaa", age=3600, claims=[("fa.x", 0.9, True)])
    new = fake_run(out, "bbbbbbbbbbbb", claims=[("fa.x", 0.9, True)])
    (new / "summary.json").write_text('{"experiment": "fa-synth')  # truncated
    assert main(["show", "fa-synthetic", "--out", str(out)]) == 0
    io = capsys.readouterr()
    assert str(old) in io.out and f"skipped {new}, newer but unreadable" in io.err and "not valid JSON" in io.err
    assert main(["show", "bbbb", "--out", str(out)]) == 2  # named by its id: the reason, not "neither ... nor"
    assert "not valid JSON" in _one_error(capsys)


def test_compare_reads_four_verdicts_with_their_intervals(out, capsys):
    a = fake_run(out, "aaaaaaaaaaaa", age=60, claims=[("fa.x", 0.9, True), ("fa.y", 0.7, False)])
    b = fake_run(out, "bbbbbbbbbbbb", claims=[("fa.x", 0.9, True), ("fa.y", 0.7, False)])
    _tamper(a, claim={"status": "held", "interval": [0.85, 0.95]})
    _tamper(b, claim={"status": "inconclusive", "interval": [0.4, 0.95], "holds": False})
    s = json.loads((b / "summary.json").read_text())
    s["claims"][1]["status"] = "unverified"  # failed → unverified: both "not holding", still a change
    (b / "summary.json").write_text(json.dumps(s))
    assert main(["compare", str(a), str(b)]) == 0
    text = capsys.readouterr().out
    assert "held 0.9 [0.85, 0.95]" in text and "inconclusive 0.9 [0.4, 0.95]" in text
    assert "fa.y" in text and "unverified" in text
    assert main(["compare", str(a), str(b), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [(c["id"], c["a"], c["b"]) for c in d["claims_changed"]] == [("fa.x", "held", "inconclusive"),
                                                                         ("fa.y", "failed", "unverified")]


def test_compare_refuses_two_experiments_and_marks_two_presets(out, capsys):
    a = fake_run(out, "aaaaaaaaaaaa", claims=[("fa.x", 0.9, True)])
    b = fake_run(out, "bbbbbbbbbbbb", experiment="fa-ablation-n", claims=[("fa.x", 0.9, True)])
    c = fake_run(out, "cccccccccccc", preset="paper", claims=[("fa.x", 0.9, True)])
    assert main(["compare", str(a), str(b)]) == 2
    assert "--across" in _one_error(capsys)
    assert main(["compare", str(a), str(b), "--across"]) == 0
    assert "warning: comparing fa-synthetic" in capsys.readouterr().err
    assert main(["compare", str(a), str(c)]) == 0
    assert "at preset quick with fa-synthetic at preset paper" in capsys.readouterr().err


def test_latest_means_neither_a_control_nor_a_sweep_point(out, capsys):
    plain = fake_run(out, "aaaaaaaaaaaa", age=300, claims=[("fa.x", 0.9, True)])
    fake_run(out, "bbbbbbbbbbbb", age=200, control={"name": "untrained"}, claims=[("fa.x", 0.1, False)])
    point = fake_run(out, "cccccccccccc", age=100, claims=[("fa.x", 0.5, True)], k=6)
    (out / "fa-synthetic" / "sweeps").mkdir()
    pd.DataFrame({"dir": [str(point)], "k": [6]}).to_parquet(out / "fa-synthetic" / "sweeps" / "sweep-k.parquet")
    assert main(["show", "fa-synthetic", "--out", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["dir"] == str(plain)
    assert main(["show", "fa-synthetic", "--out", str(out), "--json", "--any-run"]) == 0
    assert json.loads(capsys.readouterr().out)["dir"] == str(point)
