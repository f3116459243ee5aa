"""The distribution protocol of data/base.py. Every paper's data classes are checked against it, and their data
modules for standing alone, by the common battery over the registry (tests/test_common_checks.py:
check_data_protocol, check_data_module_imports_no_other_paper)."""

import torch

from featlab.data.base import Batch, Distribution


def test_a_batch_is_not_a_distribution():
    assert not isinstance(Batch(torch.zeros(1, 1, 1), torch.zeros(1, 1)), Distribution)
