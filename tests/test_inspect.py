"""Finding things without reading code: featlab config, run --print-config, runs, show EXP, compare, --json,
--version. Run folders are fabricated (no training): these commands only read records."""

import json
import os
import time

import pytest
import yaml

from featlab import __version__
from featlab.cli import main
from featlab.runs.index import preset_config


def fake_run(out, run_id, *, experiment="fa-synthetic", preset="quick", status="complete", claims=(), age=0.0,
             control=None, metrics=None, **changes):
    """A run folder as the runner writes it: config.yaml, summary.json (and nothing to train)."""
    cfg = {**preset_config(experiment, preset), **changes}
    d = out / experiment / run_id
    (d / "figures").mkdir(parents=True)
    (d / "config.yaml").write_text(yaml.safe_dump(cfg))
    summary = {"experiment": experiment, "run_id": run_id, "preset": preset, "status": status, "message": "",
               "config": cfg, "metrics": metrics or {"binary.cos_in_class_mean": 0.5, "binary.clean_acc": 1.0},
               "claims": [{"id": i, "statement": f"statement of {i}", "source": "Thm 1", "measured": m,
                           "threshold": ">= 0.5", "holds": h} for i, m, h in claims],
               "control": control, "figures": [], "notes": [], "versions": {"featlab": __version__, "python": "3.11"},
               "command": "/some/where/bin/featlab run fa-synthetic", "elapsed_s": 12.5}
    (d / "summary.json").write_text(json.dumps(summary))
    t = time.time() - age
    os.utime(d / "summary.json", (t, t))
    return d


@pytest.fixture
def two_runs(out):
    old = fake_run(out, "aaaaaaaaaaaa", age=3600, claims=[("fa.x", 0.9, True), ("fa.y", 0.7, True)], k=4,
                   metrics={"binary.cos_in_class_mean": 0.5, "binary.clean_acc": 1.0})
    new = fake_run(out, "bbbbbbbbbbbb", claims=[("fa.x", 0.2, False), ("fa.y", 0.8, True)], k=6, d=64,
                   metrics={"binary.cos_in_class_mean": 0.4, "binary.clean_acc": 1.0})
    return old, new


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"featlab {__version__}"


def test_config_lists_every_field_with_type_default_preset_and_description(capsys):
    from featlab.runs.registry import get_experiment

    exp = get_experiment("fa-ablation-lr")
    assert main(["config", exp.id, "--preset", "paper"]) == 0
    text = capsys.readouterr().out
    for name in exp.config.model_fields:
        assert f"\n{name} " in text
    assert main(["config", exp.id, "--preset", "paper", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    fields = {f["field"]: f for f in data["fields"]}
    assert set(fields) == set(exp.config.model_fields)
    assert fields["seeds"]["type"].startswith("int >= 1") and fields["seeds"]["description"]
    assert fields["values"]["preset"] == exp.presets["paper"]["values"] and fields["values"]["in_preset"]
    assert fields["values"]["source"].startswith("App. E.1, Fig 6") and not fields["seeds"]["in_preset"]
    assert fields["dtype"]["type"] == "float32 | float64"
    assert main(["config", "fa-nope"]) == 2
    assert main(["config", exp.id, "--preset", "nope"]) == 2


def test_run_print_config_prints_the_effective_yaml_and_trains_nothing(out, capsys):
    assert main(["run", "fa-synthetic", "--print-config", "k=6", "eta=1e-3", "--out", str(out)]) == 0
    cfg = yaml.safe_load(capsys.readouterr().out)
    assert cfg["k"] == 6 and cfg["eta"] == 0.001 and cfg["seeds"] == preset_config("fa-synthetic", "quick")["seeds"]
    assert not out.exists()
    assert main(["run", "fa-synthetic", "--print-config", "--control"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["T"] == 0  # the control's overrides come last
    assert main(["run", "fa-synthetic", "--print-config", "k=1"]) == 2


def test_runs_index(out, two_runs, capsys):
    fake_run(out, "cccccccccccc", control={"name": "untrained", "overrides": {"T": 0}, "why": "", "claims": []}, T=0)
    bad = out / "fa-synthetic" / "dddddddddddd"
    bad.mkdir()
    (bad / "summary.json").write_text("[1, 2]")  # valid JSON, not a run summary
    assert main(["runs", str(out)]) == 0
    res = capsys.readouterr()
    assert "aaaaaaaaaaaa" in res.out and "control untrained" in res.out and "k=6 d=64" in res.out
    assert "dddddddddddd" in res.err and "not a mapping" in res.err
    assert main(["runs", str(out), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    rows = data["runs"]
    assert rows[-1]["run_id"] == "aaaaaaaaaaaa"  # newest first
    new = next(r for r in rows if r["run_id"] == "bbbbbbbbbbbb")
    # counted: mechanism claims only; these claims are no declared claim of fa-synthetic, so no rival can fail them
    assert new["claims_held"] == "none counted (2 premises)" and new["overrides"] == "k=6 d=64"
    assert new["elapsed_s"] == 12.5
    assert [u["dir"] for u in data["unreadable"]] == [str(bad)]
    assert main(["runs", str(out / "none")]) == 2 and "no runs folder" in capsys.readouterr().err  # as report


def test_show_takes_an_experiment_a_path_or_a_run_id(out, two_runs, capsys):
    old, new = two_runs
    assert main(["show", "fa-synthetic", "--out", str(out)]) == 0
    assert str(new) in capsys.readouterr().out  # the latest run
    assert main(["show", str(old)]) == 0 and str(old) in capsys.readouterr().out
    assert main(["show", "aaaa", "--out", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["dir"] == str(old)
    assert main(["show", "fa-ablation-n", "--out", str(out)]) == 2  # registered, never run here
    assert main(["show", "zzzz-nothing", "--out", str(out)]) == 2
    (old / "summary.json").write_bytes(b"\xff\xfe\x00")
    assert main(["show", str(old)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(e.startswith("featlab: error: ") for e in err)
    assert "not valid JSON" in err[-1]


def test_compare_config_metrics_and_claims_that_changed(out, two_runs, capsys):
    old, new = two_runs
    assert main(["compare", str(old), "bbbb", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "fa.x" in text and "fa.y" not in text  # only the claim whose verdict changed
    assert "binary.cos_in_class_mean" in text and "-20.0%" in text
    assert main(["compare", str(old), str(new), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert {(c["field"], c["a"], c["b"]) for c in d["config"]} == {("k", 4, 6), ("d", 3072, 64)}
    assert [m["metric"] for m in d["metrics"]] == ["binary.cos_in_class_mean"]
    assert d["metrics"][0]["delta"] == pytest.approx(-0.1)
    assert d["claims_changed"] == [{"id": "fa.x", "a": "held", "b": "failed", "a_measured": 0.9, "b_measured": 0.2,
                                    "a_interval": None, "b_interval": None}]  # the four verdicts, not holds
    assert main(["compare", str(old), str(old)]) == 2


def test_list_json(capsys):
    assert main(["list", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    fa = next(e for e in data if e["id"] == "fa-synthetic")
    assert {"quick", "paper"} <= set(fa["presets"]) and fa["claims"] and fa["paper"] == "feature-averaging"
    assert fa["preset_kinds"] == {"paper": "paper", "quick": "quick", "theory": "theory"} and fa["cites"]["d"]
