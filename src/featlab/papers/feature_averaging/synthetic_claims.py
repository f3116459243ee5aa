"""fa-synthetic's claims, controls and assumptions, and the judging of its measurements (see synthetic.py).

Sampling units: clean accuracy per test point (pooled over seeds); the alignment statistics, the Thm 4.6 bound
and the critical radii per seed (each is a statistic of one trained net); Lemmas 5.3 and 5.5 quantify over every
training point (and every probed step) of every seed, so their verdicts are exact for the run.
"""

from __future__ import annotations

import math

import torch

from ...probes.robustness import critical_radius
from ...runs.claims import AtLeast, AtMost, Claim, Control, Within
from ...runs.uncertainty import Bracket
from . import assumptions

# Fig 3 (left), read off the paper's figure (±1 point): robust accuracy (%) at these radii.
PAPER_FIG3_RADII = [0, 10, 12, 14, 16, 18, 20, 22, 24, 32, 34, 36, 38, 40, 42, 44, 46]
PAPER_FIG3_BINARY = [100, 100, 99.8, 90.1, 31.6, 3.3, 1.1, 0.3, 0, 0, 0, 0, 0, 0, 0, 0, 0]
PAPER_FIG3_KCLASS = [100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 99.4, 85.9, 35.3, 14.9, 3.7, 0.5, 0]
CONVERGED = 0.01  # the convergence check's largest drop of robust accuracy (accuracy units) that counts as converged

