"""Random-feature-amplification measurements (Frei, Chatterji, Bartlett 2023, §4 and App. A–C).

Everything takes replica-batched tensors — W (E, M, d), A (M, 1), mu (E, 2, d) rows μ1, μ2, x (E, n, d),
cluster ids (E, n) with 0 = +μ1, 1 = −μ1, 2 = +μ2, 3 = −μ2 — and returns (E,) tensors (or per-neuron tensors
where said). The explicit constants of the proofs are module constants next to their references.
"""

from __future__ import annotations

import math

import torch

E2 = math.exp(-2.0)
GROWTH_FLOOR = E2 / 64  # eq. (39): <w_j^{(τ+1)} − w_j^{(τ)}, µ> ≥ α|a_j| e^{-2}/64 for j ∈ J_µ
LPRIME_FLOOR = E2 / 2  # eq. (37): −ℓ'_{i,τ} ≥ e^{-2}/2 for τ ≤ T − 1
AO_RADIUS = 3.0  # Condition 10: |<w_j^{(t)}, µ_other>| ≤ 3α|a_j|
RHO_FLOOR = E2 / 256  # eq. (40): <w_j^{(t)}/‖w_j^{(t)}‖, µ> ≥ e^{-2}/256 for j ∈ J_µ, t ≥ 2
C0_PAPER = 45 * 1024**2 * math.e**4  # Def 7: C0 = 45·1024²·e⁴ ≈ 2.58e9
C3_NUM = 4096 * math.e**2  # Lemma 11: C3 = 4096 e²/(1 − 1/C0)²
LEMMA5_C1 = 2.0  # Lemma 5: the universal C1 ≥ 2 (unspecified); 2 is the least value the lemma allows


def c1_constant(law: str) -> float:
    """eq. (12): c1 = inf over unit u of P(<z/σ, u> ∈ [−1/9, 0]) for the within-cluster law (isotropic after /σ).
    Gaussian: Φ(1/9) − 1/2 for every u (exact). Product laws: the smaller of u = e1 and the Gaussian (CLT) limit
    [our choice: the infimum over u is not computed]; uniform e1: (1/9)/(2√3); Laplace e1: (1 − e^{−√2/9})/2."""
    gauss = 0.5 * math.erf(1 / (9 * math.sqrt(2)))
    e1 = {"gaussian": gauss, "uniform": 1 / (18 * math.sqrt(3)), "laplace": 0.5 * (1 - math.exp(-math.sqrt(2) / 9))}
    return min(gauss, e1[law])


def C2_constant(law: str) -> float:
    """Lemma 6's C2 as its proof makes it: eq. (14) gives N_µ − N_{−µ} ≥ n c1/4, so C2 = 4/c1 (≈ 90.4, Gaussian)."""
    return 4 / c1_constant(law)


def appd_bound(sigma: float, law: str = "gaussian") -> float:
    """App. D eq. (56): f*'s clean error per cluster ≤ P(|<µ1,z>| > 1/3) + P(|<µ2,z>| > 1/3). Each term is
    2Φ(−1/(3σ)) exactly for Gaussian clusters, and ≤ 3e^{−1/(3σ)} for any log-concave law (Lovász–Vempala)."""
    if law == "gaussian":
        return min(1.0, 2 * math.erfc(1 / (3 * sigma * math.sqrt(2))))
    return min(1.0, 6 * math.exp(-1 / (3 * sigma)))


def stopping_time(alpha: float) -> int:
    """Thm 1: T = 1 + 1/(4α) iterations, rounded down so that t ≤ 1/(4α) as the proof needs."""
    return 1 + math.floor(1 / (4 * alpha))


def signed_means(mu: torch.Tensor) -> torch.Tensor:
    """(E, 4, d): +μ1, −μ1, +μ2, −μ2 in cluster-id order."""
    return torch.stack([mu[:, 0], -mu[:, 0], mu[:, 1], -mu[:, 1]], 1)


def rho(W: torch.Tensor, mu: torch.Tensor) -> torch.Tensor:
    """ρ_{j,µ} = <w_j/‖w_j‖, µ> for µ ∈ (+μ1, −μ1, +μ2, −μ2): (E, M, 4)."""
    w = W / W.norm(dim=-1, keepdim=True).clamp_min(torch.finfo(W.dtype).tiny)
    return w @ signed_means(mu.to(W.dtype)).transpose(1, 2)


