"""Midpoint Mixup performance: exact all-pairs J_MM vs materialised midpoints; reduced vs full simulation.

    python benchmarks/bench_mm.py            # about two minutes on 2 CPU cores
    python benchmarks/bench_mm.py --big-d 300000
    python benchmarks/bench_mm.py --threads      # the step at 1, 2 and all available threads

Reports milliseconds per GD step (forward + backward, median of repeats) and the ratios. Targets: all-pairs step
>= 10x faster than the naive step that materialises the N² midpoints; the reduced simulation's cost does not
depend on d; at mm-multiview quick's shapes the fused CPU kernel >= 5x faster than the torch reference, against
the memory floor (one read and write of the step's pair-grid activations, a copy of that many floats timed here).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time

import torch

from featlab.cpus import available_cpus
from featlab.nn.activations import SmoothedReLU
from featlab.nn.twolayer import EnsembleTwoLayer, block_readout
from featlab.papers.midpoint_mixup import losses as mm
from featlab.papers.midpoint_mixup.data import MultiViewDistribution, compress_patches, embed, orthonormal_features
from featlab.papers.midpoint_mixup.fused_pairs import kernel_threads

D = torch.float64


def step_ms(net, lossf, reps: int) -> float:
    times = []
    for _ in range(reps + 1):
        net.W.grad = None
        t = time.perf_counter()
        lossf().sum().backward()
        times.append(time.perf_counter() - t)
    return 1000 * statistics.median(times[1:])


def model(seeds, dim, k, m, d, dtype=D):
    return EnsembleTwoLayer.init(seeds, dim, block_readout(k, m, 1.0), sigma_w=d**-0.5, dtype=dtype,
                                 activation=SmoothedReLU(4.0, 0.1))


def fused_vs_reference(k, m, N, P, seeds, reps) -> None:
    """[0] mm-multiview quick's all-pairs step (float32, merged patches): fused kernel vs torch reference vs the
    memory floor, all timed in this run."""
    t0 = time.perf_counter()
    b = MultiViewDistribution(k, P).sample(N, seeds)
    xc, mult = compress_patches(b.x.float())
    net = model(seeds, 2 * k, k, m, 300_000, torch.float32)
    first = 1000 * _timed(lambda: mm.midpoint_all_pairs_loss(net, xc, b.y, mult, kernel="fused").sum().backward())
    ts = {}
    for kern in ("fused", "reference", "fused"):  # fused twice: the last one is kept (warm, after the other)
        # each as it trains: the fused one inside kernel_threads() (torch at one thread), the reference at torch's
        with kernel_threads() if kern == "fused" else contextlib.nullcontext():
            ts[kern] = step_ms(net, lambda kern=kern: mm.midpoint_all_pairs_loss(net, xc, b.y, mult, kernel=kern), reps)
    E, Pc, M = len(seeds), xc.shape[2], k * m
    acts = E * N * (N + 1) // 2 * Pc * M  # activations of one step: unordered pairs × merged patches × neurons
    src, dst = torch.rand(acts), torch.empty(acts)
    floor = 1000 * statistics.median(_timed(lambda: dst.copy_(src)) for _ in range(20))
    print(f"[0] mm-multiview quick shapes: k={k} N={N} P={P} (merged to {Pc}) m={m}, {E} replicas, float32, "
          f"{torch.get_num_threads()} threads; {acts / 1e6:.2f} M activations per step")
    print(f"      reference (torch blocks) {ts['reference']:8.2f} ms/step")
    print(f"      fused (numba, one pass)  {ts['fused']:8.2f} ms/step  -> {ts['reference'] / ts['fused']:5.1f}x "
          f"(target >= 5x)")
    print(f"      memory floor (copy of the activations, {8 * acts / 1e6:.0f} MB moved) {floor:6.2f} ms: reference "
          f"{ts['reference'] / floor:5.1f}x, fused {ts['fused'] / floor:5.1f}x the floor")
    print(f"      first fused call in this process {first / 1000:.1f} s (compile, or load numba's disk cache); "
          f"section {time.perf_counter() - t0:.0f} s")


def thread_scan(k, m, N, P, seeds, reps) -> None:
    """[T] the all-pairs step at 1, 2 and all available threads (affinity and cgroup quota: featlab.cpus), fused
    and reference, each as it trains; the target: never slower with more threads."""
    b = MultiViewDistribution(k, P).sample(N, seeds)
    xc, mult = compress_patches(b.x.float())
    net = model(seeds, 2 * k, k, m, 300_000, torch.float32)
    mm.midpoint_all_pairs_loss(net, xc, b.y, mult, kernel="fused").sum().backward()  # compile outside the timing
    old, avail = torch.get_num_threads(), available_cpus()
    print(f"[T] threads scan at mm-multiview quick's shapes (k={k} N={N} P={P} m={m}, {len(seeds)} replicas): "
          f"{avail} cores available to this process of the machine's {os.cpu_count()}")
    base: dict[str, float] = {}
    try:
        for n in sorted({1, min(2, avail), avail}):
            torch.set_num_threads(n)
            row = {}
            for kern in ("fused", "reference"):
                with kernel_threads() if kern == "fused" else contextlib.nullcontext():
                    row[kern] = step_ms(net, lambda kern=kern: mm.midpoint_all_pairs_loss(net, xc, b.y, mult,
                                                                                         kernel=kern), reps)
                base.setdefault(kern, row[kern])
            print(f"      {n:3d} thread(s): fused {row['fused']:7.2f} ms/step ({base['fused'] / row['fused']:4.2f}x "
                  f"one thread's speed), reference {row['reference']:7.2f} ms/step "
                  f"({base['reference'] / row['reference']:4.2f}x)")
    finally:
        torch.set_num_threads(old)


def _timed(f) -> float:
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


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
    ap.add_argument("--naive-full-N", type=int, default=40, help="N of the naive full-d step (N² P d memory)")
    ap.add_argument("--only-fused", action="store_true", help="only section [0] (fused vs reference, quick shapes)")
    ap.add_argument("--threads", action="store_true", help="only section [T]: the step at 1, 2 and all available "
                    "threads")
    a = ap.parse_args()
    k, m, N, P = a.k, a.m, a.N, a.P
    if a.threads:
        thread_scan(k, m, N, P, [0, 1], max(a.reps, 20))
        return
    fused_vs_reference(k, m, N, P, [0, 1], max(a.reps, 20))
    if a.only_fused:
        return
    seeds = list(range(a.seeds))
    dist = MultiViewDistribution(k, P)
    b = dist.sample(N, seeds)
    xc, mult = compress_patches(b.x)

    # 1. all-pairs J_MM vs materialised midpoints (same model, same inputs)
    net = model(seeds, 2 * k, k, m, a.d)
    t_fast = step_ms(net, lambda: mm.midpoint_all_pairs_loss(net, xc, b.y, mult), a.reps)
    t_naive_c = step_ms(net, lambda: mm.naive_midpoint_loss(net, xc, b.y, mult), a.reps)
    t_naive = step_ms(net, lambda: mm.naive_midpoint_loss(net, b.x, b.y), a.reps)
    print(f"[1] k={k} N={N} P={P} m={m}, {len(seeds)} seed(s), ms per GD step")
    print(f"    feature coordinates (2k = {2 * k}):")
    print(f"      all-pairs J_MM (pre-activation trick, i <= j, merged noise patches) {t_fast:9.1f}")
    print(f"      naive J_MM, N² materialised midpoints, merged patches               {t_naive_c:9.1f}"
          f"  -> {t_naive_c / t_fast:5.1f}x")
    print(f"      naive J_MM, N² materialised midpoints, all P patches                {t_naive:9.1f}"
          f"  -> {t_naive / t_fast:5.1f}x (target >= 10x)")
    Vd = orthonormal_features(seeds, k, a.d)
    Nf = min(N, a.naive_full_N)
    xs, ys = xc[:, :Nf], b.y[:, :Nf]
    xf = embed(xs, Vd)
    fnet = model(seeds, a.d, k, m, a.d)
    t_ff = step_ms(fnet, lambda fnet=fnet, xf=xf: mm.midpoint_all_pairs_loss(fnet, xf, ys, mult), a.reps)
    t_fn = step_ms(fnet, lambda fnet=fnet, xf=xf: mm.naive_midpoint_loss(fnet, xf, ys, mult), a.reps)
    print(f"    full inputs in R^d, d = {a.d}, N = {Nf}: all-pairs {t_ff:.1f} vs naive {t_fn:.1f}"
          f"  -> {t_fn / t_ff:5.1f}x (target >= 10x)")
    del Vd, xf, fnet

    # 2. reduced vs full simulation of one Midpoint (and ERM) step
    print(f"[2] reduced (2k = {2 * k} coordinates) vs full (d) simulation, ms/step")
    red = model(seeds, 2 * k, k, m, a.d)
    t_red = step_ms(red, lambda: mm.midpoint_all_pairs_loss(red, xc, b.y, mult), a.reps)
    t_red_e = step_ms(red, lambda: mm.erm_loss(red, xc, b.y, mult), a.reps)
    for d in (a.d, a.big_d):
        V = orthonormal_features(seeds, k, d)
        xf = embed(xc, V)
        full = model(seeds, d, k, m, d)
        t_full = step_ms(full, lambda full=full, xf=xf: mm.midpoint_all_pairs_loss(full, xf, b.y, mult), a.reps)
        t_full_e = step_ms(full, lambda full=full, xf=xf: mm.erm_loss(full, xf, b.y, mult), a.reps)
        mem = (xf.numel() + full.W.numel() + V.numel()) * 8 / 1e9
        print(f"    d={d:>9,d}: Midpoint full {t_full:8.1f} vs reduced {t_red:6.1f} -> {t_full / t_red:6.1f}x;   "
              f"ERM full {t_full_e:7.1f} vs reduced {t_red_e:5.2f} -> {t_full_e / t_red_e:6.1f}x   "
              f"(full holds {mem:.2f} GB)")
        del V, xf, full
    print("    reduced cost is the same for every d (d only sets the init scale 1/sqrt(d))")


if __name__ == "__main__":
    main()
