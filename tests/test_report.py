"""featlab report and the end of featlab reproduce, on a toy paper whose experiments take milliseconds: one that
runs (a claim that holds, one that fails, a figure, a note, a control), one whose dataset is missing, and one
whose quick preset is a smoke test."""

import json
import re

import pytest
import torch
from pydantic import Field

from featlab.cli import main
from featlab.config import ExperimentConfig
from featlab.errors import DataError
from featlab.plotting import subplots
from featlab.report.summary import build
from featlab.runs import registry
from featlab.runs.claims import AtLeast, Claim, Control
from featlab.runs.provenance import collect_provenance


class ToyConfig(ExperimentConfig):
    score: float = Field(0.95, description="the measured score (the toy's whole experiment)")
    data_root: str = Field("data", description="where the toy's dataset would be")
    smoke: bool = Field(False, description="pipeline check only")


@pytest.fixture
def toy(monkeypatch):
    registry.list_experiments()  # featlab's own papers first, into the real registry (they register once)
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(registry, "_PAPERS", dict(registry._PAPERS))
    registry.register_paper("toy-repro", "Toy paper (tests)", "toyr")
    common = dict(paper="toy-repro", config=ToyConfig)

    @registry.experiment("toyr-data", reference="Table 1", summary="needs a dataset", **common,
                         presets={"quick": {}, "paper": {}})
    def needs_data(ctx):
        raise DataError(f"no toy dataset under {ctx.cfg.data_root!r}; put toy.bin there")

    @registry.experiment("toyr-ok", reference="Fig 1, Thm 1", summary="the score is high", **common,
                         presets={"quick": {"seeds": 1}, "paper": {"seeds": 2}, "cpu-long": {"seeds": 3}},
                         claims=[Claim("toyr.high", "score is high", "Thm 1", AtLeast(lo=0.9)),
                                 Claim("toyr.higher", "score exceeds 2", "Thm 2", AtLeast(lo=2.0))],
                         controls=[Control("null", {"score": 0.1}, "the null setting", premise="the toy's mechanism",
                                           trained=("toy.fit",))])
    def ok(ctx):
        ctx.metric("toy.fit", 1.0)
        fig, ax = subplots(figsize=(3, 2))
        ax.plot([0, 1], [0, ctx.cfg.score])
        ctx.figure(fig, "scores")
        ctx.claim("toyr.high", ctx.cfg.score, paper_value=0.97)
        ctx.claim("toyr.higher", ctx.cfg.score)
        ctx.notes.append("toyr.higher does not reproduce: the toy's score is below 1 by construction")

    @registry.experiment("toyr-smoke", reference="Fig 2", summary="GPU only", **common,
                         presets={"quick": {"smoke": True}, "paper": {}})
    def smoke(ctx):
        raise AssertionError("a smoke preset must not run in reproduce")

    return registry


def test_reproduce_goes_on_past_a_missing_dataset_and_ends_with_a_summary_and_a_report(toy, out, capsys):
    code = main(["reproduce", "toy-repro", "score=0.95", "--out", str(out), "--rivals"])
    text = capsys.readouterr().out
    assert code == 1  # one experiment could not run; the others did
    assert "rival null: complete" in text  # --rivals: each rival net at the same preset, for the matrix
    tail = text[text.index("Toy paper"):]
    assert "Toy paper (tests), this run: 1 of 2 mechanism claims held (1 failed) (1 of 3 experiments run)" in tail
    assert re.search(r"✗ toyr-ok toyr\.higher: measured 0\.95, needs >= 2 — try: featlab run toyr-ok --preset "
                     r"cpu-long", tail)
    assert "toyr-data: could not run: no toy dataset under 'data'; put toy.bin there" in tail
    assert "toyr-smoke: not run here: needs data and a GPU" in tail
    assert len(tail.splitlines()) < 15  # a summary, not a table of every claim
    html, md = out / "report.html", out / "report.md"
    assert f"report: {html} and {md}" in tail
    page = html.read_text(encoding="utf-8")
    for needle in ["toyr.high", "toyr.higher", "could not run", "needs data and a GPU", "0.97", "does not reproduce"]:
        assert needle in page
    assert json.loads((out / "reproduce.json").read_text())["not_run"].keys() == {"toyr-data", "toyr-smoke"}


def test_reproduce_rejects_an_override_no_experiment_has_before_running(toy, out, capsys):
    assert main(["reproduce", "toy-repro", "nope=1", "--out", str(out)]) == 2
    assert "no experiment of this reproduction has a field 'nope'" in capsys.readouterr().err
    assert not out.exists()
    assert main(["reproduce", "no-such-paper", "--out", str(out)]) == 2


