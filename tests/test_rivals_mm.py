"""The rival nets of mm-multiview and mm-spurious-digits in the default suite (their quick runs take minutes here, so
tests/test_mechanism_controls.py runs them only under ``-m slow``): each rival runs beside the paper's nets at a
cheap setting with the same code paths (fewer points, steps and epochs; enough seeds for a verdict: a share of
seeds or a per-seed mean needs 5 units, runs/uncertainty.MIN_UNITS), and must

* train: each metric it names in ``trained`` within its margin of the paper net's own run at that setting;
* FAIL every claim it targets (inconclusive does not defeat a claim: more units would settle it), which the
  discrimination matrix then shows in the rival's cell of the claim (runs/discrimination.py).
"""

import pytest

import featlab
from featlab.runs.discrimination import annotate
from featlab.runs.uncertainty import MIN_UNITS

# What these settings can and cannot show. mm-multiview: ERM escapes in < 250 steps at quick's d = 3·10^5 and learns
# one feature for 0.77 of the classes here, but Midpoint Mixup's rescue (≈ 3500 steps at quick) is cut short: the
# paper's net learns both for 0.55 of the classes at 1500 steps, so its own Midpoint claims fail at this setting too,
# and the rivals' failures show the verdicts can fail on a trained rival, not the full contrast (quick, -m slow).
# mm-spurious-digits at 6 epochs: the paper's Mixups are undertrained (train accuracy 0.62-0.75 against ERM's 0.85)
# and end above ERM, so 'no-spurious' fails the orderings there as the paper's net does. λ ∈ {0, 1}
# ('lambda-endpoints', 'lambda-one') are sanity controls now (issue 46: they fail by construction), run by
# tests/test_controls.py (-m slow); their runs here made room for the three mixing rivals (label smoothing,
# same-class Mixup, input noise), each an ERM-sized objective in the Mixups' place, far cheaper than the all-pairs
# λ ∈ {0, 1} run they replace.
CHEAP = {
    # 6 seeds: mm.midpoint_exact (a share of seeds against 0.5) can fail only with >= 6 (0/5's exact upper bound
    # is 0.52); N = 40 points cut the all-pairs losses 6×
    "mm-multiview": dict(seeds=6, N=40, steps=1500, long_steps=1750, probe_every=250, n_test_per_class=20,
                         prop44_N=50),
    # 5 seeds: the orderings are judged per seed (paired), and fewer than 5 are inconclusive by rule
    "mm-spurious-digits": dict(seeds=5, epochs=6),
}


# the targeted claims a trained rival does NOT fail at CHEAP, pinned as measured (issue 46): a claim held by a rival
# is a premise there, one left inconclusive is unsettled; neither is loosened, and the matrix must not count them
I, H = "inconclusive", "held"
MEASURED = {
    # Gaussian input noise at the mixing's scale keeps ERM learning both features (0.88 of the classes against the
    # paper's Midpoint's 0.55 at this setting): noise augmentation reaches Thm 4.7's conclusion too
    ("mm-multiview", "input-noise"): {"mm.midpoint_all_both": I, "mm.midpoint_exact": I, "mm.midpoint_both_long": I,
                                      "mm.separation": H, "mm.mixup_all_both": I},
    # label smoothing at the mixing's off-label mass ends 7.9 pp below ERM ([−14.8, −1.1] over 5 seeds), where the
    # paper's undertrained Mixups end above it: the orderings do not single out the mixing at this setting
    ("mm-spurious-digits", "label-smoothing"): {"mm.mixup_below_erm": H, "mm.midpoint_below_erm": H},
}


# where the paper's nets fit their training data at the cheap setting (train accuracy 1), so a rival's value can be
# compared with theirs: it must lie no nearer the claim's side than the paper net's own
MOVES_AWAY = {"mm-multiview"}


def _rivals(exp_id):
    return [c.name for c in featlab.get_experiment(exp_id).controls if c.kind == "mechanism"]


PARAMS = [pytest.param(e, name, id=f"{e}:{name}") for e in CHEAP for name in _rivals(e)]


def test_the_cheap_settings_leave_every_verdict_decidable():
    assert CHEAP["mm-multiview"]["seeds"] > MIN_UNITS and CHEAP["mm-spurious-digits"]["seeds"] >= MIN_UNITS
    assert {e: len(_rivals(e)) for e in CHEAP} == {"mm-multiview": 7, "mm-spurious-digits": 4}


@pytest.mark.parametrize("exp_id,name", PARAMS)
def test_rival_trains_and_fails_the_claims_it_targets(exp_id, name, shared_out):
    kw = CHEAP[exp_id]
    own = featlab.run(exp_id, "quick", out=shared_out, quiet=True, **kw)
    rival = featlab.run(exp_id, "quick", out=shared_out, control=name, quiet=True, **kw)
    assert own.ok and rival.ok, (own.summary.get("message"), rival.summary.get("message"))
    info = rival.summary["control"]
    assert info["kind"] == "mechanism" and info["premise"] and info["trained"]
    for m, value in info["trained_values"].items():
        mine = own.summary["metrics"][m]
        assert value is not None and value >= mine - info["margin"], (
            f"{exp_id} rival {name}: its net is not trained ({m} = {value} vs {mine} on the paper's net, margin "
            f"{info['margin']})")
    exp = featlab.get_experiment(exp_id)
    declared = {c.id: c for c in exp.claims}
    targets = [i for i in info["claims"] if declared[i].kind == "claim"]
    assert targets, f"{exp_id} rival {name} targets no counted claim"
    on_rival = {c["id"]: c for c in rival.claims}
    pinned = MEASURED.get((exp_id, name), {})
    not_failed = {i: (on_rival[i]["status"], on_rival[i]["measured"], on_rival[i].get("interval"))
                  for i in targets if i in on_rival and on_rival[i]["status"] != "failed"}
    assert set(targets) <= set(on_rival), f"not judged on the rival: {sorted(set(targets) - set(on_rival))}"
    assert {i: v[0] for i, v in not_failed.items()} == pinned, (
        f"{exp_id} rival {name} does not fail the claims it targets as measured: {not_failed}")
    if exp_id in MOVES_AWAY:  # and it fails them further than the paper's net at this setting (or as far)
        own_value = {c["id"]: c["measured"] for c in own.claims}
        for i in (t for t in targets if t not in pinned):
            lo, _ = declared[i].threshold.bounds(None)
            mine, theirs = own_value[i], on_rival[i]["measured"]
            assert (theirs <= mine) if lo is not None else (theirs >= mine), (i, "rival", theirs, "paper", mine)
    # the matrix: this rival's cell of each targeted claim is 'failed', of every other counted claim 'exempt'
    annotate(own, [rival], exp)
    for c in own.claims:
        if c.get("kind") != "claim":
            continue
        cell = next(x for x in c["rivals"] if x["rival"] == name)
        want = pinned.get(c["id"], "failed") if c["id"] in targets else "exempt"
        assert cell["state"] == want, (c["id"], cell)
        if c["id"] in pinned:
            assert c["role"] != "mechanism", (c["id"], c["role"])  # not counted on a rival that does not fail it
        if cell["state"] == "exempt":
            assert cell.get("reason"), f"{exp_id}: {c['id']} is exempt on {name} with no reason from the paper"
