"""Every numbered result of the Feature Averaging paper and what checks it (the coverage table of docs/claims.md)."""

from ...runs.claims import PaperResult as R

RESULTS = [
    R("Def 3.1", "multi-cluster data: k orthogonal centres ‖μ_j‖ = √d, N(0, σ²I) noise, J± labels",
      reason="the data generator itself; tests/test_nets.py and the alignment tests check its moments"),
    R("Assumptions 3.2, 3.3", "orthogonal centres of equal norm; nearly balanced classes",
      reason="premises, not results: met by every synthetic preset (Fig 9 relaxes 3.2 on purpose), as the "
             "experiments' declared assumptions say"),
    R("Def 4.1", "the feature-averaging network f_FA", claims=("fa.binary_in_class", "fa.thm46"),
      reason="also built exactly (reference.feature_averaging) and tested: cosines 1/√|J_s|"),
    R("Assumption 4.3", "d = Ω(k¹⁰), n = Ω(k⁷), m = Θ(k), η = O(d⁻²), σ_w² = σ_b² ≤ ηk⁻⁵ (A.4)",
      reason="premises, not results: each synthetic experiment declares which of its presets meets each "
             "(assumptions.py; `featlab claims`); d, n and η are met by no preset, m and the init are"),
    R("Thms 4.5/4.7 (time regime)", "T ≥ Ω(1/η) (binary), T ≥ Ω(k⁸/η) (k-class), T ≤ exp(Õ(k^½))",
      reason="a premise, not a result (the row formerly labelled 'Assumption 4.3'): fa-synthetic trains at the "
             "paper's ηT = 0.1, outside both ranges, and declares it (its 'Thm 4.5 (time)', 'Thm 4.7 (time)' "
             "assumptions); only the longer binary run behind fa.lambda_log (ηT = 10) is inside Thm 4.5's"),
    R("Thm 4.5 (1)", "binary net: clean accuracy 1 − o(1)", claims=("fa.binary_clean",)),
    R("Thm 4.5 (2)", "binary net averages: w ≈ λΣ_{J_s}μ_j/d",
      claims=("fa.binary_in_class", "fa.binary_learned_in_class", "fa.binary_off_class",
              "fa.ablation_n.fa_everywhere",
              "fa.ablation_snr.fa_everywhere", "fa.ablation_cosine.fa_everywhere",
              "fa.ablation_cosine.fa_everywhere_perp",
              "fa.phase_cos_everywhere")),
    R("Thm 4.5 (3)", "binary net non-robust at O(√(d/k))", claims=("fa.binary_breaks", "fa.binary_breaks_direction",
                                                                               "fa.phase_binary_exponent")),
    R("Thm 4.6", "binary net ≈ C·f_FA uniformly on the sphere", claims=("fa.thm46", "fa.phase_thm46_falls")),
    R("Thm 4.7 (1)", "k-class net: clean accuracy of the binary read-out", claims=("fa.kclass_clean",)),
    R("Thm 4.7 (2)", "k-class net decouples: w_j ≈ λμ_j/d", claims=("fa.kclass_diag", "fa.kclass_offdiag")),
    R("Thm 4.7 (3)", "k-class net robust to Ω(√d)", claims=("fa.kclass_holds", "fa.phase_kclass_exponent")),
    R("Prop 4.8 / Thm D.4", "a k-class net fitting fine labels yet non-robust",
      reason="a construction, checked by a test (test_prop_4_8_network_fits_fine_labels_but_is_not_robust)"),
    R("Lemma 5.1", "weight decomposition w = w⁰ + Σλμ + Σσξ",
      reason="an identity of GD's span; its coefficients are measured (binary.lambda_*, fa_rel_residual)"),
    R("Lemma 5.2", "coefficient updates", reason="an identity of the GD update; not a measurable statement"),
    R("Lemma 5.3", "training margins stay balanced up to T0", claims=("fa.lemma53_balanced",)),
    R("Lemma 5.5", "every training point activates all its class's neurons up to T0",
      claims=("fa.lemma55_all_active",)),
    R("λ ∝ log(ηt) (§5), Lemma B.23", "the in-class coefficient grows logarithmically in time: "
      "ln(ηt)/4 ≤ λ ≤ 4 ln(t+1)", claims=("fa.lambda_log",)),
    R("Thms D.1, D.2", "f_FA with suitable biases is accurate, and non-robust at Ω(√(d/k))",
      reason="tests on the exact f_FA (test_fa_network_breaks_at_sqrt_d_over_k_along_the_averaged_direction, "
             "test_worst_case_ensemble_breaks_the_fa_network_just_past_sqrt_d_over_k)"),
    R("Thm D.3", "a decoupled network is √d/3-robust",
      reason="a construction, tested (test_decoupled_network_is_robust_at_sqrt_d_over_3)"),
    R("Fig 1", "schematic of averaging vs decoupling", reason="a schematic"),
    R("Fig 2a/2b", "cosine maps of the synthetic nets", claims=("fa.binary_in_class", "fa.kclass_diag")),
    R("Fig 2c/2d", "cosine maps on image embeddings",
      claims=("fa.emb_kclass_decouples", "fa.emb_binary_blocks", "fa.emb_binary_averages")),
    R("Fig 10", "correlation of CLIP embeddings, within vs between classes (App. E.2)",
      reason="qualitative ('significantly higher' within-class correlation) and a property of the embeddings, "
             "not of training; fa-embeddings records embeddings.cos_within_class / cos_between_class"),
    R("Fig 3 left", "robust accuracy vs radius, synthetic", claims=("fa.binary_breaks", "fa.kclass_holds")),
    R("Fig 3 middle/right", "robust accuracy vs radius, MNIST / CIFAR-10",
      claims=("fa.deep_kclass_more_robust", "fa.deep_fine_minus_coarse", "fa.deep_kclass_above_every_radius",
              "fa.deep_binary_clean", "fa.deep_multiclass_clean")),
    R("Fig 4", "schematic of Li et al. (2022a)'s construction", reason="a schematic of related work"),
    R("Fig 5", "ablation over n", claims=("fa.ablation_n.fa_everywhere",)),
    R("Fig 6", "ablation over η", claims=("fa.ablation_lr.fa_when_small", "fa.ablation_lr.breaks_when_large")),
    R("Fig 7", "ablation over the init scale",
      claims=("fa.ablation_init.fa_when_small", "fa.ablation_init.breaks_when_large")),
    R("Fig 8", "ablation over the SNR", claims=("fa.ablation_snr.fa_everywhere",)),
    R("Fig 9", "ablation over cos(μ_i, μ_j)",  # the second: test (b) against P⊥Σ_{J_s}μ_j (issue 45)
      claims=("fa.ablation_cosine.fa_everywhere", "fa.ablation_cosine.fa_everywhere_perp")),
]
