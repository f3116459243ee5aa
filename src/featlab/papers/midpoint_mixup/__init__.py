"""Midpoint Mixup (Chidambaram et al.; ICML 2023): on multi-view data ERM learns one feature per class, Midpoint
Mixup (λ = 1/2 over all pairs) learns both; the spurious-channel image benchmark of §5."""

from ...runs.registry import register_paper

register_paper("midpoint-mixup", "Midpoint Mixup (Chidambaram et al.; ICML 2023)", prefix="mm")

from . import multiview, linear  # noqa: E402,F401  (registers mm-multiview, then mm-linear: keep this order)
from . import spurious  # noqa: E402,F401
from .spurious_data import SpuriousChannels  # noqa: E402

__all__ = ["SpuriousChannels"]
