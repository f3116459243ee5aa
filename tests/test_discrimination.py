"""The discrimination matrix (runs/discrimination.py): a claim is a counted mechanism claim only when it fails for
every trained rival that must fail it; one that holds for such a rival is a premise; a missing, inconclusive or
untrained rival leaves it unsettled. Checked on hand-made records (every branch) and through the report."""

from pathlib import Path
from types import SimpleNamespace

from featlab.runs.claims import AtLeast, Claim, Control
from featlab.runs.discrimination import Cell, annotate, matches, rivals_for, role
from featlab.runs.record import RunRecord, claim_counts, is_counted


def _claim(cid, st, kind="claim"):
    return {"id": cid, "status": st, "holds": st == "held", "kind": kind, "statement": cid, "threshold": ">= 1"}


def _rec(name, claims, *, control=None, trained=None, config=None, metrics=None):
    summary = {"experiment": "toy", "run_id": name, "preset": "quick", "status": "complete", "claims": claims,
               "config": config or {"seeds": 4, "sigma": 1e-5}, "metrics": metrics or {"acc": 1.0}}
    if control:
        summary["control"] = {"name": control, "kind": "mechanism", "overrides": {"sigma": 1e-3},
                              "claims": ["toy.a", "toy.b", "toy.c"], "margin": 0.05,
                              "trained_values": trained if trained is not None else {"acc": 0.99}}
    return RunRecord(Path("/nowhere") / name, summary)


CLAIMS = [Claim("toy.a", "a", "Thm 1", AtLeast(lo=1)), Claim("toy.b", "b", "Thm 1", AtLeast(lo=1)),
          Claim("toy.c", "c", "Thm 1", AtLeast(lo=1)), Claim("toy.d", "d", "Thm 1", AtLeast(lo=1)),
          Claim("toy.acc", "acc", "Thm 1", AtLeast(lo=1), kind="premise")]
EXP = SimpleNamespace(claims=CLAIMS, controls=[
    Control("big", {"sigma": 1e-3}, "large init", premise="small init", trained=("acc",),
            exempt={"toy.d": "Thm 1 (2) is about the other net"}),
    Control("other", {"labels": "x"}, "other", premise="labels", trained=("acc",), claims=("toy.a",)),
    Control("untrained", {"T": 0}, "sanity")])


def test_roles_from_cells():
    assert role([Cell("r", "failed"), Cell("s", "exempt")]) == "mechanism"
    assert role([Cell("r", "failed"), Cell("s", "held")]) == "premise"
    assert role([Cell("r", "exempt")]) == "premise"  # nothing can fail it: it cannot discriminate
    for st in ("inconclusive", "unverified", "not run", "rival untrained"):
        assert role([Cell("r", "failed"), Cell("s", st)]) == "unsettled", st


def test_annotate_gives_every_claim_its_role_and_row():
    main = _rec("main", [_claim("toy.a", "held"), _claim("toy.b", "held"), _claim("toy.c", "failed"),
                         _claim("toy.d", "held"), _claim("toy.acc", "held", "premise")])
    big = _rec("big", [_claim("toy.a", "failed"), _claim("toy.b", "held"), _claim("toy.c", "failed"),
                       _claim("toy.d", "held")], control="big")
    other = _rec("other", [_claim("toy.a", "inconclusive")], control="other")
    other.summary["control"]["overrides"] = {"labels": "x"}
    annotate(main, [big, other], EXP)
    roles = {c["id"]: c.get("role") for c in main.claims}
    # a: fails on big, inconclusive on other (more units settle it); b: holds for a trained rival; c: fails for
    # the only rival that must fail it; d: exempt from big with the paper's reason, no other rival: a premise
    assert roles == {"toy.a": "unsettled", "toy.b": "premise", "toy.c": "mechanism", "toy.d": "premise",
                     "toy.acc": None}
    row_d = {x["rival"]: x for x in next(c for c in main.claims if c["id"] == "toy.d")["rivals"]}
    assert row_d["big"] == {"rival": "big", "state": "exempt", "reason": "Thm 1 (2) is about the other net"}
    assert [r["name"] for r in main.summary["rivals"]] == ["big", "other"]
    counted = [c["id"] for c in main.claims if is_counted(c)]
    assert counted == ["toy.c"] and claim_counts(main.claims) == (0, 1)  # c is counted, and failed


