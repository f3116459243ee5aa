"""A ✗'s diagnosis: declared beside the claims, looked up by experiment, claim and preset, shown beside the verdict."""

import pytest

from featlab.runs.claims import AtLeast, Claim, diagnosis_for, with_diagnoses
from featlab.runs.diagnosis import Diagnosis


def _claims():
    return [Claim("toy.a", "a holds", "Thm 1", AtLeast(lo=1)), Claim("toy.b", "b holds", "Thm 2", AtLeast(lo=0))]


def test_diagnoses_attach_by_claim_and_preset():
    d = Diagnosis("budget", "flips with 8 seeds", "featlab run toy seeds=8: 1.2 [1.05, 1.3], held",
                  presets=("quick", "paper"))
    a, b = with_diagnoses(_claims(), {"toy.a": d})
    assert a.diagnoses == (d,) and b.diagnoses == ()
    assert diagnosis_for(a, "quick") is d and diagnosis_for(a, "theory") is None and diagnosis_for(b, "quick") is None
    assert d.text().startswith("budget: flips with 8 seeds (evidence: featlab run toy")


def test_a_diagnosis_must_name_a_declared_claim_a_known_class_and_its_evidence():
    with pytest.raises(ValueError, match="undeclared"):
        with_diagnoses(_claims(), {"toy.c": Diagnosis("paper", "x", "y")})
    with pytest.raises(ValueError, match="choose one of"):
        Diagnosis("bad-luck", "x", "y")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="evidence"):
        Diagnosis("budget", "x", "  ")
