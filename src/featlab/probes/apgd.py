"""ℓ2 APGD (Croce & Hein, ICML 2020): PGD with an adaptive step size, momentum and restarts from the best point.

Two losses on featlab's scores (a callable x → (…, n) signed score for labels y ∈ {±1}):

* :func:`apgd_l2` ("APGD-CE"): the logistic loss softplus(−y·s) of the signed score — the binary cross-entropy of
  the two-logit model [−s/2, s/2]. Its gradient is −σ(−y·s)·∇(y·s): the same direction as the margin's, so with
  ℓ2-normalised steps and the loss-monotone checkpoint rule it takes the same path as APGD on the margin.
* :func:`apgd_targeted` ("APGD-T"): for a k-class model read as binary through J+ (``logit_margin_readout``), the
  targeted margin f_t − LSE_{own group}(f) towards each of the top classes t of the *other* group in turn
  (AutoAttack's targets, restricted to the labels that flip the binary read-out); success is judged on the
  binary score. :func:`group_logits` gives the two-logit wrapper [LSE_{J−}, LSE_{J+}] (for a binary score,
  [−s/2, s/2]: then the only target is the other logit and APGD-T is APGD on the margin).

The iterate is always a clipped point: x_k = clip(x + δ_k) with ‖δ_k‖ ≤ ε, so the actual perturbation
x_k − x (x inside the box) has norm ≤ ‖δ_k‖ ≤ ε — the budget accounts for pixel clipping.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from .. import meter
from .robustness import Score, _norm, correct, random_in_ball

Logits = Callable[[torch.Tensor], torch.Tensor]


def checkpoints(steps: int) -> list[int]:
    """APGD's checkpoints w_j = ⌈p_j·N⌉: p_0 = 0, p_1 = 0.22, p_{j+1} = p_j + max(p_j − p_{j−1} − 0.03, 0.06)."""
    p = [0.0, 0.22]
    while p[-1] < 1:
        p.append(p[-1] + max(p[-1] - p[-2] - 0.03, 0.06))
    return sorted({math.ceil(q * steps - 1e-9) for q in p[1:] if q <= 1})


def project(x: torch.Tensor, delta: torch.Tensor, eps_b: torch.Tensor, event_dims: int,
            clip: tuple[float, float] | None) -> torch.Tensor:
    """clip(x + δ·min(1, ε/‖δ‖)): the ball, then the box (never moves the point farther from x)."""
    delta = delta * torch.clamp(eps_b / _norm(delta, event_dims).clamp_min(1e-30), max=1.0)
    xa = x + delta
    return xa if clip is None else xa.clamp(*clip)


def group_logits(logits: torch.Tensor, positive: torch.Tensor) -> torch.Tensor:
    """Two-logit wrapper of the binary read-out: [LSE_{J−} f, LSE_{J+} f] (…, 2); ``positive`` a (k,) bool mask."""
    neg_inf = torch.finfo(logits.dtype).min
    pos = logits.masked_fill(~positive, neg_inf).logsumexp(-1)
    neg = logits.masked_fill(positive, neg_inf).logsumexp(-1)
    return torch.stack([neg, pos], -1)


def binary_logits(score: Score) -> Logits:
    """A binary score s as two logits [−s/2, s/2] (their difference is s; class 1 is y = +1)."""
    return lambda z: (lambda s: torch.stack([-s / 2, s / 2], -1))(score(z))


