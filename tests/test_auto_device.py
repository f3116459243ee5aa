"""device=auto picks the faster device per experiment: CUDA when present, except the experiments of small
launch-bound nets measured slower on a GPU than on the 2-core CPU (``AUTO_DEVICE = "cpu"``)."""

import torch

from featlab.runs.runner import resolve_config


def test_auto_prefers_the_cpu_for_launch_bound_nets(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # a machine with a GPU, simulated
    for exp, kind in [("rfa-phase", "cpu"), ("rfa-fig2", "cpu"), ("fa-synthetic", "cuda"), ("mm-spurious-digits",
                                                                                             "cuda")]:
        cfg = resolve_config(exp)[1]
        assert cfg.device_kind() == kind, exp
        assert cfg.digest(exp) == cfg.digest(exp, kind)  # the run id names the device the run uses
    cfg = resolve_config("rfa-phase", overrides={"device": "cuda"})[1]
    assert cfg.device_kind() == "cuda"  # asked for by name: honoured
