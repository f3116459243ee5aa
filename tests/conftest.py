import os

import pytest
import torch

os.environ.setdefault("FEATLAB_PROGRESS", "0")
os.environ.setdefault("FEATLAB_PDF", "0")  # PNGs only: drawing a PDF too doubles a small run's cost
# two xdist workers share the 2 cores: one torch thread each (oversubscribed threads spin and slow small ops)
torch.set_num_threads(1 if os.environ.get("PYTEST_XDIST_WORKER") else max(1, min(2, os.cpu_count() or 1)))


@pytest.fixture
def out(tmp_path):
    return tmp_path / "runs"


@pytest.fixture
def one_thread():
    """Tiny models run fastest on one thread, above all on a shared CPU; restored afterwards.

    Use it with ``pytestmark = pytest.mark.usefixtures("one_thread")`` in a module of tiny-model tests."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)
