"""Why a claim fails, from evidence that was run: each ✗ (failed, or inconclusive where more units cannot settle it)
carries a diagnosis class and the command and numbers behind it, shown beside the verdict in the report and docs.

The four classes (a referee's questions about a failed reproduction):

* ``budget``: the verdict flips with more steps, seeds or test points — the evidence says how many;
* ``formulation``: the claim's reading of the paper (cite the sentence) is what fails, not the mechanism;
* ``paper``: an independent re-derivation or re-implementation agrees with featlab and not with the paper;
* ``implementation``: a featlab bug was found (and fixed: the diagnosis says in which version).

A paper declares its diagnoses beside its claims (``with_diagnoses(CLAIMS, {...})``); they are looked up at display
time by experiment, claim and preset, so adding one never needs a rerun.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

KINDS = ("budget", "formulation", "paper", "implementation")


@dataclass(frozen=True)
class Diagnosis:
    """``kind`` one of KINDS; ``why`` the finding in a sentence; ``evidence`` the command(s) run and their numbers;
    ``presets`` where it applies (the verdict it explains was measured there); ``reformulation``: a 'formulation'
    diagnosis's pre-registered reformulation, the id of the claim that reads the paper's statement as it should be
    read (the scorecard counts that one, never this failure, once it has run)."""

    kind: Literal["budget", "formulation", "paper", "implementation"]
    why: str
    evidence: str
    presets: tuple[str, ...] = ("quick",)
    reformulation: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"diagnosis kind {self.kind!r}: choose one of {', '.join(KINDS)}")
        if not self.evidence.strip():
            raise ValueError("a diagnosis names the evidence that was run (a command and its numbers)")

    def to_dict(self) -> dict[str, Any]:
        out = {"kind": self.kind, "why": self.why, "evidence": self.evidence, "presets": list(self.presets)}
        return out | ({"reformulation": self.reformulation} if self.reformulation else {})

    def text(self) -> str:
        return f"{self.kind}: {self.why} (evidence: {self.evidence})"
