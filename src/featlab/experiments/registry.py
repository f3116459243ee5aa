"""The experiment registry: ``featlab list``, ``get_experiment(id)`` (cf. timm's ``list_models``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import UnknownExperimentError

PAPERS = {
    "feature-averaging": "Feature Averaging (Li, Pan, Lyu, Li; ICLR 2025)",
    "midpoint-mixup": "Midpoint Mixup (Chidambaram et al.; ICML 2023)",
    "feature-amplification": "Random Feature Amplification (Frei, Chatterji, Bartlett; JMLR 2023)",
}


@dataclass
class Experiment:
    id: str
    paper: str  # a key of PAPERS
    reference: str  # "Fig 2a/2b, Fig 3 left"
    summary: str  # one line: what it shows
    config: type  # an ExperimentConfig subclass
    fn: Callable[..., None]
    presets: dict[str, dict[str, Any]] = field(default_factory=dict)

    def preset(self, name: str) -> dict[str, Any]:
        if name not in self.presets:
            raise UnknownExperimentError(
                f"{self.id} has no preset {name!r}; choose one of: {', '.join(self.presets)}")
        return dict(self.presets[name])


_REGISTRY: dict[str, Experiment] = {}


def experiment(id: str, *, paper: str, reference: str, summary: str, config: type,
               presets: dict[str, dict[str, Any]]):
    """Decorator registering ``fn(ctx)`` as an experiment. Presets must include ``quick`` and ``paper``."""
    assert paper in PAPERS, paper
    assert {"quick", "paper"} <= set(presets), presets

    def deco(fn):
        _REGISTRY[id] = Experiment(id, paper, reference, summary, config, fn, presets)
        return fn

    return deco


def _load_all() -> None:
    from . import catalogue  # noqa: F401  (imports every experiment module)


def list_experiments(paper: str | None = None) -> list[Experiment]:
    _load_all()
    order = list(PAPERS)
    exps = sorted(_REGISTRY.values(), key=lambda e: order.index(e.paper))  # stable: registration order per paper
    return [e for e in exps if paper is None or e.paper == paper]


def get_experiment(id: str) -> Experiment:
    _load_all()
    if id not in _REGISTRY:
        import difflib

        close = difflib.get_close_matches(id, list(_REGISTRY), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UnknownExperimentError(
            f"unknown experiment {id!r}{hint}; run 'featlab list' to see: {', '.join(_REGISTRY)}")
    return _REGISTRY[id]
