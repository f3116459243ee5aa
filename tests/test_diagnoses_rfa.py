"""Random Feature Amplification's diagnoses attach to claims its experiments declare, as the report shows them."""

import pytest

from featlab.papers.feature_amplification import diagnoses
from featlab.runs.diagnosis import diagnosis_for
from featlab.runs.registry import get_experiment


@pytest.mark.parametrize("exp_id", sorted(diagnoses.BY_EXPERIMENT))
def test_each_diagnosis_attaches_to_a_declared_claim_of_its_experiment(exp_id):
    claims = {c.id: c for c in get_experiment(exp_id).claims}
    for cid, diag in diagnoses.BY_EXPERIMENT[exp_id].items():
        assert cid in claims, f"{exp_id}: {cid} is not a claim of it"
        for d in diag if isinstance(diag, tuple) else (diag,):
            assert d in claims[cid].diagnoses, f"{exp_id}: {cid}'s diagnosis is not attached by the decorator"
            assert all(p in get_experiment(exp_id).presets for p in d.presets), d.presets
            assert diagnosis_for(claims[cid], d.presets[0]) is not None
            assert "|" not in d.why + d.evidence and len(d.why) <= 300 and len(d.evidence) <= 300
            assert "TODO" not in d.why + d.evidence