def neuron_sets(W0: torch.Tensor, A: torch.Tensor, mu: torch.Tensor, C0: float = C0_PAPER) -> torch.Tensor:
    """Lemma 4: J_µ = {j : sgn a_j = ỹ(µ), ρ_{j,µ}(0) ≥ 1/(3 C0 √d)}, as an (E, 4, M) boolean mask.

    Positive neurons (a_j > 0) can only be in J_{±µ1}, negative ones in J_{±µ2}.
    """
    d = W0.shape[-1]
    r = rho(W0, mu).transpose(1, 2)  # (E, 4, M)
    a = A[:, 0].to(W0.dtype)
    sign_ok = torch.stack([a > 0, a > 0, a < 0, a < 0])  # (4, M)
    return (r >= 1 / (3 * C0 * math.sqrt(d))) & sign_ok[None]


def cluster_masks(cluster: torch.Tensor) -> torch.Tensor:
    """(E, 4, n): I_{+µ1}, I_{−µ1}, I_{+µ2}, I_{−µ2}."""
    return torch.stack([cluster == k for k in range(4)], 1)


def condition9(W: torch.Tensor, x: torch.Tensor, cluster: torch.Tensor, J: torch.Tensor) -> torch.Tensor:
    """Condition 9 (alignment): share of neurons j ∈ J (pooled over the four J_µ) with φ'(<w_j, x_k>) = 1 for all
    k ∈ I_µ and = 0 for all k ∈ I_{−µ}. φ'(0) = 1 (the core's ReLU). Returns (E,)."""
    pre = torch.bmm(x, W.transpose(1, 2))  # (E, n, M)
    I = cluster_masks(cluster)  # (E, 4, n)
    big = torch.finfo(pre.dtype).max
    # min over the cluster of the preactivation (≥ 0 ⇔ active on all), max over the opposite (< 0 ⇔ inactive)
    mins = torch.stack([pre.masked_fill(~I[:, k, :, None], big).amin(1) for k in range(4)], 1)  # (E, 4, M)
    maxs = torch.stack([pre.masked_fill(~I[:, k, :, None], -big).amax(1) for k in range(4)], 1)
    opp = [1, 0, 3, 2]
    ok = (mins >= 0) & (maxs[:, opp] < 0)
    return (ok & J).sum((1, 2)).to(W.dtype) / J.sum((1, 2)).clamp_min(1).to(W.dtype)


def condition10(W: torch.Tensor, A: torch.Tensor, mu: torch.Tensor, J: torch.Tensor, alpha: float) -> torch.Tensor:
    """Condition 10: AO_j = |<w_j, µ_other>|/(α|a_j|) for j ∈ J_{±µ1} (other = µ2) and J_{±µ2} (other = µ1);
    returns max_j AO_j (E,), to compare with 3."""
    proj = W @ mu.to(W.dtype).transpose(1, 2)  # (E, M, 2)
    a = A[:, 0].abs().to(W.dtype).clamp_min(torch.finfo(W.dtype).tiny)
    ao1 = proj[..., 1].abs() / (alpha * a)  # neurons of J_{±µ1}: projection on µ2
    ao2 = proj[..., 0].abs() / (alpha * a)
    in1, in2 = J[:, 0] | J[:, 1], J[:, 2] | J[:, 3]
    ao = torch.where(in1, ao1, torch.where(in2, ao2, torch.zeros_like(ao1)))
    return ao.amax(-1)


def growth(W_new: torch.Tensor, W_old: torch.Tensor, A: torch.Tensor, mu: torch.Tensor, J: torch.Tensor,
           alpha: float, steps: int = 1) -> torch.Tensor:
    """eq. (39): min over j ∈ J_µ of <w_j^{new} − w_j^{old}, µ>/(α|a_j|·steps), the mean per-step growth along
    the neuron's own cluster mean; (E,), to compare with e^{-2}/64."""
    proj = (W_new - W_old) @ signed_means(mu.to(W_new.dtype)).transpose(1, 2)  # (E, M, 4)
    a = A[:, 0].abs().to(W_new.dtype).clamp_min(torch.finfo(W_new.dtype).tiny)
    g = proj.transpose(1, 2) / (alpha * a * steps)  # (E, 4, M)
    return g.masked_fill(~J, float("inf")).flatten(1).amin(-1)


