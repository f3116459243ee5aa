"""Imports every experiment module so that each registers itself."""

from . import feature_averaging  # noqa: F401
