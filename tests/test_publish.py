"""The committed results folder: `featlab report OUT --publish DIR --preset P` writes the verdict table, figures,
configs and provenance from the latest run of each experiment, shows a ✗'s diagnosis, and goes stale when a claim
or a threshold changes. docs/results itself is checked against the declared claims."""

import json
from pathlib import Path

import pytest
from pydantic import Field

from featlab.cli import main
from featlab.config import ExperimentConfig
from featlab.plotting import subplots
from featlab.report.publish import stale
from featlab.runs import registry
from featlab.runs.claims import AtLeast, Claim, Control, with_diagnoses
from featlab.runs.diagnosis import Diagnosis

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"


class PubConfig(ExperimentConfig):
    score: float = Field(0.95, description="the measured score")


@pytest.fixture
def toy(monkeypatch):
    registry.list_experiments()
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(registry, "_PAPERS", dict(registry._PAPERS))
    registry.register_paper("toy-pub", "Toy paper (publish tests)", "toyp")
    claims = [Claim("toyp.high", "score is high", "Thm 1", AtLeast(lo=0.9), exact="one number"),
              Claim("toyp.higher", "score exceeds 2", "Thm 2", AtLeast(lo=2.0), exact="one number")]
    why = Diagnosis("formulation", "the toy's score is below 1 by construction", "featlab run toyp-ok: 0.95",
                    presets=("paper",))

    @registry.experiment("toyp-ok", reference="Fig 1", summary="the score is high", paper="toy-pub",
                         config=PubConfig, presets={"quick": {}, "paper": {}, "cpu-real": {"score": 0.97}},
                         claims=with_diagnoses(claims, {"toyp.higher": why}),
                         controls=[Control("null", {"score": 0.1}, "the null setting", premise="the mechanism",
                                           trained=("toy.fit",))])
    def ok(ctx):
        ctx.metric("toy.fit", 1.0)
        fig, ax = subplots(figsize=(9, 3))
        ax.plot([0, 1], [0, ctx.cfg.score])
        ctx.figure(fig, "scores")
        ctx.claim("toyp.high", ctx.cfg.score)
        ctx.claim("toyp.higher", ctx.cfg.score)

    return registry


def test_publish_writes_the_table_the_figures_and_the_provenance(toy, out, tmp_path, capsys):
    assert main(["run", "toyp-ok", "--preset", "paper", "--out", str(out)]) in (0, 1)
    assert main(["run", "toyp-ok", "--preset", "paper", "--out", str(out), "--control-name", "null"]) == 0  # rival
    dest = tmp_path / "results"
    readme = tmp_path / "README.md"
    readme.write_text("# toy\n\n<!-- results: results -->\nstale\n<!-- /results -->\n\nmore\n")
    assert main(["report", str(out), "--paper", "toy-pub", "--publish", str(dest), "--preset", "paper",
                 "--readme", str(readme)]) == 0
    assert "results (paper): " in capsys.readouterr().out
    first = readme.read_text()
    assert "stale" not in first and first.endswith("<!-- /results -->\n\nmore\n")
    assert "`toyp.higher` (formulation)" in first and 'src="results/figures/toyp-ok__scores.png"' in first
    data = json.loads((dest / "verdicts.json").read_text())
    rows = {r["claim"]: r for r in data["rows"] if r["experiment"] == "toyp-ok"}
    assert rows["toyp.high"]["status"] == "held" and rows["toyp.higher"]["status"] == "failed"
    assert rows["toyp.higher"]["diagnosis"]["kind"] == "formulation" and rows["toyp.high"]["diagnosis"] is None
    page = (dest / "README.md").read_text()
    assert "diagnosis: formulation: the toy's score is below 1 by construction" in page
    assert "figures/toyp-ok__scores.png" in page
    from PIL import Image

    with Image.open(dest / "figures" / "toyp-ok__scores.png") as img:
        assert img.width <= 720  # small enough to commit
    assert (dest / "runs" / "toyp-ok" / "config.yaml").read_text().startswith("seeds:")
    prov = json.loads((dest / "runs" / "toyp-ok" / "provenance.json").read_text())
    assert prov["claims"] == "1 of 2 mechanism claims held (1 failed)" and "date" in prov and "featlab" in prov
    assert str(tmp_path) not in json.dumps(prov)  # no folder of this machine
    from featlab.report.publish import _portable

    cmd = "featlab run x --preset p --out /runs/here data_root=~/data seeds=3"
    assert _portable({"command": cmd})["command"] == "featlab run x --preset p --out OUT data_root=PATH seeds=3"
    metrics = json.loads((dest / "runs" / "toyp-ok" / "metrics.json").read_text())
    assert metrics and all(isinstance(k, str) for k in metrics)  # the run's summary metrics, published beside
    assert stale(dest) == []
    # the headline per preset kind: mechanism claims at paper (the toy's rival fails both: both count), apart
    # the rest; on the page, in verdicts.json and in the README block; the matrix claim x rival on the page
    head = data["headline"]
    assert len(head) == 1
    assert head[0].startswith("paper (the papers' own settings): 1 of 2 mechanism claims held, 1 failed;")
    assert f"- {head[0]}" in page
    from featlab.report.scorecard import scorecards
    from featlab.report.scorecard_sources import published

    cards = scorecards(*published(dest))  # the README: one scorecard line per paper, from the published records
    assert cards and all(f"- {c.line()}" in first for c in cards) and "## Scorecards" in page
    assert "## Discrimination matrices" in page and "| toyp.high | mechanism | ✓ holds | ✗ fails |" in page
    from featlab.report.markdown import render_markdown
    from featlab.report.summary import build, console_summary

    report = build(out, paper="toy-pub")
    assert report.headline() == head and console_summary(report).startswith(head[0])
    assert f"- {head[0]}" in render_markdown(report, tmp_path / "report.md")


