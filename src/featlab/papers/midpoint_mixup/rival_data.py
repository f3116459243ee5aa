"""mm-multiview's training-data rival ``label-noise`` (a config knob whose default, 0, is Def 4.1's labels): the
labels of a share of the training points flipped. The Def 4.5 test points stay Def 4.1's."""

from __future__ import annotations

import torch

from ...placement import to_run
from ...utils import generator


def flip_labels(cfg, tr, seeds):
    """``label_noise``: the labels of round(share·N) points per replica replaced by a uniformly random other class
    (Def 4.1: none)."""
    n_flip = round(getattr(cfg, "label_noise", 0.0) * cfg.N)
    if not n_flip:
        return tr
    y = tr.y.clone()
    for e, s in enumerate(seeds):
        g = generator(s, "label-noise")
        idx, shift = to_run((torch.randperm(cfg.N, generator=g)[:n_flip],  # drawn on the host, moved once
                             torch.randint(1, cfg.k, (n_flip,), generator=g)), y.device)
        y[e, idx] = (y[e, idx] + shift) % cfg.k
    return type(tr)(tr.x, y, tr.info)
