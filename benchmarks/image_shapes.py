"""ResNet-18 training and attack passes on synthetic data of the papers' shapes (``bench_images.py --shapes``).

    python benchmarks/bench_images.py --shapes [--device cuda] [--width 64] [--batch 750] [--steps 20]
                                               [--configs fp32,bf16,bf16+cl,...] [--json FILE]

Every training configuration runs featlab's own ``fit`` (featlab.train.image_trainer) for two epochs of ``steps``
batches and reports the second (the first pays cuDNN's autotuning and any compilation). A configuration is
precision (fp32 | bf16 | fp16) + ``cl`` (channels_last) + ``compile`` + ``host`` (batches built on the host by
Midpoint Mixup's SpuriousChannels with Uniform Mixup, as mm-spurious did before issue 33) or ``spur`` (the same
batches built on the device from images resident there, as mm-spurious does now), instead of ERM on batches indexed
from data already on the device; ``pN`` trains N copies in N processes side by side on the one device (what
``featlab run --workers N`` does with a table's units) and reports their summed images/s; ``fused`` uses the
optimizer's fused kernel, ``ro`` and ``max`` compile with torch.compile's "reduce-overhead" (CUDA graphs) and
"max-autotune" modes. FLOPs per image come
from torch's FlopCounterMode on one forward+backward pass; the peaks are an n³ matmul in bf16 and in fp32 (TF32
off, torch's default) timed in the same process.
"""

from __future__ import annotations

import argparse
import json
import time

import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from featlab.nn.resnet import resnet18
from featlab.train.image_trainer import FitSpec, fit
from featlab.train.mixup import Mixup
from featlab.train.objectives import erm_objective, mixup_objective

SHAPES = {  # name: (channels, side, training images); mm-spurious concatenates a spurious copy: 2× the channels
    "cifar10-spurious": (6, 32, 50_000),
    "fmnist-spurious": (2, 28, 60_000),
}
ATTACK_SHAPES = {"cifar10": (3, 32), "mnist/fmnist": (1, 28)}  # FA Fig 3's robustness curves


def _sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def matmul_peak(dev: torch.device, dtype: torch.dtype, n: int) -> float:
    """FLOP/s of an n×n×n matmul in ``dtype`` (median-free: mean of 5 after 2 warm-ups)."""
    a, b = torch.randn(n, n, device=dev, dtype=dtype), torch.randn(n, n, device=dev, dtype=dtype)
    for _ in range(2):
        a @ b
    _sync(dev)
    t0 = time.perf_counter()
    for _ in range(5):
        a @ b
    _sync(dev)
    return 5 * 2 * n**3 / (time.perf_counter() - t0)


def train_flops_per_image(model, c: int, s: int, dev: torch.device) -> float:
    x = torch.randn(8, c, s, s, device=dev)
    with FlopCounterMode(display=False) as fc:
        F.cross_entropy(model(x), torch.zeros(8, dtype=torch.long, device=dev)).backward()
    model.zero_grad(set_to_none=True)
    return fc.get_total_flops() / 8


def _one_process(args) -> float:
    """A process of a ``pN`` configuration: a warm-up fit (CUDA, cuDNN's autotuning), then the measured one, started
    together with the other processes' (a barrier)."""
    cfg, c, s, a, dev, barrier = args
    run_config(cfg, c, s, a, dev)
    barrier.wait()
    return run_config(cfg, c, s, a, dev)