def min_rho_own(W: torch.Tensor, mu: torch.Tensor, J: torch.Tensor) -> torch.Tensor:
    """min over j ∈ J_µ of ρ_{j,µ}: (E,), to compare with eq. (40)'s e^{-2}/256 (t ≥ 2)."""
    r = rho(W, mu).transpose(1, 2)
    return r.masked_fill(~J, float("inf")).flatten(1).amin(-1)


def aligned_share(W: torch.Tensor, W0: torch.Tensor, A: torch.Tensor, mu: torch.Tensor,
                  floor: float = RHO_FLOOR) -> torch.Tensor:
    """§3 after Thm 1 ("nearly every neuron in the neural network will become highly correlated to one of the four
    cluster means"), in the form the proof gives it (Lemmas 4, 13): the share of ALL neurons with a_j ≠ 0 (not only
    J) whose normalised correlation at W with the mean it leaned to at init, µ(j) = the one of ±µ1 (a_j > 0) or ±µ2
    (a_j < 0) with the larger ρ_{j,µ}(0), is ≥ ``floor`` (eq. (40)'s e^{-2}/256). (E,)"""
    r, r0 = rho(W, mu), rho(W0, mu)  # (E, M, 4)
    a = A[:, 0].to(W.dtype)
    pos = (a > 0)[None, :]
    k = torch.where(pos, r0[..., :2].argmax(-1), 2 + r0[..., 2:].argmax(-1))  # (E, M): µ(j) in cluster-id order
    own = r.gather(-1, k[..., None])[..., 0]
    live = a != 0
    return (own[:, live] >= floor).to(W.dtype).mean(-1)


def median_rho_own(W: torch.Tensor, mu: torch.Tensor, J: torch.Tensor) -> torch.Tensor:
    """median over j ∈ J of ρ_{j,µ(j)} (E,)."""
    r = rho(W, mu).transpose(1, 2)
    return torch.stack([r[e][J[e]].median() for e in range(W.shape[0])])


def own_rho_values(W: torch.Tensor, mu: torch.Tensor, J: torch.Tensor) -> torch.Tensor:
    """All ρ_{j,µ} with j ∈ J_µ, pooled over replicas (1-D), for histograms."""
    r = rho(W, mu).transpose(1, 2)
    return r[J]


def frobenius_ratio(W: torch.Tensor, alpha: float, t: int) -> torch.Tensor:
    """Lemma 14: ‖W^{(t)}‖_F/(2αt), ≤ 1 for t ≥ 1. (E,)"""
    return W.flatten(1).norm(dim=-1) / (2 * alpha * max(t, 1))


def neuron_norm_ratio(W: torch.Tensor, A: torch.Tensor, alpha: float, t: int) -> torch.Tensor:
    """Lemma 14 (1): max_j ‖w_j^{(t)}‖/(2|a_j|αt), ≤ 1 for t ≥ 1 (implies (2), ‖W‖_F ≤ 2αt); a_j = 0 skipped. (E,)"""
    a = A[:, 0].abs().to(W.dtype)
    r = W.norm(dim=-1) / (2 * a * alpha * max(t, 1)).clamp_min(torch.finfo(W.dtype).tiny)
    return r.masked_fill(a[None] == 0, 0.0).amax(-1)


def init_norm_ratio(W0: torch.Tensor, omega: float) -> torch.Tensor:
    """Lemma 3: ‖w_j^{(0)}‖/(ω√d) ∈ [1/2, 3/2] for all j; returns the ratio farthest from 1, (E,)."""
    r = W0.norm(dim=-1) / (omega * math.sqrt(W0.shape[-1]))
    i = (r - 1).abs().argmax(-1, keepdim=True)
    return r.gather(-1, i)[:, 0]


