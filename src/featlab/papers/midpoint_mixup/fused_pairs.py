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
replicas batched (the block size depends on N only). The kernel source is plain Python (it runs uncompiled too); it
is compiled on first use and cached on disk (``cache=True``: next to this file, or numba's user cache dir when that
is read-only).

Threads: task t runs on thread t mod n, the calling thread one of them, the others a plain thread pool (the compiled
tasks release the GIL). Measured at mm-multiview quick's shapes on 2 cores, numba's own threading layers were worse:
with its workqueue the kernel ran at one thread's speed one step in two (3.5 vs 1.9 ms: the two woken workers
shared a core for a while); OpenMP was fast on an idle machine but its workers spin (or, passive, wait at static
barriers), and two runs side by side took 130–167 s each for Midpoint's 5000 steps, 11 s alone. Train inside
:func:`kernel_threads`.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numpy as np
import torch

from ...nn.activations import SmoothedReLU
from ...utils import torch_threads

_COMPILED: dict[str, object] = {}
COMPILE_S: dict[str, float] = {}  # seconds of the first call: compiling (or loading the disk cache) and running
_BLOCK = 16  # points per block side: tasks (E · nb(nb+1)/2) for the threads, a (B, P·M) float64 column buffer in L2


def _pairs_tasks(HL, HR, y, lam, wts, mult, cls, val, k, n_pow, e_pow, alpha, rho, symmetric, B, need, f32,
                 blk_i, blk_j, first, stride, tot, rowbuf, colbuf):
    """The tasks t = first, first + stride, … of the (replica, block pair) grid: tot[t] = Σ_{pairs of t} w_ij Σ_l
    wts_l [λ_l log φ_{y_i} + (1 − λ_l) log φ_{y_j}]; rowbuf[t], colbuf[t] (B, P·M) += its gradient's row and column
    sums (to H_i and H_j of the block pair blk_i[t % nbp], blk_j[t % nbp]).

    HL, HR (E, L, N, P·M) float64: λ_l H and (1 − λ_l) H, the reference's own products (f32: computed in float32,
    whose sum z_ij is rounded to float32 as the reference's), so z_ij is the same number.
    cls, val (M, R): the nonzeros of the read-out A row by row (R = most per row; padding has val 0).
    The activation is ReLU~ with q = u^{n_pow} (n_pow >= 1, by squaring; n_pow == 0: α = 1, the step; n_pow < 0:
    u^{e_pow}), u = clamp(z, 0, ρ)/ρ; alpha == 0 means the identity (a linear model: HL, HR are logits already)."""
    E, L, N, PM = HL.shape
    P = mult.shape[0]
    M = PM // P
    R = cls.shape[1]
    nbp = blk_i.shape[0]
    T = E * nbp
    linear = alpha == 0.0
    ra = 0.0 if linear else rho / alpha
    for t in range(first, T, stride):
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
                    if not linear and 1 <= n_pow <= 3:  # α ∈ {2, 3, 4}: one merged pass, nothing stored but q
                        for m in range(M):
                            s[m] = 0.0
                        for p in range(P):
                            mp = mult[p]
                            for m in range(M):
                                x = p * M + m
                                zz = hl[x] + hr[x]
                                if f32:
                                    zz = np.float64(np.float32(zz))
                                uu = min(max(zz, 0.0), rho) / rho
                                qq = uu if n_pow == 1 else (uu * uu if n_pow == 2 else uu * (uu * uu))  # by squaring
                                s[m] += mp * (max(zz - rho, 0.0) + ra * uu * qq)
                                q[x] = mp * qq
                    else:  # the general passes
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


def _reduce(blk_i, blk_j, B, tot, rowbuf, colbuf, need, total, dH):
    """total (E,) and dH (E, N, P·M) += the tasks' buffers, in the tasks' order (the same sums for any threads)."""
    N = dH.shape[1]
    PM = dH.shape[2]
    nbp = blk_i.shape[0]
    for e in range(total.shape[0]):
        for t in range(e * nbp, (e + 1) * nbp):
            total[e] += tot[t]
            if need:
                i0 = blk_i[t - e * nbp] * B
                j0 = blk_j[t - e * nbp] * B
                for ii in range(min(B, N - i0)):
                    for x in range(PM):
                        dH[e, i0 + ii, x] += rowbuf[t, ii, x]
                for jj in range(min(B, N - j0)):
                    for x in range(PM):
                        dH[e, j0 + jj, x] += colbuf[t, jj, x]


