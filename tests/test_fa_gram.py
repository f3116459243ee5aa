"""The reduced (Gram) simulation of fa-synthetic and the gradient flow (papers/feature_averaging/gram.py, flow.py):
exact against the explicit run on shared draws, equal in law on independent ones, the flow followed by GD at small η."""

import math

import pytest
import torch

import featlab
from featlab.errors import ConfigError
from featlab.papers.feature_averaging import gram, measures
from featlab.papers.feature_averaging.common import FASyntheticConfig, fit_binary, fit_kclass, make_data
from featlab.papers.feature_averaging.data import orthogonal_centres
from featlab.papers.feature_averaging.synthetic import _thm46

pytestmark = pytest.mark.usefixtures("one_thread")


def small(**kw) -> FASyntheticConfig:
    base = dict(k=4, d=256, m=2, n=40, n_test=20, thm46_starts=4, thm46_steps=20, T=30, eta=0.05, seeds=2,
                sigma_w=1e-3, sigma_b=1e-3, probe_every=5, dtype="float64")
    return FASyntheticConfig(**{**base, **kw})


def test_bartlett_is_the_wishart_law():
    """L Lᵀ ~ Wishart_N(ν, I): mean ν·I, Var of a diagonal entry 2ν, of an off-diagonal one ν."""
    N, dof, S = 3, 12, 1500
    g = torch.Generator().manual_seed(0)
    W = torch.stack([(lambda L: L @ L.T)(gram.bartlett(N, dof, g)) for _ in range(S)])
    se = lambda var: 4 * math.sqrt(var / S)  # 4 standard errors
    assert abs(W[:, 1, 1].mean() - dof) < se(2 * dof) and abs(W[:, 2, 0].mean()) < se(dof)
    assert abs(W[:, 2, 2].var() - 2 * dof) < 0.15 * 2 * dof and abs(W[:, 2, 1].var() - dof) < 0.15 * dof
    with pytest.raises(ValueError):
        gram.bartlett(5, 4, g)


def test_huge_dof_chi_square_is_exact():
    """At d = 10^9 the diagonal carries √χ²_{d−k−i+1}: centred on √d, spread 1/√2 (not a rounding of √d)."""
    L = gram.bartlett(400, 10**9, torch.Generator().manual_seed(1))
    z = L.diagonal() - math.sqrt(10**9)
    assert abs(float(z.mean())) < 0.2 and 0.55 < float(z.std()) < 0.85


