"""featlab: feature-learning theory papers made runnable, checkable and fast.

    import featlab
    res = featlab.run("fa-synthetic", preset="quick", seeds=2)
    res.summary["claims"], res.metrics, res.figures

Building blocks: :mod:`featlab.data` (distributions that know their features), :mod:`featlab.nn` (ensemble
models), :mod:`featlab.train` (objectives, the trainer), :mod:`featlab.probes` (measurements and attacks).
"""

__version__ = "0.1.0"

from .errors import ConfigError, DataError, FeatlabError  # noqa: E402
from .runs.registry import get_experiment, list_experiments  # noqa: E402
from .runs.runner import run  # noqa: E402
from .runs.store import load_run  # noqa: E402
from .runs.sweep import sweep  # noqa: E402

__all__ = ["run", "sweep", "load_run", "get_experiment", "list_experiments", "FeatlabError", "ConfigError", "DataError",
           "__version__"]
