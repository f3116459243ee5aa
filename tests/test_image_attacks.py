"""The image attack ensemble (APGD-CE, APGD-T, DDN, Square) and its attack-failure indicators, on tiny CNNs."""

import importlib.util
import json

import pytest
import torch
from torch import nn

from featlab.devicecheck import RUN, SimulatedDevice
from featlab.probes.apgd import apgd_l2, apgd_targeted, binary_logits, checkpoints, group_logits
from featlab.probes.ensemble import AttackBudget, compare_ensembles, robust_masks_ensemble
from featlab.probes.indicators import attack_indicators
from featlab.probes.min_norm import ddn_l2
from featlab.probes.robustness import correct, robust_masks
from featlab.probes.square import square_l2

pytestmark = pytest.mark.usefixtures("one_thread")

POS = torch.tensor([False, False, True, True])  # J+ of the 4-class model


def _data(n=160, seed=0):
    templates = torch.rand(4, 1, 10, 10, generator=torch.Generator().manual_seed(0))
    g = torch.Generator().manual_seed(seed + 1)
    c = torch.randint(0, 4, (n,), generator=g)
    x = (0.25 * torch.rand(n, 1, 10, 10, generator=g) + 0.6 * templates[c]).clamp(0, 1)
    return x, c


@pytest.fixture(scope="module")
def models():
    return tiny_models()


