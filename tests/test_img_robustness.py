"""ℓ2 PGD on images: featlab's attack vs an independent, straightforward reference PGD (Madry et al.)."""

import pytest
import torch

from featlab.data.images import load_images
from featlab.nn.resnet import Normalize
from featlab.nn.smallcnn import SmallCNN
from featlab.probes.robustness import robust_accuracy_curve
from featlab.train.image_trainer import FitSpec, fit

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: one thread (tests/conftest.py)


def reference_pgd_l2(score, x, y, eps, steps, alpha, seed):
    """Textbook ℓ2 PGD, written independently: random start uniform in the ball, normalised gradient step on the
    margin loss −y·score, projection onto the ball, clipping to [0, 1]; success judged at the last iterate."""
    g = torch.Generator().manual_seed(seed)
    n = x.shape[0]
    d = x[0].numel()
    delta = torch.randn(x.shape, generator=g)
    delta = delta / delta.view(n, -1).norm(dim=1).view(n, 1, 1, 1)
    delta = delta * (torch.rand(n, generator=g) ** (1.0 / d) * eps).view(n, 1, 1, 1)
    for _ in range(steps):
        delta.requires_grad_(True)
        loss = -(y * score((x + delta).clamp(0, 1))).sum()
        (grad,) = torch.autograd.grad(loss, delta)
        with torch.no_grad():
            gn = grad.view(n, -1).norm(dim=1).clamp_min(1e-12).view(n, 1, 1, 1)
            delta = delta + alpha * grad / gn
            dn = delta.view(n, -1).norm(dim=1).view(n, 1, 1, 1)
            delta = delta * torch.clamp(eps / dn.clamp_min(1e-12), max=1.0)
    with torch.no_grad():
        return (torch.where(score((x + delta).clamp(0, 1)) > 0, 1.0, -1.0) == y).double().mean().item()


@pytest.fixture(scope="session")
def binary_digits_model():
    torch.set_num_threads(1)
    d = load_images("digits")
    yb = (d.y_train >= 5).long()
    torch.manual_seed(0)
    model = torch.nn.Sequential(Normalize(d.mean, d.std), SmallCNN(1, 2, 8))
    fit(model, lambda idx, g: (d.x_train[idx], yb[idx]), len(yb), FitSpec(epochs=8, batch_size=64, lr=3e-3),
        device=torch.device("cpu"))
    model.eval()
    x, y = d.x_test[:300], (d.y_test[:300] >= 5).double() * 2 - 1
    return model, x, y


def test_pgd_matches_reference(binary_digits_model):
    model, x, y = binary_digits_model
    score = lambda z: (lambda o: o[:, 1] - o[:, 0])(model(z)).double()
    radii, steps = [0.0, 0.4, 0.8, 1.2], 30
    ours = robust_accuracy_curve(score, x, y, radii, steps=steps, step_size_factor=2.5, event_dims=3, clip=(0, 1),
                                 batch_size=500, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    ref = [reference_pgd_l2(score, x, y, r, steps, 2.5 * r / steps, seed=2) if r > 0 else
           (torch.where(score(x) > 0, 1.0, -1.0) == y).double().mean().item() for r in radii]
    assert ours[0] == pytest.approx(ref[0]) and ours[0] > 0.9
    assert 0.05 < ref[2] < 0.95  # the comparison is informative (not all 0 or all 1)
    for a, b in zip(ours.tolist(), ref):
        assert abs(a - b) <= 0.02, (ours.tolist(), ref)
    assert all(ours[i] >= ours[i + 1] for i in range(len(radii) - 1))  # monotone in the radius


def test_pgd_stays_in_ball_and_box(binary_digits_model):
    from featlab.probes.robustness import pgd_l2

    model, x, y = binary_digits_model
    score = lambda z: (lambda o: o[:, 1] - o[:, 0])(model(z))
    xa, fooled = pgd_l2(score, x[:50], y[:50].float(), 0.7, steps=10, event_dims=3, clip=(0, 1),
                        generator=torch.Generator().manual_seed(0))
    dist = (xa - x[:50]).flatten(1).norm(dim=1)
    assert (dist <= 0.7 + 1e-5).all() and xa.min() >= 0 and xa.max() <= 1
    with torch.no_grad():
        assert (torch.where(score(xa[fooled]) > 0, 1.0, -1.0) != y[:50][fooled].float()).all()


def test_negative_radius_refused():
    with pytest.raises(ValueError, match=r"radii must be >= 0; got -0.1"):
        robust_accuracy_curve(lambda z: z.sum((1, 2, 3)), torch.rand(2, 1, 2, 2), torch.ones(2), [0, -0.1],
                              event_dims=3)


def test_one_routine_for_replicas_and_single_batches(binary_digits_model):
    """Images with a replica axis (E, n, C, H, W) give, per replica, the curve of that replica's batch alone
    (a deterministic attack, so the replicas' random draws do not enter)."""
    model, x, y = binary_digits_model
    score = lambda z: (lambda o: o[:, 1] - o[:, 0])(model(z))
    xs, ys = torch.stack([x[:60], x[60:120]]), torch.stack([y[:60], y[60:120]])
    kw = dict(steps=5, random_start=False, event_dims=3, clip=(0, 1), dtype=torch.float64)
    radii = [0.0, 0.3, 0.6]
    both = robust_accuracy_curve(lambda z: score(z.flatten(0, 1)).view(z.shape[:2]), xs, ys, radii, **kw)
    assert both.shape == (3, 2)
    for e in range(2):
        alone = robust_accuracy_curve(score, xs[e], ys[e], radii, **kw)
        assert torch.allclose(both[:, e], alone, atol=1 / 60 + 1e-12), (both[:, e], alone)


def test_fa_resnet_ensemble_is_at_least_as_strong_as_reference_pgd(binary_digits_model):
    """fa-resnet's attack path (DDN first, then APGD-CE, APGD-T through the two-logit wrapper and Square on what it
    left) is never weaker than the independent textbook PGD; the former schedule includes margin PGD's own curve."""
    from featlab.papers.feature_averaging import deep_measures as dm
    from featlab.papers.feature_averaging.deep import FAResNetConfig
    from featlab.probes.apgd import binary_logits

    model, x, y = binary_digits_model
    x, y = x[:120], y[:120].float()
    score = lambda z: (lambda o: o[:, 1] - o[:, 0])(model(z))
    radii = [0.0, 0.4, 0.8]
    cfg = FAResNetConfig(apgd_steps=10, apgd_targets=1, square_queries=10, ddn_steps=20)
    att = dm.robust_points(score, x, y, radii, cfg, seed=0, device="cpu", logits=binary_logits(score),
                           positive=torch.tensor([False, True]))
    ens = att.worst.double().mean(-1)
    for i, r in enumerate(radii[1:], 1):
        ref = reference_pgd_l2(score, x, y, r, 30, 2.5 * r / 30, seed=2)
        assert ens[i] <= ref + 1 / 120, (r, float(ens[i]), ref)
    assert att.pgd is None and 0.05 < float(ens[1]) < 0.95  # minimum-norm first: no PGD-alone curve; informative
    full = dm.robust_points(score, x, y, radii, cfg.model_copy(update={"attack_schedule": "full"}), seed=0,
                            device="cpu", logits=binary_logits(score), positive=torch.tensor([False, True]))
    assert (full.worst <= full.pgd).all()  # the former schedule includes margin PGD's own curve
    assert att.indicators["checks"]["verified"]["ok"] and att.indicators["checks"]["eps0_clean"]["ok"]
