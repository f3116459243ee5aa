"""``featlab stability``: every paper-silent field declares a range; a planted fragile claim is reported as flipping
where its verdict changes, a robust one as stable; bad input is one line and exit 2."""

import json

import pandas as pd
import pytest
from pydantic import Field

from featlab.cli import main
from featlab.config import ExperimentConfig, build_config, field_range, silent_fields
from featlab.errors import TrainingDiverged
from featlab.report.summary import build
from featlab.runs import registry
from featlab.runs.claims import AtLeast, Claim
from featlab.runs.stability import plan, stability, stable_under


class ToyConfig(ExperimentConfig):
    score: float = Field(0.9, description="the toy's measured score")
    shift: float = Field(0.0, description="subtracted from the score [paper silent]",
                         json_schema_extra={"range": [0.0, 0.01, 0.2]})
    bare: int = Field(1, description="an open decision without a range [paper silent]")
    n_test: int = Field(8, ge=1, description="test points")


@pytest.fixture
def toy(monkeypatch):
    registry.list_experiments()  # featlab's own papers first, into the real registry (they register once)
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(registry, "_PAPERS", dict(registry._PAPERS))
    registry.register_paper("toy-stab", "Toy paper (tests)", "toys")

    # robust: 0.9 - shift >= 0.5 whatever the shift; fragile: its threshold sits at the measured value, so the
    # smallest shift fails it; the score does not depend on n_test or the seeds, so those never flip a verdict
    @registry.experiment("toys-exp", paper="toy-stab", reference="Thm 1", summary="a planted fragile claim",
                         config=ToyConfig, presets={"quick": {"seeds": 2}, "paper": {"seeds": 4}},
                         claims=[Claim("toys.robust", "score is well above 1/2", "Thm 1", AtLeast(lo=0.5),
                                       exact="a toy"),
                                 Claim("toys.fragile", "score reaches 0.9", "Thm 2", AtLeast(lo=0.9), exact="a toy")])
    def toy_exp(ctx):
        if ctx.cfg.score - ctx.cfg.shift < 0:
            raise TrainingDiverged("the toy's score went negative")
        ctx.metric("toy.n_test", ctx.cfg.n_test)
        ctx.claim("toys.robust", ctx.cfg.score - ctx.cfg.shift)
        ctx.claim("toys.fragile", ctx.cfg.score - ctx.cfg.shift)

    return registry


def test_every_paper_silent_field_of_every_experiment_declares_a_range_of_valid_values():
    checked = 0
    for exp in registry.list_experiments():
        for name in silent_fields(exp.config):
            values = field_range(exp.config, name)
            assert values, f"{exp.id}: the paper-silent field {name!r} declares no range (json_schema_extra)"
            default = exp.config.model_fields[name].get_default(call_default_factory=True)
            assert default in values, f"{exp.id}.{name}: its range {values} does not hold the default {default!r}"
            assert len(values) >= 2, f"{exp.id}.{name}: a range holds an alternative to the default"
            for v in values:  # each value validates on its own, against the paper preset (quick's without one)
                build_config(exp.config, exp.id, exp.presets.get("paper", exp.presets["quick"]), {name: v})
            checked += 1
    assert checked >= 5