def _kernel():
    """The compiled kernels (numba imported and compiled or loaded from the disk cache on first use): the tasks
    without the GIL (threads run them side by side) and the reduction."""
    if "tasks" not in _COMPILED:
        import numba  # an optional heavy import (≈ 0.5 s): only when the fused path runs

        for name, f in (("tasks", _pairs_tasks), ("reduce", _reduce)):
            try:
                _COMPILED[name] = numba.njit(cache=True, nogil=True)(f)
            except RuntimeError:  # no writable cache location (read-only install, no user cache dir): per process
                _COMPILED[name] = numba.njit(cache=False, nogil=True)(f)
    return _COMPILED["tasks"], _COMPILED["reduce"]


def _block_pairs(N: int, B: int, symmetric: bool) -> tuple[np.ndarray, np.ndarray]:
    """The block pairs (bi, bj) of the pair grid, bi <= bj when symmetric, in a fixed order."""
    nb = (N + B - 1) // B
    pairs = [(bi, bj) for bi in range(nb) for bj in range(bi if symmetric else 0, nb)]
    return np.array([p[0] for p in pairs], np.int64), np.array([p[1] for p in pairs], np.int64)


def _run(args: tuple, f32: bool, symmetric: bool, need: bool, total: np.ndarray, dH: np.ndarray) -> None:
    """Every task of the (replica, block pair) grid, task t on thread t mod n (the calling thread is one of them;
    n = :func:`kernel_threads`' count or torch's), then the fixed-order reduction: the sums do not depend on n.

    args = (HL, HR, y, lam, wts, mult, cls, val, k, n_pow, e_pow, alpha, rho), see :func:`_pairs_tasks`."""
    tasks, reduce = _kernel()
    E, _, N, F = args[0].shape
    blk_i, blk_j = _block_pairs(N, _BLOCK, symmetric)
    T = E * len(blk_i)
    tot = np.zeros(T)
    rowbuf = np.zeros((T if need else 1, _BLOCK, F))
    colbuf = np.zeros((T if need else 1, _BLOCK, F))
    n = max(1, min(_KERNEL_THREADS[-1] if _KERNEL_THREADS else torch.get_num_threads(), T))

    def part(first: int) -> None:
        tasks(*args, symmetric, _BLOCK, need, f32, blk_i, blk_j, first, n, tot, rowbuf, colbuf)

    others = [_pool().submit(part, first) for first in range(1, n)]
    part(0)
    for f in others:
        f.result()
    reduce(blk_i, blk_j, _BLOCK, tot, rowbuf, colbuf, need, total, dH)


_POOL: list[ThreadPoolExecutor] = []


def _pool() -> ThreadPoolExecutor:
    """The worker threads of :func:`_run` (created on first use; the numba tasks release the GIL)."""
    if not _POOL:
        _POOL.append(ThreadPoolExecutor(max(1, (os.cpu_count() or 2) - 1), thread_name_prefix="featlab-pairs"))
    return _POOL[0]


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
        t = time.perf_counter()
        _run((HL.double().contiguous().numpy(), HR.double().contiguous().numpy(), y.long().contiguous().numpy(),
              lam.to(H).double().contiguous().numpy(), wts.to(H).double().contiguous().numpy(), mvn, cls, val,
              int(k), int(n_pow), float(e_pow), float(alpha), float(rho)), H.dtype == torch.float32, bool(symmetric),
             need, total, dH)
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


_KERNEL_THREADS: list[int] = []  # the kernel's thread count inside kernel_threads() (a stack: they may nest)


@contextmanager
def kernel_threads() -> Iterator[None]:
    """A training loop around the kernel: torch at one thread, the kernel at torch's count on entry.

    After any multi-threaded torch op (the step's H = xW, its weight gradient) torch's OpenMP workers spin for
    milliseconds and take the core the kernel's second thread needs: measured at mm-multiview quick's shapes, the
    kernel ran at one thread's speed (4.1 ms; 2.2 ms without the spin). The torch ops around it are small enough
    that one thread loses nothing; numbers do not change (the kernel's sums do not depend on its threads)."""
    _KERNEL_THREADS.append(torch.get_num_threads())
    try:
        with torch_threads(1):
            yield
    finally:
        _KERNEL_THREADS.pop()
