"""featlab: feature-learning theory papers made runnable, checkable and fast.

    import featlab
    res = featlab.run("fa-synthetic", preset="quick", seeds=2)
    res.summary["claims"], res.metrics, res.figures

Building blocks: :mod:`featlab.data` (distributions that know their features), :mod:`featlab.nn` (ensemble
models), :mod:`featlab.train` (objectives, the trainer), :mod:`featlab.probes` (measurements and attacks).
"""

from ._version import __version__
from .errors import ConfigError, DataError, FeatlabError
from .runs.record import load_run
from .runs.registry import get_experiment, list_experiments
from .runs.runner import run
from .runs.sweep import sweep

__all__ = ["run", "sweep", "load_run", "get_experiment", "list_experiments", "FeatlabError", "ConfigError", "DataError",
           "__version__"]
