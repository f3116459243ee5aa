"""The premises of Thms 4.5–4.7 (Assumptions 3.2, 3.3, 4.3 / A.4, Remark A.5 and the theorems' time ranges) and
which presets of the synthetic experiments meet them, read with constant 1 where the paper writes O(·) or Ω(·).

Every synthetic preset trains at the paper's experimental values (§6.1, App. E.1: k = 10, d = 3072, n = 1000,
m = 5, η = 1e-3, σ_w = σ_b = 1e-5, T = 100), which the paper itself says lie outside its proven regime; a preset in
the theorems' own regime is a later issue. The orthogonality, balance, width and init-size premises are met; the
dimension, sample-size, step-size and time premises are not, at any preset.
"""

from __future__ import annotations

from ...runs.claims import Assumption


def _met(value: bool, presets: tuple[str, ...]) -> dict[str, bool]:
    return {p: value for p in presets}


def synthetic(presets: tuple[str, ...] = ("quick", "paper"), *, kclass: bool = True, orthogonal: bool = True,
              init_why: str = "", eta_why: str = "") -> list[Assumption]:
    """Thm 4.5's (and, with ``kclass``, Thm 4.7's) premises at the paper's experimental values, for ``presets``."""
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
    return out
