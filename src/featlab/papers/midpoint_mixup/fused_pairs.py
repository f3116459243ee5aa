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

import functools
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numpy as np
import torch

from ...cpus import available_cpus
from ...nn.activations import SmoothedReLU
from ...placement import on_host, to_numpy
from ...utils import torch_threads
from .pair_kernels import pairs_tasks, reduce_tasks

_COMPILED: dict[str, object] = {}
COMPILE_S: dict[str, float] = {}  # seconds of the first call: compiling (or loading the disk cache) and running
_BLOCK = 16  # points per block side: tasks (E · nb(nb+1)/2) for the threads, a (B, P·M) float64 column buffer in L2


def _kernel():
    """The compiled kernels (numba imported and compiled or loaded from the disk cache on first use): the tasks
    without the GIL (threads run them side by side) and the reduction."""
    if "tasks" not in _COMPILED:
        import numba  # an optional heavy import (≈ 0.5 s): only when the fused path runs

        for name, f in (("tasks", pairs_tasks), ("reduce", reduce_tasks)):
            try:
                _COMPILED[name] = numba.njit(cache=True, nogil=True)(f)
            except RuntimeError:  # no writable cache location (read-only install, no user cache dir): per process
                _COMPILED[name] = numba.njit(cache=False, nogil=True)(f)
    return _COMPILED["tasks"], _COMPILED["reduce"]


@functools.lru_cache(maxsize=64)
def _block_pairs(N: int, B: int, symmetric: bool) -> tuple[np.ndarray, np.ndarray]:
    """The block pairs (bi, bj) of the pair grid, bi <= bj when symmetric, in a fixed order (read only)."""
    nb = (N + B - 1) // B
    pairs = [(bi, bj) for bi in range(nb) for bj in range(bi if symmetric else 0, nb)]
    return np.array([p[0] for p in pairs], np.int64), np.array([p[1] for p in pairs], np.int64)


def _run(args: tuple, f32: bool, symmetric: bool, need: bool, total: np.ndarray, dH: np.ndarray) -> None:
    """Every task of the (replica, block pair) grid, task t on thread t mod n (the calling thread is one of them;
    n = :func:`kernel_threads`' count or torch's), then the fixed-order reduction: the sums do not depend on n.

    args = (HL, HR, y, lam, wts, mult, cls, val, k, n_pow, e_pow, alpha, rho), see :func:`.pair_kernels.pairs_tasks`."""
    tasks, reduce = _kernel()
    E, _, N, F = args[0].shape
    blk_i, blk_j = _block_pairs(N, _BLOCK, symmetric)
    T = E * len(blk_i)
    tot = np.zeros(T)
    rowbuf = np.zeros((T if need else 1, _BLOCK, F))
    colbuf = np.zeros((T if need else 1, _BLOCK, F))
    n = max(1, min(_KERNEL_THREADS[-1] if _KERNEL_THREADS else torch.get_num_threads(), available_cpus(), T))

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
        # the calling thread is one of the kernel's: one worker fewer than the cores this process may use
        _POOL.append(ThreadPoolExecutor(max(1, available_cpus() - 1), thread_name_prefix="featlab-pairs"))
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
    if not on_host(H):
        return f"it runs on the host CPU only (H is on {H.device})"
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
    return to_numpy(cls.contiguous()), to_numpy(A.gather(1, cls).double().contiguous())


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
            mvn, alpha, rho = to_numpy(mv.double()), act.alpha, act.rho
            e_pow = alpha - 1  # ReLU~' = u^{α−1}: by squaring when the exponent is an integer, as the reference
            n_pow = int(e_pow) if e_pow == int(e_pow) else -1
        F = HL.shape[-1]
        total = np.zeros(E)
        dH = np.zeros((E, N, F) if need else (1, 1, 1))
        t = time.perf_counter()
        _run((*to_numpy([HL.double().contiguous(), HR.double().contiguous(), y.long().contiguous(),
                         lam.to(H).double().contiguous(), wts.to(H).double().contiguous()]), mvn, cls, val,
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
