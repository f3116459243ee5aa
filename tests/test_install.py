"""The install is honest: the pinned versions in constraints.txt exist as wheels for every Python that
``requires-python`` admits and featlab is tested on. Reaches the package index, so it runs with ``-m network``."""

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
@pytest.mark.parametrize("version", PYTHONS)
def test_pins_resolve_for_every_claimed_python(version, tmp_path):
    pins = [ln for ln in (ROOT / "constraints.txt").read_text().splitlines() if ln and not ln.startswith("#")]
    (tmp_path / "req.txt").write_text("\n".join(pins))
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "-q", "--only-binary=:all:",
                        "--python-version", version, "--target", str(tmp_path / "t"), "-r", str(tmp_path / "req.txt")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
