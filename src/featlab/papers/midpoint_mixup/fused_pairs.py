"""The all-pairs mixing sum of :mod:`.pairs` as one fused CPU pass per block of the pair grid (numba).

The reference (:class:`.pairs._AllPairsSum`) makes a dozen elementwise passes over every block's (E, B, B, P·M)
activations: the mix, ReLU~ and its derivative, the read-out product, log-softmax, its gradient and the products back.
Here each pair (i, j) is taken through all of them while its P·M pre-activations sit in L1, so no intermediate of
the block is ever written to memory: per pair, z = λH_i + (1 − λ)H_j, ReLU~(z) and ReLU~'(z) (Def 4.2), the logits
g = Aᵀ Σ_p mult_p ReLU~(z_p) (Eq. 4.1), log φ_{y_i} and log φ_{y_j} (Eqs. 2.2/3.1) and, when H needs a gradient,
∂/∂g = w(λe_{y_i} + (1 − λ)e_{y_j} − φ) and ∂/∂z = (∂/∂g Aᵀ)·mult_p·ReLU~'(z) (App. A.2, Eq. A.10), added to the
row sums (×λ, to H_i) and column sums (×(1 − λ), to H_j) of the block.

Determinism: the tasks (replica, block pair) are computed serially each, into their own buffers (sums over pairs in
float64), and reduced in a fixed order, so the result depends neither on the number of threads nor on the number of
replicas batched (the block size depends on N only). The kernel source is plain Python (it runs uncompiled too:
``prange`` is ``range`` until :func:`_kernel` binds numba's); it is compiled on first use and cached on disk
(``cache=True``: next to this file, or numba's user cache dir when that is read-only).
"""

from __future__ import annotations

import math
import os
import time
from typing import Any

import numpy as np
import torch

from ...nn.activations import SmoothedReLU

prange = range  # numba.prange once _kernel() compiles the kernels; the plain-Python kernels run with range
_COMPILED: dict[str, object] = {}
COMPILE_S: dict[str, float] = {}  # seconds of the first call: compiling (or loading the disk cache) and running
_BLOCK = 16  # points per block side: tasks (E · nb(nb+1)/2) for the threads, a (B, P·M) float64 column buffer in L2


