"""Damaged and tampered records are refused by name (one line, exit 2, no traceback, never "held" on a NaN), `show`
says when it skips a damaged newer run, and `compare` reads the four verdicts, refuses two experiments and takes the
latest run that is neither a control nor a sweep point. Most run folders are fabricated; the ones that tamper a
real record copy one tiny fa-synthetic run (about 2 s, made once per worker)."""

import datetime as dt
import json
import os
import shutil
import time

import pandas as pd
import pytest

import featlab
from featlab.cli import main
from featlab.runs.record import counts_text, load_run
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
    ({"claim": {"measured": "0.9", "status": "held"}}, "says 'held' on a measured value of '0.9'"),
    ({"claim": {"status": "proven"}}, "unknown verdict 'proven'"),
    ({"claim": {"interval": ["a", 1]}}, "interval is not two numbers"),
    ({"metrics": {"acc": [1, 2]}}, "metric 'acc' that is not a number"),
    ({"notes": "one note"}, "'notes' of type str"),
    ({"config": [1, 2]}, "'config' that is not a dict"),
    ({"claim": {"interval": [float("nan"), float("nan")], "status": "held"}}, "on an interval of [nan, nan]"),
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


# ------------------------------------------------------------------ a real record, copied and tampered

@pytest.fixture(scope="module")
def real(shared_out):
    """One tiny real run (reused when another test made it): its folder, never changed here."""
    return featlab.run("fa-synthetic", out=shared_out, quiet=True, **featlab.get_experiment("fa-synthetic").tiny).dir


def _copy(real, out, run_id, age=0.0, **changes):
    d = out / "fa-synthetic" / run_id
    shutil.copytree(real, d)
    t = time.time() - age  # the record's date orders the runs; the file's time is the fallback
    s = json.loads((d / "summary.json").read_text())
    s.update(run_id=run_id, date=dt.datetime.fromtimestamp(t).astimezone().isoformat(timespec="seconds"))
    (d / "summary.json").write_text(json.dumps(s))
    _tamper(d, **changes)
    os.utime(d / "summary.json", (t, t))
    return d


def _damage(d, how):
    f = d / "summary.json"
    s = json.loads(f.read_text())
    if how == "truncated":
        f.write_bytes(f.read_bytes()[:200])
        return "is not valid JSON"
    if how == "elapsed_s string":
        s["elapsed_s"] = "12.5 s"
        words = "'elapsed_s' of type str"
    elif how == "nan held":
        s["claims"][0].update(measured=float("nan"), status="held", holds=True)
        words = "says 'held' on a measured value of nan"
    elif how == "no metrics":
        del s["metrics"]
        words = "has no 'metrics' dict"
    elif how == "no measured":
        del s["claims"][0]["measured"]
        words = "without 'measured'"
    elif how == "list for a claim":
        s["claims"][0] = list(s["claims"][0].values())
        words = "a claim that is a list, not a mapping"
    else:  # a list where the record's mapping is expected
        s = [s]
        words = "holds a list, not a mapping"
    f.write_text(json.dumps(s))  # bare NaN, as older featlab wrote: still read, then judged
    return words


FAULTS = ["truncated", "elapsed_s string", "nan held", "no metrics", "no measured", "list for a claim", "list"]


@pytest.mark.parametrize("how", FAULTS)
def test_a_damaged_real_record_is_unreadable_by_name_in_every_command(real, out, capsys, how):
    good = _copy(real, out, "aaaaaaaaaaaa", age=600)
    bad = _copy(real, out, "bbbbbbbbbbbb")
    words = _damage(bad, how)
    for argv in (["show", str(bad)], ["show", "bbbb", "--out", str(out)], ["show", str(bad), "--json"],
                 ["compare", str(good), str(bad)], ["compare", "aaaa", "bbbb", "--out", str(out), "--json"]):
        assert main(argv) == 2, argv
        line = _one_error(capsys)
        assert str(bad / "summary.json") in line and words in line, (argv, line)
        assert "held" not in line.split(words)[-1]  # the reason, never a verdict shown as if it stood
    assert main(["runs", str(out)]) == 0  # listing: exit 0, the readable run listed, the damaged one named
    io = capsys.readouterr()
    assert "aaaaaaaaaaaa" in io.out and "bbbbbbbbbbbb" not in io.out
    assert io.err.count("\n") == 1 and str(bad / "summary.json") in io.err and words in io.err
    assert main(["show", "fa-synthetic", "--out", str(out)]) == 0  # the older run, and says what it skipped
    io = capsys.readouterr()
    assert str(good) in io.out and f"skipped {bad}, newer but unreadable" in io.err and words in io.err