def test_report_is_self_contained_with_claims_controls_diff_and_provenance(toy, out, capsys):
    import featlab

    main_run = featlab.run("toyr-ok", out=out, score=0.95)
    featlab.run("toyr-ok", out=out, score=0.95, control="null")
    assert main(["report", str(out), "--paper", "toy-repro"]) == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "<script" not in page and not re.search(r"(src|href)=\"https?:", page)  # no network, no JavaScript
    assert page.count("data:image/png;base64,") == len(main_run.figures)
    assert "null: 0.1" in page and "fails, as it should" in page  # the control's value beside the claim
    assert "Does it reproduce?" in page and "1/2" in page
    assert "<code>cpu-long</code>: toyr-ok" in page  # presets never run
    for k in ("featlab", "python", "torch", "device", "date", "elapsed"):  # command: only for CLI runs
        assert f"<td>{k}</td>" in page
    md = (out / "report.md").read_text(encoding="utf-8")
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert links and all((out / link).is_file() for link in links)  # figures beside the Markdown file
    assert "| `toyr.higher` |" in md and "✗ fails" in md


def test_report_shows_the_latest_run_by_default_and_every_run_with_all(toy, out, tmp_path):
    import featlab

    a = featlab.run("toyr-ok", out=out, score=0.95)
    b = featlab.run("toyr-ok", out=out, score=0.5, seed=1)
    (b.dir / "summary.json").touch()  # newest
    latest = build(out, "toy-repro")
    ev = next(e for e in latest.papers[0].experiments if e.id == "toyr-ok")
    assert [r.rec.dir for r in ev.runs] == [b.dir]
    assert ("score", 0.95, 0.5) in ev.runs[0].diff and ("seed", 0, 1) in ev.runs[0].diff
    every = build(out, "toy-repro", all_runs=True)
    assert {r.rec.dir for e in every.papers[0].experiments for r in e.runs} == {a.dir, b.dir}
    dest = tmp_path / "elsewhere" / "r.html"
    assert main(["report", str(out), "--all", "--out", str(dest)]) == 0
    assert dest.is_file() and dest.with_suffix(".md").is_file() and a.dir.name in dest.read_text(encoding="utf-8")