CLAIMS = [
    Claim("fa.binary_clean", "binary net: clean test accuracy", "Thm 4.5 (1)", AtLeast(lo=0.99),
          why="the theorem gives clean accuracy 1 − exp(−Ω(log² d))", kind="premise"),
    Claim("fa.kclass_clean", "{k}-class net, binary read-out: clean test accuracy", "Thm 4.7 (1)",
          AtLeast(lo=0.99), why="the theorem gives clean accuracy 1 − exp(−Ω(log² d)) for the binary read-out",
          kind="premise"),
    Claim("fa.binary_in_class", "binary net averages: in-class cos(μ_j, w) ≈ that of Σ_{J_s}μ_j", "Thm 4.5 (2)",
          Within(lo=0.85, hi=1.05, of="cos(μ_j, Σ_{J_s}μ_j)"),
          why="w ≈ λΣ_{J_s}μ_j/d up to o(d^−1/2); at d = 3072 each neuron's noise part (≈ 13 % of its norm, "
              "binary.fa_rel_residual) lowers the cosine by about that much and never raises it"),
    Claim("fa.binary_learned_in_class", "what GD learned averages: in-class cos(μ_j, w − w⁰) ≈ that of Σ_{J_s}μ_j",
          "Thm 4.5 (2), Lemma 5.1", Within(lo=0.85, hi=1.05, of="cos(μ_j, Σ_{J_s}μ_j)"),
          why="read on the learned part w − w⁰ of Lemma 5.1's decomposition (w = w⁰ + Σ_j λ_j μ_j/‖μ_j‖² + noise "
              "part): Thm 4.5 (2) is about the weights GD learns from a small init, where w ≈ w − w⁰; for a net "
              "started large, the learned part is what the theorem's mechanism is about. The band is "
              "fa.binary_in_class's (the noise part lowers the cosine by ≈ 13 % at d = 3072)"),
    Claim("fa.binary_off_class", "binary net: off-class max |cos(μ_j, w)| small next to the in-class alignment",
          "Thm 4.5 (2)", AtMost(hi=0.25, of="in-class mean cos"),
          why="opposite-class coefficients are ≤ kε while in-class ones are Θ(1): at most a quarter of the in-class "
              "mean cosine. Relative, because random unit vectors at d = 3072 already have max |cos| ≈ 0.05, so an "
              "absolute 0.1 held for untrained nets"),
    Claim("fa.kclass_diag", "{k}-class net decouples: cos(μ_j, w_j) ≈ 1", "Thm 4.7 (2)", AtLeast(lo=0.9),
          why="w_j ≈ λμ_j/d gives cosine 1 in the limit; a neuron's ≈ 13 % noise part allows ≈ 1 − 0.13²/2"),
    Claim("fa.kclass_offdiag", "{k}-class net: off-diagonal max |cos(μ_i, w_j)| small next to the diagonal",
          "Thm 4.7 (2)", AtMost(hi=0.1, of="diagonal mean cos"),
          why="w_j ≈ λμ_j/d is orthogonal to the other centres in the limit; a tenth of the diagonal leaves room for "
              "the noise part. Relative, because an absolute 0.1 held for untrained nets (random |cos| ≈ 0.05)"),
    Claim("fa.lemma55_all_active", "every training point activates all m neurons of its class: share of training "
          "points, worst seed", "Lemma 5.5", AtLeast(lo=1),
          why="Lemma 5.5 states S_{y_i,i} = [m] for every training point i; at init each neuron is active on about "
              "half the points, so about 2^−m of them activate all",
          exact="a 'for all' over every training point of every seed (the worst seed's share)"),
    Claim("fa.lemma53_balanced", "binary net's training margins stay balanced: max_{i,j} q_i − q_j over every "
          "probed step t ≥ 1 of the run (T = {T}) and of the longer run (η = {long_eta}, {long_T} steps), worst seed",
          "Lemma 5.3",
          AtMost(hi=round(math.log(2), 4)),
          why="the lemma gives Δq ≤ ε(k) → 0 with no finite-k constant (its proof's 65ε is ≈ 4·10³ at d = 3072, "
              "vacuous). Its use (eq. 6) is that every training point's loss derivative ℓ'_i ≈ e^{−q_i} pulls equally: "
              "Δq ≤ ln 2 keeps every ratio ℓ'_j/ℓ'_i within a factor 2, the loosest reading in which the margins "
              "are still balanced rather than merely of the same order. A measurement, not a verdict (issue 32): "
              "the paper gives no finite-k number, and ln 2 was registered 0.012 above the 0.681 then measured",
          kind="measurement",
          exact="a 'for all' over every pair of training points, every probed step of both binary runs and every "
                "seed of the run"),
    Claim("fa.lambda_log", "binary net's in-class coefficients grow like log(ηt) on a longer run (η = {long_eta}, "
          "{long_T} steps): worst distance inside Lemma B.23's band ln(ηt)/4 ≤ λ_{s,r,j}(t) ≤ 4 ln(t+1) over every "
          "probed t with ηt ≥ 1", "Lemma B.23 (§5: λ ≈ log(ηt))", AtLeast(lo=0),
          why="the band is the paper's own, with its constants (Lemma B.23, for every t up to T0); λ_{s,r,j} = "
              "<w_{s,r}, μ_j> (Lemma B.11). Measured from ηt = 1 on, where the band's lower side is ≥ 0",
          exact="a 'for all' over every probed step with ηt ≥ 1, every neuron, every cluster of its class and every "
                "seed of the run"),
    Claim("fa.thm46", "binary net ≈ C·f_FA on the sphere ‖x‖=√d: sound upper bound U on the sup-gap / "
          "sup|C f_FA|", "Thm 4.6",
          AtMost(hi=0.5), why="the theorem gives o(1) with no constant, so no finite-d number exists; 0.5 is where "
          "the statement keeps its content: below it f has the sign of C·f_FA wherever |C·f_FA| exceeds half its "
          "sup, so the averaged network decides those predictions. Fixed from that reading, not from a run. Judged "
          "on the proof's bound U = Σ_s (1/m) Σ_r (√d‖w_{s,r} − λv_s‖ + |b_{s,r}|) ≥ the sup (binary.thm46_bound), "
          "the side hardest to pass; the gradient-ascent lower estimate (binary.thm46_relative) is reported beside "
          "it, and estimate ≤ U is a test. A measurement, not a verdict (issue 32): the bar was moved from 0.2 to "
          "0.5 after 0.175 was measured, and the paper gives no number to restore", kind="measurement"),
    Claim("fa.binary_breaks", "binary net's robust accuracy (exact: certified = attacked) falls below 50% "
          "near √(d/k)", "Thm 4.5 (3)",
          Within(lo=0.6, hi=1.14, of="√(d/k)"),
          why="the exact f_FA flips at √(d/k) along the averaged direction (derived; the paper's sufficient radius "
              "2(1+c)√(d/k) is loose); the paper's Fig 3 crosses 50 % at ≈ 0.88·√(d/k). Upper edge derived, not "
              "measured: a decoupled net read out by f's plain sum (neuron (s, r) ∝ one centre μ_j of J_s, zero "
              "bias) flips a point of cluster i at min ‖δ‖ s.t. a + |J−y|·b = √d, δ = −aμ_i/√d + bΣ_{J−y}μ_l/√d, i.e. "
              "a = b = √d/(1 + |J−y|), ‖δ‖ = √(d/(1 + |J−y|)) = 1.29·√(d/k) at k = 10; 1.14 ≈ √1.29 is the "
              "geometric midpoint of averaging's 1.0 and that 1.29, so the band tells the two apart"),
    Claim("fa.binary_breaks_direction", "binary net's exact minimal perturbation δ* points along the averaged "
          "direction: mean cos(δ*, −y(Σ_{J+}μ_j − Σ_{J−}μ_j)) over the resolved test points",
          "Thm 4.5 (3) (abstract: 'an attack that aligns with the negative direction of the averaged features')",
          AtLeast(lo=0.89),
          why="derived, not measured: for f_FA = ReLU(<Σ_{J+}μ, x>) − ReLU(<Σ_{J−}μ, x>) the minimal flip of a "
              "point of cluster i ∈ J_y moves a along −yΣ_{J_y}μ/‖·‖ and b along yΣ_{J−y}μ/‖·‖ with a + b = √(2d/k) "
              "(‖Σ_{J_s}μ‖ = √(kd/2)), minimised at a = b: δ* ∥ −y(Σ_{J+}μ − Σ_{J−}μ), cos 1. A decoupled net read "
              "out by f's plain sum moves along −μ_i + Σ_{J−y}μ_l (fa.binary_breaks' derivation): cos = "
              "(1 + |J−y|)d/(√((1 + |J−y|)d)·√(kd)) = √((1 + k/2)/k) = 0.775 at k = 10. 0.89 is the midpoint "
              "(1 + 0.775)/2; the lazy net's δ* switches its random init's neurons off, along no centre (cos ≈ 0)"),
    Claim("fa.kclass_holds", "{k}-class net's robust accuracy (interval: certified bound to the attack ensemble) "
          "holds to ≈ √(d/2)", "Thm 4.7 (3)",
          Within(lo=0.86, hi=1.2, of="√(d/2)"),
          why="the cheapest flip moves x to the midpoint of μ_j and a μ_l of the other class: ‖ρ‖ = √(d/2); the "
              "paper's Fig 3 crosses 50 % at ≈ 0.96·√(d/2). Lower edge derived from Prop 4.8, not from a run of the "
              "paper's net: its fine-label network f_j = ReLU(<μ_j + Σ_{J_s}μ_l, x>) flips x = μ_i when the own "
              "logit 2d falls to the other class's, moving t along −Σ_{J_s}μ and t' along Σ_{J−s}μ (each logit "
              "moves (|J_s| + 1)√(d/|J_s|) per unit), t + t' = 2√(|J_s|d)/(|J_s| + 1), minimal at t = t': "
              "2√|J_s|/(|J_s| + 1)·√(d/2) = 0.745·√(d/2) at k = 10; 0.86 ≈ √0.745 is the geometric midpoint of that "
              "and the decoupled net's 1.0, so the band tells the robust solution GD finds from the non-robust one "
              "fine labels also fit"),
]

