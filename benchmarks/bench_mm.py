"""Midpoint Mixup performance: exact all-pairs J_MM vs materialised midpoints; reduced vs full simulation.

    python benchmarks/bench_mm.py            # about two minutes on 2 CPU cores
    python benchmarks/bench_mm.py --big-d 300000

Reports milliseconds per GD step (forward + backward, median of repeats) and the ratios. Targets: all-pairs step
>= 10x faster than the naive step that materialises the N² midpoints; the reduced simulation's cost does not
depend on d.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from featlab.data.multiview import MultiViewDistribution, compress_patches, embed, orthonormal_features
from featlab.nn.activations import SmoothedReLU
from featlab.nn.twolayer import EnsembleTwoLayer, block_readout
from featlab.train import midpoint as mm

D = torch.float64


def step_ms(net, lossf, reps: int) -> float:
    times = []
    for _ in range(reps + 1):
        net.W.grad = None
        t = time.perf_counter()
        lossf().sum().backward()
        times.append(time.perf_counter() - t)
    return 1000 * statistics.median(times[1:])


def model(seeds, dim, k, m, d):
    return EnsembleTwoLayer.init(seeds, dim, block_readout(k, m, 1.0), sigma_w=d**-0.5, dtype=D,
                                 activation=SmoothedReLU(4.0, 0.1))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--m", type=int, default=5)
    ap.add_argument("--N", type=int, default=100)
    ap.add_argument("--P", type=int, default=20)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--d", type=int, default=3072)
    ap.add_argument("--big-d", type=int, default=100_000, help="largest d for the full simulation")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    k, m, N, P = a.k, a.m, a.N, a.P
    seeds = list(range(a.seeds))
    dist = MultiViewDistribution(k, P)
    b = dist.sample(N, seeds)
    xc, mult = compress_patches(b.x)
    rows = []

    # 1. all-pairs J_MM vs materialised midpoints (both in feature coordinates, same model)
    net = model(seeds, 2 * k, k, m, a.d)
    t_fast = step_ms(net, lambda: mm.midpoint_all_pairs_loss(net, xc, b.y, mult), a.reps)
    t_fast_nc = step_ms(net, lambda: mm.midpoint_all_pairs_loss(net, b.x, b.y), a.reps)
    t_naive = step_ms(net, lambda: mm.naive_midpoint_loss(net, b.x, b.y), a.reps)
    rows += [("J_MM all pairs (pre-activation trick + patch merge)", t_fast),
             ("J_MM all pairs, no patch merge", t_fast_nc),
             (f"J_MM naive: N²={N * N} materialised midpoints", t_naive)]
    print(f"[1] k={k} N={N} P={P} m={m}, {len(seeds)} seed(s), feature coordinates")
    for name, t in rows:
        print(f"    {name:58s} {t:9.1f} ms/step")
    print(f"    speed-up naive / all-pairs = {t_naive / t_fast:.0f}x (target >= 10x); without patch merge "
          f"{t_naive / t_fast_nc:.0f}x")

    # 2. reduced vs full simulation of one Midpoint (and ERM) step
    print(f"[2] reduced (2k = {2 * k} coordinates) vs full (d) simulation, ms/step")
    red = model(seeds, 2 * k, k, m, a.d)
    t_red = step_ms(red, lambda: mm.midpoint_all_pairs_loss(red, xc, b.y, mult), a.reps)
    t_red_e = step_ms(red, lambda: mm.erm_loss(red, xc, b.y, mult), a.reps)
    for d in (a.d, a.big_d):
        V = orthonormal_features(seeds, k, d)
        xf = embed(xc, V)
        full = model(seeds, d, k, m, d)
        t_full = step_ms(full, lambda: mm.midpoint_all_pairs_loss(full, xf, b.y, mult), a.reps)
        t_full_e = step_ms(full, lambda: mm.erm_loss(full, xf, b.y, mult), a.reps)
        mem = (xf.numel() + full.W.numel() + V.numel()) * 8 / 1e9
        print(f"    d={d:>9,d}: Midpoint full {t_full:8.1f} vs reduced {t_red:6.1f} -> {t_full / t_red:6.1f}x;   "
              f"ERM full {t_full_e:7.1f} vs reduced {t_red_e:5.2f} -> {t_full_e / t_red_e:6.1f}x   "
              f"(full holds {mem:.2f} GB)")
        del V, xf, full
    print("    reduced cost is the same for every d (d only sets the init scale 1/sqrt(d))")


if __name__ == "__main__":
    main()
