"""The shape of the code: a small core, one package per paper, and a fourth paper that is one folder."""

import ast
import os
import re
import subprocess
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

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


def test_paper_packages_exist():
    assert PAPERS == ["feature_amplification", "feature_averaging", "midpoint_mixup"]


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


def test_no_source_file_over_350_lines():
    long = {str(p.relative_to(SRC)): n for p in _sources() if (n := len(p.read_text().splitlines())) > 350}
    assert long == {}


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

    import featlab

    res = featlab.run("toy-demo", out=out)
    assert res.ok and [c["id"] for c in res.claims] == ["toy.clean"]
    assert res.claims[0]["holds"] and res.claims[0]["threshold"] == ">= 0.9"
    assert (res.dir / "figures" / "scores.png").is_file()
    sys.modules.pop("toy_paper", None)


def test_claims_doc_is_generated_and_fresh(capsys):
    from featlab.cli import main

    assert main(["claims", "--markdown"]) == 0
    generated = capsys.readouterr().out
    on_disk = (ROOT / "docs" / "claims.md").read_text()
    assert on_disk == generated, "docs/claims.md is stale: run `featlab claims --markdown > docs/claims.md`"