def _pairs_kernel(HL, HR, y, lam, wts, mult, cls, val, k, n_pow, e_pow, alpha, rho, symmetric, B, need, f32,
                  total, dH):
    """total (E,) += Σ_{pairs} w_ij Σ_l wts_l [λ_l log φ_{y_i} + (1 − λ_l) log φ_{y_j}]; dH (E, N, P·M) += its gradient.

    HL, HR (E, L, N, P·M) float64: λ_l H and (1 − λ_l) H, the reference's own products (f32: computed in float32,
    whose sum z_ij is rounded to float32 as the reference's), so z_ij is the same number.
    cls, val (M, R): the nonzeros of the read-out A row by row (R = most per row; padding has val 0).
    The activation is ReLU~ with q = u^{n_pow} (n_pow >= 1, by squaring; n_pow == 0: α = 1, the step; n_pow < 0:
    u^{e_pow}), u = clamp(z, 0, ρ)/ρ; alpha == 0 means the identity (a linear model: HL, HR are logits already)."""
    E, L, N, PM = HL.shape
    P = mult.shape[0]
    M = PM // P
    R = cls.shape[1]
    nb = (N + B - 1) // B
    nbp = nb * (nb + 1) // 2 if symmetric else nb * nb
    blk_i = np.empty(nbp, np.int64)
    blk_j = np.empty(nbp, np.int64)
    t = 0
    for bi in range(nb):
        for bj in range(bi if symmetric else 0, nb):
            blk_i[t] = bi
            blk_j[t] = bj
            t += 1
    T = E * nbp
    tot = np.zeros(T)
    rowbuf = np.zeros((T if need else 1, B, PM))
    colbuf = np.zeros((T if need else 1, B, PM))
    linear = alpha == 0.0
    ra = 0.0 if linear else rho / alpha
    for t in prange(T):
        e = t // nbp
        bp = t - e * nbp
        i0 = blk_i[bp] * B
        j0 = blk_j[bp] * B
        i1 = min(i0 + B, N)
        j1 = min(j0 + B, N)
        z = np.empty(PM)
        u = np.empty(PM)
        q = np.empty(PM)
        b = np.empty(PM)
        a = np.empty(PM)
        racc = np.empty(PM)
        s = np.empty(M)
        dS = np.empty(M)
        g = np.empty(k)
        G = np.empty(k)
        acc = 0.0
        for l in range(L):
            lm = float(lam[e, l])
            wl = float(wts[l])
            for i in range(i0, i1):
                yi = y[e, i]
                hl = HL[e, l, i]
                racc[:] = 0.0
                for j in range(max(j0, i) if symmetric else j0, j1):
                    yj = y[e, j]
                    hr = HR[e, l, j]
                    w = (2.0 if symmetric and j > i else 1.0) * wl
                    # z = λH_i + (1 − λ)H_j (f32: the float32 sum the reference forms, exact in float64, rounded)
                    if f32:
                        for x in range(PM):
                            z[x] = np.float32(hl[x] + hr[x])
                    else:
                        for x in range(PM):
                            z[x] = hl[x] + hr[x]
                    if linear:  # identity: a = z, a' = 1
                        q[:] = 1.0
                        a[:] = z
                    else:  # ReLU~ (Def 4.2): u = clamp(z, 0, ρ)/ρ, q = ReLU~' = u^{α−1}, a = (z − ρ)_+ + (ρ/α) u q
                        for x in range(PM):
                            zc = z[x] if z[x] > 0.0 else 0.0
                            u[x] = (zc if zc < rho else rho) / rho
                        if n_pow > 0:  # by squaring, as the reference (each pass one vector loop)
                            b[:] = u
                            q[:] = 1.0
                            n = n_pow
                            while n:
                                if n & 1:
                                    for x in range(PM):
                                        q[x] *= b[x]
                                n >>= 1
                                if n:
                                    for x in range(PM):
                                        b[x] *= b[x]
                        elif n_pow == 0:  # α = 1: ReLU~' is the step
                            for x in range(PM):
                                q[x] = 1.0 if z[x] > 0.0 else 0.0
                        else:
                            for x in range(PM):
                                q[x] = u[x] ** e_pow
                        for x in range(PM):
                            zr = z[x] - rho
                            a[x] = (zr if zr > 0.0 else 0.0) + ra * u[x] * q[x]
                    # Eq. 4.1: s_m = Σ_p mult_p a_pm; q becomes mult_p ReLU~'(z_pm)
                    s[:] = 0.0
                    for p in range(P):
                        mp = mult[p]
                        ap = a[p * M:(p + 1) * M]
                        qp = q[p * M:(p + 1) * M]
                        for m in range(M):
                            s[m] += mp * ap[m]
                            qp[m] *= mp
                    g[:] = 0.0
                    for m in range(M):
                        for r in range(R):
                            g[cls[m, r]] += val[m, r] * s[m]
                    mx = g[0]
                    for c in range(1, k):
                        mx = max(mx, g[c])
                    se = 0.0
                    for c in range(k):
                        G[c] = math.exp(g[c] - mx)
                        se += G[c]
                    lse = mx + math.log(se)
                    acc += w * (lm * (g[yi] - lse) + (1.0 - lm) * (g[yj] - lse))
                    if not need:
                        continue
                    # ∂/∂g = w(λe_{y_i} + (1 − λ)e_{y_j} − φ) (Eq. A.10), then ∂/∂z = (∂/∂g Aᵀ)_m mult_p ReLU~'(z_pm)
                    for c in range(k):
                        G[c] *= -w / se
                    G[yi] += lm * w
                    G[yj] += (1.0 - lm) * w
                    for m in range(M):
                        sm = 0.0
                        for r in range(R):
                            sm += val[m, r] * G[cls[m, r]]
                        dS[m] = sm
                    cb = colbuf[t, j - j0]
                    for p in range(P):
                        qp = q[p * M:(p + 1) * M]
                        rp = racc[p * M:(p + 1) * M]
                        cp = cb[p * M:(p + 1) * M]
                        for m in range(M):
                            dz = dS[m] * qp[m]
                            rp[m] += lm * dz
                            cp[m] += (1.0 - lm) * dz
                if need:
                    ro = rowbuf[t, i - i0]
                    for x in range(PM):
                        ro[x] += racc[x]
        tot[t] = acc
    for r_e in prange(E):  # the fixed-order reduction of the tasks' buffers
        for r_t in range(r_e * nbp, (r_e + 1) * nbp):
            total[r_e] += tot[r_t]
            if need:
                r_i0 = blk_i[r_t - r_e * nbp] * B
                r_j0 = blk_j[r_t - r_e * nbp] * B
                for ii in range(min(B, N - r_i0)):
                    for x in range(PM):
                        dH[r_e, r_i0 + ii, x] += rowbuf[r_t, ii, x]
                for jj in range(min(B, N - r_j0)):
                    for x in range(PM):
                        dH[r_e, r_j0 + jj, x] += colbuf[r_t, jj, x]


def _kernel():
    """The compiled kernel (numba imported and the kernel compiled or loaded from the disk cache on first use)."""
    if "pairs" not in _COMPILED:
        import numba  # an optional heavy import (≈ 0.5 s): only when the fused path runs

        global prange
        prange = numba.prange
        if "NUMBA_THREADING_LAYER" not in os.environ:  # unless chosen: OpenMP's workers spin after each kernel and
            numba.config.THREADING_LAYER = "workqueue"  # fight torch's own (measured 10x slower on 2 busy cores)
        try:
            _COMPILED["pairs"] = numba.njit(cache=True, parallel=True)(_pairs_kernel)
        except RuntimeError:  # no writable cache location (read-only install, no user cache dir): compile per process
            _COMPILED["pairs"] = numba.njit(cache=False, parallel=True)(_pairs_kernel)
    return _COMPILED["pairs"]