# the rivals that change the binary net leave the k-class net as the paper trains it
_KCLASS_NET = {c: "the rival changes the binary net only; the k-class net is trained as in the paper (Thm 4.7 is "
               "about that net, and must hold there)"
               for c in ("fa.kclass_diag", "fa.kclass_offdiag", "fa.kclass_holds")}
_BINARY_NET = {c: "the rival changes the k-class net only; the binary net is trained as in the paper (Thm 4.5 and "
               "Lemmas 5.5, B.23 are about that net, and must hold there)"
               for c in ("fa.binary_in_class", "fa.binary_learned_in_class", "fa.binary_off_class",
                         "fa.lemma55_all_active", "fa.lambda_log", "fa.binary_breaks", "fa.binary_breaks_direction")}
# Thm D.3's decoupled network (w_{s,j} = μ_j, j ∈ J_s) and Thm 4.7's (w_j ≈ λμ_j/d) have zero off-class coefficients
_OFF_CLASS = ("Thm 4.5 (2)'s off-class smallness is shared by the decoupled solutions: Thm D.3's network (w_{s,j} = "
              "μ_j for j ∈ J_s) and Thm 4.7 (2)'s (w_j ≈ λμ_j/d) are orthogonal to every centre of the other class, so "
              "the paper's theory does not say a decoupled binary net fails it")
