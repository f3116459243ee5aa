"""Every speed target of featlab in one table: featlab vs its baseline (ratio) and vs this machine's limits (fraction
of the matmul peak or of the memory bandwidth), all measured in this one run. Asserts nothing (timings are noisy).

    python benchmarks/run_all.py               # about 5 minutes on 2 CPU cores
    python benchmarks/run_all.py --write docs/performance.md

Benchmarks:
* fa-pipeline: Figs 2 + 3 per seed (both nets trained, 13 radii × 40 PGD steps on 1000 test points, featlab with the
  whole worst-case attack ensemble and its convergence check) vs a faithful re-implementation of the public course
  reproduction's serial per-seed protocol (nn.Module + SGD, both nets, dense PGD from scratch at every radius).
* pgd-step: one dense ℓ2 PGD step on (1000, 3072) vs its roofline (three passes over the batch at the measured
  bandwidth), and the subspace step featlab runs for two-layer nets.
* mm-step: the exact all-pairs Midpoint Mixup step at mm-multiview quick shapes vs the former gather/scatter step.
* fa-training: per-seed data GD (100 seeds, T = 100) as a fraction of the memory-bandwidth roofline.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import tempfile
import time

import torch

import featlab
from baselines import fa_course_seed, old_midpoint_loss
from bench_fa import matmul_peak


def bandwidth() -> float:
    """Read bandwidth (GB/s): a sum over a 256 MB float32 tensor."""
    x = torch.ones(64 << 20)
    x.sum()
    t = time.perf_counter()
    for _ in range(5):
        x.sum()
    return 5 * x.numel() * 4 / (time.perf_counter() - t) / 1e9


def timed(f, reps: int = 1) -> float:
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return min(ts)


def fa_pipeline(seeds: int) -> tuple[float, float]:
    radii = [float(r) for r in range(0, 61, 5)]
    with tempfile.TemporaryDirectory() as out:
        el = timed(lambda: featlab.run("fa-synthetic", "quick", out=out, quiet=True, seeds=seeds, n_test=1000,
                                       pgd_steps=40, radii=radii))
    base = timed(lambda: fa_course_seed(0, radii))
    return el / seeds, base


def pgd_step(bw: float) -> tuple[float, float, float]:
    from featlab.nn.twolayer import EnsembleTwoLayer, signed_readout
    from featlab.probes.robustness import pgd_l2
    from featlab.probes.subspace import LinearHead, subspace, subspace_pgd

    n, d, steps = 1000, 3072, 40
    net = EnsembleTwoLayer(torch.randn(1, 10, d) / d**0.5, signed_readout(5, 5, 0.2), torch.zeros(1, 10))
    x = torch.randn(1, n, d)
    y = torch.where(net(x) > 0, 1.0, -1.0)
    dense = timed(lambda: pgd_l2(lambda z: net(z), x, y, 5.0, steps=steps, random_start=False), 3) / (steps + 1)
    sub = subspace(LinearHead(net.W.detach(), net.b.detach(), net.head), x)
    fast = timed(lambda: subspace_pgd(sub, y, 5.0, steps=steps, step_size=0.3, head=net.head), 3) / (steps + 1)
    roof = 3 * n * d * 4 / (bw * 1e9)
    return dense, fast, roof


def mm_step() -> tuple[float, float, float]:
    from featlab.nn.activations import SmoothedReLU
    from featlab.nn.twolayer import EnsembleTwoLayer, block_readout
    from featlab.papers.midpoint_mixup.data import MultiViewDistribution, compress_patches
    from featlab.papers.midpoint_mixup.losses import midpoint_all_pairs_loss

    k, m, N = 10, 5, 100
    b = MultiViewDistribution(k, 20).sample(N, [0, 1])
    xc, mult = compress_patches(b.x)
    xc = xc.float()  # the quick preset's dtype
    net = EnsembleTwoLayer.init([0, 1], xc.shape[-1], block_readout(k, m, 1.0), sigma_w=0.3,
                                activation=SmoothedReLU(4.0, 0.1))

    def step(loss):
        net.W.grad = None
        loss(net, xc, b.y, mult).sum().backward()

    new = statistics.median(timed(lambda: step(midpoint_all_pairs_loss)) for _ in range(15))
    old = statistics.median(timed(lambda: step(old_midpoint_loss)) for _ in range(15))
    return new, old, N * (N + 1) // 2 * 2 * xc.shape[-2] * k * m


def fa_training(bw: float, seeds: int = 100) -> tuple[float, float]:
    from featlab.papers.feature_averaging.common import FASyntheticConfig, fit_binary, make_data

    cfg = FASyntheticConfig(seeds=seeds, probe_every=10**9)
    dist, tr, _ = make_data(cfg, cfg.seed_list(), torch.float32)
    el = timed(lambda: fit_binary(cfg, cfg.seed_list(), dist, tr))
    achieved = 2 * seeds * cfg.n * cfg.d * 4 * cfg.T / el / 1e9  # X read by the forward and the weight gradient
    return el, achieved / bw


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fa-seeds", type=int, default=10)
    ap.add_argument("--write", help="also write the table (Markdown) to this file")
    a = ap.parse_args()
    bw, peak = bandwidth(), matmul_peak()
    rows = []
    per_seed, base = fa_pipeline(a.fa_seeds)
    rows.append(("fa-pipeline (Figs 2+3, per seed)", f"{per_seed:.2f} s", f"{base:.2f} s", base / per_seed, 10,
                 "-", "ensemble of 5 attacks + convergence check vs 1 attack"))
    dense, fast, roof = pgd_step(bw)
    rows.append(("pgd-step, dense (1000 × 3072)", f"{1e3 * dense:.2f} ms", "-", None, None,
                 f"{100 * roof / dense:.0f} % of bandwidth roofline ({1e3 * roof:.2f} ms)", "target: within 2×"))
    rows.append(("pgd-step, subspace (two-layer nets)", f"{1e3 * fast:.3f} ms", f"{1e3 * dense:.2f} ms", dense / fast,
                 None, "-", "exact in span(W): O(M) per point"))
    new, old, acts = mm_step()
    rows.append(("mm-step (all pairs, quick shapes, float32)", f"{1e3 * new:.1f} ms", f"{1e3 * old:.1f} ms",
                 old / new, 5, f"{acts / 1e6:.1f} M activations; {acts * 8 / (bw * 1e6):.2f} ms at one read+write",
                 "former gather/scatter step"))
    el, frac = fa_training(bw)
    rows.append(("fa-training (100 seeds, own data, T=100)", f"{el:.1f} s", "-", None, None,
                 f"{100 * frac:.0f} % of bandwidth", "target: ≥ 70 %"))
    head = (f"measured {datetime.date.today()} on {platform.machine()} {platform.processor() or ''} "
            f"({torch.get_num_threads()} threads, torch {torch.__version__}): read bandwidth {bw:.1f} GB/s, "
            f"fp32 matmul peak {peak:.0f} GFLOP/s")
    lines = [head, "", "| benchmark | featlab | baseline | speed-up | target | vs the machine | note |",
             "|---|---|---|---|---|---|---|"]
    for name, f, b, ratio, target, lim, note in rows:
        r = "-" if ratio is None else f"{ratio:.1f}×"
        t = "-" if target is None else (f"≥ {target}× {'✓' if ratio >= target else '✗'}")
        lines.append(f"| {name} | {f} | {b} | {r} | {t} | {lim} | {note} |")
    text = "\n".join(lines)
    print(text)
    if a.write:
        with open(a.write, "w") as fh:
            fh.write("# Performance\n\nWritten by `python benchmarks/run_all.py --write docs/performance.md`; "
                     "ratios are measured in one run (timings are noisy; no test asserts a time).\n\n" + text + "\n")


if __name__ == "__main__":
    main()
