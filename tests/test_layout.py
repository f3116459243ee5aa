"""The shape of the code: a small core, one package per paper, and a fourth paper that is one folder."""

import ast
import os
import re
import subprocess
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

import featlab
from featlab.devicecheck import check_experiment
from featlab.runs import registry

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "featlab"
PAPERS = sorted(p.name for p in (SRC / "papers").iterdir() if (p / "__init__.py").is_file())


def _module(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, text: str | None = None) -> set[str]:
    """Absolute names of every featlab module ``path`` imports (relative imports resolved)."""
    here = _module(path).split(".")
    pkg = here if path.name == "__init__.py" else here[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text() if text is None else text)):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(pkg[: len(pkg) - node.level + 1] + ([base] if base else []))
            out |= {base} | {f"{base}.{a.name}" for a in node.names}
    return {m for m in out if m.startswith("featlab")}


def _sources():
    return sorted(SRC.rglob("*.py"))


def _resolve(path: Path, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The featlab modules one import statement loads: ``from .. import plotting`` is featlab.plotting (a module),
    ``from ..text import table`` is featlab.text (``table`` is a name in it)."""
    here = _module(path).split(".")
    pkg = here if path.name == "__init__.py" else here[:-1]
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name.startswith("featlab")}
    base = node.module or ""
    if node.level:
        base = ".".join(pkg[: len(pkg) - node.level + 1] + ([base] if base else []))
    if not base.startswith("featlab"):
        return set()
    out = set()
    for a in node.names:
        sub = SRC.parent / Path(*f"{base}.{a.name}".split("."))
        out.add(f"{base}.{a.name}" if sub.with_suffix(".py").is_file() or (sub / "__init__.py").is_file() else base)
    return out


def _unit(module: str) -> str:
    """The unit of the layering a module belongs to: a subpackage (featlab.runs), a paper (featlab.papers.X), or a
    top-level module (featlab.config)."""
    parts = module.split(".")
    return ".".join(parts[:3]) if parts[1:2] == ["papers"] and len(parts) > 2 else ".".join(parts[:2])


def _unit_graph(sources) -> dict[str, set[str]]:
    """unit → the units it imports, every import counted (module level and inside functions alike)."""
    graph: dict[str, set[str]] = {}
    for path, text in sources:
        me = _unit(_module(path))
        deps = graph.setdefault(me, set())
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                deps |= {_unit(m) for m in _resolve(path, node) if m != "featlab"} - {me}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one unit (Tarjan): each is an import cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in list(graph):
        if v not in index:
            visit(v)
    return found


def _function_level_imports(path: Path, text: str) -> list[str]:
    """``file:line module`` for every featlab import inside a function."""
    hits = []
    for fn in ast.walk(ast.parse(text)):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    hits += [f"{path.relative_to(SRC)}:{node.lineno} {m}" for m in sorted(_resolve(path, node))]
    return hits


def test_no_import_cycle_between_subpackages():
    """Data flows one way (papers → runs → report → cli): no cycle between subpackages, papers and top-level
    modules, counting imports inside functions too; and nothing imports the package root back."""
    sources = [(p, p.read_text()) for p in _sources()]
    assert _cycles(_unit_graph(sources)) == []
    back = [f"{p.relative_to(SRC)}" for p, t in sources if p != SRC / "__init__.py"
            for n in ast.walk(ast.parse(t))
            if isinstance(n, (ast.Import, ast.ImportFrom)) and "featlab" in _resolve(p, n)]
    assert back == []


def test_no_function_level_imports_of_featlab_outside_the_cli():
    hits = [h for p in _sources() if "cli" not in p.relative_to(SRC).parts
            for h in _function_level_imports(p, p.read_text())]
    assert hits == []


def test_layering_checks_catch_a_cycle_and_a_hidden_import():
    """The checkers can fail: a report module imported by runs inside a function makes a cycle and a hit."""
    runner, summary = SRC / "runs" / "runner.py", SRC / "report" / "summary.py"
    planted = "def f():\n    from ..report.summary import build\n"
    graph = _unit_graph([(runner, planted), (summary, "from ..runs.record import RunRecord\n")])
    assert _cycles(graph) == [["featlab.report", "featlab.runs"]]
    assert _function_level_imports(runner, planted) == ["runs/runner.py:2 featlab.report.summary"]
    assert _resolve(summary, ast.parse("from .. import plotting").body[0]) == {"featlab.plotting"}
    assert _resolve(summary, ast.parse("from .. import __version__").body[0]) == {"featlab"}


def test_every_paper_folder_is_in_the_catalogue():
    """Papers are discovered, not listed: each folder under papers/ is imported by the catalogue and registers
    experiments (a fourth paper is one folder and one line in papers/__init__.py)."""
    assert len(PAPERS) >= 3
    catalogue = _imports(SRC / "papers" / "__init__.py")
    assert {f"featlab.papers.{p}" for p in PAPERS} <= catalogue
    homes = {e.fn.__module__.split(".")[2] for e in registry.list_experiments()
             if e.fn.__module__.startswith("featlab.")}
    assert set(PAPERS) <= homes


def test_core_never_imports_a_paper():
    bad = {str(p.relative_to(SRC)): sorted(m for m in _imports(p) if m.startswith("featlab.papers"))
           for p in _sources() if "papers" not in p.relative_to(SRC).parts}
    assert {k: v for k, v in bad.items() if v} == {}


@pytest.mark.parametrize("paper", PAPERS)
def test_papers_never_import_each_other(paper):
    others = [f"featlab.papers.{p}" for p in PAPERS if p != paper]
    bad = {str(p.relative_to(SRC)): sorted(m for m in _imports(p) if any(m.startswith(o) for o in others))
           for p in (SRC / "papers" / paper).rglob("*.py")}
    assert {k: v for k, v in bad.items() if v} == {}


def test_import_rules_checker_catches_a_wrong_arrow():
    """The checker itself can fail: a core module importing a paper is seen, relative or absolute."""
    core = SRC / "runs" / "registry.py"
    assert "featlab.papers.feature_averaging" in _imports(core, "from ..papers.feature_averaging import data\n")
    assert "featlab.papers" in _imports(core, "from .. import papers\n") | _imports(core, "import featlab.papers\n")
    paper = SRC / "papers" / "midpoint_mixup" / "data.py"
    assert "featlab.papers.feature_averaging.data" in _imports(paper, "from ..feature_averaging.data import x\n")


MAX_FUNCTION_LINES = 80  # DESIGN.md: a function of about 80 lines at most; a file holds one concept, at any length
LONG_FUNCTIONS = {  # the ones allowed longer, each with its reason; this list may only shrink
    "papers/midpoint_mixup/pair_kernels.py:pairs_tasks": "a numba kernel: one loop nest over the (replica, block "
    "pair) grid whose two dozen arrays a split would pass through every call",
}


def _long_functions(files) -> dict[str, int]:
    out = {}
    for path, text in files:
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                    (n := node.end_lineno - node.lineno + 1) > MAX_FUNCTION_LINES:
                out[f"{path}:{node.name}"] = n
    return out


def test_no_function_over_80_lines():
    long = _long_functions((str(p.relative_to(SRC)), p.read_text()) for p in _sources())
    assert {k: v for k, v in long.items() if k not in LONG_FUNCTIONS} == {}
    assert set(LONG_FUNCTIONS) <= set(long), "an allowed long function is short now: drop it from LONG_FUNCTIONS"


def test_the_function_length_rule_catches_a_long_one():
    planted = "def f():\n" + "    x = 1\n" * MAX_FUNCTION_LINES + "    return x\n"
    assert _long_functions([("planted.py", planted)]) == {"planted.py:f": MAX_FUNCTION_LINES + 2}
    assert _long_functions([("ok.py", "def g():\n    return 1\n")]) == {}


def test_no_import_time_side_effects():
    src = "|".join([r"matplotlib\.use\(", r"import matplotlib\.pyplot", r"from matplotlib import pyplot"])
    hits = [str(p.relative_to(SRC)) for p in _sources() if re.search(src, p.read_text())]
    assert hits == []
    code = ("import sys, matplotlib; b = matplotlib.get_backend(); import featlab; featlab.list_experiments(); "
            "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot imported'; "
            "assert matplotlib.get_backend() == b, 'backend changed'")
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "MPLBACKEND": "svg"})


def test_every_claim_id_names_its_paper():
    for e in registry.list_experiments():
        prefix = registry._PAPERS[e.paper][1] + "."
        assert all(c.id.startswith(prefix) for c in e.claims), e.id


def _doc_example() -> str:
    text = (ROOT / "docs" / "adding-an-experiment.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    return next(b for b in blocks if "@experiment(" in b)


@pytest.fixture
def isolated_registry(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(registry, "_PAPERS", dict(registry._PAPERS))
    registry.list_experiments()  # featlab's own papers are loaded first
    monkeypatch.setattr(registry, "_loaded", False)
    return registry


def test_outside_package_registers_through_the_entry_point_group(isolated_registry, tmp_path, monkeypatch, out):
    """The documented minimal example, installed as an outside module and found through featlab.experiments."""
    (tmp_path / "toy_paper.py").write_text(_doc_example())
    monkeypatch.syspath_prepend(str(tmp_path))
    eps = [EntryPoint("featlab", "featlab.papers", registry.ENTRY_POINT_GROUP),
           EntryPoint("toy", "toy_paper", registry.ENTRY_POINT_GROUP)]
    monkeypatch.setattr(registry, "entry_points", lambda group: [e for e in eps if e.group == group])
    ids = [e.id for e in registry.list_experiments()]
    assert "toy-demo" in ids and "fa-synthetic" in ids
    assert registry.papers()["toy"].startswith("A toy paper")

    toy = registry.get_experiment("toy-demo")
    assert toy.tiny and [(c.name, c.kind) for c in toy.controls] == [("shifted", "mechanism"),
                                                                       ("untrained", "sanity")]
    assert registry.citation_problems(toy) == [] and toy.cites  # its paper preset cites its one value
    res, problems = check_experiment("toy-demo", out / "check", roots=(str(SRC), str(tmp_path)))  # its code too
    assert problems == [] and res.ok
    res = featlab.run("toy-demo", out=out)
    assert res.ok and [c["id"] for c in res.claims] == ["toy.clean"]
    assert res.claims[0]["status"] == "held" and res.claims[0]["threshold"] == ">= 0.9"
    assert res.claims[0]["unit"] == "test points" and res.claims[0]["interval"][0] >= 0.9
    assert (res.dir / "figures" / "scores.png").is_file()
    ctl = featlab.run("toy-demo", out=out, control="shifted")  # the premise removed: the claim must fail there
    assert ctl.ok and [c["status"] for c in ctl.claims] == ["failed"]
    assert ctl.summary["metrics"]["net.clean_acc"] < 0.1  # the net is as trained as before, the rule now wrong
    assert ctl.summary["control"]["trained_values"]["net.train_acc"] >= res.summary["metrics"]["net.train_acc"] - 0.05
    sanity = featlab.run("toy-demo", out=out, control="untrained")
    assert [c["status"] for c in sanity.claims] == ["failed"]
    sys.modules.pop("toy_paper", None)


def test_claims_doc_is_generated_and_fresh(capsys):
    from featlab.cli import main

    assert main(["claims", "--markdown"]) == 0
    generated = capsys.readouterr().out
    on_disk = (ROOT / "docs" / "claims.md").read_text()
    assert on_disk == generated, "docs/claims.md is stale: run `featlab claims --markdown > docs/claims.md`"
