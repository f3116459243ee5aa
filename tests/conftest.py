import os

import pytest
import torch

os.environ.setdefault("FEATLAB_PROGRESS", "0")
torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))


@pytest.fixture
def out(tmp_path):
    return tmp_path / "runs"
