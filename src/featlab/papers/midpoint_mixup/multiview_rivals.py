"""mm-multiview's rival nets (mechanism controls) and sanity controls, with the paper's reason for every exemption.

The sanity control ``lambda-endpoints`` (λ ∈ {0, 1}: the mixing removed, ERM through the same all-pairs code) is
not a rival: it fails the Midpoint/Mixup claims by construction (issue 46).

A rival changes one config knob whose default is the paper's behaviour, trains to the same training (or clean test)
accuracy as the paper's nets, and must FAIL the claims whose statement needs the mechanism it removes
(runs/discrimination.py). The battery:

* ``label-smoothing``, ``same-class``, ``input-noise`` (rival_losses.py): the mixing methods' objective replaced by
  another mechanism that keeps one trait of the mixing (its soft labels; its mixed inputs within a class; its input
  perturbation at its scale) and drops the cross-class midpoints Thm 4.7's proof runs on — must fail the
  Midpoint/Mixup claims;
* ``relu``: the polynomial part of ReLU~ removed (α = 1), the regime where §3 says ERM learns both features;
* ``small-d``: init correlations near ρ (Assumption 4.3's d = Ω(k^20) removed): no init gap for ERM to amplify;
* ``mixup-for-erm``: ERM's objective replaced by Beta(a, a) Mixup (§5: Mixup learns all features) — the mirror of
  ``lambda-endpoints``, and the only place a Mixup net is a rival here (below);
* ``label-noise``: Def 4.1's labels removed for 5 % of points: class-y neurons must correlate with other classes'
  features, which Cor B.18 rules out.

No Mixup rival in **Midpoint's** place: the claims of this experiment never set Midpoint Mixup against standard
Mixup. Thm 4.7 is proved for Midpoint only, but the paper nowhere says Beta(a, a) Mixup fails to learn both features
— §5 (Table 1) finds Uniform Mixup at least as good, which mm.mixup_all_both states — so a Mixup-trained net in
Midpoint's place is not a net the theory says must fail any claim here. Where the paper does separate them (Prop 3.3:
Beta Mixup keeps a gap above inf J_M; Lemma 3.2: Midpoint reaches it) is mm-linear's, whose point-mass-half control
is that contrast.

Tried and not declared: half (or all) of the training points reduced to one view (Def 4.5's x'), where fitting
needs both features: at quick ERM does not fit them (train accuracy 0.94 with half, 0.74 with all single-view; some
class has every neuron's correlation with a feature negative, a dead feature no gradient revives), a failed rival.
"""

from __future__ import annotations

from ...runs.claims import Claim, Control

# the device check's sizes: the experiment's tiny samples pairs; these take the exact all-pairs losses (Eqs.
# 2.2/3.1: Midpoint, Beta and λ ∈ {0, 1} Mixup), the torch reference kernel there as on a GPU
ALL_PAIRS = {"pairs": "all"}

ERM_CLAIMS = ("mm.erm_one", "mm.erm_one_long", "mm.separation")  # need ERM's winner-take-all (Thm 4.6)
MID_CLAIMS = ("mm.midpoint_all_both", "mm.midpoint_exact", "mm.midpoint_both_long")  # need the mixing (Thm 4.7)

# --- the paper's reasons a rival need not fail a claim
MIDPOINT_KEPT = ("Thm 4.7: Midpoint Mixup learns both features for every class, and its mechanism (App. B.2 Part II: "
                 "a gradient lower bound from the cross-class midpoints, set by the separation of the two "
                 "correlations and the variance of the β's, Prop 3.4 in §3's linear case) is left intact by this "
                 "rival, so the theory says it still learns both")
MIXUP_KEPT = ("§5 (Table 1) reads Uniform Mixup as learning all features like Midpoint Mixup; the paper ties that "
              "to the mixing, which this rival leaves intact, so it gives no reason Mixup stops learning both")
B18_NO_CLAIM = ("Cor B.18 is proved for Midpoint Mixup under Assumption 4.3 from Def 4.1's labels (B.21/B.22: the "
                "off-diagonal updates come from noise patches only); this rival keeps Midpoint's objective and "
                "Def 4.1's labels, and the paper states neither the bound nor its failure for it")


def _midpoint_exempt(why: str = MIDPOINT_KEPT, b18: bool = True) -> dict[str, str]:
    """The Midpoint/Mixup claims a rival that leaves the mixing intact need not fail (``b18``: Cor B.18's too)."""
    out = {c: why for c in MID_CLAIMS} | {"mm.mixup_all_both": MIXUP_KEPT}
    return out | {"mm.offdiag_b18": B18_NO_CLAIM} if b18 else out


