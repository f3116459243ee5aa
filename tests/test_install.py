"""The install is honest: the pinned versions in constraints.txt exist as wheels for every Python that
``requires-python`` admits and featlab is tested on. Reaches the package index (deselect offline with
``-m "not network"``)."""

import json
import os
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYTHONS = ["3.11", "3.12", "3.13", "3.14"]  # the versions the README claims


def test_requires_python_admits_exactly_the_claimed_versions():
    spec = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    low = re.search(r">=\s*3\.(\d+)", spec)
    assert low and f"3.{low.group(1)}" == PYTHONS[0], spec


# The resolutions wait on the index, not on the CPU: tests/conftest.py starts them when the session starts (in the
# process that starts the workers), so they run while the CPU-bound tests do; the test below collects them.
PIN_CHECK_DIR = "FEATLAB_PIN_CHECK_DIR"
_RESOLVE = """import json, os, subprocess, sys
out, cmd = sys.argv[1], sys.argv[2:]
p = subprocess.run(cmd, capture_output=True, text=True)
with open(out + ".tmp", "w") as f:
    json.dump({"rc": p.returncode, "err": p.stderr[-1500:]}, f)
os.replace(out + ".tmp", out)
"""


def start_resolutions(where: Path) -> list[subprocess.Popen]:
    """One ``pip install --dry-run`` of the pins per claimed Python, all at once; each writes ``<where>/<v>.json``."""
    pins = [ln for ln in (ROOT / "constraints.txt").read_text().splitlines() if ln and not ln.startswith("#")]
    (where / "req.txt").write_text("\n".join(pins))
    return [subprocess.Popen([sys.executable, "-c", _RESOLVE, str(where / f"{v}.json"), sys.executable, "-m", "pip",
                              "install", "--dry-run", "--no-deps", "-q", "--only-binary=:all:", "--python-version", v,
                              "--target", str(where / v), "-r", str(where / "req.txt")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for v in PYTHONS]


@pytest.mark.network
def test_pins_resolve_for_every_claimed_python(tmp_path):
    where = Path(os.environ.get(PIN_CHECK_DIR) or tmp_path)
    if PIN_CHECK_DIR not in os.environ:  # run alone (no conftest start): resolve here
        start_resolutions(where)
    deadline, results = time.monotonic() + 300, {}
    while len(results) < len(PYTHONS) and time.monotonic() < deadline:
        results = {v: json.loads(f.read_text()) for v in PYTHONS if (f := where / f"{v}.json").is_file()}
        time.sleep(0.2)
    assert set(results) == set(PYTHONS), f"no answer from the index within 300 s for {set(PYTHONS) - set(results)}"
    failed = {v: r["err"] for v, r in results.items() if r["rc"] != 0}
    assert not failed, failed