# σ = 1e-3 is Fig 7's ablation: measured, it is the averaging mechanism plus a frozen random init (issue 45)
_FIG7 = ("σ = 1e-3 is the averaging mechanism plus a frozen random init, measured: its learned in-class λ is 1.650 "
         "against 1.680 at σ = 1e-5 (fa-ablation-init, paper preset), the cosine of its learned part w − w⁰ 0.435 "
         "against 0.444 (independent numpy GD, 2 seeds), and ‖w⁰‖ = 0.055 next to the learned 0.067 predicts its "
         "cos(μ, w) = 0.344 (0.341 measured). Fig 7 shows the in-class cosine blocks fading there; it says nothing "
         "about this claim, which the averaging mechanism still gives")
_LINEAR_ROBUST = ("linear logistic regression's GD direction, and its max-margin direction, is Σ_{J+}μ − Σ_{J−}μ: it "
                  "breaks every point at exactly √(d/k) = |<v, x>|/‖v‖ along the averaged direction, like f_FA (a "
                  "reference, not a must-fail: the radius and direction of Thm 4.5 (3) alone cannot attribute the "
                  "non-robustness to the ReLU net; its averaged neurons, fa.binary_in_class, can)")
CONTROLS = [
    # Not fa.lambda_log nor fa.lemma53_balanced: they read the longer run, skipped here (long_T = 0) — training it
    # would make this sanity control the suite's longest; their mechanism controls are below.
    Control("untrained", {"T": 0, "long_T": 0}, "T = 0: the networks at their random init (σ = 1e-5), same data "
            "and measurements (no longer run)",
            claims=tuple(c.id for c in CLAIMS if c.id not in ("fa.lambda_log", "fa.lemma53_balanced",
                                                              "fa.binary_learned_in_class"))),
    Control("large-init", {"sigma_w": 1e-3, "sigma_b": 1e-3},
            "Fig 7's ablation, σ_w = σ_b = 1e-3: the nets still classify and still average (their learned parts do), "
            "but the frozen random init dilutes cos(μ, w), so Fig 7 shows no averaging on w: judged only on the "
            "cosine claims on w that Fig 7 reads (the binary net's in-class blocks and the k-class diagonal)",
            claims=("fa.binary_in_class", "fa.kclass_diag"),
            exempt={c: _FIG7 for c in ("fa.binary_learned_in_class", "fa.binary_off_class", "fa.kclass_offdiag",
                                       "fa.lemma55_all_active", "fa.lambda_log", "fa.binary_breaks",
                                       "fa.binary_breaks_direction", "fa.kclass_holds")},
            premise="small initialization, Assumption A.4: σ_w² = σ_b² ≤ ηk⁻⁵ (1e-6 against 1e-8 here)",
            trained=("binary.clean_acc", "multiclass.clean_acc")),
    Control("lazy", {"init": "lazy"},
            "a truly lazy binary net: the paper's architecture, η and T, from a large init σ_w = σ_b = lazy_scale/√d "
            "(‖w⁰‖ ≈ 30) with neurons (+, r) and (−, r) started at the same w⁰, b⁰, so f₀ ≡ 0: GD moves W by a small "
            "fraction of ‖W(0)‖ (binary.learned_norm_ratio) and barely flips an activation pattern "
            "(binary.patterns_flipped): the kernel regime, where each neuron stays active on a random half of every "
            "cluster, of both classes. It classifies by a linearised net, not by averaging: Lemma 5.5 (every point "
            "activates all its class's neurons), Lemma B.23 (every in-class λ ≥ ln(ηt)/4: a neuron active on few "
            "points of a cluster learns little of it), the averaging of w and of w − w⁰ (its off-class learned "
            "coefficients ≈ −in-class), and the averaged direction of the break must fail",
            claims=("fa.binary_in_class", "fa.binary_learned_in_class", "fa.binary_off_class",
                    "fa.lemma55_all_active", "fa.lambda_log", "fa.thm46", "fa.binary_breaks",
                    "fa.binary_breaks_direction"),
            exempt=dict(_KCLASS_NET),
            premise="GD from a small init in the feature-learning regime (Assumption A.4, Remark 4.4: 'the "
                    "initialization magnitude σ_w, σ_b sufficiently small, which helps the network to be trained in "
                    "the feature learning regime')",
            trained=("binary.clean_acc",), margin=0.01),  # its train_acc is in its record: 0.98 at d = 1024, n = 400
    Control("decoupled-init", {"init": "decoupled"},
            "the binary net starts at Thm D.3's robust decoupled network (each neuron one centre of its class, bias "
            "−αd/2) plus the small init: it classifies from step 0 and GD keeps it there, so the binary labels and "
            "training are the paper's but GD never starts near 0 and never averages. The binary claims that follow "
            "from the small-init dynamics must fail",
            exempt={**_KCLASS_NET, "fa.binary_off_class": _OFF_CLASS,
                    "fa.binary_learned_in_class": "GD learns almost nothing from Thm D.3's start (its loss is ≈ "
                    "e^{−d/(2m)} at step 0): the learned part is float noise, with no direction to judge"},
            premise="GD from a small init (Assumption A.4; the proof of Thm 4.5 starts at w ≈ 0, Remark 5.6)",
            trained=("binary.clean_acc",)),
    Control("prop48-start", {"kclass_init": "prop48"},
            "the k-class net starts at Prop 4.8's non-robust network f_j(x) = ReLU(<μ_j + Σ_{l∈J_s}μ_l, x>) (plus "
            "the small init), which fits the fine labels (loss exp(−Ω(d))) with averaged features; GD at the "
            "paper's η and T on the same cross-entropy. §4.2's 'convergence to robust networks requires implicit "
            "bias': fine labels alone do not decouple, GD from a small init does; from this start it has nothing "
            "to learn, so the decoupling and the robustness of Thm 4.7 (2), (3) must fail",
            claims=("fa.kclass_diag", "fa.kclass_offdiag", "fa.kclass_holds"),
            exempt=dict(_BINARY_NET),
            premise="GD's implicit bias from a small init (§4.2, 'Convergence to Robust Networks Requires Implicit "
                    "Bias'; Prop 4.8: a fine-label solution that is not Ω(√(d/k))-robust exists)",
            trained=("multiclass.clean_acc", "multiclass.train_acc_kclass"), margin=0.01),
    Control("linear-logistic", {"binary_model": "linear"},
            "linear logistic regression f(x) = <v, x> + c on the binary labels, by GD on the same loss and data at "
            "the paper's η and T (held as the binary net with tied neurons, so every probe and attack reads it): a "
            "classifier with no hidden neurons to average. Its weight is one direction Σ_{J+}μ − Σ_{J−}μ for both "
            "classes, so the alignment claims must fail (cos(μ_j, v) = 1/√k, 0.71 of the averaging solution's, and "
            "off-class coefficients as large as in-class ones); its breaking radius is the reference of Thm 4.5 (3)",
            claims=("fa.binary_in_class", "fa.binary_learned_in_class", "fa.binary_off_class"),
            exempt={**_KCLASS_NET, "fa.binary_breaks": _LINEAR_ROBUST, "fa.binary_breaks_direction": _LINEAR_ROBUST,
                    "fa.lemma55_all_active": "its tied neurons ReLU(<v, x> + c) and ReLU(−<v, x> − c) are active "
                    "exactly on the points it classifies correctly: Lemma 5.5 follows from training accuracy for a "
                    "linear model, and the paper says nothing of it",
                    "fa.lambda_log": "linear logistic regression's coefficients also grow like log t on separable "
                    "data (Soudry et al. 2018, the implicit-bias results the paper builds on, §2): Lemma B.23's band "
                    "does not need the ReLU net"},
            premise="a two-layer ReLU net whose neurons learn features (§3.2): the binary labels alone, learnt by a "
                    "linear model",
            trained=("binary.clean_acc", "binary.train_acc"), margin=0.01),
    Control("shuffled-fine-labels", {"labels": "shuffled-in-class"},
            "each training point's fine label re-assigned to a random cluster of its own coarse class: the labels "
            "still give the binary label (the binary read-out still classifies), but no longer name the cluster, "
            "so there is nothing to decouple: each class's neurons see every cluster of their class",
            exempt={c: "the rival changes the fine labels only: the binary net and its labels are the paper's (Thm "
                    "4.5 is about that net)"
                    for c in ("fa.binary_in_class", "fa.binary_learned_in_class", "fa.binary_off_class",
                              "fa.lemma55_all_active", "fa.lemma53_balanced", "fa.lambda_log", "fa.thm46",
                              "fa.binary_breaks", "fa.binary_breaks_direction")},
            premise="fine-grained labels that name the point's cluster (§4.2: ỹ_i = c(i))",
            trained=("multiclass.clean_acc",)),
    Control("fine-binary", {"binary_supervision": "fine"},
            "the paper's binary net (2m neurons with biases, ±1/m read-out), from the same small init at the same η "
            "and T, trained on §4.2's fine-grained supervision (the cross-entropy of the cluster labels, cluster j's "
            "logit the mean activation of its neurons: neuron (s, r) ↔ cluster J_s[r mod |J_s|]), then read out as "
            "f: the paper's own fix (Thm 4.7) on the binary net. It classifies by decoupling, not averaging, so the "
            "averaging claims and the dynamics behind them (Lemma 5.5: every same-class neuron pulled up on every "
            "point of its class by eq. 1's gradient; Lemma B.23: every in-class λ ≥ ln(ηt)/4) must fail: the "
            "cross-entropy pushes a neuron down on the other clusters of its class. Read out by f's plain sum, its "
            "decoupled neurons break at √(d/(1 + |J−y|)) = 1.29·√(d/k) along −μ_i + Σ_{J−y}μ_l (cos 0.775 with the "
            "averaged direction), outside fa.binary_breaks' band and below fa.binary_breaks_direction's cut, both "
            "derived to tell the two apart",
            claims=("fa.binary_in_class", "fa.binary_learned_in_class", "fa.lemma55_all_active", "fa.lambda_log",
                    "fa.thm46", "fa.lemma53_balanced", "fa.binary_breaks", "fa.binary_breaks_direction"),
            exempt={**_KCLASS_NET, "fa.binary_off_class": _OFF_CLASS},
            premise="binary labels only (§3.2, eq. 1: the binary net learns from y alone, with no fine-grained "
                    "supervision, §4.2)",
            trained=("binary.clean_acc",)),
    Control("random-labels", {"labels": "random", "eta": 0.05, "T": 200, "h": 5},
            "every training label (binary and fine) re-drawn at random, independent of the cluster: the nets fit "
            "their training labels, which carry no information on a test point's class. η = 0.05, T = 200 and h = 5 "
            "neurons per class so that both nets fit random labels (at the paper's η = 1e-3, T = 100, h = 1 they "
            "reach 0.70 / 0.49 training accuracy); the claims' premise, not their training, is what is removed",
            claims=("fa.binary_clean", "fa.kclass_clean", "fa.binary_off_class", "fa.lambda_log")),
    # a sanity control, not a rival: it also changes η, T and the width, so its verdicts cannot tell the mechanism
]
ASSUMPTIONS = assumptions.synthetic(theory=True)  # with the theory preset's premises


