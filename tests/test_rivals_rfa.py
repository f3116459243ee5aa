"""The rival nets of the Random Feature Amplification experiments, in the default suite at cheap settings.

tests/test_mechanism_controls.py runs rfa-phase's rivals only under ``-m slow`` (its quick map trains 20,000 steps
per column); here each rival runs beside the paper net's own run at a cheap setting (the same overrides for both, so
the matrix matches them), as check_mechanism_control does: the rival's net must train as well as the paper's (each
``trained`` metric within the rival's margin), and every claim it targets must get the verdict measured at that
setting. A targeted claim that the rival does not fail there is written down as what it is (held: a premise, shown
and not counted; inconclusive: more units), never loosened to "not held"; the matrix must then not count it.
"""

import pytest

import featlab
from featlab.runs.discrimination import MECHANISM, PREMISE, annotate

pytestmark = pytest.mark.usefixtures("one_thread")

# the overrides that make a run cheap (both the paper net's and the rival's; a rival's own overrides come last)
CHEAP = {
    # 2,000 steps instead of 20,000: the n ≫ d column has begun to fit its noise; 500 test points
    "rfa-phase": {"steps_long": 2000, "n_test": 500},
    # η = 0.15 alone, one seed, no n-sweep: the scope the theorem's rivals run at
    "rfa-theorem1": {"etas": [0.15], "seeds": 1, "n_sweep": []},
    # the quick preset's one net, with a coarse drawing grid
    "rfa-fig1": {"grid": 51},
    # five seeds, 3,000 steps per regime instead of 30,000 / 20,000, 500 test points
    "rfa-fig2": {"seeds": 5, "steps_low": 3000, "steps_high": 3000, "n_test": 500},
    "rfa-amplification": {},  # quick: a few seconds (the rivals skip the d-sweep)
}

# a rival whose targets need more than its experiment's CHEAP scope: its own cheap setting (both runs)
CHEAP_FOR = {
    # the random-features rival targets Thm 1 (2)'s rate: 5 seeds and an n-sweep, at n = 300 and 1000 test points
    ("rfa-theorem1", "random-features"): {"etas": [0.15], "seeds": 5, "n_sweep": [10, 30, 100], "n": 300,
                                          "n_test": 1000},
}

F, H, I = "failed", "held", "inconclusive"
# the verdict of every targeted claim on the rival at CHEAP, as measured; where it is not "failed", why
EXPECTED = {
    ("rfa-phase", "benign-regime"): {"rfa.phase_harmful": F},
    ("rfa-phase", "harmful-regime"): {"rfa.phase_benign": F},
    ("rfa-phase", "large-init"): {"rfa.phase_early_tracks_eta": F},
    # the clean-trained net's error barely moves from its validation minimum (−0.002 [−0.011, 0.006] at 2,000 steps)
    ("rfa-phase", "no-noise"): {"rfa.phase_harmful": I},
    # α = 0.1 for 3,000 steps fits no noisy point at n = 1000, d = 200: the pattern is a premise at this horizon
    ("rfa-theorem1", "long-trained"): {"rfa.thm1_pattern": H},
    # the lazy net fits every clean point and no noisy one by 300 steps; its errors are 0 like the paper net's: a zero
    # test error against η is inconclusive (the exact interval's upper end is above it), and zero clean errors in N
    # test points hold thm1_clean as it now reads (issue 44: what N points can decide, ≈ 3.7/N), for the lazy net
    # as for the paper's: a premise, as the rival's text says ("any net that fits the clean clusters may meet it")
    ("rfa-theorem1", "large-init"): {"rfa.thm1_pattern": H, "rfa.thm1_test_err": I, "rfa.thm1_clean": H},
    # W frozen, a trained: every clean point fitted, as the paper net; its clean error on 1000 test points is above
    # what they resolve (failed), while the paper net's is 0; the rate's t interval over 5 seeds straddles −1/2
    ("rfa-theorem1", "random-features"): {"rfa.thm1_clean": F, "rfa.thm1_rate": I},
    # fig1_fstar: one net is inconclusive by the minimum-units rule, and so are five (every seed agrees with f*: the
    # exact interval over five seeds reaches down to 0.48); its test points alone say held, as for the paper's net
    ("rfa-fig1", "large-init"): {"rfa.fig1_pattern": H, "rfa.fig1_fstar": I},
    # at 3,000 steps neither regime has fitted its noise yet (the paper net's high regime: training accuracy 0.835),
    # so the rivals of the long run are checked for running and training, and their verdicts pinned as measured
    ("rfa-fig2", "large-init"): {"rfa.fig2_high_T": F, "rfa.fig2_low_peak": F},  # at T: 0.515 against 0.849
    ("rfa-fig2", "no-noise"): {"rfa.fig2_low_drops": I},  # −0.006 [−0.014, 0.001]
    # (n, d) = (100, 10) only now (σ App. E's at d = 10, issue 46): it ends below the optimal 1 − η
    ("rfa-fig2", "harmful-regime"): {"rfa.fig2_high_benign": F},
    ("rfa-amplification", "near-parallel-means"): {c: F for c in (
        "rfa.lemma12_cond9", "rfa.lemma12_rho", "rfa.cond9", "rfa.growth", "rfa.rho_floor", "rfa.neurons_aligned")},
}


