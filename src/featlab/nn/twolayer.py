"""Ensemble-batched two-layer networks with a fixed second layer (the model of all three papers).

    f(x) = A^T φ(W x + b)        W: (E, M, d) trained, b: (E, M) trained or absent, A: (M, out) fixed

E independent replicas sit on the leading axis and train in one batched computation. The fixed read-out A
covers each paper's network:

* Feature Averaging, binary (§3.2): M = 2m, A = (+1/m, …, +1/m, −1/m, …, −1/m), biases trained.
* Feature Averaging, k-class block net (§4.2): M = k·h, A[j·h + r, j] = 1/h, no bias.
* Random Feature Amplification (§2): A = ±1/√m (half and half, a_m = 0 when m is odd), no bias.
* Midpoint Mixup patch CNN (Def 4.2): inputs with a patch axis (E, n, P, d) are summed over patches after φ.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from ..utils import per_replica


class _EnsembleLinear(torch.autograd.Function):
    """z = x Wᵀ per replica, with the weight gradient computed as Gᵀx.

    Autograd's default for bmm computes xᵀG, which on CPU BLAS runs ~10× slower for the papers' shapes
    (n ≫ d ≫ M: a tall x and a skinny G); Gᵀx is the same number at full speed.
    """

    @staticmethod
    def forward(ctx, x, W):  # x (E, N, d), W (E, M, d)
        ctx.save_for_backward(x, W)
        return torch.bmm(x, W.transpose(1, 2))

    @staticmethod
    def backward(ctx, G):
        x, W = ctx.saved_tensors
        gx = torch.bmm(G, W) if ctx.needs_input_grad[0] else None
        gW = torch.bmm(G.transpose(1, 2), x) if ctx.needs_input_grad[1] else None
        return gx, gW


def ensemble_linear(x: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """Per-replica x Wᵀ: x (E, N, d), W (E, M, d) → (E, N, M)."""
    return _EnsembleLinear.apply(x, W)


def relu(z: torch.Tensor) -> torch.Tensor:
    """ReLU with ReLU'(0) = 1, the papers' convention (FA App. B: activation sets use ≥ 0).

    ``clamp(min=0)`` back-propagates through ``z >= 0``; ``torch.relu`` uses ``z > 0``.
    """
    return z.clamp(min=0)


class EnsembleTwoLayer(nn.Module):
    A: torch.Tensor  # a buffer: the fixed read-out (M, k)

    def __init__(self, W: torch.Tensor, A: torch.Tensor, b: torch.Tensor | None = None,
                 activation: Callable[[torch.Tensor], torch.Tensor] = relu, squeeze: bool | None = None):
        super().__init__()
        self.W = nn.Parameter(W)
        self.b = nn.Parameter(b) if b is not None else None
        self.register_buffer("A", A.to(device=W.device, dtype=W.dtype))  # the read-out follows W
        self.activation = activation
        self.squeeze = A.shape[1] == 1 if squeeze is None else squeeze

    # ---------------------------------------------------------------- constructors
    @classmethod
    def init(cls, seeds: list[int], d: int, A: torch.Tensor, *, sigma_w: float, sigma_b: float | None = None,
             dtype=torch.float32, device=None, activation=relu, role: str = "init") -> EnsembleTwoLayer:
        """W ~ N(0, σ_w² I), b ~ N(0, σ_b²) (None = no bias); replica i from the (seed_i, role) stream."""
        M = A.shape[0]

        def draw(g: torch.Generator) -> torch.Tensor:
            w = torch.randn(M, d, generator=g, dtype=torch.float64, device="cpu") * sigma_w
            b = torch.randn(M, generator=g, dtype=torch.float64, device="cpu") * (sigma_b or 0.0)
            return torch.cat([w, b[:, None]], 1)

        Wb = per_replica(seeds, role, draw, device=device, dtype=dtype)
        W, b = Wb[..., :-1].contiguous(), Wb[..., -1].contiguous()
        return cls(W, A.to(device=device), b if sigma_b is not None else None, activation)

    # ---------------------------------------------------------------- forward
    @property
    def E(self) -> int:
        return self.W.shape[0]

    def preactivation(self, x: torch.Tensor, shared: bool | None = None) -> torch.Tensor:
        """<w, x> + b: (E, n, [P,] M). x is (E, n, [P,] d), or (n, [P,] d) shared by all replicas.

        ``shared=None`` treats a 2-D x as shared and anything else as per-replica.
        """
        z = first_layer(self.W, x, shared)
        if self.b is not None:
            z = z + self.b.reshape(self.E, *([1] * (z.dim() - 2)), -1)
        return z

    def features(self, x: torch.Tensor, shared: bool | None = None) -> torch.Tensor:
        """Hidden activations summed over patches: (E, n, M)."""
        h = self.activation(self.preactivation(x, shared))
        return h.sum(dim=2) if h.dim() == 4 else h

    def head(self, z: torch.Tensor) -> torch.Tensor:
        """The output from pre-activations z (E, n, [P,] M): A^T Σ_p φ(z_p), squeezed like forward."""
        h = self.activation(z)
        out = (h.sum(dim=2) if h.dim() == 4 else h) @ self.A
        return out.squeeze(-1) if self.squeeze else out

    def forward(self, x: torch.Tensor, shared: bool | None = None) -> torch.Tensor:
        return self.head(self.preactivation(x, shared))

    def replica(self, i: int) -> EnsembleTwoLayer:
        """A detached copy holding replica i alone (E = 1)."""
        b = None if self.b is None else self.b.detach()[i : i + 1].clone()
        return EnsembleTwoLayer(self.W.detach()[i : i + 1].clone(), self.A.clone(), b, self.activation, self.squeeze)


def first_layer(W: torch.Tensor, x: torch.Tensor, shared: bool | None = None) -> torch.Tensor:
    """<w, x> per replica and neuron, no bias: W (E, M, d), x (E, n, [P,] d) or (n, [P,] d) shared → (E, n, [P,] M).

    ``shared=None`` treats a 2-D x as shared and anything else as per-replica."""
    E, M, d = W.shape
    lead = x.shape[:-1]
    if not (x.dim() == 2 if shared is None else shared):
        return ensemble_linear(x.reshape(E, -1, d), W).reshape(*lead, M)
    # shared inputs: one big matmul over all replicas' neurons (F.linear's weight gradient is Gᵀx, the fast form)
    z = torch.nn.functional.linear(x.reshape(-1, d), W.reshape(E * M, d)).reshape(*lead, E, M)
    return z.movedim(-2, 0)


def joint_preactivation(nets: list[EnsembleTwoLayer], x: torch.Tensor, shared: bool | None = None
                        ) -> list[torch.Tensor]:
    """Each net's ``preactivation(x)`` from one product over their concatenated first layers: the nets read x once
    (the cost of a step when n·d ≫ their widths) instead of once each. Differentiable in every net's W and b; the
    same numbers as the nets one by one up to the BLAS's rounding of a wider product."""
    z = first_layer(torch.cat([net.W for net in nets], 1), x, shared)
    out = []
    for net, zi in zip(nets, z.split([net.W.shape[1] for net in nets], -1)):
        out.append(zi if net.b is None else zi + net.b.reshape(net.E, *([1] * (zi.dim() - 2)), -1))
    return out


