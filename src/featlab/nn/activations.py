"""The polynomially smoothed ReLU of Allen-Zhu & Li (2021), used by Midpoint Mixup's patch CNN (Def 4.2).

    ReLU~(z) = 0                         z <= 0
               z^α / (α ρ^{α−1})          0 <= z <= ρ
               z − (1 − 1/α) ρ            z >= ρ

ReLU~' = 0, (z/ρ)^{α−1}, 1 on the three pieces: C¹ at ρ (both pieces equal ρ/α with slope 1), and zero below 0.
(The public code's PolyReLU omits the zero branch, so negative inputs give z^α/(αρ^{α−1}) ≠ 0; not repeated here.)
"""

from __future__ import annotations

import torch


def _int_pow(u: torch.Tensor, e: float) -> torch.Tensor:
    """u^e by repeated multiplication for small integer e (several times faster than pow's exp/log path)."""
    if e != int(e) or not 1 <= e <= 16:
        return u.pow(e)
    e = int(e)
    out, base = None, u
    while e:
        if e & 1:
            out = base.clone() if out is None else out.mul_(base)
        e >>= 1
        if e:
            base = base * base
    assert out is not None  # 1 <= e: at least one bit set
    return out


class _SmoothedReLUFn(torch.autograd.Function):
    """Forward and derivative in one pass; backward is a single multiply (the hot path of every simulation)."""

    @staticmethod
    def forward(ctx, z: torch.Tensor, alpha: float, rho: float) -> torch.Tensor:
        # u = clamp(z, 0, ρ)/ρ and q = u^{α−1} is ReLU~' on all three pieces (0 below 0, 1 above ρ) when α > 1;
        # ReLU~ = ρ u q / α + (z − ρ)_+ (= ρ/α + z − ρ above ρ, = z^α/(αρ^{α−1}) on [0, ρ], = 0 below 0).
        u = (z.clamp(0, rho)).div_(rho)
        q = _int_pow(u, alpha - 1) if alpha != 1 else (z > 0).to(z.dtype)
        out = (z - rho).clamp_(min=0).addcmul_(u, q, value=rho / alpha)
        ctx.save_for_backward(q)
        return out

    @staticmethod
    def backward(ctx, g):
        (grad,) = ctx.saved_tensors
        return g * grad, None, None


def smoothed_relu(z: torch.Tensor, alpha: float, rho: float) -> torch.Tensor:
    """ReLU~ with exponent α >= 1 and threshold ρ > 0 (Def 4.2)."""
    return _SmoothedReLUFn.apply(z, float(alpha), float(rho))


def smoothed_relu_grad(z: torch.Tensor, alpha: float, rho: float) -> torch.Tensor:
    """ReLU~'(z) = 0 / (z/ρ)^{α−1} / 1 (closed form, for checks)."""
    zc = z.clamp(min=0)
    return torch.where(z <= 0, torch.zeros_like(z),
                       torch.where(zc < rho, (zc / rho) ** (alpha - 1), torch.ones_like(z)))


class SmoothedReLU:
    """Callable activation for :class:`~featlab.nn.twolayer.EnsembleTwoLayer` (picklable, with a readable repr)."""

    def __init__(self, alpha: float = 8.0, rho: float = 0.1):
        if not alpha >= 1:
            raise ValueError(f"the 'alpha' parameter of SmoothedReLU must be >= 1; got {alpha!r}")
        if not rho > 0:
            raise ValueError(f"the 'rho' parameter of SmoothedReLU must be > 0; got {rho!r}")
        self.alpha, self.rho = float(alpha), float(rho)

    def __call__(self, z: torch.Tensor) -> torch.Tensor:
        return smoothed_relu(z, self.alpha, self.rho)

    def value_and_grad(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(ReLU~(z), ReLU~'(z)) in one pass, without autograd (for hand-written backward passes)."""
        u = z.clamp(0, self.rho).div_(self.rho)
        q = _int_pow(u, self.alpha - 1) if self.alpha != 1 else (z > 0).to(z.dtype)
        return (z - self.rho).clamp_(min=0).addcmul_(u, q, value=self.rho / self.alpha), q

    def __repr__(self) -> str:
        return f"SmoothedReLU(alpha={self.alpha:g}, rho={self.rho:g})"


def identity(z: torch.Tensor) -> torch.Tensor:
    """The linear model's activation (§3.1)."""
    return z


# lets the all-pairs losses mix logits instead of pre-activations (φ is linear); setattr, as mypy types no
# attribute of a function
setattr(identity, "linear", True)  # noqa: B010
