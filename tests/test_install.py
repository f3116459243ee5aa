"""The install is honest: the pinned versions in constraints.txt exist as wheels for every Python that
``requires-python`` admits and featlab is tested on. Reaches the package index (deselect offline with
``-m "not network"``)."""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYTHONS = ["3.11", "3.12", "3.13", "3.14"]  # the versions the README claims


def test_requires_python_admits_exactly_the_claimed_versions():
    spec = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    low = re.search(r">=\s*3\.(\d+)", spec)
    assert low and f"3.{low.group(1)}" == PYTHONS[0], spec


@pytest.mark.network
def test_pins_resolve_for_every_claimed_python(tmp_path):
    """One pip resolution per claimed Python, all at once (they wait on the index, not on the CPU)."""
    pins = [ln for ln in (ROOT / "constraints.txt").read_text().splitlines() if ln and not ln.startswith("#")]
    (tmp_path / "req.txt").write_text("\n".join(pins))
    procs = {v: subprocess.Popen([sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "-q",
                                  "--only-binary=:all:", "--python-version", v, "--target", str(tmp_path / v),
                                  "-r", str(tmp_path / "req.txt")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True) for v in PYTHONS}
    failed = {}
    for v, p in procs.items():
        _, err = p.communicate(timeout=300)
        if p.returncode != 0:
            failed[v] = err[-1500:]
    assert not failed, failed
