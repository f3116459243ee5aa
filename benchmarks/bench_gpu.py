"""GPU throughput: fa-synthetic at 1,000 seeds, the Midpoint all-pairs step, PGD curves. Prints the numbers when
CUDA is present; otherwise says so and exits 0 (nothing here is measurable without a GPU).

    python benchmarks/bench_gpu.py
"""

from __future__ import annotations

import time

import torch


def _timed(fn, repeat: int = 3) -> float:
    fn()  # warm-up (kernels, allocator)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / repeat


def main() -> int:
    if not torch.cuda.is_available():
        print("bench_gpu: no CUDA device here (or torch without CUDA); nothing to measure")
        return 0
    from featlab.nn.twolayer import EnsembleTwoLayer, block_readout, signed_readout
    from featlab.papers.midpoint_mixup.losses import midpoint_all_pairs_loss
    from featlab.probes.robustness import robust_masks

    dev = torch.device("cuda")
    print(f"device: {torch.cuda.get_device_name(dev)}")
    # fa-synthetic's training step at 1,000 replicas (d = 3072, m = 64, n = 1000): forward + backward
    E, d, m, n = 1000, 3072, 64, 1000
    net = EnsembleTwoLayer.init(list(range(E)), d, signed_readout(m, m, 1 / m), sigma_w=1e-3, sigma_b=1e-3,
                                device=dev)
    net.W.requires_grad_(True)
    x = torch.randn(E, n, d, device=dev)
    y = torch.sign(torch.randn(E, n, device=dev))

    def fa_step():
        loss = torch.nn.functional.softplus(-y * net(x)).mean(-1).sum()
        (g,) = torch.autograd.grad(loss, net.W)
        return g

    s = _timed(fa_step)
    print(f"fa-synthetic step, {E} seeds: {s * 1e3:.1f} ms ({6 * E * n * d * 2 * m / s / 1e12:.2f} TFLOP/s)")
    # Midpoint Mixup all-pairs loss (k = 10, m = 5, 2k = 20 coordinates, P = 20 patches, N = 100), 5 replicas
    k, N, P = 10, 100, 20
    mm = EnsembleTwoLayer.init(list(range(5)), 2 * k, block_readout(k, 5, 1.0), sigma_w=0.01, device=dev)
    xm = torch.randn(5, N, P, 2 * k, device=dev)
    ym = torch.randint(k, (5, N), device=dev)
    s = _timed(lambda: midpoint_all_pairs_loss(mm, xm, ym).sum())
    print(f"midpoint all-pairs loss (N={N}, N^2 pairs, 5 replicas): {s * 1e3:.1f} ms")
    # PGD robust-accuracy curve on the small net: 20 radii x 50 steps, 64 replicas x 500 points
    small = EnsembleTwoLayer.init(list(range(64)), 256, signed_readout(32, 32, 1 / 32), sigma_w=0.1, device=dev)
    xs = torch.randn(64, 500, 256, device=dev)
    ys = torch.sign(small(xs)).detach()
    radii = [0.5 * i for i in range(20)]
    s = _timed(lambda: robust_masks(small, xs, ys, radii, steps=50, generator=torch.Generator().manual_seed(0)), 1)
    print(f"PGD curve (20 radii x 50 steps, 64 x 500 points): {s:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
