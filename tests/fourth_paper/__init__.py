"""A planted fourth paper, for the common checks (tests/test_common_checks.py): one folder that registers itself
through the same API as featlab's papers (``register_paper`` and ``@experiment``), with its data, one experiment,
one claim and one rival. The battery must pass on it with no edit outside this folder, and run its rival.

It is imported only by the test that plants it (inside a copy of the registry that is restored afterwards), so no
other test sees it."""

from featlab.runs.claims import PaperResult
from featlab.runs.registry import register_paper

register_paper("toy-clusters", "Two Gaussian clusters (a planted paper; nobody, 2026)", prefix="toy",
               results=[PaperResult("Thm 1", "a trained two-layer net classifies fresh points",
                                    claims=("toy.clean",))])

from . import clusters  # noqa: E402,F401  (registers its experiment)
