"""Every speed target of featlab in one table: featlab vs its baseline (ratio) and vs this machine's limits (fraction
of the matmul peak or of the memory bandwidth), all measured in this one run. Asserts nothing (timings are noisy).

    python benchmarks/run_all.py               # about 5 minutes on 2 CPU cores
    python benchmarks/run_all.py --end-to-end --write docs/performance.md   # + reproduce all and the suite (~10 min)

Benchmarks:
* fa-pipeline: Figs 2 + 3 per seed (both nets trained, 13 radii × 40 PGD steps on 1000 test points, featlab with the
  whole worst-case attack ensemble and its convergence check) vs a faithful re-implementation of the public course
  reproduction's serial per-seed protocol (nn.Module + SGD, both nets, dense PGD from scratch at every radius).
* pgd-step: one dense ℓ2 PGD step on (1000, 3072) vs its roofline (three passes over the batch at the measured
  bandwidth), and the subspace step featlab runs for two-layer nets.
* mm-step: the exact all-pairs Midpoint Mixup step at mm-multiview quick shapes, the fused CPU kernel (as it trains:
  inside ``kernel_threads``) vs the torch reference path (the step before it) and the former gather/scatter step.
* fa-training: both FA nets on their own data per seed (100 seeds, T = 100), one product over the two first layers
  (``fit_both``) vs the nets one at a time, and as a fraction of the matmul peak.
* mm-multiview quick end to end; with --end-to-end also ``featlab reproduce all`` (quick) and the test suite.
A GPU column repeats the step benchmarks on CUDA where it exists (``benchmarks/bench_gpu.py`` has more).
"""

from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def mm_step(device: str = "cpu") -> tuple[float, float, float, float]:
    """(fused, torch reference, former gather/scatter) seconds per step and the step's activation count; on a GPU
    the fused column is the reference path there (the fused kernel is the CPU's)."""
    from featlab.nn.activations import SmoothedReLU
    from featlab.nn.twolayer import EnsembleTwoLayer, block_readout
    from featlab.papers.midpoint_mixup.data import MultiViewDistribution, compress_patches
    from featlab.papers.midpoint_mixup.fused_pairs import kernel_threads
    from featlab.papers.midpoint_mixup.losses import midpoint_all_pairs_loss

    k, m, N = 10, 5, 100
    b = MultiViewDistribution(k, 20).sample(N, [0, 1])
    xc, mult = compress_patches(b.x)
    xc, y, mult = xc.float().to(device), b.y.to(device), mult.to(device)  # the quick preset's dtype
    net = EnsembleTwoLayer.init([0, 1], xc.shape[-1], block_readout(k, m, 1.0), sigma_w=300_000**-0.5,
                                activation=SmoothedReLU(4.0, 0.1), device=device)

    def step(loss, **kw):
        net.W.grad = None
        loss(net, xc, y, mult, **kw).sum().backward()
        if device != "cpu":
            torch.cuda.synchronize()

    def median(f, reps=30):
        f()
        return statistics.median(timed(f) for _ in range(reps))

    ref = median(lambda: step(midpoint_all_pairs_loss, kernel="reference"))  # first: before any numba thread exists
    old = median(lambda: step(old_midpoint_loss), 10)
    if device == "cpu":
        with kernel_threads():
            new = median(lambda: step(midpoint_all_pairs_loss, kernel="fused"), 60)
    else:
        new = ref
    return new, ref, old, N * (N + 1) // 2 * 2 * xc.shape[-2] * k * m


def fa_training(peak: float, seeds: int = 100, device: str = "cpu") -> tuple[float, float, float]:
    """(joint, one at a time) seconds for both FA nets' T steps, and the joint run's fraction of the matmul peak."""
    from featlab.papers.feature_averaging.common import FASyntheticConfig, fit_binary, fit_both, fit_kclass, make_data

    cfg = FASyntheticConfig(seeds=seeds, probe_every=10**9)
    dist, tr, _ = make_data(cfg, cfg.seed_list(), torch.float32, device)
    sync = torch.cuda.synchronize if device != "cpu" else (lambda: None)
    joint = timed(lambda: (fit_both(cfg, cfg.seed_list(), dist, tr), sync()))
    apart = timed(lambda: (fit_binary(cfg, cfg.seed_list(), dist, tr), fit_kclass(cfg, cfg.seed_list(), dist, tr),
                           sync()))
    M = 2 * cfg.m + cfg.k * cfg.h
    flops = 2 * 2 * seeds * cfg.n * cfg.d * M * cfg.T  # forward x·Wᵀ and weight gradient Gᵀx, both nets
    return joint, apart, flops / joint / (peak * 1e9)


