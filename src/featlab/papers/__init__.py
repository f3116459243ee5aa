"""featlab's catalogue of papers. Each paper is one sub-package that registers its experiments on import; a new
paper is one more folder and one more line here. (Outside packages register theirs through the
``featlab.experiments`` entry-point group instead; see docs/adding-an-experiment.md.)"""

# import order = registration order = catalogue order: not sorted
# isort: off
from . import feature_averaging  # noqa: F401
from . import midpoint_mixup  # noqa: F401
from . import feature_amplification  # noqa: F401
# isort: on