MIXING_CLAIMS = (*MID_CLAIMS, "mm.separation", "mm.mixup_all_both")
MIXING_PREMISE = ("the cross-class mixed inputs of Midpoint Mixup (Eq. 3.1) and Mixup (Eq. 2.2): Thm 4.7's gradient "
                  "lower bound on a class's second feature comes from the midpoints of points of different classes "
                  "(App. B.2 Part II; Prop 3.4 in §3's linear case)")
_WHY_FAIL = ("; both learn one feature per class as ERM does (Thm 4.6's winner-take-all: once a class's first "
             "feature fits its points the gradient on its second vanishes, Claims B.6/B.7, and no cross-class "
             "midpoint keeps it alive), so Midpoint's lead over ERM must vanish, while fitting every point")
MIXING_RIVALS = (
    ("label-smoothing", "the methods 'midpoint' and 'mixup' trained as ERM (Eq. 2.1) on one-hot labels smoothed by "
     "the mixing's expected off-label mass ε = ½·P(y_j ≠ y_i) (≈ 0.45 at k = 10; rival_losses.py): the soft labels "
     "without the mixed inputs" + _WHY_FAIL,
     "Claims B.4/B.7 (proof of Thm 4.6): on the N points themselves, as under ERM, the off-diagonal correlations "
     "stay near their init while the diagonal ones grow; the smoothed labels' off-label gradient is spread evenly "
     "over the other classes' outputs and the paper states neither Cor B.18's bound nor its failure for it"),
    ("same-class", "the methods 'midpoint' (λ = ½) and 'mixup' (λ ~ Beta(a, a)) mixing only pairs of one class, "
     "over all such pairs (rival_losses.py): mixed inputs, but no cross-class label or midpoint; a same-class "
     "midpoint is another point of that class (Def 4.1's β's averaged)" + _WHY_FAIL,
     "Cor B.18's proof separates Midpoint's off-diagonal updates (noise patches) from its diagonal ones (signal); "
     "same-class midpoints carry the same two kinds of patch, and the paper states neither the bound nor its "
     "failure for them"),
    ("input-noise", "the methods 'midpoint' and 'mixup' trained as ERM on inputs perturbed each step by Gaussian "
     "noise in the feature span at the mixing's scale (the mean square of the displacement (1 − λ)(x_j − x_i); "
     "rival_losses.py): perturbed inputs with one-hot labels" + _WHY_FAIL,
     "isotropic noise moves every correlation, off-diagonal ones included, by zero-mean steps; the paper states "
     "neither Cor B.18's bound nor its failure for noise augmentation"),
)


def _erm_kept(b18: str) -> dict[str, str]:
    """The claims a rival in the mixing methods' place need not fail: ERM's (trained as in the paper) and B.18."""
    kept = ("Thm 4.6 (2): the rival leaves ERM as it is, and ERM learns exactly one feature for (1 − o(1))k "
            "classes: the theory says it holds here")
    return {"mm.erm_one": kept, "mm.erm_one_long": kept + " ('for all t = O(poly(k))')", "mm.offdiag_b18": b18}


