"""Imports every experiment module so that each registers itself."""

from . import feature_averaging  # noqa: F401
from . import fa_ablations  # noqa: F401
from . import images  # noqa: F401
from . import xor_amplification  # noqa: F401
from . import midpoint_mixup  # noqa: F401
