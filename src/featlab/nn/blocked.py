"""Per-replica losses of a two-layer net with its weight gradient computed one replica block at a time, so that each
replica's data is read from memory once per step.

With per-seed data X (E, n, d), a GD step reads X twice: the forward X Wᵀ and the weight gradient Gᵀ X. Done for all
replicas at once, the second read comes from memory again (E·n·d floats do not fit in any cache); done block by
block — forward, loss, G = ∂loss/∂z and Gᵀ X_b for a block of replicas before the next — the second read of X_b
hits the cache. Same formulas as autograd through :class:`~featlab.nn.twolayer.EnsembleTwoLayer` (tested equal).
"""

from __future__ import annotations

from typing import Callable

import torch

_BLOCK_BYTES = 8 << 20  # a block's X stays well inside a 32 MB last-level cache


def blocked_loss(net, x: torch.Tensor, objective: Callable[[torch.Tensor, slice], torch.Tensor],
                 block: int | None = None) -> torch.Tensor:
    """(E,) losses objective(net.head(z_b), replicas) over blocks of replicas, z_b = X_b W_bᵀ + b_b; differentiable in
    net.W and net.b (the gradient is computed in the forward pass, only when one is needed). ``objective`` gets the
    block's outputs and the slice of replicas it covers (to pick the labels)."""
    E, n, d = x.shape
    block = block or max(1, _BLOCK_BYTES // max(n * d * x.element_size(), 1))
    b = net.b if net.b is not None else torch.zeros(0, dtype=x.dtype, device=x.device)
    need = torch.is_grad_enabled() and (net.W.requires_grad or b.requires_grad)
    return _Blocked.apply(net.W, b, x, net, objective, block, need)


class _Blocked(torch.autograd.Function):
    @staticmethod
    def forward(ctx, W, b, x, net, objective, block, need):
        E = x.shape[0]
        has_b = b.numel() > 0
        out = torch.empty(E, dtype=x.dtype, device=x.device)
        gW = torch.empty_like(W) if need else None
        gb = torch.empty_like(b) if need and has_b else None
        for s in range(0, E, block):
            sl = slice(s, min(s + block, E))
            xb = x[sl]
            z = torch.bmm(xb, W[sl].transpose(1, 2))
            if has_b:
                z = z + b[sl, None, :]
            if not need:
                out[sl] = objective(net.head(z), sl)
                continue
            with torch.enable_grad():
                z = z.detach().requires_grad_(True)
                loss = objective(net.head(z), sl)
                (G,) = torch.autograd.grad(loss.sum(), z)  # replicas are independent: each its own G
            out[sl] = loss.detach()
            gW[sl] = torch.bmm(G.transpose(1, 2), xb)  # while X_b is still in cache
            if has_b:
                gb[sl] = G.sum(1)
        ctx.save_for_backward(*(t for t in (gW, gb) if t is not None))
        ctx.has_b = has_b
        return out

    @staticmethod
    def backward(ctx, g):
        saved = ctx.saved_tensors
        gW = saved[0] * g[:, None, None]
        gb = saved[1] * g[:, None] if ctx.has_b else None
        return gW, gb, None, None, None, None, None
