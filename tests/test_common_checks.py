"""Common checks over the registry (cf. scikit-learn's ``parametrize_with_checks``): one battery, generated from
featlab.runs.registry, that every registered paper and experiment must pass — each experiment's ``tiny`` setting and
every control and rival it declares, run under the simulated device (featlab.devicecheck); its claims' rivals,
exemptions and diagnoses; each paper's data protocol, the claim ids written in its code and its table of results.

Nothing here names a paper: a new paper is covered by registering it. ``test_a_planted_fourth_paper_passes_the_
battery`` registers a toy paper from its own folder (tests/fourth_paper/) and runs the whole battery on it, its rival
included.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import matplotlib.figure
import pytest
import torch

import featlab
from featlab.data.base import Batch, Distribution
from featlab.devicecheck import check_experiment
from featlab.runs import registry
from featlab.runs.claims import diagnosis_for
from featlab.runs.diagnosis import KINDS
from featlab.runs.registry import Experiment, list_experiments, paper_results, papers

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny runs: one thread is fastest (tests/conftest.py)


# ------------------------------------------------------------------------------------------ the registry's papers
def prefix(key: str) -> str:
    return registry._PAPERS[key][1]


def paper_package(key: str) -> str:
    """The package a paper's experiments live in (the common part of their modules' packages)."""
    parts = [e.fn.__module__.split(".")[:-1] for e in list_experiments(key)]
    assert parts, f"paper {key} registers no experiment"
    common = parts[0]
    for p in parts[1:]:
        n = next((i for i, (a, b) in enumerate(zip(common, p, strict=False)) if a != b), min(len(common), len(p)))
        common = common[:n]
    return ".".join(common)


def paper_folder(key: str) -> Path:
    return Path(sys.modules[paper_package(key)].__file__).parent


def claim_id_pattern(prefixes: list[str]) -> tuple[str, re.Pattern]:
    """(the pattern of a claim id with one of ``prefixes``, the pattern of one quoted in code, f-strings too)."""
    alt = "(?:" + "|".join(map(re.escape, prefixes)) + ")"
    cid = alt + r"\.[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*"
    literal = re.compile(r"""(?<![\w{])f?["'](""" + cid + "|" + alt + r"""\.[A-Za-z0-9_.{}]*\{[^"']*)["']""")
    return cid, literal


def template(text: str) -> re.Pattern:
    """An f-string id ('mm.{m}_below_erm') as the pattern of the ids it can make."""
    parts = re.split(r"\{[^}]*\}", text)
    return re.compile("[A-Za-z0-9_]+".join(map(re.escape, parts)) + "$")


def declared_ids(key: str) -> set[str]:
    return {c.id for e in list_experiments(key) for c in e.claims}


def references_in_code(key: str) -> list[tuple[str, str]]:
    """Every claim id of the paper written in its folder's code (quoted, or an f-string template), with its file."""
    _, literal = claim_id_pattern([prefix(key)])
    folder = paper_folder(key)
    return [(f"{folder.name}/{path.relative_to(folder).as_posix()}", m.group(1))
            for path in sorted(folder.rglob("*.py")) for m in literal.finditer(path.read_text(encoding="utf-8"))]


# ------------------------------------------------------------------------------------------ checks of a paper
def check_claim_ids_in_the_code_are_declared(key: str) -> None:
    ids = declared_ids(key)
    stale = [f"{where}: {ref}" for where, ref in references_in_code(key)
             if not (any(template(ref).match(i) for i in ids) if "{" in ref else ref in ids)
             and not any(i.startswith(ref + ".") for i in ids)]  # a prefix such as "fa.ablation_n"
    assert stale == [], "claim ids in the code that no experiment declares:\n" + "\n".join(stale)


def check_every_declared_claim_is_judged_in_the_code(key: str) -> None:
    refs = [r for _, r in references_in_code(key)]
    literal = {r for r in refs if "{" not in r}
    patterns = [template(r) for r in refs if "{" in r]
    unjudged = sorted(i for i in declared_ids(key) if i not in literal and not any(p.match(i) for p in patterns)
                      and not any(i.startswith(r + ".") for r in literal))
    assert unjudged == [], f"declared claims whose id the code never writes: {unjudged}"


def check_results_table(key: str) -> None:
    results, ids = paper_results(key), declared_ids(key)
    assert results, f"{key} lists no numbered results"
    named = set().union(*(set(r.claims) for r in results))
    assert named <= ids, f"{key}: results name unknown claims {sorted(named - ids)}"
    assert ids - named == set(), f"{key}: claims no numbered result points to: {sorted(ids - named)}"


def data_classes(module) -> list[type]:
    """The distributions a paper's data module defines (classes with ``create`` and ``sample``)."""
    return [v for v in vars(module).values() if isinstance(v, type) and v.__module__ == module.__name__
            and callable(getattr(v, "create", None)) and callable(getattr(v, "sample", None))]


def check_data_protocol(key: str) -> None:
    """Every data class follows data/base.py's protocol: E replicas, (E, n, ..., d) inputs, one stream per
    (seed, role), so a replica alone draws what it draws beside others."""
    data = importlib.import_module(paper_package(key) + ".data")
    classes = data_classes(data)
    examples = getattr(data, "EXAMPLES", {})
    assert classes, f"{key}: its data module defines no distribution"
    assert {c.__name__ for c in classes} <= set(examples), \
        f"{key}: data.EXAMPLES builds no example of {sorted({c.__name__ for c in classes} - set(examples))}"
    seeds = [0, 1, 2]
    for name, make in examples.items():
        dist = make(seeds)
        assert isinstance(dist, Distribution) and dist.E == len(seeds), name
        b = dist.sample(7, seeds, role="test")
        assert isinstance(b, Batch), name
        assert b.x.shape[0] == dist.E and b.x.shape[-1] == dist.d and b.y.shape == (dist.E, 7), name
        alone = make(seeds[1:2]).sample(7, seeds[1:2], role="test")
        assert torch.equal(alone.x[0], b.x[1]) and torch.equal(alone.y[0], b.y[1]), name
        assert not torch.equal(b.x, dist.sample(7, seeds, role="train").x), name


def check_data_module_imports_no_other_paper(key: str) -> None:
    package = paper_package(key)
    others = [paper_package(k) for k in papers() if k != key]
    path = paper_folder(key) / "data.py"
    here = package.split(".")
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            names = [".".join(base + ([node.module] if node.module else []))]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            assert not any(name == o or name.startswith(o + ".") for o in others), f"{path.name} imports {name}"


PAPER_CHECKS = [check_claim_ids_in_the_code_are_declared, check_every_declared_claim_is_judged_in_the_code,
                check_results_table, check_data_protocol, check_data_module_imports_no_other_paper]


# ------------------------------------------------------------------------------------------ checks of an experiment
def check_declares_a_tiny_setting(exp: Experiment) -> None:
    assert exp.tiny is not None, f"{exp.id}: declare tiny={{...}} in @experiment (quick-preset overrides, ~1 s)"


def check_every_claim_is_targeted_by_a_control(exp: Experiment) -> None:
    missing = [c.id for c in exp.claims if c.kind in ("claim", "check")
               and not any(c.id in ctl.targets(exp.claims) for ctl in exp.controls)]
    assert missing == [], f"{exp.id}: claims no control targets: {missing}"


def check_rivals_name_declared_claims_and_give_every_exemption_a_reason(exp: Experiment) -> None:
    ids = {c.id for c in exp.claims}
    counted = [c.id for c in exp.claims if c.kind == "claim"]
    for ctl in exp.controls:
        assert set(ctl.claims) <= ids, f"{exp.id} control {ctl.name}: unknown claims {set(ctl.claims) - ids}"
        assert set(ctl.exempt) <= ids, f"{exp.id} control {ctl.name}: exempts unknown {set(ctl.exempt) - ids}"
        if ctl.kind != "mechanism":
            continue
        targets = set(ctl.targets(exp.claims))
        assert not targets & set(ctl.exempt), f"{exp.id} rival {ctl.name} both targets and exempts " \
            f"{sorted(targets & set(ctl.exempt))}"
        silent = [i for i in counted if i not in targets and not ctl.exempt.get(i, "").strip()]
        assert silent == [], f"{exp.id} rival {ctl.name}: no reason written for exempting {silent}"


def check_diagnoses(exp: Experiment) -> None:
    """Each diagnosis attached to a claim applies at presets the experiment has, and reads as one short line."""
    for c in exp.claims:
        for d in c.diagnoses:
            assert d.kind in KINDS and "featlab run" in d.evidence, (exp.id, c.id, d.kind)  # the command run
            assert d.presets and all(p in exp.presets for p in d.presets), (exp.id, c.id, d.presets)
            assert all(diagnosis_for(c, p) is not None for p in d.presets), (exp.id, c.id)
            for text in (d.why, d.evidence):  # shown in Markdown tables: one line, no '|', short, finished
                assert "|" not in text and "\n" not in text and len(text) <= 300, (exp.id, c.id, text)
                assert "TODO" not in text, (exp.id, c.id)


def check_diagnosis_tables_are_attached(key: str) -> None:
    """Every Diagnosis a paper's diagnoses module defines is attached to a claim of that paper (a table its
    experiment never applies is caught)."""
    try:
        module = importlib.import_module(paper_package(key) + ".diagnoses")
    except ModuleNotFoundError:
        return
    attached = {id(d) for e in list_experiments(key) for c in e.claims for d in c.diagnoses}

    def walk(v) -> Iterator:
        if isinstance(v, dict):
            for x in v.values():
                yield from walk(x)
        elif isinstance(v, tuple | list):
            for x in v:
                yield from walk(x)
        elif type(v).__name__ == "Diagnosis":
            yield v

    loose = [d.why[:60] for name, v in vars(module).items() if not name.startswith("_") for d in walk(v)
             if id(d) not in attached]
    assert loose == [], f"{key}: diagnoses no claim carries: {loose}"


PAPER_CHECKS.append(check_diagnosis_tables_are_attached)
EXPERIMENT_CHECKS = [check_declares_a_tiny_setting, check_every_claim_is_targeted_by_a_control,
                     check_rivals_name_declared_claims_and_give_every_exemption_a_reason, check_diagnoses]


def check_tiny_run(exp: Experiment, out: Path, control: str | None = None):
    """The experiment (or one of its controls) at its tiny setting on the simulated device: it completes, no tensor
    crosses devices, it judges only declared claims; a control says what it is, a rival how well its net trained."""
    rec, problems = check_experiment(exp.id, out, control)
    assert problems == [], "\n".join(problems)
    assert rec.status == "complete", rec.summary.get("message")
    summary = json.loads((rec.dir / "summary.json").read_text())
    assert summary["device_type"] == "cpu"
    declared = {c.id for c in exp.claims}
    assert {c["id"] for c in rec.claims} <= declared, exp.id
    if control is not None:
        ctl, info = exp.control(control), rec.summary["control"]
        assert info["name"] == control and info["kind"] == ctl.kind
        assert set(info["claims"]) == set(ctl.targets(exp.claims))
        if ctl.kind == "mechanism":
            assert info["premise"] == ctl.premise and set(info["trained_values"]) == set(ctl.trained), info
    return rec


# ------------------------------------------------------------------------------------------ the battery
def battery(keys: list[str]) -> Iterator[tuple[str, Callable, tuple]]:
    """(test id, check, its arguments but the runs folder) for the papers ``keys`` and everything they register."""
    for key in keys:
        for check in PAPER_CHECKS:
            yield f"{key}:{check.__name__}", check, (key,)
        for exp in list_experiments(key):
            for check in EXPERIMENT_CHECKS:
                yield f"{exp.id}:{check.__name__}", check, (exp,)
            yield f"{exp.id}:tiny", check_tiny_run, (exp, None)
            for ctl in exp.controls:
                yield f"{exp.id}:{ctl.kind}:{ctl.name}", check_tiny_run, (exp, ctl.name)


def run_check(check: Callable, args: tuple, out: Path):
    return check(*args[:1], out, *args[1:]) if check is check_tiny_run else check(*args)


@pytest.fixture
def unrendered(monkeypatch):
    """Figures are built (their code runs under the check) but not rasterised: PNG encoding is half the cost of a
    tiny run and creates no tensor."""
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda self, path, **kw: open(path, "wb").close())


