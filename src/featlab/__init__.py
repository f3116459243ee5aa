"""featlab: feature-learning theory papers made runnable, checkable and fast.

    import featlab
    res = featlab.run("fa-synthetic", preset="quick", seeds=2)
    res.summary["claims"], res.metrics, res.figures

Building blocks: :mod:`featlab.data` (distributions that know their features), :mod:`featlab.nn` (ensemble
models), :mod:`featlab.train` (objectives, the trainer), :mod:`featlab.probes` (measurements and attacks).
"""

from ._version import __version__
from .errors import ConfigError, DataError, FeatlabError

# the API's functions, imported on first use (PEP 562): ``import featlab`` and ``featlab --version`` never pay
# for torch, which the runner imports
_LAZY = {"run": "runs.runner", "sweep": "runs.sweep", "load_run": "runs.record", "get_experiment": "runs.registry",
         "list_experiments": "runs.registry"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["run", "sweep", "load_run", "get_experiment", "list_experiments", "FeatlabError", "ConfigError", "DataError",
           "__version__"]