def test_report_lists_unreadable_runs_and_rejects_bad_input(toy, out, capsys):
    import featlab

    featlab.run("toyr-ok", out=out)
    broken = out / "toyr-ok" / "0123456789ab"
    broken.mkdir(parents=True)
    (broken / "summary.json").write_bytes(b"\x00\xff not json")
    rep = build(out, "toy-repro")
    assert [p for p, _ in rep.problems] == [str(broken)]
    assert main(["report", str(out)]) == 0
    assert "0123456789ab" in (out / "report.html").read_text(encoding="utf-8")
    capsys.readouterr()
    assert main(["report", str(out / "missing")]) == 2
    assert main(["report", str(out), "--paper", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(e.startswith("featlab: error: ") for e in err)


def test_collect_provenance_names_date_device_and_commit():
    p = collect_provenance(torch.device("cpu"))
    assert p["device"].startswith("cpu") and p["date"][:2] == "20" and p["device_type"] == "cpu"
    assert set(p) <= {"device_type", "date", "device", "git_commit"}  # git_commit only when run from a checkout


def test_reproduce_runs_several_presets_and_shows_their_verdicts_side_by_side(toy, out, capsys):
    code = main(["reproduce", "toy-repro", "--preset", "quick,cpu-long", "--out", str(out), "--rivals"])
    text = capsys.readouterr().out
    assert code == 1  # toyr-data still cannot run
    assert "toyr-ok --preset cpu-long" in text and "toyr-smoke" in text  # the smoke one: not run, with its reason
    assert "presets side by side (the latest run of each):" in text
    assert "toyr-ok: quick 1/2 held · cpu-long 1/2 held" in text
    assert "has no preset quick or cpu-long" not in text  # toyr-ok has both; toyr-data/smoke have quick
    page = (out / "report.md").read_text(encoding="utf-8")
    assert "Presets side by side: quick 1/2 held · cpu-long 1/2 held." in page


def test_without_its_rival_runs_no_claim_is_counted(toy, out, capsys):
    """The headline counts mechanism claims only: with no rival run beside it a claim is unsettled, not held."""
    assert main(["reproduce", "toy-repro", "score=0.95", "--out", str(out)]) == 1
    text = capsys.readouterr().out
    assert "Toy paper (tests), this run: no mechanism claim counted; not counted: 2 unsettled" in text
    page = (out / "report.md").read_text(encoding="utf-8")
    assert "| toyr.high | unsettled | ✓ holds | not run |" in page  # the matrix says why


def test_an_inconclusive_claim_is_counted_apart_with_the_units_that_would_settle_it(toy, out, capsys):
    @toy.experiment("toyr-noisy", reference="Fig 3", summary="a noisy score", paper="toy-repro", config=ToyConfig,
                    presets={"quick": {}, "paper": {}},
                    claims=[Claim("toyr.noisy", "mean score >= 0.9", "Thm 3", AtLeast(lo=0.9))],
                    controls=[Control("flat", {"score": 0.0}, "no score", premise="the toy's mechanism",
                                      trained=("toy.fit",))])
    def noisy(ctx):
        s = torch.tensor([0.2, 1.6, 0.5, 1.3])  # mean 0.9: its interval straddles 0.9
        ctx.claim("toyr.noisy", s.mean().item(), samples=s)

    assert main(["run", "toyr-noisy", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "claims: no mechanism claim counted; not counted: 1 unsettled" in text  # no rival run read with it
    assert "would settle it" not in text  # on the bound: no n does
    assert main(["reproduce", "toy-repro", "--out", str(out), "--strict"]) == 1
    assert "toyr.noisy: inconclusive" in capsys.readouterr().out


def test_sync_docs_rewrites_the_measured_sections_from_the_latest_run(toy, out, tmp_path, capsys):
    from featlab.report.docs_sync import block_rows, blocks

    assert main(["run", "toyr-ok", "--out", str(out)]) == 0
    assert main(["run", "toyr-ok", "--out", str(out), "--control-name", "null"]) == 0  # its rival: the matrix
    docs = tmp_path / "docs"
    docs.mkdir()
    page = docs / "toy.md"
    page.write_text("# Toy\n\nprose kept\n\n<!-- measured: toyr-ok quick -->\nstale 9/9\n<!-- /measured -->\n\n"
                    "<!-- measured: toyr-ok paper -->\n<!-- /measured -->\nend\n", encoding="utf-8")
    assert main(["report", str(out), "--sync-docs", str(docs)]) == 0
    assert "docs: 1 measured sections written from runs; no run for toyr-ok (paper)" in capsys.readouterr().out
    text = page.read_text(encoding="utf-8")
    assert "stale 9/9" not in text and "prose kept" in text and text.endswith("end\n")
    (exp, preset, body), (_, _, never) = blocks(text)
    assert (exp, preset) == ("toyr-ok", "quick") and "Claims: **1 of 2 mechanism claims held (1 failed)**" in body
    assert block_rows(body) == {"toyr.high": ">= 0.9", "toyr.higher": ">= 2"}
    assert "Not run here at the `paper` preset" in never
    assert main(["report", str(out), "--sync-docs", str(tmp_path / "nope")]) == 2


def test_the_docs_measured_sections_list_the_declared_claims_and_thresholds():
    """A measured section goes stale when a claim is added or its threshold moves: rerun and --sync-docs."""
    from pathlib import Path

    from featlab.report.docs_sync import block_rows, blocks
    from featlab.runs.registry import get_experiment
    from test_publish import PENDING_RERUN  # thresholds moved, their rerun pending (issue 45)

    docs = Path(__file__).resolve().parents[1] / "docs"
    for page in docs.glob("*.md"):
        for exp_id, preset, body in blocks(page.read_text(encoding="utf-8")):
            exp = get_experiment(exp_id)
            assert preset in exp.presets, f"{page.name}: {exp_id} has no preset {preset}"
            rows = block_rows(body)
            if not rows:
                continue  # not run at that preset: the section says so
            declared = {c.id: c.threshold.text() for c in exp.claims}
            # a preset may judge fewer claims (rfa-theorem1's theory preset has no n sweep for the rate claim)
            assert set(rows) <= set(declared), f"{page.name} {exp_id} {preset}: stale; rerun and --sync-docs"
            stale = [i for i, t in rows.items() if declared[i] not in t and (exp_id, i) not in PENDING_RERUN]
            assert stale == [], f"{page.name} {exp_id} {preset}: thresholds moved for {stale}; rerun and --sync-docs"


def test_a_claim_without_a_mechanism_control_is_shown_apart_and_not_counted(toy, out, capsys):
    @toy.experiment("toyr-bare", reference="Fig 4", summary="only a sanity control", paper="toy-repro",
                    config=ToyConfig, presets={"quick": {}, "paper": {}},
                    claims=[Claim("toyr.bare", "score >= 0.5", "Thm 4", AtLeast(lo=0.5), exact="one number")],
                    controls=[Control("zero", {"score": 0.0}, "no score")])
    def bare(ctx):
        ctx.claim("toyr.bare", ctx.cfg.score)

    assert main(["run", "toyr-bare", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "claims: no mechanism claim counted; not counted: 1 premise" in text
    assert "premise or unsettled (not counted)" in text
