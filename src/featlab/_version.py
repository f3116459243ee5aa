"""featlab's version, in one place: the package metadata (pyproject's dynamic version) and run records read it."""

__version__ = "0.2.0"