# -------------------------------------------------------------------- patch read-outs (MM Def 4.2)
# Functions of any model with ``preactivation``, ``activation`` and a fixed read-out ``A`` (M, k), so that the Midpoint
# Mixup losses can read out mixed pre-activations without materialising the mixed inputs.
def patch_preactivation(model, x: torch.Tensor) -> torch.Tensor:
    """Per-replica pre-activations with a patch axis: (E, n, P, M); inputs without patches get P = 1."""
    H = model.preactivation(x, shared=False)
    return H if H.dim() == 4 else H.unsqueeze(2)


def logits_from_preact(model, H: torch.Tensor, mult: torch.Tensor | None = None) -> torch.Tensor:
    """g(x) = A^T Σ_p mult_p act(H_p): (E, ..., P, M) → (E, ..., k).  (MM Eq. 4.1)

    ``mult`` (P,): multiplicity of each patch (patches merged by ``compress_patches``); None = 1 each."""
    a = model.activation(H)
    a = a.sum(-2) if mult is None else (a * mult.to(a.dtype)[:, None]).sum(-2)
    return a @ model.A


def patch_logits(model, x: torch.Tensor, mult: torch.Tensor | None = None) -> torch.Tensor:
    """Logits (E, n, k) of per-replica inputs x (E, n, [P,] d), patches weighted by ``mult``."""
    return logits_from_preact(model, patch_preactivation(model, x), mult)