def _apgd_run(loss_fn: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]], x: torch.Tensor,
              eps_b: torch.Tensor, steps: int, event_dims: int, clip, x0: torch.Tensor, momentum: float,
              rho: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One APGD run maximising ``loss_fn`` (→ per-point loss, per-point success). Returns (x_first_success,
    success, zero_grad) where zero_grad marks points whose gradient vanished at the start."""
    bshape = x.shape[:-event_dims]
    ones = (1,) * event_dims

    def loss_grad(z):
        z = z.detach().requires_grad_(True)
        with torch.enable_grad():
            loss, ok = loss_fn(z)
            (g,) = torch.autograd.grad(loss.sum(), z)
        return loss.detach(), ok.detach(), g

    eta = (2 * eps_b).expand(*bshape, *ones).clone()  # step η^(0) = 2ε
    xk = x0
    loss, fooled, g = loss_grad(xk)
    zero_grad = _norm(g, event_dims).reshape(bshape) == 0
    x_adv = torch.where(fooled.reshape(*bshape, *ones), xk, x)
    x_max, l_max, g_max = xk.clone(), loss.clone(), g
    x_prev = xk
    cps = set(checkpoints(steps))
    last_cp, n_up = 0, torch.zeros(bshape, dtype=torch.long, device=x.device)
    l_max_cp = l_max.clone()
    reduced_last = torch.zeros(bshape, dtype=torch.bool, device=x.device)
    for k in meter.steps(steps):  # a few, timed, when an estimate is measured (featlab.meter)
        if bool(fooled.all()):  # nothing left to find (x_adv keeps each point's first success)
            break
        gn = g / _norm(g, event_dims).clamp_min(1e-30)
        z = project(x, xk + eta * gn - x, eps_b, event_dims, clip)
        a = 1.0 if k == 0 else momentum  # x^(1) is a plain step; then momentum α = 0.75
        x_new = project(x, xk + a * (z - xk) + (1 - a) * (xk - x_prev) - x, eps_b, event_dims, clip)
        loss_new, ok, g_new = loss_grad(x_new)
        new_hit = ok & ~fooled
        x_adv = torch.where(new_hit.reshape(*bshape, *ones), x_new, x_adv)
        fooled = fooled | ok
        n_up += (loss_new > loss).long()
        better = loss_new > l_max
        bb = better.reshape(*bshape, *ones)
        x_max, g_max = torch.where(bb, x_new, x_max), torch.where(bb, g_new, g_max)
        l_max = torch.where(better, loss_new, l_max)
        x_prev, xk, loss, g = xk, x_new, loss_new, g_new
        if k + 1 in cps:  # halve η where progress stalled (cond. 1 or 2) and restart there from the best point
            h = k + 1 - last_cp
            cond1 = n_up < rho * h
            cond2 = ~reduced_last & (l_max_cp >= l_max)  # η kept at the last checkpoint and f_max not improved
            reduced_last = cond1 | cond2
            red = reduced_last.reshape(*bshape, *ones)
            eta = torch.where(red, eta / 2, eta)
            xk, g = torch.where(red, x_max, xk), torch.where(red, g_max, g)
            x_prev = torch.where(red, x_max, x_prev)
            loss = torch.where(red.reshape(bshape), l_max, loss)
            last_cp, n_up = k + 1, torch.zeros_like(n_up)
            l_max_cp = l_max.clone()
    return x_adv, fooled, zero_grad


def _restarts(run, x: torch.Tensor, y: torch.Tensor, eps, restarts: int, random_start: bool, event_dims: int,
              clip, generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    bshape = x.shape[:-event_dims]
    ones = (1,) * event_dims
    eps_b = torch.as_tensor(eps, dtype=x.dtype, device=x.device).expand(bshape).reshape(*bshape, *ones)
    fooled = torch.zeros(bshape, dtype=torch.bool, device=x.device)
    x_adv, zero_grad = x.clone(), torch.zeros_like(fooled)
    for i in range(restarts):
        d0 = random_in_ball(x.shape, eps_b, event_dims, generator, x.dtype) if random_start else torch.zeros_like(x)
        xa, ok, zg = run(project(x, d0, eps_b, event_dims, clip), eps_b)
        new = ok & ~fooled
        x_adv = torch.where(new.reshape(*bshape, *ones), xa, x_adv)
        fooled |= ok
        zero_grad = zg if i == 0 else zero_grad
        if bool(fooled.all()):
            break
    return x_adv, fooled, zero_grad


def apgd_l2(score: Score, x: torch.Tensor, y: torch.Tensor, eps: float | torch.Tensor, *, steps: int = 100,
            restarts: int = 1, random_start: bool = True, event_dims: int = 1,
            clip: tuple[float, float] | None = None, generator: torch.Generator | None = None,
            loss: str = "ce", momentum: float = 0.75, rho: float = 0.75,
            return_zero_grad: bool = False):
    """APGD-CE in ℓ2 on a signed score: maximise softplus(−y·s) (``loss="ce"``) or −y·s (``"margin"``).

    Returns ``(x_adv, fooled)`` like :func:`~featlab.probes.robustness.pgd_l2` (``x_adv`` the first clipped iterate
    that fooled the point, x elsewhere; points misclassified at x count as fooled only if an iterate is), plus the
    per-point "gradient is exactly zero at the start" mask if ``return_zero_grad``. Restarts are independent
    random starts of the points not yet fooled (here: of all points, keeping the first success).
    """
    if loss not in ("ce", "margin"):
        raise ValueError(f"the 'loss' parameter of apgd_l2 must be 'ce' or 'margin'; got {loss!r} instead")
    y = y.to(x.dtype)
    fooled0 = ~correct(score(x).detach(), y)

    def loss_fn(z):
        s = score(z).to(x.dtype)
        m = y * s
        return (F.softplus(-m) if loss == "ce" else -m), ~correct(s, y)

    def run(x0, eps_b):
        return _apgd_run(loss_fn, x, eps_b, steps, event_dims, clip, x0, momentum, rho)

    x_adv, fooled, zg = _restarts(run, x, y, eps, restarts, random_start, event_dims, clip, generator)
    fooled = fooled | fooled0
    return (x_adv, fooled, zg) if return_zero_grad else (x_adv, fooled)


def apgd_targeted(logits: Logits, positive: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                  eps: float | torch.Tensor, *, n_targets: int = 3, steps: int = 100, random_start: bool = True,
                  event_dims: int = 1, clip: tuple[float, float] | None = None,
                  generator: torch.Generator | None = None, momentum: float = 0.75,
                  rho: float = 0.75, loss: str = "margin") -> tuple[torch.Tensor, torch.Tensor]:
    """APGD-T in ℓ2 for the binary read-out of a k-class model: one APGD run per target, maximising the targeted
    margin f_t − LSE_{own group}(f) for t the i-th most likely class of the other group at x (i < ``n_targets``).
    ``loss="dlr"``: that margin divided by π_1 − (π_3 + π_4)/2 (the sorted logits: the targeted DLR loss, Croce &
    Hein 2020, eq. 7, invariant to the logits' scale); with fewer than 4 classes the plain margin.

    ``logits``: x → (…, n, k); ``positive``: J+ as a (k,) bool mask (y = +1 ⇔ the class lies in J+). Success is
    sgn(LSE_{J+} − LSE_{J−}) ≠ y (the binary prediction, sgn 0 = −1). Returns ``(x_adv, fooled)``.
    """
    if loss not in ("margin", "dlr"):
        raise ValueError(f"the 'loss' parameter of apgd_targeted must be 'margin' or 'dlr'; got {loss!r} instead")
    y = y.to(x.dtype)
    positive = positive.to(device=x.device, dtype=torch.bool)
    neg_inf = torch.finfo(x.dtype).min
    dlr = loss == "dlr" and positive.numel() >= 4
    with torch.no_grad():
        f0 = logits(x).to(x.dtype)
        own = torch.where((y > 0)[..., None], positive, ~positive)  # (…, n, k): the classes of the point's group
        ranked = f0.masked_fill(own, neg_inf).argsort(-1, descending=True)
        n_other = int((~own).sum(-1).min())
        fooled = ~correct((group_logits(f0, positive).diff(dim=-1)[..., 0]), y)
    x_adv = x.clone()
    bshape = x.shape[:-event_dims]
    for i in range(min(n_targets, n_other)):
        t = ranked[..., i: i + 1]

        def loss_fn(z, t=t):
            f = logits(z).to(x.dtype)
            m = f.gather(-1, t)[..., 0] - f.masked_fill(~own, neg_inf).logsumexp(-1)
            if dlr:
                top = f.topk(4, dim=-1).values
                m = m / (top[..., 0] - (top[..., 2] + top[..., 3]) / 2).clamp_min(1e-12)
            s = group_logits(f, positive).diff(dim=-1)[..., 0]
            return m, ~correct(s, y)

        def run(x0, eps_b):
            return _apgd_run(loss_fn, x, eps_b, steps, event_dims, clip, x0, momentum, rho)

        xa, ok, _ = _restarts(run, x, y, eps, 1, random_start, event_dims, clip, generator)
        new = ok & ~fooled
        x_adv = torch.where(new.reshape(*bshape, *(1,) * event_dims), xa, x_adv)
        fooled |= ok
    return x_adv, fooled