CASES = list(battery(list(papers())))


def _cases(which: Callable[[str], bool]):
    return [pytest.param(check, args, id=name) for name, check, args in CASES if which(name)]


# a class per paper: --dist loadscope keeps a class on one worker, and the tiny runs share the two workers evenly
def _of(key: str) -> Callable[[str], bool]:
    ids = {key} | {e.id for e in list_experiments(key)}
    return lambda name: name.split(":", 1)[0] in ids


_KEYS = list(papers())


class TestFirstPaper:
    @pytest.mark.parametrize("check,args", _cases(_of(_KEYS[0])))
    def test_check(self, check, args, out, unrendered):
        run_check(check, args, out)


class TestOtherPapers:
    @pytest.mark.parametrize("check,args", _cases(lambda name: not _of(_KEYS[0])(name)))
    def test_check(self, check, args, out, unrendered):
        run_check(check, args, out)


# ------------------------------------------------------------------------------------------ a planted fourth paper
@pytest.fixture
def planted(monkeypatch):
    """The toy paper of tests/fourth_paper registered beside the real ones, in copies of the registry's tables that
    are restored afterwards (no other test sees it); returns its key."""
    list_experiments()  # the real catalogue first, as a user's session loads it
    for name in ("_PAPERS", "_RESULTS", "_REGISTRY"):
        monkeypatch.setattr(registry, name, dict(getattr(registry, name)))
    before = set(registry._PAPERS)
    sys.modules.pop("fourth_paper", None)
    importlib.import_module("fourth_paper")
    yield next(k for k in registry._PAPERS if k not in before)
    for name in [m for m in sys.modules if m == "fourth_paper" or m.startswith("fourth_paper.")]:
        del sys.modules[name]