# -------------------------------------------------------------------- fixed second layers
def signed_readout(m_pos: int, m_neg: int, scale: float) -> torch.Tensor:
    """(m_pos + m_neg, 1): +scale for the first m_pos neurons, −scale for the rest."""
    # built on the CPU: EnsembleTwoLayer.init moves it to the net's device
    signs = torch.cat([torch.full((m_pos,), scale, device="cpu"), torch.full((m_neg,), -scale, device="cpu")])
    return signs[:, None].double()


def block_readout(k: int, h: int, scale: float) -> torch.Tensor:
    """(k·h, k): neuron (j, r) feeds output j only, with weight ``scale``."""
    return torch.kron(torch.eye(k, dtype=torch.float64, device="cpu"), torch.full((h, 1), scale, device="cpu"))


# -------------------------------------------------------------------- read-outs of k-class models
def positive_mask(positive, k: int, device=None) -> torch.Tensor:
    """J+ as a (k,) boolean mask, from a (k,) boolean mask or a 1-D tensor/list of 0-based class indices of J+."""
    if isinstance(positive, torch.Tensor) and positive.dtype == torch.bool:
        if positive.shape != (k,):
            raise ValueError(f"positive: a boolean mask must have shape ({k},); got {tuple(positive.shape)}")
        return positive.to(device) if device is not None else positive
    idx = torch.as_tensor(positive, device=positive.device if isinstance(positive, torch.Tensor) else "cpu")
    if idx.dtype == torch.bool:  # a list of booleans
        return positive_mask(idx, k, device)
    if idx.numel() == 0:
        idx = idx.long()
    if idx.dim() != 1 or idx.is_floating_point() or idx.is_complex():
        raise ValueError(f"positive: expected a ({k},) boolean mask or a 1-D list of 0-based class indices; "
                         f"got {positive!r}")
    if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= k):
        raise ValueError(f"positive: class indices are 0-based and must lie in [0, {k - 1}]; got {idx.tolist()}")
    mask = torch.zeros(k, dtype=torch.bool, device=device)
    mask[idx.to(device=device, dtype=torch.long)] = True
    return mask


def binary_readout(logits: torch.Tensor, positive) -> torch.Tensor:
    """F^binary = Σ_{J+} p_j − Σ_{J−} p_j (FA §4.2), from logits (..., k).

    ``positive``: J+ as a (k,) boolean mask or a 1-D tensor/list of 0-based class indices (see positive_mask)."""
    positive = positive_mask(positive, logits.shape[-1], logits.device)
    p = logits.softmax(-1)
    return (p * (positive.to(p.dtype) * 2 - 1)).sum(-1)


def logit_margin_readout(logits: torch.Tensor, positive) -> torch.Tensor:
    """G = logsumexp_{J+} f_j − logsumexp_{J−} f_j: sgn G = sgn F^binary, but G does not saturate.

    F^binary = (A − B)/(A + B) with A = Σ_{J+} e^{f_j}, B = Σ_{J−} e^{f_j}, and log A − log B has the same sign.
    PGD attacks G so that its gradients stay informative where softmax saturates.
    ``positive``: J+ as a (k,) boolean mask or a 1-D tensor/list of 0-based class indices (see positive_mask).
    """
    positive = positive_mask(positive, logits.shape[-1], logits.device)
    neg_inf = torch.finfo(logits.dtype).min
    pos = logits.masked_fill(~positive, neg_inf).logsumexp(-1)
    neg = logits.masked_fill(positive, neg_inf).logsumexp(-1)
    return pos - neg


def sign_prediction(score: torch.Tensor) -> torch.Tensor:
    """sgn with sgn(0) = −1 (FA §3.2)."""
    return torch.where(score > 0, 1.0, -1.0).to(score.dtype)
