"""The all-pairs mixing sum behind J_M (Eq. 2.2) and J_MM (Eq. 3.1), over blocks of the pair grid with a
hand-written gradient.

For blocks I, J of the N points, the pre-activations of every mixed point z_ij(λ) = λx_i + (1 − λ)x_j, i ∈ I, j ∈ J,
are the broadcast λH_I[:, None] + (1 − λ)H_J[None] (the first layer is linear), and the gradient of
S = Σ w_ij Σ_l ω_l [λ log φ_{y_i} + (1 − λ) log φ_{y_j}] flows back to H_I and H_J as λ·(row sums) and (1 − λ)·(column
sums) of the same block: no gather of H[iu], no scatter (``index_put_``) back — the two kernels that dominated the
step — and blocks sized to stay in cache. The gradient is computed in the forward pass (only when H needs one), in
closed form: ∂S/∂logits = w·ω·(λe_{y_i} + (1 − λ)e_{y_j} − softmax), ∂/∂z = (∂S/∂logits Aᵀ)·mult_p·φ'(z).

The model must be a patch read-out g = Aᵀ Σ_p mult_p φ(z_p) with an elementwise φ (``value_and_grad`` when it has
one, autograd otherwise) and no trainable parameter outside H.
"""

from __future__ import annotations

import math

import torch

from . import fused_pairs

_BLOCK_ELEMENTS = 1 << 17  # activations per replica and block: (B, B, P, M) ≈ 0.5 MB of float32
# on a GPU a block is a handful of kernel launches whatever its size: blocks sized for a CPU cache left the CUDA step
# launch-bound (≈ 10 blocks × 20 kernels a step at mm-multiview quick's shapes); 64 MB of float32 per replica takes
# quick's whole pair grid in one block and 10× its N in about ten
_BLOCK_ELEMENTS_CUDA = 1 << 24


def block_elements(device: torch.device) -> int:
    """Activations per replica in one block of the reference path on ``device``."""
    return _BLOCK_ELEMENTS_CUDA if device.type == "cuda" else _BLOCK_ELEMENTS


# pairs per block when the caller sets none (the config field ``chunk``): 2^14 (128² pairs) keeps a CPU block in
# cache; on CUDA it made 10× quick's N (1000 points) a grid of 36 blocks, launch-bound: 2^18 (512² pairs) took that
# step from 29.0 to 8.6 ms on an H200 (benchmarks/bench_pairs.py; quick's N = 100 is one block either way)
_CHUNK, _CHUNK_CUDA = 1 << 14, 1 << 18


def default_chunk(device: torch.device | str) -> int:
    """Pairs per block of the reference path on ``device`` when the caller sets no ``chunk``."""
    return _CHUNK_CUDA if torch.device(device).type == "cuda" else _CHUNK


KERNELS = ("auto", "fused", "reference")


