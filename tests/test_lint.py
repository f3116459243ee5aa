"""The habits of a well-kept library, checked with the tests (so CI and the README's test command run them): ruff's
lint over the source, tests and benchmarks, and mypy over src/featlab, which ships py.typed (a promise that its
types check). Both read their settings from pyproject.toml; .pre-commit-config.yaml runs the same two commands.
Cheap on a warm cache (.ruff_cache, .mypy_cache in the repository root)."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(tool: str, *args: str) -> None:
    """``python -m tool args`` from the running interpreter's environment (the pinned versions); fails with its
    report. Skipped when the tool is not installed (it comes with the test extra)."""
    if importlib.util.find_spec(tool) is None:
        pytest.skip(f"{tool} is not installed: pip install -c constraints.txt -e '.[test]'")
    p = subprocess.run([sys.executable, "-m", tool, *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"{tool} {' '.join(args)} found problems:\n{p.stdout}{p.stderr}"


def test_ruff_finds_nothing():
    _run("ruff", "check", "--no-fix", "--output-format", "concise", "src", "tests", "benchmarks")


def test_mypy_finds_nothing():
    _run("mypy")  # files, python_version and the strictness come from [tool.mypy]
