"""Midpoint Mixup's diagnoses attach to declared claims of the experiment that applies them (import-level, cheap)."""

import pytest

from featlab.papers.midpoint_mixup import diagnoses
from featlab.runs.diagnosis import KINDS, diagnosis_for
from featlab.runs.registry import get_experiment

TABLES = {"mm-linear": diagnoses.MM_LINEAR, "mm-multiview": diagnoses.MM_MULTIVIEW,
          "mm-spurious-digits": diagnoses.MM_SPURIOUS_DIGITS, "mm-phase": diagnoses.MM_PHASE}


@pytest.mark.parametrize("exp_id", sorted(TABLES))
def test_each_diagnosis_attaches_to_a_declared_claim_of_its_experiment(exp_id):
    table, exp = TABLES[exp_id], get_experiment(exp_id)
    assert table, "an empty table diagnoses nothing"
    declared = {c.id: c for c in exp.claims}
    for claim_id, d in table.items():
        assert claim_id in declared, f"{claim_id} is not a claim of {exp_id}"
        assert d in declared[claim_id].diagnoses  # the decorator applied the table
        assert d.kind in KINDS and "featlab run" in d.evidence
        for preset in d.presets:
            assert preset in exp.presets and diagnosis_for(declared[claim_id], preset) is d
        for text in (d.why, d.evidence):  # shown in Markdown tables: one line, no '|', short
            assert "|" not in text and len(text) <= 300