def lemma3_count(W0: torch.Tensor, mu: torch.Tensor, omega: float, C0: float) -> torch.Tensor:
    """Lemma 3: share of j with |<w_j^{(0)}, µ>| ≥ ω/(2C0), for µ = µ1, µ2: (E, 2)."""
    return ((W0 @ mu.to(W0.dtype).transpose(1, 2)).abs() >= omega / (2 * C0)).to(W0.dtype).mean(1)


def lemma3_count_floor(m: int, C0: float, delta: float) -> float:
    """Lemma 3: the share is ≥ 1 − 1/(2C0) − √(2 log(4/δ)/m)."""
    return 1 - 1 / (2 * C0) - math.sqrt(2 * math.log(4 / delta) / m)


def lemma4_ratio(J: torch.Tensor, C0: float) -> torch.Tensor:
    """Lemma 4: min over µ of |J_µ| / ((m/4)(1 − 1/C0)²), ≥ 1 on the lemma's event. J (E, 4, M) → (E,)."""
    m = J.shape[-1]
    return J.sum(-1).amin(-1).to(torch.float64) / (m / 4 * (1 - 1 / C0) ** 2)


def lemma5_C1(x: torch.Tensor, cluster: torch.Tensor, noisy: torch.Tensor, mu: torch.Tensor, sigma: float,
              eta: torch.Tensor, delta: float) -> torch.Tensor:
    """Lemma 5: the smallest C1 for which (a)–(d) hold on the sample, (E,):
    (a) <x_i, µ> ≥ 1 − C1σ√d and |<x_i, µ_⊥>| ≤ C1σ√d (µ_⊥ = the other class's mean), (b) ‖x_i − µ‖² ≤ C1σ²d,
    (c) |N|/n ≤ η + C1√(log(1/δ)/n), (d) | |I_µ|/n − 1/4 | ≤ C1√(log(1/δ)/n)."""
    E, n, d = x.shape
    sm = signed_means(mu.to(x.dtype))  # (E, 4, d)
    rows = torch.arange(E, device=x.device)[:, None]
    cen = sm[rows, cluster]  # (E, n, d): µ(i)
    other = mu.to(x.dtype)[rows, 1 - cluster // 2]  # µ2 for ±µ1 clusters, µ1 for ±µ2
    s, r = sigma * math.sqrt(d), math.sqrt(math.log(1 / delta) / n)
    a1 = ((1 - (x * cen).sum(-1)) / s).amax(-1)
    a2 = ((x * other).sum(-1).abs() / s).amax(-1)
    b = ((x - cen).pow(2).sum(-1) / (sigma**2 * d)).amax(-1)
    c = (noisy.to(x.dtype).mean(-1) - eta.to(x.dtype)) / r
    dd = ((cluster_masks(cluster).to(x.dtype).mean(-1) - 0.25).abs() / r).amax(-1)
    return torch.stack([a1, a2, b, c, dd]).amax(0)


def lemma6_edge(W0: torch.Tensor, x: torch.Tensor, cluster: torch.Tensor, noisy: torch.Tensor, mu: torch.Tensor,
                C0: float) -> torch.Tensor:
    """Lemma 6: min over µ and every j with ρ_{j,µ}(0) ≥ 1/(3C0√d) of
    (Σ_{i ∈ I^C_{+µ}} φ'(<w_j, x_i>) − Σ_{i ∈ I^C_{−µ}} φ'(<w_j, x_i>))/n, to compare with 1/C2; (E,)."""
    n, d = x.shape[1], x.shape[2]
    act = (torch.bmm(x, W0.transpose(1, 2)) >= 0).to(x.dtype)  # φ'(0) = 1
    IC = (cluster_masks(cluster) & ~noisy[:, None, :]).to(x.dtype)  # clean points per cluster (E, 4, n)
    cnt = torch.einsum("ekn,enm->ekm", IC, act)
    edge = (cnt - cnt[:, [1, 0, 3, 2]]) / n  # (E, 4, M)
    ok = rho(W0, mu).transpose(1, 2) >= 1 / (3 * C0 * math.sqrt(d))
    return edge.masked_fill(~ok, float("inf")).flatten(1).amin(-1)


def subnet_margin(W: torch.Tensor, A: torch.Tensor, x: torch.Tensor, y_clean: torch.Tensor,
                  J: torch.Tensor) -> torch.Tensor:
    """Lemma 11: min_i ỹ_i f^J(x_i; W), f^J = Σ_{j ∈ J} a_j φ(<w_j, x>) (y_i f^J ≥ 1/C3 on clean points and
    ≤ −1/C3 on noisy ones ⇔ ỹ_i f^J ≥ 1/C3 for all i). (E,)"""
    aJ = A[:, 0].to(W.dtype)[None] * J.any(1).to(W.dtype)  # (E, M)
    fJ = (torch.bmm(x, W.transpose(1, 2)).clamp_min(0) * aJ[:, None, :]).sum(-1)
    return (y_clean.to(W.dtype) * fJ).amin(-1)


def min_neg_lprime(score: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """min_i −ℓ'(y_i f(x_i)) = min_i 1/(1 + e^{y_i f(x_i)}) (eq. 37). (E,)"""
    return torch.sigmoid(-y.to(score.dtype) * score).amin(-1)


def span_share(W: torch.Tensor, mu: torch.Tensor) -> torch.Tensor:
    """Share of ‖W‖²_F in span{µ1, µ2} (µ orthonormal). (E,)"""
    proj = W @ mu.to(W.dtype).transpose(1, 2)
    return proj.pow(2).sum((1, 2)) / W.pow(2).sum((1, 2)).clamp_min(torch.finfo(W.dtype).tiny)


def feature_change(W: torch.Tensor, W0: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Prop 2: min_i ‖φ(W x_i) − φ(W0 x_i)‖/‖φ(W0 x_i)‖ (E,)."""
    h = torch.bmm(x, W.transpose(1, 2)).clamp_min(0)
    h0 = torch.bmm(x, W0.transpose(1, 2)).clamp_min(0)
    r = (h - h0).norm(dim=-1) / h0.norm(dim=-1).clamp_min(torch.finfo(W.dtype).tiny)
    return r.amin(-1)


def prop2_bound(omega: float, m: int, d: int) -> float:
    """Prop 2 (explicit form of its proof): the relative feature change is ≥ e^{-2}/(16·1024·ω√(md))."""
    return E2 / (16 * 1024 * omega * math.sqrt(m * d))


def lemma12_first_step(W0: torch.Tensor, A: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                       cluster: torch.Tensor, mu: torch.Tensor, score0: torch.Tensor,
                       alpha: float) -> dict[str, torch.Tensor]:
    """Lemma 12, eqs. (29)–(30): the predicted first-step projections and the exact remainder bound.

    predicted <w_j^{(1)} − w_j^{(0)}, µ1> = (α a_j/(2n)) (N_{+µ1}(j) − N_{−µ1}(j)),
    N_{±µ}(j) = Σ_{i ∈ I_{±µ}} y_i φ'(<w_j^{(0)}, x_i>)  (and likewise for µ2).
    The dropped terms ζ1 (within-cluster noise) and ζ2 (−ℓ'_{i,0} ≠ 1/2) obey, per neuron,
    |actual − predicted| ≤ (α|a_j|/n) Σ_i φ'_i (|<z_i, µ>| + |f(x_i; W^{(0)})|/4)   (−ℓ' is 1/4-Lipschitz).
    Returns ``predicted``, ``bound`` (E, M, 2) and the per-neuron pieces.
    """
    n = x.shape[1]
    pre = torch.bmm(x, W0.transpose(1, 2))
    act = (pre >= 0).to(x.dtype)  # φ'(<w_j^{(0)}, x_i>), ReLU'(0) = 1
    I = cluster_masks(cluster).to(x.dtype)  # (E, 4, n)
    N = torch.einsum("ekn,en,enm->ekm", I, y.to(x.dtype), act)  # N_{µ}(j): (E, 4, M)
    a = A[:, 0].to(x.dtype)
    diff = torch.stack([N[:, 0] - N[:, 1], N[:, 2] - N[:, 3]], -1)  # (E, M, 2)
    predicted = alpha * a[None, :, None] / (2 * n) * diff  # eq. (30)
    proj = x @ mu.to(x.dtype).transpose(1, 2)  # (E, n, 2) <x_i, µ>
    centre = torch.einsum("ekn,k->en", I, x.new_tensor([1.0, -1.0, 0.0, 0.0]))
    centre2 = torch.einsum("ekn,k->en", I, x.new_tensor([0.0, 0.0, 1.0, -1.0]))
    z_proj = (proj - torch.stack([centre, centre2], -1)).abs()  # |<z_i, µ>|
    slack = z_proj + score0.abs()[..., None] / 4  # (E, n, 2)
    bound = alpha * a.abs()[None, :, None] / n * torch.einsum("enm,enk->emk", act, slack)
    return {"predicted": predicted, "bound": bound, "N": N}


def first_step_actual(W1: torch.Tensor, W0: torch.Tensor, mu: torch.Tensor) -> torch.Tensor:
    """<w_j^{(1)} − w_j^{(0)}, µ_k>: (E, M, 2)."""
    return (W1 - W0) @ mu.to(W1.dtype).transpose(1, 2)


# ------------------------------------------------------------------------------------------ (A1)–(A7)
def assumption_caps(d: int, n: int, m: int, sigma: float, eta: float, omega: float, alpha: float,
                    delta: float) -> dict[str, tuple[float, float, str]]:
    """For each of (A1)–(A7), the range [C_lo, C_hi] of constants C for which it holds, and its statement.

    (A1) d ≥ C max{log²(n/δ), log(m/δ)}   (A2) σ² ≤ 1/(C²d)   (A3) n ≥ C log(m/δ)   (A4) η ≤ 1/C
    (A5) m ≥ C log(1/δ)   (A6) ω² ≤ 1/(C⁴md)   (A7) 1/(2√C) ≤ α ≤ 1/√C  ⇔  1/(4α²) ≤ C ≤ 1/α².
    """
    inf = float("inf")
    l1 = max(math.log(n / delta) ** 2, math.log(m / delta))
    return {
        "A1": (1.0, d / l1, f"d ≥ C·max{{log²(n/δ), log(m/δ)}} = C·{l1:.3g}"),
        "A2": (1.0, 1 / (sigma * math.sqrt(d)), f"σ√d = {sigma * math.sqrt(d):.3g} ≤ 1/C"),
        "A3": (1.0, n / math.log(m / delta), f"n ≥ C·log(m/δ) = C·{math.log(m / delta):.3g}"),
        "A4": (1.0, 1 / eta if eta > 0 else inf, f"η = {eta:g} ≤ 1/C"),
        "A5": (1.0, m / math.log(1 / delta), f"m ≥ C·log(1/δ) = C·{math.log(1 / delta):.3g}"),
        "A6": (1.0, (omega**2 * m * d) ** -0.25, f"ω√(md) = {omega * math.sqrt(m * d):.3g} ≤ 1/C²"),
        "A7": (1 / (4 * alpha**2), 1 / alpha**2, f"α = {alpha:g} ∈ [1/(2√C), 1/√C]"),
    }


def check_assumptions(d: int, n: int, m: int, sigma: float, eta: float, omega: float, alpha: float,
                      delta: float, C: float) -> dict:
    """Which of (A1)–(A7) hold for the constant C, with the numbers; and the largest C for which all hold at
    once (None when no C > 1 satisfies all of them). ``label`` is 'theory-checked' when all hold for this C."""
    caps = assumption_caps(d, n, m, sigma, eta, omega, alpha, delta)
    holds = {k: lo <= C <= hi for k, (lo, hi, _) in caps.items()}
    lo = max(v[0] for v in caps.values())
    hi = min(v[1] for v in caps.values())
    c_max = hi if hi >= lo and hi > 1 else None
    def rng(k):
        lo_k, hi_k = caps[k][0], caps[k][1]
        return f"C ∈ [{lo_k:.3g}, {hi_k:.3g}]" if hi_k >= lo_k else "no C ≥ 1"

    lines = [f"({k}) {v[2]}: holds for {rng(k)} → {'holds' if holds[k] else 'FAILS'} at C = {C:g}"
             for k, v in caps.items()]
    label = "theory-checked" if all(holds.values()) else "experimental"
    return {"holds": holds, "caps": caps, "C_max": c_max, "label": label, "lines": lines}
