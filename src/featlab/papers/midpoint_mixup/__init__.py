"""Midpoint Mixup (Chidambaram et al.; ICML 2023): on multi-view data ERM learns one feature per class, Midpoint
Mixup (λ = 1/2 over all pairs) learns both; the spurious-channel image benchmark of §5."""

from ...runs.claims import PaperResult as R
from ...runs.registry import register_paper

_BELOW = ("mm.mixup_below_erm", "mm.midpoint_below_erm")
_TABLE1 = ("mm.table1_mixup", "mm.table1_midpoint", "mm.table1_erm")
_TEST = "tests/test_mm_core.py"

register_paper("midpoint-mixup", "Midpoint Mixup (Chidambaram et al.; ICML 2023)", prefix="mm", results=[
    R("Def 3.1", "simple multi-view data, β ~ U[0.1, 0.9]",
      reason=f"a definition: `LinearMultiView`, its structure tested in {_TEST}"),
    R("Lemma 3.2", "equal same-class correlations are necessary and sufficient for J_MM(γg) → inf J_MM",
      claims=("mm.lemma32_unequal",),
      reason="the sufficiency part (Eq. 3.3) is exact: a test (" + _TEST + "), not a claim"),
    R("Prop 3.3", "Beta(a, a) Mixup keeps a gap ε_0 above inf J_M", claims=("mm.prop33_gap",),
      reason="App. C's closed form of inf J_M (C.2) is a quadrature identity: a test"),
    R("Prop 3.4", "Midpoint Mixup's lagging-feature gradient >= Θ(1/k²) for any class", claims=("mm.prop34_lower",
                                                                                                "mm.starvation")),
    R("Prop 3.5", "ERM's lagging-feature gradient <= O(k^{1−0.1C})", claims=("mm.starvation",),
      reason="Eq. 3.6 with constant 1 follows from the gradient's form (1 − φ_y <= (k − 1)e^{−0.1Δ}): a test "
             "(tests/test_mm_linear.py), not a claim"),
    R("Def 4.1", "general multi-view data (P patches, feature noise)",
      reason=f"a definition: `MultiViewDistribution`, its structure tested in {_TEST}"),
    R("Def 4.2", "2-layer patch CNN with ReLU~",
      reason=f"a definition: `SmoothedReLU`, `patch_cnn`; tested in {_TEST}"),
    R("Assumption 4.3", "d = Ω(k^20), P = Θ(k²), α = 8, δ3 = Θ(k^{−1.5}), ρ = Θ(1/k)",
      reason="hyper-parameters, declared per preset as mm-multiview's and mm-phase's Assumptions: the `theory` "
             "preset of mm-multiview meets P = k², δ3 = k^-1.5, m = k, ρ = 1/k; no preset meets d = k^20, α = 8, "
             "η = 1/poly(k) (quick/paper: α = 4, d = 3·10^5, δ3 = 0.002, P = 2k)"),
    R("Prop 4.4", "some Def 4.1 data are not linearly learnable", claims=("mm.prop44_not_linear",),
      reason="a statement about the data alone, so a check (not counted): an LP finds no linear h fitting App. "
             "C.3's construction; the run's own data's best margin is the metric data.lp_margin (> 0 at quick/"
             "paper, whose data are linearly learnable; <= 0 at theory)"),
    R("Def 4.5", "feature learning = single-view points still classified correctly",
      claims=("mm.erm_one", "mm.midpoint_all_both", "mm.mixup_all_both"),
      reason=f"the measurement of the §4 claims; the probe is tested on a planted model in {_TEST}"),
    R("Thm 4.6", "ERM: perfect training accuracy, exactly one feature for (1 − o(1))k classes",
      claims=("mm.train_acc", "mm.erm_one", "mm.erm_one_long", "mm.separation", "mm.phase_erm_falls_with_d",
              "mm.phase_midpoint_advantage"),
      reason="'for all t = O(poly(k))': mm.erm_one_long trains ERM on to long_steps (1.5× at quick, 10× at paper)"),
    R("Thm 4.7", "Midpoint Mixup: perfect training accuracy, both features for every class",
      claims=("mm.train_acc", "mm.midpoint_all_both", "mm.midpoint_exact", "mm.separation",
              "mm.midpoint_both_long", "mm.phase_midpoint_advantage", "mm.phase_midpoint_theory_noise"),
      reason="'for all t = O(poly(k))': mm.midpoint_both_long trains Midpoint on and checks every later probe"),
    R("Remark 4.8", "the separation concerns features, not test accuracy on D",
      reason="interpretation, nothing to measure; its reading (spurious training features) is §5's benchmark"),
    R("Fig 1", "the spurious-channel data modification", reason="a visualisation: drawn (fig1_*), nothing to judge"),
    R("Fig 2", "test error per epoch, Uniform / Midpoint Mixup / ERM", claims=_BELOW,
      reason="drawn per epoch (fig2_*); the claims judge the final epoch"),
    R("Table 1", "final test errors on FMNIST, CIFAR-10, CIFAR-100", claims=_BELOW + _TABLE1,
      reason="the GPU presets (ResNet-18, 100 epochs) were never run here"),
    R("App. A (Props A.1–A.3, Cor A.5, Calcs A.6–A.10)", "concentration tools and gradient calculations",
      reason="proof tools, constants only; the gradient formulas are exercised by the all-pairs loss tests"),
    R("Cor B.18", "Midpoint Mixup: off-diagonal correlations <w_{y,r}, v_{s,ℓ}> = O(max diagonal / k) from T_A on",
      claims=("mm.offdiag_b18",),
      reason="fails at quick (mm-multiview): off-diagonal maxima are of the diagonals' order, not 1/k of them "
             "(docs/midpoint-mixup.md)"),
    R("App. B (Claims B.1–B.28, Cors B.3–B.26, Lemma B.11)", "proof steps of Thms 4.6/4.7",
      reason="regime not reached (d = k^20, α = 8); Cor B.18 has its own row (mm.offdiag_b18)"),
])

# import order = registration order = catalogue order: not sorted
# isort: off
from . import multiview, linear  # noqa: E402,F401  (registers mm-multiview, then mm-linear: keep this order)
from . import spurious  # noqa: E402,F401
from . import phase  # noqa: E402,F401  (mm-phase)
# isort: on
from .spurious_data import SpuriousChannels  # noqa: E402

__all__ = ["SpuriousChannels"]
