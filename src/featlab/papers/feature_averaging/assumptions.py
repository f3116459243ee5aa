"""The premises of Thms 4.5–4.7 (Assumptions 3.2, 3.3, 4.3 / A.4, Remark A.5 and the theorems' time ranges) and
which presets of the synthetic experiments meet them, read with constant 1 where the paper writes O(·) or Ω(·).

Every synthetic preset trains at the paper's experimental values (§6.1, App. E.1: k = 10, d = 3072, n = 1000,
m = 5, η = 1e-3, σ_w = σ_b = 1e-5, T = 100), which the paper itself says lie outside its proven regime; a preset in
the theorems' own regime is fa-synthetic's ``theory`` preset (:data:`THEORY`): the same nets simulated exactly in
k + N coordinates (gram.py, so d is only a scale) and trained by the gradient flow (flow.py, GD's η → 0 limit),
which meets every premise below but n = Ω(k⁷) (see :func:`theory_met`). At the other presets the orthogonality,
balance, width and init-size premises are met; the dimension, sample-size, step-size and time premises are not.
"""

from __future__ import annotations

from typing import Any

from ...runs.claims import Assumption

# fa-synthetic's theory preset at k = 4 (every premise read with constant 1): d = k¹⁰ = 2²⁰, η = d⁻² = 2⁻⁴⁰ (the
# flow: GD's η → 0 limit), ηT = k⁸ = 2¹⁶ for both nets (Thm 4.7's horizon, ≥ Thm 4.5's 1), σ_w² = σ_b² = 1e-16 ≤
# ηk⁻⁵ ≈ 8.9e-16, m = k/2. n = 4096 = k⁶: k⁷ = 16 384 needs N ≈ 17k Gaussian vectors, an N×N float64 factor of
# 2.3 GB per seed and ~0.8 s of CPU per gradient evaluation (memory-bound), about 25 min of flow on this CPU.
THEORY_K, THEORY_N = 4, 4096
THEORY: dict[str, Any] = {
          "k": THEORY_K, "d": THEORY_K**10, "m": THEORY_K // 2, "n": THEORY_N, "n_test": 500, "seeds": 2,
          "simulation": "gram", "integrator": "flow", "dtype": "float64", "eta": 2.0**-40, "T": 2**56,
          "long_eta": 2.0**-40, "long_T": 2**56, "sigma_w": 1e-8, "sigma_b": 1e-8, "pgd_steps": 20,
          "thm46_starts": 16, "thm46_steps": 50,
          "flow_atol": 1e-3}  # d = 10⁶, n = 500: cosines within 2e-6 of flow_atol = 1e-4's at 1/6 of the work


def _met(value: bool, presets: tuple[str, ...]) -> dict[str, bool]:
    return {p: value for p in presets}


def theory_met(a: Assumption, kclass: bool = True) -> Assumption:
    """The assumption with the theory preset's verdict and numbers added (see :data:`THEORY`)."""
    k, d, n, eta = int(THEORY["k"]), int(THEORY["d"]), int(THEORY["n"]), float(THEORY["eta"])
    why = {"Assumption 3.2": "centres √d·e_j exactly (gram.py)",
           "Assumption 3.3": f"|J+| = |J−| = {k // 2}",
           "Assumption 4.3 (d)": f"d = 2²⁰ = k¹⁰ = {d} (k = {k}); d is only a scale in the Gram simulation",
           "Assumption 4.3 (n)": f"n = {n} against k⁷ = {k**7}: the N×N factor at n = k⁷ (N ≈ 17k, 2.3 GB float64 "
                                 f"per seed) fits, but its flow takes ~25 min on this CPU (a command in the docs)",
           "Assumption 4.3 (m), Remark A.5": f"m = {THEORY['m']} = |J±| ≤ k = {k}",
           "Assumption 4.3 (η)": f"η = d⁻² = 2⁻⁴⁰ ≈ {eta:.2g}, run as GD's η → 0 limit (the gradient flow)",
           "Assumption A.4 (init)": f"σ_w² = 1e-16 ≤ ηk⁻⁵ ≈ {eta / k**5:.2g}",
           "Thm 4.5 (time)": f"ηT = {eta * THEORY['T']:g} = k⁸ ≥ 1 (the upper end exp(Õ(k^½)) has no constant)",
           "Thm 4.7 (time)": f"ηT = {eta * THEORY['T']:g} = k⁸"}[a.ref]
    met = a.ref != "Assumption 4.3 (n)"
    return Assumption(a.ref, a.text, {**a.met, "theory": met}, why="; ".join(filter(None, [a.why, f"theory: {why}"])))


def synthetic(presets: tuple[str, ...] = ("quick", "paper"), *, kclass: bool = True, orthogonal: bool = True,
              init_why: str = "", eta_why: str = "", theory: bool = False) -> list[Assumption]:
    """Thm 4.5's (and, with ``kclass``, Thm 4.7's) premises at the paper's experimental values, for ``presets``;
    ``theory``: plus fa-synthetic's theory preset (:data:`THEORY`)."""
    out = [
        Assumption("Assumption 3.2", "orthogonal centres of equal norm ‖μ_j‖ = √d", _met(orthogonal, presets),
                   why="" if orthogonal else "Fig 9's ablation makes the centres near-orthogonal on purpose "
                   "(cos(μ_i, μ_j) up to 0.09): it tests whether the premise can be relaxed"),
        Assumption("Assumption 3.3", "nearly balanced classes: c⁻¹ ≤ |J+|/|J−| ≤ c, c = Θ(1)", _met(True, presets),
                   why="|J+| = |J−| = 5 (c = 1)"),
        Assumption("Assumption 4.3 (d)", "d = Ω(k¹⁰)", _met(False, presets),
                   why="d = 3072 against k¹⁰ = 10¹⁰ (the paper's own experiments are outside it too)"),
        Assumption("Assumption 4.3 (n)", "n ∈ [Ω(k⁷), exp(O(log² d))]", _met(False, presets),
                   why="n = 1000 (up to 50 000 in Fig 5) against k⁷ = 10⁷"),
        Assumption("Assumption 4.3 (m), Remark A.5", "m = Θ(k), m ∈ [max(|J+|, |J−|), k]", _met(True, presets),
                   why="m = 5 = |J±| ≤ k = 10: a robust binary net of this width exists (Thm D.3)"),
        Assumption("Assumption 4.3 (η)", "η = O(d⁻²)", _met(False, presets),
                   why="η = 1e-3 against d⁻² ≈ 1.1e-7" + (f"; {eta_why}" if eta_why else "")),
        Assumption("Assumption A.4 (init)", "σ_w² = σ_b² ≤ η k⁻⁵", _met(not init_why, presets),
                   why=init_why or "σ_w² = 1e-10 ≤ η k⁻⁵ = 1e-8"),
        Assumption("Thm 4.5 (time)", "T ≥ Ω(1/η) (and T ≤ exp(Õ(k^½))): λ^(T) = Ω(1) needs ηT ≥ Ω(1)",
                   _met(False, presets), why="ηT = 0.1 (T = 100, η = 1e-3, as in the paper's experiments)"),
    ]
    if kclass:
        out.append(Assumption("Thm 4.7 (time)", "T ≥ Ω(k⁸/η)", _met(False, presets),
                              why="ηT = 0.1 against k⁸ = 10⁸"))
    return [theory_met(a) for a in out] if theory else out
