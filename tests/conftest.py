import os
import shutil
import tempfile
from pathlib import Path

import pytest
import torch

os.environ.setdefault("FEATLAB_PROGRESS", "0")
os.environ.setdefault("FEATLAB_PDF", "0")  # PNGs only: drawing a PDF too doubles a small run's cost
# two xdist workers share the 2 cores: one torch thread each (oversubscribed threads spin and slow small ops)
torch.set_num_threads(1 if os.environ.get("PYTEST_XDIST_WORKER") else max(1, min(2, os.cpu_count() or 1)))

from featlab.data import image_files  # noqa: E402  (after the environment above)

_SYSTEM_COPIES = dict(image_files.SYSTEM_COPIES)  # before any test hides them


@pytest.fixture(autouse=True)
def no_system_data(monkeypatch):
    """Tests see only the data they make: no system copy of a dataset (Debian's FashionMNIST) and no
    $FEATLAB_DATA. The tests of the real files ask for ``real_fmnist``."""
    monkeypatch.setattr(image_files, "SYSTEM_COPIES", {})
    monkeypatch.delenv(image_files.DATA_ENV, raising=False)


@pytest.fixture(autouse=True)
def own_timing_cache(tmp_path_factory, monkeypatch):
    """Timings (featlab.runs.timing) cached in a folder of the test's own: never the user's ~/.cache, and no test
    reads another's."""
    monkeypatch.setenv("FEATLAB_CACHE_DIR", str(tmp_path_factory.mktemp("timing-cache")))


@pytest.fixture
def real_fmnist(monkeypatch):
    """The system copy of the real FashionMNIST (apt-get install dataset-fashion-mnist, as .ci/run does), searched
    again; the test is skipped where it is not installed."""
    package, folder = _SYSTEM_COPIES["fashionmnist"]
    if not Path(folder).is_dir():
        pytest.skip(f"needs the real FashionMNIST: apt-get install {package}")
    monkeypatch.setattr(image_files, "SYSTEM_COPIES", dict(_SYSTEM_COPIES))
    return Path(folder)


@pytest.fixture
def out(tmp_path):
    return tmp_path / "runs"


@pytest.fixture(scope="session")
def shared_out(tmp_path_factory):
    """One runs folder for every worker of the session: a quick run several tests need (a claim's own run, the
    mechanism-control test's reference) is made once; featlab.run locks a run id and reuses a complete run."""
    root = tmp_path_factory.getbasetemp()
    return (root.parent if root.name.startswith("popen-") else root) / "shared-runs"


@pytest.fixture
def one_thread():
    """Tiny models run fastest on one thread, above all on a shared CPU; restored afterwards.

    Use it with ``pytestmark = pytest.mark.usefixtures("one_thread")`` in a module of tiny-model tests."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def pytest_configure(config):
    """Start the pin check's index queries (tests/test_install.py) with the session, once, in the process that
    starts the workers: they wait on the network while the CPU-bound tests run. Not when network tests are
    deselected."""
    if hasattr(config, "workerinput") or "not network" in (config.getoption("markexpr") or ""):
        return
    named = [Path(a.split("::")[0]) for a in config.args]
    if named and all(p.suffix == ".py" and p.name != "test_install.py" for p in named):
        return  # only other test files were asked for
    from test_install import PIN_CHECK_DIR, start_resolutions

    where = Path(tempfile.mkdtemp(prefix="featlab-pins-"))
    config.stash[_PINS] = (where, start_resolutions(where))
    os.environ[PIN_CHECK_DIR] = str(where)  # the workers, started after this, inherit it


def pytest_unconfigure(config):
    where, procs = config.stash.get(_PINS, (None, []))
    for p in procs:
        if p.poll() is None:
            p.kill()
    if where is not None:
        shutil.rmtree(where, ignore_errors=True)


_PINS = pytest.StashKey[tuple]()