def _shared(cfg):
    """The explicit run's data (vectors of R^d) and the Gram run's (coordinates) from the same Gaussian draw."""
    seeds = list(range(cfg.seeds))
    N, D = gram.size(cfg)
    G = torch.randn(cfg.seeds, N, cfg.d, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    cl = gram.draw_clusters(cfg, seeds)
    mu = orthogonal_centres(cfg.k, cfg.d, "basis", torch.Generator()).expand(cfg.seeds, -1, -1)
    explicit = gram.assemble(cfg, seeds, mu, G.clone(), cl, None, torch.float64)
    C = torch.stack([gram.explicit_coordinates(g, cfg.k) for g in G])
    reduced = gram.assemble(cfg, seeds, gram.centres(cfg, cfg.seeds, D, cfg.d), C, cl, cfg.d, torch.float64)
    assert reduced[1].x.shape[-1] == D < cfg.d
    return seeds, explicit, reduced


@pytest.mark.parametrize("integrator", ["gd", "flow"])
def test_gram_run_equals_explicit_run_on_shared_draws(integrator):
    """Training, outputs, cosines and Thm 4.6's search are the same numbers (float64 rounding) in k + N
    coordinates as in R^d: every measurement is a function of the Gram matrix."""
    # the flow: the solver's steps depend on the state's length, so the two agree to its tolerance, not rounding
    flow = {"eta": 1e-5, "T": 3000, "flow_rtol": 1e-9, "flow_atol": 1e-3}
    cfg = small(integrator=integrator, **(flow if integrator == "flow" else {}))
    seeds, (dx, trx, tex), (dc, trc, tec) = _shared(cfg)
    bx, _ = fit_binary(cfg, seeds, dx, trx)
    bc, _ = fit_binary(cfg, seeds, dc, trc)
    kx, _ = fit_kclass(cfg, seeds, dx, trx)
    kc, _ = fit_kclass(cfg, seeds, dc, trc)
    with torch.no_grad():
        out = bx(tex.x)
        assert out.abs().max() > 0.5  # trained, not a comparison of two near-zero nets
        tol = 1e-5 if integrator == "flow" else 1e-10
        assert torch.allclose(out, bc(tec.x), atol=tol, rtol=tol)
        assert torch.allclose(kx(tex.x), kc(tec.x), atol=tol, rtol=tol)
        assert torch.allclose(measures.cosine_matrix(dx.mu, bx.W), measures.cosine_matrix(dc.mu, bc.W), atol=tol)
    a, b = _thm46(cfg, seeds, dx, trx, bx), _thm46(cfg, seeds, dc, trc, bc)
    for key in a:
        assert torch.allclose(a[key], b[key], rtol=tol), key


def test_gram_run_matches_explicit_in_law():
    """Independent draws: the means over 48 seeds of trained-net metrics agree within Monte Carlo error."""
    base = dict(d=2048, n=24, n_test=16, T=20, eta=2e-3, seeds=48, sigma_w=1e-3, sigma_b=1e-3, thm46_starts=2)
    out = {}
    for sim in ("explicit", "gram"):
        cfg = small(simulation=sim, **base)
        seeds = list(range(100, 100 + cfg.seeds))
        dist, tr, te = make_data(cfg, seeds, torch.float64)
        net, _ = fit_binary(cfg, seeds, dist, tr)
        with torch.no_grad():
            _, st = measures.binary_alignment(net, dist, cfg.m)
            q = (te.y * net(te.x)).mean(-1)  # mean test margin per seed
            norm = (tr.x.pow(2).sum(-1)).mean(-1) / cfg.d  # ‖x‖²/d ≈ α² + σ²
        out[sim] = {"cos": st["cos_in_class_mean"], "lam": st["lambda_in_class_mean"], "q": q, "norm": norm}
    for key in out["gram"]:
        a, b = out["explicit"][key], out["gram"][key]
        se = math.sqrt(float(a.var() + b.var()) / len(a))
        assert abs(float(a.mean() - b.mean())) < 4 * se + 1e-12, (key, float(a.mean()), float(b.mean()), se)
    assert abs(float(out["gram"]["norm"].mean()) - 2) < 0.01


def test_gd_at_small_step_follows_the_flow():
    """T GD steps of size η and the flow to time ηT: the same net up to O(η)."""
    cfg = small(d=512, n=30, eta=1e-5, T=2000, seeds=1)
    seeds = [0]
    dist, tr, te = make_data(cfg, seeds, torch.float64)
    gd, _ = fit_binary(cfg, seeds, dist, tr)
    fl, res = fit_binary(cfg.model_copy(update={"integrator": "flow"}), seeds, dist, tr)
    coarse, _ = fit_binary(cfg.model_copy(update={"eta": 1e-4, "T": 200}), seeds, dist, tr)
    with torch.no_grad():
        f_gd, f_fl, f_c = gd(te.x), fl(te.x), coarse(te.x)
    assert f_fl.abs().max() > 0.5 and res.steps_done == cfg.T
    err = float((f_gd - f_fl).abs().max() / f_fl.abs().max())
    assert err < 0.015  # the solver's tolerance (flow_atol = 1e-4: 0.8 % measured), not GD's O(η)
    gap = float((f_gd - f_c).abs().max() / f_fl.abs().max())
    assert gap < 5e-3  # GD has converged in η: its η → 0 limit is what the flow is compared with


def test_gram_config_refusals():
    with pytest.raises(ValueError, match="k \\+ N"):
        small(simulation="gram", d=60)
    with pytest.raises(ValueError, match="shared_data"):
        small(simulation="gram", d=10**6, shared_data=True)
    est = small(simulation="gram", d=10**12, integrator="flow", T=10**15, eta=1e-12).estimate()
    assert sum(n.bytes for n in est) < 1e8 and sum(n.flops for n in est) == 0  # d is a scale, not a size


def test_fa_synthetic_runs_in_reduced_coordinates(out):
    """The experiment end to end at d = 10^9 (k + N coordinates): the nets classify, the radii scale with d."""
    res = featlab.run("fa-synthetic", "quick", out=out, simulation="gram", d=10**9, k=4, m=2, n=40, n_test=30,
                      seeds=1, T=10, eta=1e-10, sigma_w=1e-9, sigma_b=1e-9, integrator="flow", long_T=0,
                      pgd_steps=3, thm46_starts=2, thm46_steps=3, radii=[0, 10000, 30000], convergence_check=False)
    assert res.ok, res.summary.get("message")
    m = res.summary["metrics"]
    assert m["binary.clean_acc"] == 1 and m["theory.radius_sqrt_d_over_k"] == pytest.approx(math.sqrt(10**9 / 4))
    with pytest.raises(ConfigError):
        featlab.run("fa-synthetic", "quick", out=out, simulation="gram", d=300)


def test_flow_starts_probing_where_the_weights_start_to_move():
    """The first probe is the time the initial velocity moves the weights by 1 % of their RMS: at d = 2⁴⁰ with
    the init of Assumption A.4 (σ ≈ 10⁻¹⁶) that is ~10⁻¹⁶, and the flow to ηT = k⁸ takes few evaluations; a first
    probe fixed at 10⁻⁸ spans the whole early phase with the init's atol and never finishes."""
    from featlab.papers.feature_averaging.flow import first_time, probe_times
    assert first_time(torch.full((4,), 1e-16).numpy(), torch.full((4,), 1e2).numpy()) == pytest.approx(1e-20)
    ts = probe_times(1e4, 40, first=1e-20)
    assert ts[1] == pytest.approx(1e-20) and len(ts) >= 5 * 24 and ts[-1] == pytest.approx(1e4)
    sigma = math.sqrt(2.0**-80 * 4**-5 / 10)
    cfg = small(simulation="gram", integrator="flow", d=2**40, n=40, n_test=20, thm46_starts=1, seeds=1,
                sigma_w=sigma, sigma_b=sigma, eta=4**8 / 2**60, T=2**60)
    dist, tr, te = make_data(cfg, [0], torch.float64)
    net, res = fit_binary(cfg, [0], dist, tr)
    assert res.status == "complete" and int(res.message.split(": ")[1].split()[0]) < 20000, res.message
    with torch.no_grad():
        assert float((net(te.x).sign() == te.y).double().mean()) == 1


def test_fa_phase_theory_scaling_meets_the_premises_per_cell(out):
    """scaling='theory': η = d⁻² (the flow), σ² = ηk⁻⁵/10, ηT = k⁸, only cells with d ≥ k¹⁰ run and are judged;
    it needs the Gram simulation and the flow (one-line refusal otherwise)."""
    from featlab.papers.feature_averaging import phase
    cfg = phase.FAPhaseConfig(**{**phase.THEORY, "ks": [2, 4], "ds": [2**10, 2**20], "n": 40, "n_test": 20})
    sub = phase._cell(cfg, 4, 2**20)
    assert sub.eta * sub.T == pytest.approx(4**8) and sub.sigma_w**2 == pytest.approx(2.0**-40 * 4**-5 / 10)
    assert all(phase.regime(cfg, 4, 2**20).values()) and not phase.regime(cfg, 4, 2**10)["dimension"]
    with pytest.raises(ValueError, match="scaling"):
        phase.FAPhaseConfig(scaling="theory")
    res = featlab.run("fa-phase", "theory", out=out, ks=[2, 4], ds=[2**10, 2**20], seeds=1, n=40, n_test=20,
                      n_radii=4, pgd_steps=2, horizon_power=2)
    assert res.ok, res.summary.get("message")
    m = res.summary["metrics"]
    assert "k=4.d=1024.binary.clean_acc" not in m and m["k=4.d=1048576.binary.clean_acc"] == 1
    assert m["cells_judged"] == 3  # k=2: d = 2¹⁰ ≥ 2¹⁰ and 2²⁰; k=4: 2²⁰ only


def test_gram_attacks_start_uniformly_in_the_ball_of_r_d(monkeypatch):
    """PGD's random start in a Gram run is drawn in R^d (its part outside span(W) as a norm), not in the k + N
    coordinates: the explicit run's law."""
    from featlab.papers.feature_averaging import attacks
    from featlab.probes import subspace
    seen = []
    real = subspace.random_start
    monkeypatch.setattr(subspace, "random_start", lambda n, d, *a, **kw: seen.append(d) or real(n, d, *a, **kw))
    cfg = small(simulation="gram", d=10**9, T=5, seeds=1)
    dist, tr, te = make_data(cfg, [0], torch.float64)
    net, _ = fit_binary(cfg, [0], dist, tr)
    tgt = attacks.target(net, te.x, 1.0, None)
    pgd = dict(steps=2, step_size_factor=2.5, random_start_=True, restarts=1, certified=None,
               generators=[torch.Generator().manual_seed(0)])
    attacks.ensemble(tgt, dist, te, [0.0, 1e3], ["pgd"], pgd)
    assert seen and set(seen) == {10**9}