def check_rival(exp_id: str, name: str, out) -> None:
    kw = CHEAP_FOR.get((exp_id, name), CHEAP[exp_id])
    own = featlab.run(exp_id, "quick", out=out, quiet=True, **kw)
    rival = featlab.run(exp_id, "quick", out=out, control=name, quiet=True, **kw)
    assert own.ok and rival.ok, (own.summary.get("message"), rival.summary.get("message"))
    info = rival.summary["control"]
    assert info["kind"] == "mechanism" and info["premise"]
    for m, value in info["trained_values"].items():  # a rival that does not train proves nothing
        mine = own.summary["metrics"][m]
        assert value is not None and value >= mine - info["margin"], (
            f"{exp_id} rival {name}: its net is not trained ({m} = {value} vs {mine} on the paper's net)")
    got = {c["id"]: c["status"] for c in rival.claims if c["id"] in info["claims"]}
    assert got == EXPECTED[(exp_id, name)], f"{exp_id} rival {name}: {got}"
    # the matrix: a targeted claim the trained rival holds is a premise; a counted one failed here
    annotate(own, [rival], featlab.get_experiment(exp_id))
    for c in own.claims:
        if c.get("kind") != "claim" or c["id"] not in got:
            continue
        if got[c["id"]] == H:
            assert c["role"] == PREMISE, (exp_id, name, c["id"], c["role"])
        assert c["role"] != MECHANISM or got[c["id"]] == F, (exp_id, name, c["id"])


@pytest.mark.parametrize("exp_id,name", sorted(EXPECTED), ids=[f"{e}:{n}" for e, n in sorted(EXPECTED)])
def test_rival(exp_id, name, shared_out):
    check_rival(exp_id, name, shared_out / "rivals-rfa")


# the rivals this battery added or changed (besides rfa-phase's, which run only under -m slow elsewhere)
NEW = {("rfa-theorem1", "random-features"),
       ("rfa-theorem1", "long-trained"), ("rfa-theorem1", "large-init"), ("rfa-fig1", "large-init"),
       ("rfa-fig2", "large-init"), ("rfa-fig2", "no-noise"), ("rfa-fig2", "harmful-regime"), ("rfa-phase", "no-noise"),
       ("rfa-amplification", "near-parallel-means")}


def test_every_rfa_phase_rival_and_every_new_rival_is_tested_here():
    from featlab.runs.registry import list_experiments

    rivals = {(e.id, c.name) for e in list_experiments() if e.id.startswith("rfa-") for c in e.controls
              if c.kind == "mechanism"}
    need = {r for r in rivals if r[0] == "rfa-phase"} | NEW
    assert need <= rivals, sorted(need - rivals)  # each is declared as a rival
    assert need <= set(EXPECTED), sorted(need - set(EXPECTED))