def all_pairs_sum(model, H: torch.Tensor, y: torch.Tensor, lam: torch.Tensor, wts: torch.Tensor,
                  mult: torch.Tensor | None, symmetric: bool, chunk: int | None = None,
                  kernel: str = "auto") -> torch.Tensor:
    """Σ_{pairs} w_ij Σ_l wts_l [λ_l log φ_{y_i} + (1 − λ_l) log φ_{y_j}](g(z_ij(λ_l))): (E,).

    H (E, N, P, M) pre-activations, y (E, N), lam (E, L), wts (L,). ``symmetric``: the unordered pairs i ≤ j, weight
    2 off the diagonal (see mixup_all_pairs_loss); else all N² ordered pairs. At most ``chunk`` pairs per block (the
    reference; None: :func:`default_chunk` of H's device; the fused kernel's blocks are fixed and its memory is
    bounded anyway).

    ``kernel``: "fused" = one fused numba pass per block (:mod:`.fused_pairs`; CPU, float32/64, ReLU~ or the
    identity); "reference" = the torch blocks below (the GPU path, any elementwise activation); "auto" = fused
    where it applies."""
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {', '.join(KERNELS)}; got {kernel!r}")
    if kernel != "reference":
        why = fused_pairs.unusable(model, H)
        if why is None:
            return fused_pairs.fused_all_pairs_sum(model, H, y, lam, wts, mult, symmetric)
        if kernel == "fused":
            raise ValueError(f"kernel='fused' cannot compute this pair sum: {why}; use kernel='auto' or 'reference'")
    E, N, P, M = H.shape
    chunk = default_chunk(H.device) if chunk is None else chunk
    # the block depends on one replica's shapes only, never on E: replica i sums in the same order alone or batched
    block = max(1, min(math.isqrt(max(chunk, 1)), math.isqrt(max(block_elements(H.device) // (P * M), 1)), N))
    return _AllPairsSum.apply(H, model, y, lam, wts, mult, symmetric, block)


def _act(model, Z: torch.Tensor, need_grad: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
    act = model.activation
    if hasattr(act, "value_and_grad"):
        return act.value_and_grad(Z)
    if not need_grad:
        return act(Z), None
    with torch.enable_grad():
        Zl = Z.detach().requires_grad_(True)
        a = act(Zl)
        (q,) = torch.autograd.grad(a.sum(), Zl)  # elementwise φ: the derivative, point by point
    return a.detach(), q.contiguous()  # an expanded tensor for a linear φ: make it writable


class _AllPairsSum(torch.autograd.Function):
    @staticmethod
    def forward(ctx, H, model, y, lam, wts, mult, symmetric, block):
        E, N, P, M = H.shape
        need = ctx.needs_input_grad[0]
        A = model.A.to(H.dtype)
        mv = torch.ones(P, dtype=H.dtype, device=H.device) if mult is None else mult.to(H)
        AP = (mv[:, None, None] * A).reshape(P * M, -1)  # Σ_p mult_p φ(z_p) A as one product over (p, m)
        APt = AP.t().contiguous()
        yl = y.long()
        dH = torch.zeros_like(H) if need else None
        total = torch.zeros(E, dtype=H.dtype, device=H.device)
        starts = range(0, N, block)
        linear = getattr(model.activation, "linear", False)  # φ(z) = z: logits_ij = λ g(x_i) + (1 − λ) g(x_j)
        for l in range(lam.shape[1]):
            lm = lam[:, l].reshape(E, 1, 1)
            HL, HR = (H * lm[..., None]).reshape(E, N, P * M), (H * (1 - lm[..., None])).reshape(E, N, P * M)
            if linear:
                HL, HR = HL @ AP, HR @ AP  # (E, N, k): the pair grid is k wide, not P·M
            for bi in starts:
                I = slice(bi, min(bi + block, N))
                for bj in (s for s in starts if not symmetric or s >= bi):
                    J = slice(bj, min(bj + block, N))
                    w = _block_weights(I, J, symmetric, H) * wts[l]  # (ni, nj)
                    Z = HL[:, I, None] + HR[:, None, J]  # (E, ni, nj, P·M), or the logits when linear
                    a, q = (Z, None) if linear else _act(model, Z, need)
                    logp = (a if linear else a @ AP).log_softmax(-1)  # (E, ni, nj, k)
                    yi = yl[:, I, None, None].expand(-1, -1, J.stop - J.start, 1)  # the labels as gather indices
                    yj = yl[:, None, J, None].expand(-1, I.stop - I.start, -1, 1)
                    ti, tj = logp.gather(-1, yi), logp.gather(-1, yj)  # log φ_{y_i}, log φ_{y_j}
                    total += ((lm[..., None] * ti + (1 - lm[..., None]) * tj).squeeze(-1) * w).sum((1, 2))
                    if need:  # ∂/∂logits = w·(λ e_{y_i} + (1 − λ) e_{y_j} − softmax)
                        G = logp.exp_().mul_(-w[..., None])
                        G.scatter_add_(-1, yi, (lm * w)[..., None].expand_as(ti).contiguous())
                        G.scatter_add_(-1, yj, ((1 - lm) * w)[..., None].expand_as(tj).contiguous())
                        if linear:  # reduce over the pairs first, then one small product with Aᵀ
                            dH[:, I] += (G.sum(2) @ APt).mul_(lm).reshape(E, -1, P, M)
                            dH[:, J] += (G.sum(1) @ APt).mul_(1 - lm).reshape(E, -1, P, M)
                            continue
                        dZ = q.mul_(G @ APt)
                        dH[:, I] += dZ.sum(2).mul_(lm).reshape(E, -1, P, M)
                        dH[:, J] += dZ.sum(1).mul_(1 - lm).reshape(E, -1, P, M)
        ctx.save_for_backward(dH if need else H.new_empty(0))
        return total

    @staticmethod
    def backward(ctx, g):
        (dH,) = ctx.saved_tensors
        return (dH * g[:, None, None, None],) + (None,) * 7


def _block_weights(I: slice, J: slice, symmetric: bool, H: torch.Tensor) -> torch.Tensor:
    """Pair weights of block (I, J): 1 for ordered pairs; for unordered ones 2 off the diagonal, 1 on it, and 0
    below it in a diagonal block (those pairs are counted from the other side)."""
    ni, nj = I.stop - I.start, J.stop - J.start
    if not symmetric:
        return H.new_ones(ni, nj)
    i = torch.arange(I.start, I.stop, device=H.device)[:, None]
    j = torch.arange(J.start, J.stop, device=H.device)[None, :]
    return torch.where(i < j, 2.0, torch.where(i == j, 1.0, 0.0)).to(H.dtype)