def test_every_run_of_an_experiment_damaged_is_one_line(real, out, capsys):
    _damage(_copy(real, out, "aaaaaaaaaaaa", age=60), "truncated")
    _damage(_copy(real, out, "bbbbbbbbbbbb"), "elapsed_s string")
    assert main(["show", "fa-synthetic", "--out", str(out)]) == 2
    line = _one_error(capsys)
    assert "no readable run of fa-synthetic" in line and "1 more unreadable" in line and "'elapsed_s'" in line
    assert main(["runs", str(out)]) == 0
    io = capsys.readouterr()
    assert "no readable runs" in io.out and io.err.count("featlab: note:") == 2


def test_an_out_of_range_date_falls_back_to_the_files_time(real, out, capsys):
    a = _copy(real, out, "aaaaaaaaaaaa", age=60)
    b = _copy(real, out, "bbbbbbbbbbbb", date="0001-01-01T00:00:00-14:00")
    assert main(["runs", str(out)]) == 0 and main(["compare", str(a), str(b)]) == 0
    assert "Traceback" not in capsys.readouterr().err


def _strict(text):
    def refuse(c):
        raise ValueError(f"bare {c}")
    return json.loads(text, parse_constant=refuse)


def test_compare_shows_held_to_inconclusive_on_a_real_record(real, out, capsys):
    claim = json.loads((real / "summary.json").read_text())["claims"][0]
    iv = [0.25, 0.75]
    a = _copy(real, out, "aaaaaaaaaaaa", age=60, claim={"status": "held", "holds": True, "interval": iv})
    b = _copy(real, out, "bbbbbbbbbbbb", claim={"status": "inconclusive", "holds": False, "interval": iv,
                                                "measured": float("nan")})  # NaN: inconclusive is not "held"...
    assert main(["show", str(b)]) == 2  # ...but the judge never writes it: refused by name
    _tamper(b, claim={"measured": 0.5})
    assert main(["compare", str(a), str(b)]) == 0
    text = capsys.readouterr().out
    assert f"{claim['id']}" in text and "held" in text and "inconclusive 0.5 [0.25, 0.75]" in text
    assert main(["compare", str(a), str(b), "--json"]) == 0
    d = _strict(capsys.readouterr().out)  # strict JSON: a non-finite metric is a string, never bare NaN
    assert {"id": claim["id"], "a": "held", "b": "inconclusive"}.items() <= d["claims_changed"][0].items()
    assert d["claims_changed"][0]["b_interval"] == iv and d["a"]["claims"] == counts_text(load_run(a).claims)
    assert main(["show", str(a), "--json"]) == 0
    _strict(capsys.readouterr().out)


def test_compare_by_experiment_id_skips_controls_and_sweep_points(real, out, capsys):
    plain = _copy(real, out, "aaaaaaaaaaaa", age=300)
    _copy(real, out, "bbbbbbbbbbbb", age=200, control={"name": "untrained"})
    point = _copy(real, out, "cccccccccccc", age=100, preset="paper")
    (out / "fa-synthetic" / "sweeps").mkdir()
    pd.DataFrame({"dir": [str(point)]}).to_parquet(out / "fa-synthetic" / "sweeps" / "sweep-k.parquet")
    old = _copy(real, out, "dddddddddddd", age=900, elapsed_s=1.0)
    assert main(["compare", "dddd", "fa-synthetic", "--out", str(out), "--json"]) == 0
    io = capsys.readouterr()
    d = _strict(io.out)
    assert (d["a"]["dir"], d["b"]["dir"]) == (str(old), str(plain)) and d["same_kind"] and not io.err
    assert main(["compare", "dddd", "fa-synthetic", "--out", str(out), "--json", "--any-run"]) == 0
    io = capsys.readouterr()  # the sweep point, at another preset: marked on stderr, JSON still clean
    assert _strict(io.out)["b"]["dir"] == str(point) and "at preset paper" in io.err
    assert main(["compare", "dddd", "bbbb", "--out", str(out)]) == 0
    assert "control untrained" in capsys.readouterr().err