def run_processes(cfg: str, procs: int, c: int, s: int, a, dev: torch.device) -> float:
    """Images per second of ``procs`` processes training the configuration side by side on one device (featlab run
    --workers): the sum of theirs, each timed on its second epoch after a common start."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    with ctx.Manager() as manager, ctx.Pool(procs) as pool:
        barrier = manager.Barrier(procs)
        return sum(pool.map(_one_process, [(cfg, c, s, a, dev, barrier)] * procs))


def run_config(cfg: str, c: int, s: int, a, dev: torch.device) -> float:
    """Images per second of the second epoch of ``fit`` under configuration ``cfg`` (``+pN``: N processes)."""
    parts = cfg.split("+")
    if procs := next((int(p[1:]) for p in parts if p[:1] == "p" and p[1:].isdigit()), 0):
        return run_processes("+".join(p for p in parts if p != f"p{procs}"), procs, c, s, a, dev)
    n = a.steps * a.batch
    spec = FitSpec(epochs=2, batch_size=a.batch, optimizer="adam", lr=1e-3,
                   autocast={"fp32": "off", "bf16": "bf16", "fp16": "fp16"}[parts[0]],
                   channels_last="on" if "cl" in parts else "off", fused="fused" in parts,
                   compile=bool({"compile", "ro", "max"} & set(parts)),
                   compile_mode="reduce-overhead" if "ro" in parts else "max-autotune" if "max" in parts else None)
    g = torch.Generator(device="cpu").manual_seed(0)
    if "host" in parts or "spur" in parts:  # mm-spurious's batches: on the host (before issue 33) or the device
        from featlab.papers.midpoint_mixup.spurious_data import SpuriousChannels

        on = torch.device("cpu") if "host" in parts else dev
        sc = SpuriousChannels(torch.rand(n, c // 2, s, s, generator=g).to(on),
                              torch.randint(10, (n,), generator=g).to(on), 10, seed=0)
        batch_fn, objective = sc.batch, mixup_objective(Mixup(1.0))
    else:
        x = torch.rand(n, c, s, s, generator=g).to(dev)
        y = torch.randint(10, (n,), generator=g).to(dev)
        batch_fn, objective = (lambda idx, _g: (x[idx.to(dev)], y[idx.to(dev)])), erm_objective
    torch.manual_seed(0)
    model = resnet18(c, 10, a.width)
    res = fit(model, batch_fn, n, spec, objective=objective, device=dev, desc=cfg)
    return res.history[-1]["images_per_s"]


def attack_pass_s(c: int, s: int, a, dev: torch.device, dtype: torch.dtype | None) -> float:
    """Seconds per image of one forward+backward pass w.r.t. the input (eval mode), batch ``a.eval_batch``."""
    torch.manual_seed(0)
    model = resnet18(c, 10, a.width).to(dev).eval()
    x = torch.rand(a.eval_batch, c, s, s, device=dev)
    y = torch.randint(10, (a.eval_batch,), device=dev)

    def one():
        xr = x.clone().requires_grad_(True)
        with torch.autocast(dev.type, dtype=dtype or torch.float32, enabled=dtype is not None):
            loss = F.cross_entropy(model(xr).float(), y)
        torch.autograd.grad(loss, xr)

    for _ in range(2):
        one()
    _sync(dev)
    t0 = time.perf_counter()
    for _ in range(a.attack_repeats):
        one()
    _sync(dev)
    return (time.perf_counter() - t0) / a.attack_repeats / a.eval_batch


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="bench_images.py --shapes")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--width", type=int, default=None, help="ResNet width (default 64 on CUDA, 8 on the CPU)")
    ap.add_argument("--batch", type=int, default=None, help="batch size (default 750, Table 1's; 50 on the CPU)")
    ap.add_argument("--steps", type=int, default=None, help="batches per timed epoch (default 20; 3 on the CPU)")
    ap.add_argument("--eval-batch", type=int, default=None, help="attack batch (default 1000; 50 on the CPU)")
    ap.add_argument("--attack-repeats", type=int, default=5)
    ap.add_argument("--configs", default=None, help="comma-separated; default: all on CUDA, a few on the CPU")
    ap.add_argument("--shape", action="append", choices=sorted(SHAPES), help="repeatable; default: both")
    ap.add_argument("--json", default=None, help="also write the rows here")
    a = ap.parse_args(argv)
    dev = torch.device(a.device)
    gpu = dev.type == "cuda"
    a.width = a.width or (64 if gpu else 8)
    a.batch = a.batch or (750 if gpu else 50)
    a.steps = a.steps or (20 if gpu else 3)
    a.eval_batch = a.eval_batch or (1000 if gpu else 50)
    configs = (a.configs or ("fp32,fp32+cl,bf16,bf16+cl,fp16+cl,bf16+cl+host,bf16+cl+spur,bf16+cl+compile" if gpu
                             else "fp32,bf16+cl,bf16+cl+host")).split(",")
    name = torch.cuda.get_device_name(dev) if gpu else "CPU"
    torch.backends.cudnn.benchmark = gpu
    n = 8192 if gpu else 1024
    peak = {"bf16": matmul_peak(dev, torch.bfloat16, n), "fp32": matmul_peak(dev, torch.float32, n)}
    print(f"{name}, torch {torch.__version__}: matmul peak {peak['bf16'] / 1e12:.1f} TFLOP/s bf16, "
          f"{peak['fp32'] / 1e12:.1f} fp32 ({n}³); ResNet-18 width {a.width}, batch {a.batch}, {a.steps} steps")
    rows = []
    print("| shape | config | images/s | epoch (s) | TFLOP/s | of bf16 peak | of fp32 peak | Table 1 FMNIST row |")
    print("|---|---|---|---|---|---|---|---|")
    for shape in a.shape or list(SHAPES):
        c, s, n_train = SHAPES[shape]
        fpi = train_flops_per_image(resnet18(c, 10, a.width).to(dev), c, s, dev)
        for cfg in configs:
            if "compile" in cfg and shape != "cifar10-spurious":
                continue  # one compiled shape is enough to see whether compiling pays
            try:
                ips = run_config(cfg, c, s, a, dev)
            except Exception as e:  # a configuration that fails on this machine is a row, not the end
                print(f"| {shape} | {cfg} | failed: {type(e).__name__}: {str(e).splitlines()[0][:80]} |||||")
                continue
            tf = fpi * ips
            row = {"shape": shape, "config": cfg, "images_per_s": ips, "epoch_s": n_train / ips,
                   "tflops": tf / 1e12, "of_bf16_peak": tf / peak["bf16"], "of_fp32_peak": tf / peak["fp32"],
                   "table1_fmnist_row_min": 15 * 100 * 60_000 / ips / 60}
            rows.append(row)
            print(f"| {shape} | {cfg} | {ips:,.0f} | {row['epoch_s']:.2f} | {row['tflops']:.1f} | "
                  f"{row['of_bf16_peak']:.1%} | {row['of_fp32_peak']:.1%} | {row['table1_fmnist_row_min']:.1f} min |")
    print("\n| attack pass (fwd+bwd w.r.t. the input, eval mode) | fp32 µs/image | bf16 µs/image |")
    print("|---|---|---|")
    for shape, (c, s) in ATTACK_SHAPES.items():
        t32, t16 = attack_pass_s(c, s, a, dev, None), attack_pass_s(c, s, a, dev, torch.bfloat16)
        rows.append({"attack_shape": shape, "fp32_s_per_image": t32, "bf16_s_per_image": t16})
        print(f"| {shape} {c}×{s}×{s}, batch {a.eval_batch} | {t32 * 1e6:.1f} | {t16 * 1e6:.1f} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": name, "torch": torch.__version__, "peak_flops": peak, "width": a.width,
                       "batch": a.batch, "rows": rows}, f, indent=1)
    return 0
