"""The baselines of run_all.py: re-implementations of how the work was done before featlab (or before a change).

* ``fa_course_seed``: the public Feature Averaging course reproduction's per-seed protocol (peers.md (b)): its own
  data, nn.Linear + SGD for the binary net (softplus loss) and the 10-class net (cross-entropy), then a hand-written
  ℓ2 PGD (40 steps, step 2.5ε/40, random start in the ball) on 1000 fresh test points at every radius from
  scratch, the 10-class net attacked on its cross-entropy. One seed, serially, as its scripts run.
* ``old_midpoint_loss``: featlab's former exact J_MM step (gather H[iu], H[ju] in chunks; autograd scatters back).
"""

from __future__ import annotations

import torch
from torch import nn

from featlab.nn.twolayer import logits_from_preact, patch_preactivation


def _pgd_acc(f, x, y_loss, correct, eps: float, steps: int = 40) -> float:
    delta = torch.randn_like(x)
    delta = delta / delta.norm(dim=1, keepdim=True) * eps * torch.rand(len(x), 1)
    for _ in range(steps):
        delta.requires_grad_(True)
        (g,) = torch.autograd.grad(y_loss(f(x + delta)), delta)
        with torch.no_grad():
            delta = delta + 2.5 * eps / steps * g / g.norm(dim=1, keepdim=True).clamp_min(1e-12)
            delta = delta * torch.clamp(eps / delta.norm(dim=1, keepdim=True).clamp_min(1e-12), max=1.0)
    with torch.no_grad():
        return correct(f(x + delta)).float().mean().item()


def fa_course_seed(seed: int, radii, k: int = 10, d: int = 3072, n: int = 1000, m: int = 5, T: int = 100,
                   lr: float = 1e-3) -> list[float]:
    torch.manual_seed(seed)
    q, _ = torch.linalg.qr(torch.randn(d, k))
    mu = q.T * d**0.5

    def sample(count):
        j = torch.randint(k, (count,))
        return mu[j] + torch.randn(count, d), j

    x, j = sample(n)
    y = (j < k // 2).float() * 2 - 1
    lin_b = nn.Linear(d, 2 * m)
    a = torch.cat([torch.full((m,), 1 / m), torch.full((m,), -1 / m)])
    lin_k = nn.Linear(d, k, bias=False)
    for lin in (lin_b, lin_k):
        for p in lin.parameters():
            nn.init.normal_(p, std=1e-5)
    fb = lambda z: torch.relu(lin_b(z)) @ a
    fk = lambda z: torch.relu(lin_k(z))
    for lin, loss in ((lin_b, lambda: nn.functional.softplus(-y * fb(x)).mean()),
                      (lin_k, lambda: nn.functional.cross_entropy(fk(x), j))):
        opt = torch.optim.SGD(lin.parameters(), lr=lr)
        for _ in range(T):
            opt.zero_grad()
            loss().backward()
            opt.step()
    xt, jt = sample(1000)
    yt = (jt < k // 2).float() * 2 - 1
    signs = torch.where(torch.arange(k) < k // 2, 1.0, -1.0)
    out = []
    for r in radii:
        out.append(_pgd_acc(fb, xt, lambda s: -(yt * s).sum(), lambda s: torch.where(s > 0, 1.0, -1.0) == yt, r))
        out.append(_pgd_acc(fk, xt, lambda s: nn.functional.cross_entropy(s, jt, reduction="sum"),
                            lambda s: torch.where(s.softmax(-1) @ signs > 0, 1.0, -1.0) == yt, r))
    return out


def _old_chunk(model, H, y, iu, ju, w, mult):
    Hp = (H[:, iu] + H[:, ju]) / 2
    logp = logits_from_preact(model, Hp, mult).log_softmax(-1)
    li = logp.gather(-1, y[:, iu, None]).squeeze(-1)
    lj = logp.gather(-1, y[:, ju, None]).squeeze(-1)
    return ((li + lj) * w).sum(-1)


def old_midpoint_loss(model, x, y, mult=None, chunk: int = 1 << 14):
    H = patch_preactivation(model, x)
    N = H.shape[1]
    iu, ju = torch.triu_indices(N, N, device=H.device)
    w = torch.where(iu == ju, 1.0, 2.0).to(H.dtype)
    total = 0.0
    for c in range(0, len(iu), chunk):
        total = total + _old_chunk(model, H, y, iu[c: c + chunk], ju[c: c + chunk], w[c: c + chunk], mult)
    return -total / (2 * N * N)