def test_a_fragile_claim_flips_where_its_threshold_is_crossed_and_a_robust_one_is_stable(toy, out, capsys):
    assert main(["stability", "toys-exp", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert main(["stability", "toys-exp", "--out", str(out), "--strict"]) == 1  # a verdict flips; runs cached
    assert main(["stability", "toys-exp", "--out", str(out), "--strict", "--fields", "seeds,n_test"]) == 0
    capsys.readouterr()
    study, long, summary = stability("toys-exp", out=out, progress=False)  # the same study: every run is cached
    assert "(cached)" in open(long.attrs["markdown"]).read()
    assert study.axes == {"shift": [0.01, 0.2], "seeds": [4], "seed": [2], "n_test": [4, 16]}  # not 1 seed
    row = summary.set_index("claim")
    assert row.loc["toys.robust", "stable_under"] == "stable over all tried values"
    assert row.loc["toys.fragile", "stable_under"] == "shift=0.01: held → failed; shift=0.2: held → failed"
    assert not row.loc["toys.fragile", "stable"] and row.loc["toys.robust", "stable"]
    assert "shift=0.01: held → failed" in text and "stable over all tried values" in text
    # the table on disk: Parquet + Markdown + sidecar, one row per run and claim; each point an ordinary run
    table = pd.read_parquet(long.attrs["table"])
    assert len(table) == 2 * len(study.points()) == 14
    assert set(table[table["field"] == "n_test"]["run_dir"].map(lambda d: json.load(open(f"{d}/summary.json"))[
        "metrics"]["toy.n_test"])) == {4.0, 16.0}
    assert "shift=0.01: held → failed" in open(long.attrs["markdown"]).read()
    # the report shows it beside each verdict of the base run
    assert stable_under(out, "toys-exp", long.attrs["base_run"].rsplit("/", 1)[-1]) == \
        dict(zip(summary["claim"], summary["stable_under"]))
    assert main(["stability", "toys-exp", "--out", str(out), "--fields", "seeds"]) == 0  # a newer, smaller study
    rows = {c.id: c for c in build(out, paper="toy-stab").papers[0].experiments[0].runs[0].claims}
    assert rows["toys.fragile"].stable.startswith("shift=0.01")
    assert main(["report", str(out), "--paper", "toy-stab"]) == 0
    page = (out / "report.md").read_text(encoding="utf-8")
    assert "stable under" in page and "shift=0.01: held → failed" in page
    assert "stable under" in (out / "report.html").read_text(encoding="utf-8")


def test_a_failed_point_is_not_judged_and_a_failed_base_stops_the_study(toy, out, capsys):
    assert main(["stability", "toys-exp", "score=0.1", "--fields", "shift", "--out", str(out)]) == 1
    text = capsys.readouterr().out
    assert "stable over all tried values (1 not judged: shift=0.2)" in text  # 0.1 - 0.01 still fails both
    assert main(["stability", "toys-exp", "score=-1", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "the base run of toys-exp did not complete (failed: the toy's score went negative)" in err
    ran = [json.loads(f.read_text())["config"]["score"] for f in (out / "toys-exp").rglob("summary.json")]
    assert ran.count(-1) == 1  # the base only: no point of that study ran


def test_fields_and_budget_choose_the_points(toy):
    assert plan("toys-exp", fields=["shift"]).axes == {"shift": [0.01, 0.2]}
    assert plan("toys-exp", base={"shift": 0.2}, fields=["shift"]).axes == {"shift": [0.0, 0.01]}
    budget = plan("toys-exp", budget=5)
    assert budget.axes == {"shift": [0.01, 0.2], "seeds": [4], "seed": [2], "n_test": [4]}  # round-robin
    assert len(budget.points()) == 6 and any("over the budget" in s for s in budget.skipped)
    assert any(s.startswith("bare: declares no range") for s in budget.skipped)


@pytest.mark.parametrize("args, needle", [
    (["toys-exp", "--fields", "nope"], "unknown field 'nope' for toys-exp; fields with a range are: shift, seeds"),
    (["toys-exp", "--fields", "bare"], "the 'bare' field of toys-exp declares no range"),
    (["toys-exp", "--fields", "score"], "the 'score' field of toys-exp declares no range"),
    (["toys-exp", "--budget", "-1"], "--budget must be a number of points >= 0"),
    (["no-such-exp"], "unknown experiment 'no-such-exp'"),
    (["toys-exp", "shift=x"], "the 'shift' field of toys-exp"),
])
def test_bad_input_is_one_line_and_exit_2_before_anything_runs(toy, out, capsys, args, needle):
    assert main(["stability", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not out.exists()


def test_published_stability_pages_are_the_studies_with_an_index(toy, out, tmp_path, capsys):
    """`featlab report OUT --publish-stability DIR`: each experiment's newest study page under DIR/stability/, and
    an index that counts its verdicts not stable over every value."""
    assert main(["stability", "toys-exp", "--out", str(out)]) == 0
    dest = tmp_path / "results"
    assert main(["report", str(out), "--paper", "toy-stab", "--publish-stability", str(dest)]) == 0
    page = (dest / "stability" / "toys-exp.md").read_text(encoding="utf-8")
    assert "shift=0.01: held → failed" in page and "stable over all tried values" in page
    index = (dest / "stability" / "README.md").read_text(encoding="utf-8")
    assert "[toys-exp](toys-exp.md)" in index and "1 verdict(s) not stable" in index
