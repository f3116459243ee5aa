"""Presets named for what they are (issue 32, item 3): `quick` the CPU default, `paper` only where the paper ran the
experiment and every value of it that differs from the config's default citing where the paper gives it, `theory`
the theorem's assumptions as far as the CPU allows, any other name a demo preset."""

import json

import pytest
from pydantic import Field

from featlab.cli import main
from featlab.config import ExperimentConfig
from featlab.errors import UnknownExperimentError
from featlab.runs import registry
from featlab.runs.registry import Experiment, citation_problems, list_experiments, uncited

# the experiments the papers ran (each has a paper preset); every other one has none (its former "paper" preset is a
# demo preset named for what it shows: docs/adding-an-experiment.md, "Presets")
PAPER_RAN = {"fa-synthetic", "fa-ablation-n", "fa-ablation-lr", "fa-ablation-init", "fa-ablation-snr",
             "fa-ablation-cosine", "fa-resnet-mnist", "fa-resnet-cifar10", "fa-embeddings", "mm-spurious-fmnist",
             "mm-spurious-cifar10", "mm-spurious-cifar100", "rfa-fig1", "rfa-fig2"}


def test_every_paper_preset_value_that_differs_from_the_default_cites_the_paper():
    problems = [p for e in list_experiments() for p in citation_problems(e)]
    assert problems == [], "paper presets with uncited values or stray citations:\n" + "\n".join(problems)


def test_every_citation_names_a_field_the_paper_preset_sets():
    for e in list_experiments():
        assert set(e.cites) <= set(e.presets.get("paper", {})), (e.id, sorted(set(e.cites) - set(e.presets["paper"])))
        assert all(isinstance(c, str) and c.strip() for c in e.cites.values()), e.id


def test_paper_presets_are_where_the_papers_ran_the_experiment():
    have = {e.id for e in list_experiments() if "paper" in e.presets}
    assert have == PAPER_RAN
    amp = registry.get_experiment("rfa-amplification")  # its former paper preset was our construction throughout
    assert "paper" not in amp.presets and amp.preset_kind("demo") == "demo"


def test_preset_kinds_are_as_declared():
    for e in list_experiments():
        assert "quick" in e.presets and e.preset_kind("quick") == "quick", e.id
        for name in e.presets:
            want = name if name in ("quick", "paper", "theory") else "demo"
            assert e.preset_kind(name) == want, (e.id, name)
        assert e.preset_kinds() == {p: e.preset_kind(p) for p in e.presets}
    assert registry.get_experiment("rfa-fig2").preset_kinds() == {"quick": "quick", "cpu-long": "demo",
                                                                  "paper": "paper"}
    with pytest.raises(UnknownExperimentError, match="no paper preset: the paper did not run it"):
        registry.get_experiment("mm-multiview").preset_kind("paper")


class PlantConfig(ExperimentConfig):
    d: int = Field(10, ge=1, description="a size")
    lr: float = Field(0.1, gt=0, description="a step")


def _plant(paper: dict, cites: dict) -> Experiment:
    return Experiment("plant", "feature-averaging", "Fig 0", "a planted experiment", PlantConfig, lambda ctx: None,
                      presets={"quick": {}, "paper": paper}, cites=cites)


def test_a_planted_experiment_missing_a_citation_fails_the_check():
    bad = _plant({"d": 30, "lr": 0.1, "seeds": 5}, {"d": "§1: d = 30"})
    assert uncited(bad) == ["seeds"]  # lr equals the default: nothing to cite
    assert citation_problems(bad) == ["plant: paper preset sets seeds = 5 (default differs) and cites no source"]
    assert citation_problems(_plant({"d": 30}, {"d": "§1: d = 30", "lr": "§1"})) == [
        "plant: cites 'lr', which its paper preset does not set"]
    assert uncited(_plant({"d": 30.0}, {"d": "  "})) == ["d"]  # a blank citation is none
    assert citation_problems(_plant({"d": 10, "lr": 1e-1}, {})) == []  # the defaults' values need no citation


def test_registration_checks_the_citations_fields(monkeypatch):
    list_experiments()
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    kw = dict(paper="feature-averaging", reference="Fig 0", summary="s", config=PlantConfig)
    with pytest.raises(ValueError, match="cites names fields its config does not have"):
        registry.experiment("plant-a", presets={"quick": {}, "paper": {"d": 3}}, cites={"width": "§1"}, **kw)
    with pytest.raises(ValueError, match="cites are for the paper preset"):
        registry.experiment("plant-b", presets={"quick": {}, "demo": {"d": 3}}, cites={"d": "§1"}, **kw)
    with pytest.raises(ValueError, match="must include 'quick'"):
        registry.experiment("plant-c", presets={"paper": {}}, **kw)
    registry.experiment("plant-d", presets={"quick": {}, "demo": {"d": 3}}, **kw)(lambda ctx: None)  # no paper: fine
    assert registry.get_experiment("plant-d").preset_kinds() == {"quick": "quick", "demo": "demo"}


def test_list_and_config_show_the_kinds_and_the_citations(capsys):
    assert main(["list", "--json"]) == 0
    listed = {e["id"]: e for e in json.loads(capsys.readouterr().out)}
    assert listed["rfa-fig2"]["preset_kinds"] == {"quick": "quick", "cpu-long": "demo", "paper": "paper"}
    assert listed["rfa-fig2"]["cites"]["n_test"].startswith("App. E")
    assert listed["rfa-amplification"]["preset_kinds"]["demo"] == "demo" and listed["rfa-amplification"]["cites"] == {}
    assert main(["config", "fa-ablation-n", "--preset", "paper", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    fields = {f["field"]: f for f in data["fields"]}
    assert data["kind"] == "paper" and fields["values"]["source"].startswith("App. E.1, Fig 5")
    assert fields["seeds"]["source"] == "" and not fields["seeds"]["in_preset"]  # featlab's choice: the default
    assert main(["config", "rfa-fig2", "--preset", "paper"]) == 0
    text = capsys.readouterr().out
    assert "kind paper" in text and "source" in text and "App. E" in text
    assert main(["config", "rfa-fig2", "--preset", "cpu-long", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["kind"] == "demo" and all(f["source"] == "" for f in data["fields"])