def controls(claims: list[Claim]) -> list[Control]:
    counted = tuple(c.id for c in claims if c.kind == "claim")
    erm_trained = ("erm.train_acc", "midpoint.train_acc")  # the two nets its targets compare (separation)
    return [
        Control("untrained", {"steps": 1, "long_steps": 2}, "one GD step from the N(0, I/d) init (two for the "
                "'trained on' claims): no feature is learned by any method and the training points are not fitted",
                claims=(*counted, "mm.train_acc"), tiny=ALL_PAIRS),  # the Prop 4.4 check is about the data
        Control("prop44-few-patches", {"prop44_P": 20}, "App. C.3's construction with P = 20 = 2k patches: the "
                "summed noise (P − 2)·k^-1.5 = 0.57 no longer outweighs the signal δ2/2 = 1 (Prop 4.4's Pδ3 ≫ δ2), "
                "and a linear h fits every point (margin 1)", claims=("mm.prop44_not_linear",)),
        # a sanity control, not a rival: λ ∈ {0, 1} makes the objective ERM's by construction (issue 46)
        Control("lambda-endpoints", {"mix_lam": "endpoints"},
                "Midpoint Mixup and Mixup through the same all-pairs code with λ ∈ {0, 1} (½ each): every mixed "
                "point is one of its pair, so the objective is ERM's (Eq. 2.1) by construction and both should learn "
                "one feature per class like ERM (Thm 4.6): a sanity check that the mixing claims are not vacuous",
                claims=(*MID_CLAIMS, "mm.separation", "mm.mixup_all_both"), tiny=ALL_PAIRS),
        *(Control(name, {"mix_rival": name}, why, claims=MIXING_CLAIMS, premise=MIXING_PREMISE,
                  trained=("midpoint.train_acc", "mixup.train_acc"), exempt=_erm_kept(b18))
          for name, why, b18 in MIXING_RIVALS),
        Control("relu", {"alpha": 1.0},
                "α = 1: ReLU~ is the ReLU, linear on its active side, so nothing amplifies the init gap between a "
                "class's two correlations (Thm 4.6's proof sketch: 'amplified ... due to the polynomial part of "
                "ReLU~'); each grows at the rate of its mean coefficient, equal for the two features (β symmetric, "
                "Def 4.1), and on these linearly separable data ERM learns both (§3: ERM's failure 'does not "
                "naturally occur' for linear models on linearly separable data), while fitting every point",
                claims=ERM_CLAIMS,
                premise="ReLU~'s polynomial part (Def 4.2, α = 8 in Assumption 4.3), which amplifies the init gap",
                trained=erm_trained, exempt=_midpoint_exempt() | {"mm.offdiag_b18": (
                    "Cor B.18 is proved at α = 8 (Assumption 4.3); the paper states neither the bound nor its "
                    "failure for the ReLU, so the theory does not say this rival fails it")}),
        Control("small-d", {"d": 1000},
                "d = 10³: the init correlations (≈ √(2 log km)/√d = 0.09) start at ρ = 0.1, at the edge of ReLU~'s "
                "linear part, so the polynomial part never amplifies the init gap between a class's two features "
                "and ERM learns both for most classes while fitting every point",
                claims=ERM_CLAIMS,
                premise="d = Ω(k^20) (Assumption 4.3): init correlations ≪ ρ, which Thm 4.6's winner-take-all needs",
                trained=erm_trained, exempt=_midpoint_exempt() | {"mm.offdiag_b18": (
                    "Cor B.18 compares Midpoint's off-diagonal updates (noise coefficients δ3, δ4) with its diagonal "
                    "ones (signal δ1, δ2), a ratio d does not enter; a smaller d only raises every correlation's "
                    "start to O(1/√d), and the paper gives no reason the bound fails")}),
        Control("mixup-for-erm", {"erm_objective": "mixup"},
                "the method 'erm' trained by Beta(a, a) Mixup over all pairs (Eq. 2.2), everything else as the "
                "paper's ERM: §5 expects Mixup 'to learn all such latent features associated with each class' (and "
                "mm.mixup_all_both states it), so this net, which fits every point, must not learn exactly one "
                "feature per class, and Midpoint's lead over it must vanish",
                claims=ERM_CLAIMS,
                premise="ERM's objective (Eq. 2.1), whose gradient on a class's second feature vanishes once the "
                        "first fits its points (Thm 4.6's proof, Claims B.6/B.7)",
                trained=erm_trained, exempt=_midpoint_exempt(
                    "Thm 4.7: the rival changes only the objective of the method 'erm'; Midpoint Mixup is trained as "
                    "in the paper, and the theory says it learns both features")
                | {"mm.mixup_all_both": "the method 'mixup' is trained as in the paper (§5: it learns both)",
                   "mm.offdiag_b18": "the rival changes only the objective of the method 'erm'; Cor B.18 is about "
                   "Midpoint Mixup, trained as in the paper"}),
        Control("label-noise", {"label_noise": 0.05},
                "a twentieth of the training labels replaced by a random other class: Midpoint Mixup's class-y "
                "neurons must correlate with the flipped points' own class features, with signal-sized "
                "coefficients (off-diagonal correlations of the diagonal's order, not 1/k of it), while the clean "
                "test accuracy stays (no net of this form fits the flipped points, so the training accuracy is not "
                "the trained metric, and mm.train_acc is a premise, not a target)",
                claims=("mm.offdiag_b18",),
                premise="Def 4.1's labels (y is the class of the point's signal features), on which Cor B.18's "
                        "proof (B.21/B.22: off-diagonal updates from noise patches only) rests",
                trained=("midpoint.test_acc",), exempt=_midpoint_exempt(
                    "Thm 4.7's mechanism (App. B.2 Part II) runs on the cross-class midpoints of the correctly "
                    "labelled points, 95 % of them; the paper gives no reason 5 % flipped labels stop Midpoint "
                    "learning both features", b18=False) | {
                    "mm.erm_one": "Thm 4.6's winner-take-all acts on each class's correctly labelled points; a "
                    "flipped point pushes its labelled class toward another class's features, not its own second "
                    "feature, and the paper gives no reason ERM then learns both",
                    "mm.erm_one_long": "as for mm.erm_one (Thm 4.6, 'for all t = O(poly(k))')",
                    "mm.separation": "ERM's and Midpoint's mechanisms both stay (Thms 4.6/4.7 on the clean 95 %), "
                    "so the paper gives no reason their contrast vanishes"}),
    ]
