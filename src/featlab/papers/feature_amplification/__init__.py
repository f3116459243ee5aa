"""Random Feature Amplification (Frei, Chatterji, Bartlett; JMLR 2023): early-stopped GD on XOR clusters with
label noise fits the clean points, not the noisy ones, and amplifies weak random features."""

from ...runs.claims import PaperResult as R
from ...runs.registry import register_paper

# Every numbered result of the paper and what checks it (docs/claims.md renders this table).
RESULTS = [
    R("§2 (linear classifiers)", "linear classifiers are no better than chance on the XOR clusters",
      claims=("rfa.linear_chance", "rfa.linear_bias")),
    R("(A1)–(A7)", "the assumptions, with an unspecified constant C",
      reason="not a claim: every run prints the check of (A1)–(A7) at C = max(check_C, 1/(4α²)) "
             "(tests/test_rfa_probes.py::test_assumption_checker)"),
    R("Thm 1 (1)", "at T every clean training point is right, every noisy one wrong",
      claims=("rfa.thm1_pattern", "rfa.fig1_pattern")),
    R("Thm 1 (2)", "test error ≤ η + C√(log(1/δ)/n): ≈ η, the excess decaying as n^(−1/2)",
      claims=("rfa.thm1_test_err", "rfa.thm1_clean", "rfa.thm1_rate", "rfa.phase_early_tracks_eta")),
    R("§3 after Thm 1", "nearly every neuron becomes highly correlated to one of the four cluster means",
      claims=("rfa.neurons_aligned",)),
    R("Prop 2", "relative feature-map change ≥ 1/(C ω√(md)): feature learning, not NTK", claims=("rfa.prop2",)),
    R("Lemma 3", "init norms in [1/2, 3/2]·ω√d; most |<w_j, µ>| ≥ ω/(2C0)",
      claims=("rfa.lemma3_norm",),
      reason="the count part holds for every Gaussian init whatever the config, so no setting of the experiment "
             "can make it fail: checked by tests/test_rfa_lemmas.py::test_lemma3_count_is_gaussian_anticoncentration"),
    R("Lemma 4", "|J_µ| ≥ (m/4)(1 − 1/C0)² neurons with ρ_{j,µ}(0) ≥ 1/(3C0√d)", claims=("rfa.lemma4_sets",)),
    R("Lemma 5", "sample properties with a universal C1 ≥ 2", claims=("rfa.lemma5",)),
    R("Lemma 6", "a 1/√d correlation gives an edge ≥ n/C2 in activations", claims=("rfa.lemma6",)),
    R("Def 7", "a good run: Lemmas 3–6 with C0 = 45·1024²·e⁴",
      claims=("rfa.lemma3_norm", "rfa.lemma4_sets", "rfa.lemma5", "rfa.lemma6")),
    R("Lemma 8", "a large subnetwork's margin transfers to the whole net (‖W‖_F ≤ 1, ‖x‖ ≤ 2)",
      reason="a deterministic inequality, true for every W, x, J meeting its premises, so a measurement cannot "
             "fail: checked by tests/test_rfa_lemmas.py::test_lemma8_subnetwork_margin_transfers"),
    R("Cond 9", "neuron alignment", claims=("rfa.lemma12_cond9", "rfa.cond9")),
    R("Cond 10", "almost-orthogonality |<w_j, µ_other>| ≤ 3α|a_j|", claims=("rfa.cond10",)),
    R("Lemma 11", "Conds 9–10 up to T − 1 give subnetwork margins ±1/C3 at T", claims=("rfa.lemma11",)),
    R("Lemma 12", "Cond 9 at t = 1 and ρ_{j,µ}(1) ≥ 1/(16 C2): the amplification step",
      claims=("rfa.lemma12_cond9", "rfa.lemma12_rho"),
      reason="its proof's decomposition eq. (30) with the remainder bound of eqs. (26)–(28) is exact by "
             "construction: tests/test_rfa_probes.py::test_lemma12_first_step_formula_matches_actual_step"),
    R("Lemma 13", "Conds 9–10 for t = 1 … 1/(4α); eqs. (37), (39), (40)",
      claims=("rfa.cond9", "rfa.cond10", "rfa.lprime", "rfa.growth", "rfa.rho_floor")),
    R("Lemma 14", "‖w_j^(t)‖ ≤ 2|a_j|αt, ‖W^(t)‖_F ≤ 2αt", claims=("rfa.frob",)),
    R("Prop 15", "Rademacher complexity of {‖W‖_F ≤ R} two-layer nets",
      reason="a bound on an expected supremum over a function class, used only inside Thm 1's proof; no run of "
             "featlab estimates it"),
    R("App. D", "f*'s clean error is exponentially small in 1/σ",
      claims=("rfa.thm1_clean", "rfa.fig1_fstar")),
    R("Fig 1", "decision boundary with 15% flips: clean right, noisy wrong, ≈ sgn f*",
      claims=("rfa.fig1_pattern", "rfa.fig1_fstar")),
    R("Fig 2", "long training: n ≫ d loses accuracy after fitting noise; d ≫ n stays at 85% after interpolating",
      claims=("rfa.fig2_high_T", "rfa.fig2_low_peak", "rfa.fig2_low_drops", "rfa.fig2_low_fits",
              "rfa.fig2_high_interpolates", "rfa.fig2_high_benign", "rfa.phase_benign", "rfa.phase_harmful")),
]

register_paper("feature-amplification", "Random Feature Amplification (Frei, Chatterji, Bartlett; JMLR 2023)",
               prefix="rfa", results=RESULTS)

# import order = registration order = catalogue order: not sorted
# isort: off
from . import theorem1, amplification, figures  # noqa: E402,F401  (each registers its experiments)
from . import phase  # noqa: E402,F401  (rfa-phase)
# isort: on
from .data import XORClusterDistribution  # noqa: E402

__all__ = ["XORClusterDistribution"]
