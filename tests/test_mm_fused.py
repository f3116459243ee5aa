"""The fused all-pairs kernel (papers/midpoint_mixup/fused_pairs.py) against the torch reference (pairs.py):
value and gradient within 1e-6 relative in float32 and float64, dispatch, determinism."""

import pytest
import torch

from featlab.nn.activations import SmoothedReLU, identity
from featlab.nn.twolayer import EnsembleTwoLayer, block_readout
from featlab.papers.midpoint_mixup import fused_pairs
from featlab.papers.midpoint_mixup import losses as mm
from featlab.papers.midpoint_mixup.data import MultiViewDistribution, compress_patches

pytestmark = pytest.mark.skipif(not fused_pairs.available(), reason="numba is not installed")

TOL = {torch.float32: 1e-6, torch.float64: 1e-12}  # relative; float32's is the issue's 1e-6


def _setup(dtype, alpha=4.0, readout="block", seeds=(0, 1), N=11, act=None):
    k, m = 4, 3
    b = MultiViewDistribution(k, 7, delta3=0.05, delta4=0.1).sample(N, list(seeds))
    xc, mult = compress_patches(b.x)
    if readout == "block":
        A = block_readout(k, m, 1.0)
    else:  # a dense read-out with mixed signs and one neuron feeding nothing (padding of the sparse rows)
        A = torch.randn(k * m, k, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
        A[1] = 0
        A[2, :2] = 0
    net = EnsembleTwoLayer.init(list(seeds), 2 * k, A, sigma_w=0.8, dtype=dtype,
                                activation=act or SmoothedReLU(alpha, 0.3))
    return net, xc.to(dtype), b.y, mult


def _value_grad(net, lossf, kernel):
    net.W.grad = None
    v = lossf(kernel)
    v.sum().backward()
    return v.detach(), net.W.grad.clone()


def _close(net, lossf, dtype):
    v0, g0 = _value_grad(net, lossf, "reference")
    v1, g1 = _value_grad(net, lossf, "fused")
    assert g0.norm() > 0 and (v0.abs() > 0).all()
    assert ((v1 - v0).abs() / v0.abs()).max() <= TOL[dtype], (v0, v1)
    assert (g1 - g0).norm() / g0.norm() <= TOL[dtype]
    return v1, g1


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("alpha", [4.0, 2.5, 1.0])
def test_fused_midpoint_equals_reference(dtype, alpha):
    """J_MM (Eq. 3.1) over the unordered pairs, merged patches weighted by mult; ReLU~'s exponent α − 1 an integer
    (by squaring), a fraction (pow) and 0 (the step)."""
    net, x, y, mult = _setup(dtype, alpha)
    _close(net, lambda kern: mm.midpoint_all_pairs_loss(net, x, y, mult, kernel=kern), dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("symmetric", [True, False])
def test_fused_mixup_equals_reference(dtype, symmetric):
    """J_M (Eq. 2.2): λ per replica (asymmetric: every ordered pair counts), quadrature weights, a dense read-out."""
    net, x, y, mult = _setup(dtype, readout="dense")
    lam = torch.tensor([[0.2, 0.7, 0.5], [0.4, 0.9, 0.05]], dtype=dtype)
    w = torch.tensor([0.5, 0.3, 0.2], dtype=dtype)
    _close(net, lambda kern: mm.mixup_all_pairs_loss(net, x, y, lam, w, mult, symmetric=symmetric, kernel=kern),
           dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fused_linear_model_equals_reference(dtype):
    """The identity activation (§3.1's linear model): the logits are mixed, as in the reference."""
    net, x, y, mult = _setup(dtype, act=identity)
    lam = torch.tensor([0.3, 0.5], dtype=dtype)
    _close(net, lambda kern: mm.mixup_all_pairs_loss(net, x, y, lam, mult=mult, kernel=kern), dtype)


def test_fused_is_deterministic_over_threads_replicas_and_grad_mode():
    """Same numbers with 1 or 2 threads, a replica alone or batched, and without a gradient."""
    net, x, y, mult = _setup(torch.float64, seeds=(0, 1), N=37)  # several blocks per side (block = 16)
    lossf = lambda kern: mm.midpoint_all_pairs_loss(net, x, y, mult, kernel=kern)
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        v1, g1 = _value_grad(net, lossf, "fused")
        torch.set_num_threads(2)
        v2, g2 = _value_grad(net, lossf, "fused")
    finally:
        torch.set_num_threads(old)
    assert torch.equal(v1, v2) and torch.equal(g1, g2)
    one = net.replica(1)
    one.W.grad = None
    v_one = mm.midpoint_all_pairs_loss(one, x[1:], y[1:], mult, kernel="fused")
    v_one.sum().backward()
    assert torch.equal(v_one[0], v1[1]) and torch.equal(one.W.grad[0], g1[1])
    with torch.no_grad():
        assert torch.equal(mm.midpoint_all_pairs_loss(net, x, y, mult, kernel="fused"), v1)


def test_dispatch_auto_fused_reference(monkeypatch):
    """auto takes the fused kernel on CPU for ReLU~; reference never does; fused refuses what it cannot compute."""
    net, x, y, mult = _setup(torch.float64)
    calls = []
    real = fused_pairs.fused_all_pairs_sum
    monkeypatch.setattr(fused_pairs, "fused_all_pairs_sum", lambda *a: calls.append(1) or real(*a))
    mm.midpoint_all_pairs_loss(net, x, y, mult)
    assert calls == [1]
    mm.midpoint_all_pairs_loss(net, x, y, mult, kernel="reference")
    assert calls == [1]
    odd = EnsembleTwoLayer(net.W.detach().clone(), net.A, None, torch.tanh)  # no fused form
    mm.midpoint_all_pairs_loss(odd, x, y, mult)  # auto falls back to the reference
    assert calls == [1]
    with pytest.raises(ValueError, match="fused"):
        mm.midpoint_all_pairs_loss(odd, x, y, mult, kernel="fused")
    with pytest.raises(ValueError, match="kernel must be one of"):
        mm.midpoint_all_pairs_loss(net, x, y, mult, kernel="numba")
    assert fused_pairs.unusable(net, x.to(torch.float16)) is not None


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cuda_sized_blocks_equal_the_cpu_sized_ones(dtype, monkeypatch):
    """The reference path's blocks on a GPU take the whole pair grid where it fits (a few launches a step, not
    blocks × kernels): the same sum and gradient within float rounding, computed here on the CPU at both sizes."""
    from featlab.papers.midpoint_mixup import pairs

    net, x, y, mult = _setup(dtype, N=23)
    assert pairs.block_elements(torch.device("cuda")) > 64 * pairs.block_elements(torch.device("cpu"))
    monkeypatch.setattr(pairs, "_BLOCK_ELEMENTS", 3 * x.shape[2] * net.A.shape[0])  # tiny blocks: 1×1 ... 2×2 points
    small = _value_grad(net, lambda kern: mm.midpoint_all_pairs_loss(net, x, y, mult, kernel=kern), "reference")
    monkeypatch.setattr(pairs, "_BLOCK_ELEMENTS", pairs._BLOCK_ELEMENTS_CUDA)  # the CUDA size: one block
    whole = _value_grad(net, lambda kern: mm.midpoint_all_pairs_loss(net, x, y, mult, kernel=kern), "reference")
    assert ((whole[0] - small[0]).abs() / small[0].abs()).max() <= TOL[dtype]
    assert (whole[1] - small[1]).norm() / small[1].norm() <= TOL[dtype]


def test_default_chunk_is_larger_on_cuda_and_a_bound_either_way(monkeypatch):
    """chunk=None takes the device's default (CUDA's blocks 16× larger, fewer launches); an explicit chunk is still
    the bound on the CPU, and a default chunk equals passing the CPU's value."""
    from featlab.papers.midpoint_mixup import pairs

    assert pairs.default_chunk("cuda") == 16 * pairs.default_chunk("cpu")
    net, x, y, mult = _setup(torch.float64, N=23)
    loss = lambda chunk: (lambda kern: mm.midpoint_all_pairs_loss(net, x, y, mult, chunk=chunk, kernel=kern))
    none, cpu = (_value_grad(net, loss(c), "reference") for c in (None, pairs.default_chunk("cpu")))
    assert torch.equal(none[0], cpu[0]) and torch.equal(none[1], cpu[1])
    monkeypatch.setattr(pairs, "_CHUNK", pairs._CHUNK_CUDA)  # the CUDA default, here on the CPU
    whole = _value_grad(net, loss(None), "reference")
    assert ((whole[0] - cpu[0]).abs() / cpu[0].abs()).max() <= TOL[torch.float64]