def test_a_planted_fourth_paper_passes_the_battery_and_its_rival_runs(planted, out, unrendered, monkeypatch):
    ran = []
    real_run = featlab.runs.runner.run

    def spy(experiment_id, *args, control=False, **kw):
        rec = real_run(experiment_id, *args, control=control, **kw)
        ran.append((experiment_id, getattr(control, "name", None), rec.status))
        return rec

    monkeypatch.setattr(featlab.runs.runner, "run", spy)
    cases = list(battery([planted]))
    exp = list_experiments(planted)
    rivals = [(e.id, c.name) for e in exp for c in e.controls if c.kind == "mechanism"]
    assert len(exp) == 1 and rivals and len(cases) == len(PAPER_CHECKS) + len(EXPERIMENT_CHECKS) + 1 + len(rivals)
    for _name, check, args in cases:
        run_check(check, args, out)
    for r in rivals:  # its rival was run by the battery, to the end
        assert (*r, "complete") in ran, (r, ran)
    assert (exp[0].id, None, "complete") in ran


def test_the_battery_catches_what_it_checks(planted, tmp_path, monkeypatch):
    """Each kind of check can fail: a stale claim id in a paper's code, an unjudged claim, a data class without an
    example, a rival exempting a claim without a reason, a claim no result points to."""
    exp = list_experiments(planted)[0]
    folder = paper_folder(planted)
    monkeypatch.setattr(sys.modules[__name__], "paper_folder", lambda key: tmp_path)
    (tmp_path / "x.py").write_text((folder / "clusters.py").read_text().replace('"toy.clean"', '"toy.clean_renamed"'))
    with pytest.raises(AssertionError, match="toy.clean_renamed"):
        check_claim_ids_in_the_code_are_declared(planted)
    with pytest.raises(AssertionError, match="never writes"):
        check_every_declared_claim_is_judged_in_the_code(planted)
    data = sys.modules["fourth_paper.data"]
    monkeypatch.setattr(data, "EXAMPLES", {})
    with pytest.raises(AssertionError, match="TwoClusters"):
        check_data_protocol(planted)
    from dataclasses import replace

    silent = replace(exp, claims=[*exp.claims, replace(exp.claims[0], id="toy.other")],
                     controls=[replace(c, claims=("toy.clean",)) for c in exp.controls])
    with pytest.raises(AssertionError, match="no reason written"):
        check_rivals_name_declared_claims_and_give_every_exemption_a_reason(silent)
    monkeypatch.setitem(registry._RESULTS, planted, [])
    with pytest.raises(AssertionError, match="lists no numbered results"):
        check_results_table(planted)
