"""Feature Averaging synthetic training (paper settings: k=10, d=3072, m=5, n=1000, T=100): featlab's
replica-batched trainer vs a naive per-seed nn.Module loop (how the public code runs seeds), and the achieved
GFLOP/s vs this machine's measured fp32 matmul peak. Prints ratios measured in one run; asserts nothing.

    python benchmarks/bench_fa.py [--seeds 100] [--naive-seeds 10] [--T 100]
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn

from featlab.papers.feature_averaging.common import FASyntheticConfig, fit_binary, make_data
from featlab.probes.robustness import robust_accuracy_curve


def matmul_peak(n: int = 2048, reps: int = 10) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    t = time.perf_counter()
    for _ in range(reps):
        a @ b
    return 2 * n**3 * reps / (time.perf_counter() - t) / 1e9


def naive_seed(cfg: FASyntheticConfig, seed: int) -> float:
    """One seed the way the public scripts do it: its own data, an nn.Module, torch.optim.SGD, T steps."""
    torch.manual_seed(seed)
    q, _ = torch.linalg.qr(torch.randn(cfg.d, cfg.k))
    mu = q.T * cfg.d**0.5
    j = torch.randint(cfg.k, (cfg.n,))
    x = mu[j] + torch.randn(cfg.n, cfg.d)
    y = (j < cfg.k // 2).float() * 2 - 1
    layer = nn.Linear(cfg.d, 2 * cfg.m)
    nn.init.normal_(layer.weight, std=cfg.sigma_w)
    nn.init.normal_(layer.bias, std=cfg.sigma_b)
    a = torch.cat([torch.full((cfg.m,), 1 / cfg.m), torch.full((cfg.m,), -1 / cfg.m)])
    opt = torch.optim.SGD(layer.parameters(), lr=cfg.eta)
    t = time.perf_counter()
    for _ in range(cfg.T):
        opt.zero_grad()
        f = torch.relu(layer(x)) @ a
        loss = nn.functional.softplus(-y * f).mean()
        loss.backward()
        opt.step()
    return time.perf_counter() - t


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", type=int, default=100)
    p.add_argument("--naive-seeds", type=int, default=10, help="seeds timed serially (the rest extrapolated)")
    p.add_argument("--T", type=int, default=100)
    p.add_argument("--pgd", action="store_true", help="also time the 30-radius PGD curve for all seeds")
    a = p.parse_args()
    peak = matmul_peak()
    print(f"measured fp32 matmul peak: {peak:.1f} GFLOP/s ({torch.get_num_threads()} threads)")

    cfg = FASyntheticConfig(seeds=a.seeds, T=a.T, probe_every=10**9)
    naive = sum(naive_seed(cfg, s) for s in range(a.naive_seeds)) / a.naive_seeds
    print(f"naive per-seed loop: {naive:.3f} s/seed → {naive * a.seeds:.1f} s for {a.seeds} seeds "
          f"(timed on {a.naive_seeds}, serial so linear)")

    flops_per_step = 4 * cfg.n * cfg.d * 2 * cfg.m  # forward x·Wᵀ and backward Gᵀ·x, per replica
    for shared in (False, True):
        c = cfg.model_copy(update={"shared_data": shared})
        seeds = c.seed_list()
        dist, tr, _ = make_data(c, seeds, torch.float32)
        t = time.perf_counter()
        net, res = fit_binary(c, seeds, dist, tr)
        el = time.perf_counter() - t
        gflops = flops_per_step * a.seeds * a.T / el / 1e9
        mode = "one dataset, seeds differ in init" if shared else "every seed its own data"
        print(f"featlab, {a.seeds} seeds batched ({mode}): {el:.2f} s → {naive * a.seeds / el:.1f}× faster "
              f"than the naive loop; {gflops:.1f} GFLOP/s = {100 * gflops / peak:.0f} % of the matmul peak")
        if a.pgd and not shared:
            te = dist.sample(1000, seeds, "test")
            t = time.perf_counter()
            robust_accuracy_curve(lambda x, net=net: net(x), te.x, te.y, list(map(float, range(0, 59, 2))), steps=50,
                                  generator=torch.Generator().manual_seed(0))
            print(f"PGD curve, 30 radii × {a.seeds} seeds × 1000 points × 50 steps: {time.perf_counter() - t:.1f} s")
        del dist, tr, net


if __name__ == "__main__":
    main()