def tiny_models():
    """A 4-class tiny CNN (binary read-out J+ = {2, 3}) and its binary score, trained in ~0.3 s."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(), nn.Linear(100, 4))
    x, c = _data()
    params = list(net.parameters())
    for _ in range(150):  # plain GD by hand: torch.optim's first use imports torch._dynamo (~3 s)
        grads = torch.autograd.grad(nn.functional.cross_entropy(net(x), c), params)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p -= 0.5 * g
    net.eval().requires_grad_(False)
    xt, ct = _data(64, seed=1)
    y = torch.where(POS[ct], 1.0, -1.0)
    score = lambda z: (lambda G: G[..., 1] - G[..., 0])(group_logits(net(z), POS))
    return net, score, xt, y


def _acc(score, x_adv, y, fooled=None):
    return float(correct(score(x_adv), y).double().mean()) if fooled is None else float((~fooled).double().mean())


def test_checkpoints_follow_the_paper():
    assert checkpoints(100) == [22, 41, 57, 70, 80, 87, 93, 99]  # p_j = 0.22, 0.41, 0.57, …


def test_each_attack_is_at_least_as_strong_as_pgd_and_stays_in_its_clipped_budget(models):
    net, score, x, y = models
    eps, g = 0.7, lambda s: torch.Generator().manual_seed(s)
    pgd = float(robust_masks(score, x, y, [eps], steps=20, event_dims=3, clip=(0, 1), generator=g(0))[0]
                .double().mean())
    assert 0.05 < pgd < 0.95, pgd  # an informative budget
    runs = {
        "apgd-ce": apgd_l2(score, x, y, eps, steps=20, event_dims=3, clip=(0, 1), generator=g(1)),
        "apgd-t": apgd_targeted(net, POS, x, y, eps, n_targets=2, steps=10, event_dims=3, clip=(0, 1),
                                generator=g(2)),
        "square": square_l2(score, x, y, 1.0, queries=300, generator=g(3)),  # gradient-free: weaker on a smooth net
    }
    x_ddn, dist = ddn_l2(score, x, y, steps=40, max_norm=2.0, alpha=2.0, init_norm=1.0, event_dims=3, clip=(0, 1))
    runs["ddn"] = (x_ddn, dist <= eps)
    for name, (x_adv, fooled) in runs.items():
        acc = float((~fooled).double().mean())
        assert acc <= pgd + 0.03 if name != "square" else acc < 0.75, (name, acc, pgd)
        r = 1.0 if name == "square" else eps
        broke = fooled & correct(score(x), y)
        assert broke.any() and (~correct(score(x_adv[broke]), y[broke])).all(), name  # re-verified afresh
        assert x_adv.min() >= 0 and x_adv.max() <= 1, name
        norms = (x_adv - x).flatten(1).norm(dim=1)
        assert (norms[broke] <= r * (1 + 1e-5)).all(), name  # the clipped perturbation is within ε
    fin = torch.isfinite(dist)
    assert torch.allclose((x_ddn - x).flatten(1).norm(dim=1)[fin], dist[fin], atol=1e-5)


def test_square_finds_points_pgd_misses_on_a_quantised_model(models):
    _, score, x, y = models
    quantised = lambda z: score(torch.round(z * 4) / 4)
    pgd = robust_masks(quantised, x, y, [1.0], steps=10, event_dims=3, clip=(0, 1),
                       generator=torch.Generator().manual_seed(0))[0]
    _, fooled = square_l2(quantised, x, y, 1.0, queries=200, generator=torch.Generator().manual_seed(0))
    assert float((~fooled).double().mean()) < float(pgd.double().mean()) - 0.1


def test_binary_two_logit_wrapper_and_targeted_on_a_binary_score(models):
    _, score, x, y = models
    assert torch.allclose(binary_logits(score)(x).diff(dim=-1)[..., 0], score(x), atol=1e-6)
    # on two logits the only target is the other class: APGD-T is APGD on the margin
    _, f1 = apgd_targeted(binary_logits(score), torch.tensor([False, True]), x, y, 0.8, steps=10, event_dims=3,
                          clip=(0, 1), random_start=False)
    _, f2 = apgd_l2(score, x, y, 0.8, steps=10, event_dims=3, clip=(0, 1), random_start=False, loss="margin")
    assert torch.equal(f1, f2)


def test_replicas_are_attacked_independently():
    g = torch.Generator().manual_seed(0)
    w = torch.randn(2, 1, 6, 6, generator=g)  # two replicas of a linear score on 6×6 images
    x = torch.rand(2, 12, 1, 6, 6, generator=g)
    score = lambda z: torch.tanh((z - 0.5).mul(w[:, None]).sum((-3, -2, -1)) * 3) * 2
    y = torch.where(score(x) > 0, 1.0, -1.0)
    kw = dict(steps=8, event_dims=3, clip=(0, 1), random_start=False)
    xa, fa = apgd_l2(score, x, y, 0.6, **kw)
    xd, dd = ddn_l2(score, x, y, steps=10, max_norm=2.0, event_dims=3, clip=(0, 1))
    for e in range(2):
        se = lambda z, e=e: torch.tanh((z - 0.5).mul(w[e]).sum((-3, -2, -1)) * 3) * 2
        xe, fe = apgd_l2(se, x[e], y[e], 0.6, **kw)
        assert torch.equal(fe, fa[e]) and torch.allclose(xe, xa[e], atol=1e-6)
        _, de = ddn_l2(se, x[e], y[e], steps=10, max_norm=2.0, event_dims=3, clip=(0, 1))
        assert torch.allclose(de, dd[e], atol=1e-5)
    res = robust_masks_ensemble(score, x, y, [0.0, 0.3, 0.6], budget=AttackBudget(steps=5, queries=20,
                                ddn_steps=10, large_radius=0), generator=torch.Generator().manual_seed(1))
    assert res.worst.shape == (3, 2, 12) and res.masks["apgd-ce"].shape == (3, 2, 12)
    assert len(res.attribution()) == 24
    b = AttackBudget(ddn_steps=10, attacks=("ddn",), large_radius=0)  # deterministic: chunking changes nothing
    one, chunked = (robust_masks_ensemble(score, x, y, [0.0, 0.6], budget=b, batch_size=s) for s in (None, 5))
    assert torch.equal(one.distance, chunked.distance) and torch.equal(one.worst, chunked.worst)


def test_ensemble_attribution_and_indicators_pass_on_a_smooth_model(models):
    net, score, x, y = models
    x, y = x[:32], y[:32]
    radii = [0.0, 0.5, 0.7, 0.9]
    budget = AttackBudget(steps=10, queries=60, ddn_steps=20, n_targets=1, large_radius=6.0)
    kw = dict(logits=net, positive=POS, budget=budget)
    res = robust_masks_ensemble(score, x, y, radii, generator=torch.Generator().manual_seed(0), **kw)
    assert set(res.masks) == {"apgd-ce", "apgd-t", "ddn", "square"}
    curves = res.curves()
    assert (curves["worst"] <= curves["apgd-ce"] + 1e-12).all() and float(curves["worst"][0]) > 0.9
    table = res.attribution()
    broken = table[table.clean_correct & (table.broken_by != "")]
    assert len(broken) == int((res.clean & ~res.worst[-1]).sum())  # every point broken by the end has an attacker
    strong = robust_masks_ensemble(score, x, y, radii, generator=torch.Generator().manual_seed(1),
                                   logits=net, positive=POS, budget=budget.stronger())
    ind = attack_indicators(res, strong=strong, tol=0.04)  # 32 points: one point is 3.1 % of accuracy
    assert ind["converged"], (ind["flagged"], ind["checks"])
    assert set(ind["checks"]) == {"eps0_clean", "monotone", "reaches_zero", "verified", "zero_gradient",
                                  "masking", "convergence"}
    json.dumps(ind)  # recorded as is


def test_indicators_flag_a_gradient_masking_model(models):
    net, score, x, y = models
    quantised = lambda z: score(torch.round(z * 4) / 4)  # zero gradient almost everywhere
    res = robust_masks_ensemble(quantised, x, y, [0.0, 1.0, 1.5],
                                budget=AttackBudget(steps=10, queries=200, ddn_steps=10, large_radius=0),
                                generator=torch.Generator().manual_seed(0))
    ind = attack_indicators(res)
    assert not ind["converged"]
    assert {"zero_gradient", "masking"} <= set(ind["flagged"]), ind["flagged"]
    assert ind["checks"]["zero_gradient"]["value"] == 1.0


def test_compared_nets_get_the_same_draws(models):
    _, score, x, y = models
    g = torch.Generator().manual_seed(3)
    b = AttackBudget(steps=5, queries=30, ddn_steps=5, attacks=("apgd-ce", "square"), large_radius=0)
    out = compare_ensembles({"a": score, "b": score}, x[:16], y[:16], [0.0, 1.0], generator=g, budget=b)
    assert torch.equal(out["a"].worst, out["b"].worst)


def test_every_tensor_follows_the_input_device(models):
    net, score, x, y = models
    with SimulatedDevice() as dev:
        net.to(RUN)  # the simulated device: a tensor created on the host beside these would be reported
        res = robust_masks_ensemble(score, x[:8].to(RUN), y[:8].to(RUN), [0.0, 1.0], logits=net, positive=POS,
                                    budget=AttackBudget(steps=3, queries=10, ddn_steps=3, n_targets=1,
                                                        large_radius=4.0),
                                    generator=torch.Generator().manual_seed(0))
        attack_indicators(res)
        res.attribution()
    assert dev.problems == []


@pytest.mark.skipif(importlib.util.find_spec("torchattacks") is None, reason="torchattacks not installed "
                    "(pip install --no-deps torchattacks)")
def test_agrees_with_torchattacks(models):
    import torchattacks

    net, score, x, y = models
    x, y = x[:40], y[:40]
    two = nn.Sequential()  # the binary read-out as a 2-logit classifier for torchattacks
    two.forward = lambda z: group_logits(net(z), POS)  # type: ignore[method-assign]
    labels = (y > 0).long()
    tol = 0.1  # stated tolerance: 10 points of accuracy on 40 test points (different random draws)
    torch.manual_seed(0)
    ref = {"apgd-ce": torchattacks.APGD(two, norm="L2", eps=0.7, steps=20, n_restarts=1, loss="ce", seed=0),
           "square": torchattacks.Square(two, norm="L2", eps=1.0, n_queries=200, n_restarts=1, seed=0)}
    ours = {"apgd-ce": apgd_l2(score, x, y, 0.7, steps=20, event_dims=3, clip=(0, 1),
                               generator=torch.Generator().manual_seed(0))[1],
            "square": square_l2(score, x, y, 1.0, queries=200, generator=torch.Generator().manual_seed(0))[1]}
    for name, atk in ref.items():
        x_ref = atk(x, labels)
        acc_ref = float((two(x_ref).argmax(-1) == labels).double().mean())
        acc = float((~ours[name]).double().mean())
        assert abs(acc - acc_ref) <= tol or acc < acc_ref, (name, acc, acc_ref)  # ours never clearly weaker
        if name == "apgd-ce":
            assert abs(acc - acc_ref) <= 0.05, (acc, acc_ref)  # same algorithm, same budget: close either way


def test_cascade_and_frontier_keep_the_worst_case_and_attribute_each_break(models):
    """Cascade (each attack on what the earlier ones left) and frontier (later attacks descend from each point's
    break radius) give the same kind of worst case as the independent runs, at a fraction of the attacked points."""
    net, score, x, y = models
    x, y = x[:48], y[:48]
    radii = [0.0, 0.3, 0.5, 0.7, 0.9]
    b = AttackBudget(steps=6, queries=15, ddn_steps=10, n_targets=1, large_radius=0,
                     attacks=("pgd", "apgd-ce", "apgd-t", "ddn", "square"), pgd_steps=6)
    calls: dict[str, int] = {}
    counted = lambda z: (calls.__setitem__("n", calls.get("n", 0) + z.shape[-4]), score(z))[1]  # points scored
    kw = dict(logits=net, positive=POS, budget=b)
    runs = {}
    for mode in ("independent", "cascade", "frontier"):
        calls.clear()
        runs[mode] = robust_masks_ensemble(counted, x, y, radii, generator=torch.Generator().manual_seed(0),
                                           cascade=mode == "cascade", frontier=mode == "frontier", **kw)
        runs[mode].calls = calls["n"]  # type: ignore[attr-defined]
    ind, cas, fro = runs["independent"], runs["cascade"], runs["frontier"]
    assert torch.equal(ind.masks["pgd"], cas.masks["pgd"]) and torch.equal(cas.masks["pgd"], fro.masks["pgd"])
    for r in (cas, fro):
        assert r.cascade and torch.equal(r.worst, r.masks["square"])  # cumulative: the last mask is the worst case
        names = list(r.masks)
        for a, c in zip(names, names[1:]):
            assert (r.masks[c] <= r.masks[a]).all()  # each stage only removes points
        acc = r.worst.double().mean(-1)
        assert (acc[1:] <= acc[:-1]).all()
        assert (acc - ind.worst.double().mean(-1)).abs().max() <= 2 / len(y)  # same strength, other draws
        table = r.attribution()
        broken = table[table.clean_correct & (table.broken_by != "")]
        assert len(broken) == int((r.clean & ~r.worst[-1]).sum())
    assert fro.calls < cas.calls < ind.calls, (fro.calls, cas.calls, ind.calls)
    with pytest.raises(ValueError, match="gradient-free attacks"):
        robust_masks_ensemble(score, x, y, radii, cascade=True, budget=AttackBudget(attacks=("square", "apgd-ce")))


def test_start_masks_measure_what_a_stronger_budget_adds(models):
    net, score, x, y = models
    x, y = x[:32], y[:32]
    radii = [0.0, 0.5, 0.9]
    b = AttackBudget(steps=3, queries=10, ddn_steps=5, n_targets=1, large_radius=0)
    res = robust_masks_ensemble(score, x, y, radii, budget=b, logits=net, positive=POS, frontier=True,
                                generator=torch.Generator().manual_seed(0))
    strong = robust_masks_ensemble(score, x, y, radii, budget=b.stronger(4), logits=net, positive=POS,
                                   start=res.worst, frontier=True, generator=torch.Generator().manual_seed(1))
    assert (strong.worst <= res.worst).all()  # it only attacks what the first run left
    ind = attack_indicators(res, strong=strong, tol=0.0)
    drop = float((res.worst.double().mean(-1) - strong.worst.double().mean(-1)).max())
    assert ind["checks"]["convergence"]["value"] == pytest.approx(drop)
    assert ("convergence" in ind["flagged"]) == (drop > 0)
