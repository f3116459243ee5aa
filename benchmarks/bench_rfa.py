"""Fig 2 (App. E) training throughput: seeds batched on the replica axis vs a naive per-seed loop.

    python benchmarks/bench_rfa.py                 # 300 steps, 8 seeds, both regimes
    python benchmarks/bench_rfa.py --full          # the 10^5-step horizon of Fig 2
    python benchmarks/bench_rfa.py --sizes quick --steps 3000 --threads 1

Prints seed-steps per second of each and their ratio (measured in this run; never an absolute threshold).
The naive loop is what a per-figure script does: one nn.Module per seed, torch.optim.SGD, seeds one after another.
Both compute the same GD iterates (checked at the end).
"""

from __future__ import annotations

import argparse
import math
import time

import torch
from torch import nn

from featlab.papers.feature_amplification.common import make_net
from featlab.papers.feature_amplification.data import XORClusterDistribution
from featlab.papers.feature_amplification.figures import Fig2Config
from featlab.train.loop import train
from featlab.train.objectives import logistic

# (n, d, m) of the rfa-fig2 presets' regimes
SIZES = {"paper": {"low": (100, 10, 400), "high": (100, 2000, 400)},
         "large": {"low": (2000, 50, 400), "high": (100, 2000, 400)},
         "quick": {"low": (100, 10, 100), "high": (40, 400, 100)}}


class NaiveNet(nn.Module):
    def __init__(self, W0: torch.Tensor, a: torch.Tensor):
        super().__init__()
        self.W = nn.Parameter(W0.clone())
        self.register_buffer("a", a)

    def forward(self, x):
        return (x @ self.W.T).clamp(min=0) @ self.a


def naive(seeds, x, y, W0, A, steps, alpha):
    out = []
    for e in range(len(seeds)):
        net = NaiveNet(W0[e], A[:, 0].to(W0.dtype))
        opt = torch.optim.SGD(net.parameters(), lr=alpha)
        for _ in range(steps):
            opt.zero_grad()
            loss = nn.functional.softplus(-y[e] * net(x[e])).mean()
            loss.backward()
            opt.step()
        out.append(net.W.detach())
    return torch.stack(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, default=8)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--full", action="store_true", help="10^5 steps (Fig 2's horizon)")
    p.add_argument("--regime", choices=["low", "high", "both"], default="both")
    p.add_argument("--sizes", choices=list(SIZES), default="paper", help="the regimes of the paper or quick preset")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0 = leave the default)")
    a = p.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    steps = 100_000 if a.full else a.steps
    seeds = list(range(a.seeds))
    alpha = 0.1
    print(f"Fig 2 settings (App. E, {a.sizes} preset sizes): σ²=d^-1.2, 15% flips per cluster, ω²=0.01/(md), "
          f"α={alpha}; "
          f"{len(seeds)} seeds × {steps} steps; torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"{'regime':8s} {'n':>6s} {'d':>6s} {'m':>5s} {'batched seed-steps/s':>22s} {'naive seed-steps/s':>20s} "
          f"{'ratio':>7s}")
    for name in (["low", "high"] if a.regime == "both" else [a.regime]):
        n, d, m = SIZES[a.sizes][name]
        dist = XORClusterDistribution.create(seeds, d, d**-0.6, 0.15, noise="exact", means="axis")
        tr = dist.sample(n, seeds)
        cfg = Fig2Config(m=m)
        net = make_net(cfg, seeds, torch.float32, torch.device("cpu"), d=d)
        W0 = net.W.detach().clone()
        t0 = time.perf_counter()
        train([net.W], lambda s, net=net, tr=tr: logistic(net(tr.x), tr.y), steps, seeds=seeds, lr=alpha,
              probe_every=10**9)
        tb = time.perf_counter() - t0
        t0 = time.perf_counter()
        Wn = naive(seeds, tr.x, tr.y, W0, net.A, steps, alpha)
        tn = time.perf_counter() - t0
        gap = float((Wn - net.W.detach()).abs().max() / net.W.detach().abs().max())
        rb, rn = len(seeds) * steps / tb, len(seeds) * steps / tn
        print(f"{name:8s} {n:6d} {d:6d} {m:5d} {rb:22.0f} {rn:20.0f} {rb / rn:7.2f}   (max rel. weight gap {gap:.1e})")
        if not math.isfinite(gap) or gap > 1e-3:
            print("  warning: batched and naive iterates differ")


if __name__ == "__main__":
    main()