def test_a_demo_preset_is_counted_on_its_own_headline_line(toy, out, tmp_path):
    """featlab's own settings (a demo preset such as cpu-real) get a line of their own, never added to the paper's."""
    for preset in ("paper", "cpu-real"):
        main(["run", "toyp-ok", "--preset", preset, "--out", str(out)])
        main(["run", "toyp-ok", "--preset", preset, "--out", str(out), "--control-name", "null"])
    main(["report", str(out), "--paper", "toy-pub", "--publish", str(tmp_path / "results"), "--preset", "paper"])
    head = json.loads((tmp_path / "results" / "verdicts.json").read_text())["headline"]
    assert len(head) == 2 and head[0].startswith("paper (the papers' own settings): 1 of 2 mechanism claims held")
    assert head[1].startswith("demo `cpu-real` (featlab's own settings, not the papers'): 1 of 2 mechanism claims "
                              "held, 1 failed;")
    offered = sum("cpu-real" in e.presets for e in registry.list_experiments())  # the toy and FashionMNIST's
    assert offered >= 3 and head[1].endswith(f"1 of {offered} experiments with a cpu-real preset run")


def test_a_published_table_goes_stale_when_its_preset_is_renamed_or_changes(toy, out, tmp_path, monkeypatch):
    main(["run", "toyp-ok", "--preset", "paper", "--out", str(out)])
    dest = tmp_path / "results"
    main(["report", str(out), "--paper", "toy-pub", "--publish", str(dest), "--preset", "paper"])
    assert stale(dest) == []
    exp = registry.get_experiment("toyp-ok")
    monkeypatch.setitem(exp.presets, "paper", {"score": 0.5})
    assert stale(dest) == ["toyp-ok: preset 'paper' now sets score differently from the published run"]
    monkeypatch.setattr(exp, "presets", {"quick": {}, "demo": {}})
    assert stale(dest) == ["toyp-ok: published at preset 'paper', which it no longer has"]


def test_a_published_table_goes_stale_when_a_threshold_moves(toy, out, tmp_path):
    main(["run", "toyp-ok", "--preset", "paper", "--out", str(out)])
    dest = tmp_path / "results"
    main(["report", str(out), "--paper", "toy-pub", "--publish", str(dest), "--preset", "paper"])
    data = json.loads((dest / "verdicts.json").read_text())
    for r in data["rows"]:
        if r["claim"] == "toyp.high":
            r["threshold"] = ">= 0.5"
    data["rows"].append(dict(data["rows"][0], claim="toyp.gone"))
    (dest / "verdicts.json").write_text(json.dumps(data))
    found = stale(dest)
    assert any("toyp.high's threshold moved" in f for f in found) and any("toyp.gone" in f for f in found)


# Thresholds moved by a change whose rerun is still pending: the committed pages keep the verdicts judged at the
# threshold of their run (their rows print it) until the rerun replaces them. The set must equal what is stale, so
# an entry left here after the rerun fails too. Issue 45: fa.binary_breaks' upper edge 1.4 → 1.14 (derived between
# averaging's 1.0 and a decoupled plain sum's 1.29) and fa.kclass_holds' lower edge 0.7 → 0.86 (above Prop 4.8's
# non-robust network's 0.745); fa-synthetic's paper and theory runs are to be redone.
PENDING_RERUN = {("fa-synthetic", "fa.binary_breaks"), ("fa-synthetic", "fa.kclass_holds")}


def test_the_committed_results_match_the_declared_claims():
    """docs/results is generated by `featlab report OUT --publish docs/results --preset paper`: rerun it when a claim
    or a threshold changes."""
    moved = {(p.split(":")[0], p.split(": ")[1].split("'s threshold moved")[0]) for p in stale(RESULTS)
             if "'s threshold moved" in p}
    assert moved == PENDING_RERUN and all("'s threshold moved" in p for p in stale(RESULTS))
    for sub in ("cpu-full", "cpu-real"):  # the demo presets' pages, published apart
        assert stale(RESULTS / sub) == [], sub
    rows = json.loads((RESULTS / "verdicts.json").read_text())["rows"]
    flat = [(r["experiment"], r["claim"]) for r in rows
            if r.get("interval") and r["interval"][0] == r["interval"][1] and (r.get("n") or 0) < 30]
    assert flat == [], f"zero-width intervals over fewer than 30 units: {flat}"


def test_every_failed_claim_in_the_committed_results_and_docs_has_a_diagnosis():
    """A ✗ is reported with its class (budget, formulation, paper, implementation) and the evidence that was run."""
    from featlab.report.docs_sync import blocks

    data = json.loads((RESULTS / "verdicts.json").read_text())
    bare = [r["claim"] for r in data["rows"]  # a measurement has no verdict: nothing to diagnose
            if r["status"] == "failed" and r["kind"] != "measurement" and not r["diagnosis"]]
    assert bare == [], f"docs/results: failed without a diagnosis: {bare}"
    docs = RESULTS.parent
    for page in docs.glob("*.md"):
        for exp_id, preset, body in blocks(page.read_text(encoding="utf-8")):
            bad = [line.split("|")[1].strip() for line in body.splitlines()
                   if line.startswith("| `") and "| FAILED" in line and "diagnosis:" not in line]
            assert bad == [], f"{page.name} {exp_id} {preset}: failed without a diagnosis: {bad}"