def test_an_untrained_rival_is_a_failed_rival_not_a_defeated_claim():
    main = _rec("main", [_claim("toy.c", "held")], metrics={"acc": 1.0})
    weak = _rec("big", [_claim("toy.c", "failed")], control="big", trained={"acc": 0.6})
    annotate(main, [weak], EXP)
    c = main.claims[0]
    assert c["role"] == "unsettled" and c["rivals"][0]["state"] == "rival untrained"
    assert "acc = 0.6" in main.summary["rivals"][0]["untrained"]


def test_a_rival_run_of_other_settings_is_not_read():
    main = _rec("main", [_claim("toy.c", "held")])
    elsewhere = _rec("big", [_claim("toy.c", "failed")], control="big", config={"seeds": 8, "sigma": 1e-3})
    assert not matches(elsewhere, main) and rivals_for(main, [elsewhere]) == []
    annotate(main, [elsewhere], EXP)
    assert main.claims[0]["role"] == "unsettled"
    assert main.claims[0]["rivals"][0]["state"] == "not run"


def test_targets_leave_out_premises_and_exemptions():
    big, other, _ = EXP.controls
    assert big.targets(CLAIMS) == ["toy.a", "toy.b", "toy.c"]
    assert other.targets(CLAIMS) == ["toy.a"]
    assert big.to_dict(CLAIMS)["exempt"] == {"toy.d": "Thm 1 (2) is about the other net"}


def test_claims_command_shows_kind_rivals_and_exemptions(capsys):
    from featlab.cli import main

    assert main(["claims", "fa-synthetic", "--json"]) == 0
    import json

    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["fa.binary_clean"]["kind"] == "premise" and rows["fa.binary_clean"]["rivals"] == []
    assert rows["fa.kclass_diag"]["kind"] == "mechanism claim"
    by = {r["name"]: r for r in rows["fa.kclass_diag"]["rivals"]}
    assert by["large-init"]["must_fail"] and by["shuffled-fine-labels"]["must_fail"]
    assert not by["decoupled-init"]["must_fail"] and "binary net only" in by["decoupled-init"]["exempt"]
    assert main(["claims", "fa-synthetic"]) == 0
    text = capsys.readouterr().out
    assert "Exemptions" in text and "Rivals" in text and "Premises" in text


def test_a_field_a_run_predates_reads_as_its_default():
    """A rival run made after a config field was added belongs to a paper-net run made before, when the field sits
    at its default (and not otherwise)."""
    import featlab

    k = featlab.get_experiment("fa-synthetic").config.model_fields["k"].default
    main = _rec("main", [_claim("toy.a", "held")], config={"seeds": 4, "sigma": 1e-5})
    main.summary["experiment"] = "fa-synthetic"
    for value, belongs in ((k, True), (k + 1, False)):
        rival = _rec("big", [], control="big", config={"seeds": 4, "sigma": 1e-3, "k": value})
        assert matches(rival, main) is belongs


def test_a_rival_that_measures_nan_does_not_defeat_a_claim():
    main = _rec("main", [_claim("toy.a", "held")])
    big = _rec("big", [dict(_claim("toy.a", "failed"), measured=float("nan"))], control="big",
               config={"seeds": 4, "sigma": 1e-3})
    annotate(main, [big], EXP)
    cell = main.claims[0]["rivals"][0]
    assert cell["state"] == "not measured" and main.claims[0]["role"] == "unsettled"