def wall(cmd: list[str], cwd: Path | None = None) -> float:
    """Seconds of a command (its output discarded); a failure is reported, not timed."""
    t = time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise SystemExit(f"run_all: {' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()[-300:]}")
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fa-seeds", type=int, default=10)
    ap.add_argument("--end-to-end", action="store_true", help="also time `featlab reproduce all` (quick, in a fresh "
                    "folder) and the test suite (the README's command), ≈ 10 minutes more")
    ap.add_argument("--write", help="also write the table (Markdown) to this file")
    a = ap.parse_args()
    gpu = torch.cuda.is_available()
    bw, peak = bandwidth(), matmul_peak()
    rows = []
    per_seed, base = fa_pipeline(a.fa_seeds)
    rows.append(("fa-pipeline (Figs 2+3, per seed)", f"{per_seed:.2f} s", f"{base:.2f} s", base / per_seed, "≥ 30×",
                 "-", "ensemble of 5 attacks + convergence check vs 1 attack", "-"))
    dense, fast, roof = pgd_step(bw)
    rows.append(("pgd-step, dense (1000 × 3072)", f"{1e3 * dense:.2f} ms", "-", None, None,
                 f"{100 * roof / dense:.0f} % of bandwidth roofline ({1e3 * roof:.2f} ms)", "target: within 2×", "-"))
    rows.append(("pgd-step, subspace (two-layer nets)", f"{1e3 * fast:.3f} ms", f"{1e3 * dense:.2f} ms", dense / fast,
                 None, "-", "exact in span(W): O(M) per point", "-"))
    new, ref, old, acts = mm_step()
    g = f"{1e3 * mm_step('cuda')[1]:.2f} ms (reference path)" if gpu else "no CUDA here"
    rows.append(("mm-step (all pairs, quick shapes, float32)", f"{1e3 * new:.2f} ms", f"{1e3 * ref:.2f} ms",
                 ref / new, "≥ 5×", f"{acts / 1e6:.1f} M activations; {acts * 8 / (bw * 1e6):.2f} ms at one "
                 f"read+write", f"fused CPU kernel vs the torch reference path; the former gather/scatter step "
                 f"{1e3 * old:.1f} ms ({old / new:.1f}×)", g))
    joint, apart, frac = fa_training(peak)
    g = f"{fa_training(peak, device='cuda')[0]:.2f} s" if gpu else "no CUDA here"
    rows.append(("fa-training (both nets, 100 seeds, own data, T=100)", f"{joint:.1f} s", f"{apart:.1f} s",
                 apart / joint, None, f"{100 * frac:.0f} % of the matmul peak (target ≥ 60 % "
                 f"{'✓' if frac >= 0.6 else '✗'})",
                 "one product over both first layers vs the nets one at a time", g))
    with tempfile.TemporaryDirectory() as out:
        mv = timed(lambda: featlab.run("mm-multiview", "quick", out=out, quiet=True))
    rows.append(("mm-multiview quick, end to end", f"{mv:.0f} s", "-", None, "≤ 30 s", "-", "3 methods × 2 seeds, "
                 "5000 steps + 2500 more for the long-time claims, Prop 4.4's LP, figures", "-"))
    if a.end_to_end:
        with tempfile.TemporaryDirectory() as out:
            rep = wall([sys.executable, "-m", "featlab.cli", "reproduce", "all", "--out", out])
        rows.append(("featlab reproduce all (quick)", f"{rep / 60:.1f} min", "-", None, "≤ 3 min", "-",
                     "every CPU experiment's quick preset, one after another, and the report", "-"))
        suite = wall([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], Path(__file__).parents[1])
        rows.append(("test suite (README command)", f"{suite / 60:.1f} min", "-", None, "≤ 3 min", "-",
                     "two xdist workers", "-"))
    head = (f"measured {datetime.date.today()} on {platform.machine()} {platform.processor() or ''} "
            f"({torch.get_num_threads()} threads, torch {torch.__version__}): read bandwidth {bw:.1f} GB/s, "
            f"fp32 matmul peak {peak:.0f} GFLOP/s")
    lines = [head, "", "| benchmark | featlab | baseline | speed-up | target | vs the machine | note | GPU |",
             "|---|---|---|---|---|---|---|---|"]
    for name, f, b, ratio, target, lim, note, g in rows:
        r = "-" if ratio is None else f"{ratio:.1f}×"
        lines.append(f"| {name} | {f} | {b} | {r} | {_target(target, ratio, f)} | {lim} | {note} | {g} |")
    text = "\n".join(lines)
    print(text)
    if a.write:
        _write(Path(a.write), text)


def _target(target: str | None, ratio: float | None, value: str) -> str:
    """'≥ 5×' against the ratio, '≤ 30 s' / '≤ 3 min' against the value; ✓ or ✗."""
    if target is None:
        return "-"
    want = float(target.split()[1].rstrip("×"))
    got = ratio if target.endswith("×") else float(value.split()[0])
    ok = got >= want if target.startswith("≥") else got <= want
    return f"{target} {'✓' if ok else '✗'}"


def _write(path: Path, table: str) -> None:
    """Replace the generated table at the top of ``path``; the hand-written sections after it stay."""
    start = "<!-- run_all: begin -->"
    end = "<!-- run_all: end -->"
    block = f"{start}\n{table}\n{end}"
    text = path.read_text() if path.exists() else ""
    if start in text and end in text:
        text = text[:text.index(start)] + block + text[text.index(end) + len(end):]
    else:
        text = ("# Performance\n\nThe table is written by `python benchmarks/run_all.py --end-to-end --write "
                "docs/performance.md`; ratios are measured in one run (timings are noisy; no test asserts a time)."
                "\n\n" + block + "\n" + text)
    path.write_text(text)


if __name__ == "__main__":
    main()