def available() -> bool:
    """numba can be imported (the fused path's only dependency beyond numpy)."""
    try:
        _kernel()
    except ImportError:
        return False
    return True


# ------------------------------------------------------------------------------------------ the torch side
def unusable(model, H: torch.Tensor) -> str | None:
    """Why the fused kernel cannot compute the pair sum of ``model`` on ``H`` (None: it can)."""
    if H.device.type != "cpu":
        return f"it runs on the CPU only (H is on {H.device})"
    if H.dtype not in (torch.float32, torch.float64):
        return f"it computes float32/float64 only (H is {H.dtype})"
    if not (getattr(model.activation, "linear", False) or isinstance(model.activation, SmoothedReLU)):
        return f"it knows ReLU~ and the identity only (the activation is {model.activation!r})"
    if not available():
        return "numba is not installed"
    return None


def fused_all_pairs_sum(model, H: torch.Tensor, y: torch.Tensor, lam: torch.Tensor, wts: torch.Tensor,
                        mult: torch.Tensor | None, symmetric: bool) -> torch.Tensor:
    """:func:`.pairs.all_pairs_sum` by the fused kernel: (E,), differentiable in H (the gradient is computed in the
    forward pass, as the reference does, and scaled by the incoming gradient in backward)."""
    return _FusedPairsSum.apply(H, model, y, lam, wts, mult, symmetric)


def _sparse_rows(A: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """The read-out's nonzeros row by row, (M, R) classes and values, R = most nonzeros in a row (padding: value 0);
    a block read-out (each neuron feeds one class) has R = 1."""
    nz = A != 0
    R = max(int(nz.sum(1).max()), 1)
    cls = torch.argsort((~nz).to(torch.int8), dim=1, stable=True)[:, :R]
    return cls.contiguous().numpy(), A.gather(1, cls).double().contiguous().numpy()


class _FusedPairsSum(torch.autograd.Function):
    @staticmethod
    def forward(ctx, H, model, y, lam, wts, mult, symmetric):
        E, N, P, M = H.shape
        need = bool(ctx.needs_input_grad[0])
        act = model.activation
        A = model.A.detach().to(H.dtype)
        mv = torch.ones(P, dtype=H.dtype, device=H.device) if mult is None else mult.to(H)
        lm = lam.to(H)[:, :, None, None]  # (E, L, 1, 1)
        Hf = H.detach().reshape(E, 1, N, P * M)
        HL, HR = Hf * lm, Hf * (1 - lm)  # the reference's products: z_ij is the same number
        AP = None
        if getattr(act, "linear", False):  # φ(z) = z: the logits are mixed (k wide), A becomes the identity
            AP = (mv[:, None, None] * A).reshape(P * M, -1)
            HL, HR = HL @ AP, HR @ AP
            k = AP.shape[1]
            cls, val = np.arange(k, dtype=np.int64)[:, None], np.ones((k, 1))
            mvn, alpha, rho, n_pow, e_pow = np.ones(1), 0.0, 1.0, 0, 0.0
        else:
            k = A.shape[1]
            cls, val = _sparse_rows(A)
            mvn, alpha, rho = mv.double().numpy(), act.alpha, act.rho
            e_pow = alpha - 1  # ReLU~' = u^{α−1}: by squaring when the exponent is an integer, as the reference
            n_pow = int(e_pow) if e_pow == int(e_pow) else -1
        F = HL.shape[-1]
        total = np.zeros(E)
        dH = np.zeros((E, N, F) if need else (1, 1, 1))
        kern = _kernel()
        _threads()
        t = time.perf_counter()
        kern(HL.double().contiguous().numpy(), HR.double().contiguous().numpy(), y.long().contiguous().numpy(),
             lam.to(H).double().contiguous().numpy(), wts.to(H).double().contiguous().numpy(), mvn, cls, val,
             int(k), int(n_pow),
             float(e_pow), float(alpha), float(rho), bool(symmetric), _BLOCK, need, H.dtype == torch.float32, total, dH)
        COMPILE_S.setdefault("first call", time.perf_counter() - t)
        if need:
            g = torch.from_numpy(dH).to(H.dtype)
            g = g @ AP.t() if AP is not None else g
            ctx.save_for_backward(g.reshape(E, N, P, M))
        else:
            ctx.save_for_backward(H.new_empty(0))
        return torch.from_numpy(total).to(H.dtype)

    @staticmethod
    def backward(ctx, g):
        (dH,) = ctx.saved_tensors
        return (dH * g[:, None, None, None],) + (None,) * 6


def _threads() -> None:
    """numba's threads follow torch's setting (one-thread runs side by side stay one thread each)."""
    import numba

    cfg: Any = numba.config  # its attributes are set at import, unknown to a type checker
    numba.set_num_threads(max(1, min(torch.get_num_threads(), cfg.NUMBA_NUM_THREADS)))
