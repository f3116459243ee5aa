"""The all-pairs Midpoint step (forward + backward of J_MM, Eq. 3.1) at mm-multiview quick's shapes and at larger N,
on one device, with the kernel featlab picks there (``kernel="auto"``: the fused numba pass on the CPU, the torch
reference blocks on CUDA).

    python benchmarks/bench_pairs.py [--device cuda] [--N 100,1000] [--json FILE]

Shapes: k = 10, m = 5, P = 20 patches merged as mm-multiview merges them, 2 replicas, float32 (mm-multiview quick's
N = 100; N = 1000 is 100× its pairs). Reports the median ms per step over ``--reps`` steps after a warm-up (which pays
numba's compilation or CUDA's start). Compare devices by running it on each: the issue's target is the CUDA step at
10× quick's N at least 20× faster than the 2-core CPU kernel.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time

import torch

from featlab.cpus import available_cpus
from featlab.nn.activations import SmoothedReLU
from featlab.nn.twolayer import EnsembleTwoLayer, block_readout
from featlab.papers.midpoint_mixup import losses as mm
from featlab.papers.midpoint_mixup.data import MultiViewDistribution, compress_patches
from featlab.papers.midpoint_mixup.fused_pairs import kernel_threads


def step_ms(dev: torch.device, N: int, reps: int, chunk: int, k: int = 10, m: int = 5, P: int = 20) -> float:
    seeds = [0, 1]
    b = MultiViewDistribution(k, P).sample(N, seeds)
    xc, mult = compress_patches(b.x.float())
    xc, y, mult = xc.to(dev), b.y.to(dev), mult.to(dev)
    net = EnsembleTwoLayer.init(seeds, 2 * k, block_readout(k, m, 1.0), sigma_w=300_000**-0.5, dtype=torch.float32,
                                activation=SmoothedReLU(4.0, 0.1), device=dev)

    def one() -> float:
        net.W.grad = None
        t = time.perf_counter()
        mm.midpoint_all_pairs_loss(net, xc, y, mult, chunk=chunk).sum().backward()
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        return time.perf_counter() - t

    with kernel_threads() if dev.type == "cpu" else contextlib.nullcontext():  # as it trains
        one()  # warm-up
        return 1000 * statistics.median(one() for _ in range(reps))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--N", default="100,1000", help="comma-separated training-set sizes")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--chunk", default="16384", help="comma-separated: pairs per block of the reference path (the "
                    "config field 'chunk', default 16384; the fused CPU kernel ignores it)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    dev = torch.device(a.device)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else f"CPU, {available_cpus()} cores available"
    rows = []
    chunks = [int(c) for c in a.chunk.split(",")] if dev.type == "cuda" else [16384]
    for N in (int(n) for n in a.N.split(",")):
        for chunk in chunks:
            ms = step_ms(dev, N, a.reps, chunk)
            rows.append({"N": N, "chunk": chunk, "ms_per_step": ms})
            print(f"all-pairs Midpoint step on {name}: N = {N} ({N * (N + 1) // 2:,} unordered pairs, 2 replicas), "
                  f"chunk {chunk}: {ms:.2f} ms")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": name, "torch": torch.__version__, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