def _paper_critical_radius(acc_percent: list[float]) -> float:
    """The 50 % radius of one of the paper's Fig 3 (left) curves, interpolated like ours."""
    acc = torch.tensor(acc_percent, dtype=torch.float64, device="cpu")[:, None] / 100
    return float(critical_radius(PAPER_FIG3_RADII, acc))


def margin_spread(result, start: int = 1) -> float:
    """Lemma 5.3: the largest margin gap max_i q_i − min_j q_j over the probed steps ≥ ``start`` and every seed."""
    vals = [v for _, step, name, v in result.records if name.endswith("binary.margin_spread") and step >= start]
    return max(vals) if vals else math.nan


def lambda_band(result, eta: float) -> float:
    """Lemma B.23: the worst distance inside ln(ηt)/4 ≤ λ ≤ 4 ln(t+1) over the probed steps with ηt ≥ 1 (negative:
    outside the band), from the run's per-step smallest and largest in-class λ."""
    lo = {(s, t): v for s, t, name, v in result.records if name.endswith("binary.lambda_in_class_min")}
    hi = {(s, t): v for s, t, name, v in result.records if name.endswith("binary.lambda_in_class_max")}
    gaps = [min(lo[key] - math.log(eta * key[1]) / 4, 4 * math.log(key[1] + 1) - hi[key])
            for key in lo if eta * key[1] >= 1]
    return min(gaps) if gaps else math.nan


