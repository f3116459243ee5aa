"""Run records: layout, summary schema, skip/force, a killed run redone, determinism, the CLI around them."""

import json

import pandas as pd
import pytest
import yaml

import featlab
from featlab.cli import main
from featlab.runs.registry import get_experiment

TINY = dict(seeds=2, k=4, d=32, m=2, n=80, n_test=40, T=10, eta=0.05, radii=[0, 2, 4], pgd_steps=3,
            thm46_starts=2, thm46_steps=2)


def test_run_record_layout_and_summary(out, monkeypatch):
    monkeypatch.setenv("FEATLAB_PDF", "1")  # the suite skips PDFs elsewhere; here both formats are checked
    res = featlab.run("fa-synthetic", out=out, **TINY)
    d = res.dir
    assert d.parent.name == "fa-synthetic" and d.parent.parent == out
    assert (d / "config.yaml").is_file() and (d / "metrics.parquet").is_file() and (d / "summary.json").is_file()
    s = json.loads((d / "summary.json").read_text())
    for key in ["experiment", "status", "config", "metrics", "claims", "figures", "versions", "elapsed_s"]:
        assert key in s
    assert s["status"] == "complete" and s["experiment"] == "fa-synthetic"
    assert yaml.safe_load((d / "config.yaml").read_text()) == s["config"] == res.config
    for c in s["claims"]:
        assert set(c) >= {"id", "statement", "source", "measured", "threshold", "holds"}
    for f in s["figures"]:
        assert (d / f).is_file() and (d / f).with_suffix(".pdf").is_file()
    m = pd.read_parquet(d / "metrics.parquet")
    assert list(m.columns) == ["seed", "step", "metric", "value"]
    assert set(m.seed) == {0, 1}
    for r in [0, 2, 4]:
        assert f"binary.robust_acc_pgd@{r}" in s["metrics"] and f"multiclass.robust_acc_pgd@{r}" in s["metrics"]
    assert res.metrics.equals(m)


def test_complete_run_is_skipped_and_force_retrains(out):
    a = featlab.run("fa-synthetic", out=out, **TINY)
    b = featlab.run("fa-synthetic", out=out, **TINY)
    assert b.skipped and not a.skipped and b.dir == a.dir
    c = featlab.run("fa-synthetic", out=out, force=True, **TINY)
    assert not c.skipped and c.dir == a.dir and c.summary["metrics"] == a.summary["metrics"]
    other = featlab.run("fa-synthetic", out=out, **{**TINY, "seed": 5})
    assert other.dir != a.dir  # the run id is a hash of the effective config


def test_killed_run_is_redone_cleanly(out, monkeypatch):
    exp = get_experiment("fa-synthetic")
    real = exp.fn

    def dies(ctx):
        (ctx.dir / "figures" / "half.png").write_text("partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(exp, "fn", dies)
    with pytest.raises(KeyboardInterrupt):
        featlab.run("fa-synthetic", out=out, **TINY)
    assert not any(p.is_dir() and not p.name.startswith(".") for p in (out / "fa-synthetic").iterdir())
    monkeypatch.setattr(exp, "fn", real)
    res = featlab.run("fa-synthetic", out=out, **TINY)
    assert res.ok and not res.skipped
    assert not (res.dir / "figures" / "half.png").exists()
    assert [p.name for p in (out / "fa-synthetic").iterdir()] == [res.dir.name]  # debris removed


def test_force_keeps_the_old_run_until_the_new_one_is_complete(out, monkeypatch):
    a = featlab.run("fa-synthetic", out=out, **TINY)
    before = (a.dir / "summary.json").read_text()
    exp = get_experiment("fa-synthetic")

    def dies(ctx):
        raise RuntimeError("boom")

    monkeypatch.setattr(exp, "fn", dies)
    with pytest.raises(RuntimeError):
        featlab.run("fa-synthetic", out=out, force=True, **TINY)
    assert (a.dir / "summary.json").read_text() == before


def test_same_config_same_numbers(out, tmp_path):
    a = featlab.run("fa-synthetic", out=out, **TINY)
    b = featlab.run("fa-synthetic", out=tmp_path / "other", **TINY)
    assert a.summary["metrics"] == b.summary["metrics"]
    pd.testing.assert_frame_equal(a.metrics, b.metrics)


def test_diverging_run_is_recorded_as_failed(out, capsys):
    res = featlab.run("fa-synthetic", out=out, **{**TINY, "eta": 1e38, "sigma_w": 1.0})
    assert res.status == "failed" and "non-finite" in res.summary["message"]
    assert main(["run", "fa-synthetic", "--out", str(out)] + [f"{k}={v}" for k, v in
                                                               {**TINY, "eta": 1e38, "sigma_w": 1.0}.items()]) == 1


def test_cli_run_show_and_strict(out, capsys):
    args = [f"{k}={v}" for k, v in TINY.items()]
    assert main(["run", "fa-synthetic", "--out", str(out), *args]) == 0
    text = capsys.readouterr().out
    assert "claim" in text and "Thm 4.5" in text and "figures:" in text
    res = featlab.run("fa-synthetic", out=out, **TINY)
    assert main(["show", str(res.dir)]) == 0
    assert "Thm 4.7" in capsys.readouterr().out
    all_hold = all(c["holds"] for c in res.claims)
    assert main(["run", "fa-synthetic", "--out", str(out), "--strict", *args]) == (0 if all_hold else 1)


def test_a_run_made_by_another_version_is_reported_and_force_redoes_it(out, capsys):
    """Same config, other code: the cached run is reused with a warning (run, show, report) until --force."""
    from featlab.cli import main

    res = featlab.run("fa-synthetic", out=out, quiet=True, **TINY)
    f = res.dir / "summary.json"
    s = json.loads(f.read_text())
    s["versions"]["featlab"] = "0.0.1"
    f.write_text(json.dumps(s))
    capsys.readouterr()
    again = featlab.run("fa-synthetic", out=out, **TINY)
    assert again.skipped and "made by featlab 0.0.1" in capsys.readouterr().err
    assert main(["show", str(res.dir)]) == 0 and "made by featlab 0.0.1" in capsys.readouterr().err
    assert main(["report", str(out), "--out", str(out / "r.html")]) == 0
    assert "made by featlab 0.0.1" in (out / "r.html").read_text()
    redone = featlab.run("fa-synthetic", out=out, force=True, quiet=True, **TINY)
    assert redone.summary["versions"]["featlab"] == featlab.__version__


def test_claim_statement_fills_config_fields_and_keeps_other_braces():
    """A verdict's statement names the run's values ({long_T} → 200), even beside index braces like λ_{s,r,j}."""
    from featlab.runs.claims import AtMost, Claim

    c = Claim("x.y", "longer run (η = {long_eta}, {long_T} steps): λ_{s,r,j} within {missing}", "Lemma B.23",
              AtMost(hi=1))
    v = c.judge(0.5, config={"long_eta": 0.05, "long_T": 200})
    assert v.statement == "longer run (η = 0.05, 200 steps): λ_{s,r,j} within {missing}"