def lambda_slope(result, eta: float) -> float:
    """Reported beside fa.lambda_log: the least-squares slope of λ(t) (midpoint of the in-class range, mean over
    seeds) on ln(ηt) over the probed steps with ηt ≥ 1 — §5's λ ≈ log(ηt) has slope 1."""
    mid: dict[int, list[float]] = {}
    for _, t, name, v in result.records:
        if name.endswith(("binary.lambda_in_class_min", "binary.lambda_in_class_max")) and eta * t >= 1:
            mid.setdefault(t, []).append(v)
    if len(mid) < 2:
        return math.nan
    x = [math.log(eta * t) for t in sorted(mid)]
    y = [sum(mid[t]) / len(mid[t]) for t in sorted(mid)]
    xm, ym = sum(x) / len(x), sum(y) / len(y)
    return sum((a - xm) * (b - ym) for a, b in zip(x, y)) / sum((a - xm) ** 2 for a in x)


def _converged(m: dict, net: str) -> bool | None:
    change = m.get(f"{net}.convergence_change")
    return None if change is None else bool(change < CONVERGED)


def judge(ctx, cfg, m: dict, per: dict, bres, long) -> None:
    """The claims of CLAIMS, in their order. ``m``: the measurements ((E,) tensors per seed, or floats), ``per``:
    per-test-point values (E, n_test); ``bres``: the binary net's training record (Lemma 5.3's trajectory);
    ``long``: the longer binary run's (λ(t), Lemma B.23), None when it was not run."""
    paper_ok = (cfg.k, cfg.d) == (10, 3072)
    mean = lambda v: float(v.double().mean()) if isinstance(v, torch.Tensor) else float(v)
    for net, cid in (("binary", "fa.binary_clean"), ("multiclass", "fa.kclass_clean")):
        pts = per[f"{net}.correct"].double().reshape(-1)
        ctx.claim(cid, float(pts.mean()), samples=pts, unit="test points")
    for cid, key, scale in (("fa.binary_in_class", "binary.cos_in_class_mean", "binary.cos_in_class_ideal"),
                            ("fa.binary_learned_in_class", "binary.learned_cos_in_class_mean",
                             "binary.cos_in_class_ideal"),  # Lemma 5.1: on w − w⁰
                            ("fa.binary_off_class", "binary.cos_off_class_max_abs", "binary.cos_in_class_mean"),
                            ("fa.kclass_diag", "multiclass.cos_diag_mean", None),
                            ("fa.kclass_offdiag", "multiclass.cos_offdiag_max_abs", "multiclass.cos_diag_mean")):
        ctx.claim(cid, mean(m[key]), samples=m[key], scale=mean(m[scale]) if scale else None)
    ctx.claim("fa.lemma55_all_active", float(m["binary.lemma55_share_all_active"].min()))
    spread = [margin_spread(r) for r in (bres, long) if r is not None]  # the lemma holds up to T0 ≫ both runs
    ctx.metric("binary.margin_spread_max", spread[0])
    if long is not None:
        ctx.metric("long.binary.margin_spread_max", spread[1])
        ctx.metric("long.binary.lambda_slope", lambda_slope(long, cfg.long_eta))
    ctx.claim("fa.lemma53_balanced", max(spread))
    if long is not None:
        ctx.claim("fa.lambda_log", lambda_band(long, cfg.long_eta))
    if ctx.judges("fa.thm46"):  # under a control that does not judge it, the search is skipped
        ctx.claim("fa.thm46", mean(m["binary.thm46_bound_relative"]), samples=m["binary.thm46_bound_relative"])
    if "binary.min_pert_cos_avgdir" in m:  # Thm 4.5 (3): the direction of the exact minimal perturbation
        cosd = m["binary.min_pert_cos_avgdir"]
        ctx.claim("fa.binary_breaks_direction", mean(cosd), samples=cosd)
    radius = {"binary": ("fa.binary_breaks", "theory.radius_sqrt_d_over_k", PAPER_FIG3_BINARY),
              "multiclass": ("fa.kclass_holds", "theory.radius_sqrt_d_over_2", PAPER_FIG3_KCLASS)}
    for net, (cid, unit, paper) in radius.items():
        if not ctx.judges(cid):  # not attacked under this control
            continue
        r = m[f"{net}.critical_radius"]  # judged on both sides: certified (or exact) below, attacked above
        ctx.claim(cid, mean(r), samples=Bracket(m[f"{net}.critical_radius_certified"], r), scale=m[unit],
                  unit="seeds, certified to attacked", converged=_converged(m, net),
                  paper_value=_paper_critical_radius(paper) if paper_ok else None)
