"""Image training speed. Two modes:

    python benchmarks/bench_images.py [--epochs 10] [--width 16] [--batch-size 50] [--threads 1] [--repeats 3]
    python benchmarks/bench_images.py --shapes [--device cuda] [--steps 20] [--json FILE]

``--shapes`` (benchmarks/image_shapes.py): ResNet-18 through featlab's own ``fit`` on synthetic data of the papers'
shapes (spurious-channel CIFAR-10 6×32×32, FashionMNIST 2×28×28; no files needed), per configuration (precision,
layout, compile, data on the device or built on the host): images/s, the epoch time, the achieved TFLOP/s as a
fraction of the matmul peak measured in the same run (bf16 and fp32), the FashionMNIST row of Table 1 (15 runs × 100
epochs) at that speed, and the attacks' cost: one forward+backward pass per image for the robustness curves.

Without ``--shapes``: the overhead of SpuriousChannels + Mixup over plain training on the CPU small CNN (8×8 digits).

Both arms train the same model (2 input channels) with the same optimiser on the same images; "plain" feeds
precomputed 2-channel tensors with ERM, "spurious+mixup" builds every batch with SpuriousChannels (fresh γ per
image) and mixes it (Uniform Mixup, λ-weighted CE). The ratio is the median over repeats of time(spurious+mixup)
/ time(plain); target ≤ 1.10.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from featlab.data.images import load_images
from featlab.nn.smallcnn import SmallCNN
from featlab.papers.midpoint_mixup.spurious_data import SpuriousChannels
from featlab.train.image_trainer import FitSpec, fit
from featlab.train.mixup import Mixup
from featlab.train.objectives import erm_objective, mixup_objective


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                 allow_abbrev=False)  # --shape belongs to --shapes
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--width", type=int, default=16)
    ap.add_argument("--batch-size", type=int, default=50)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--shapes", action="store_true", help="ResNet-18 on the papers' shapes (see above)")
    a, rest = ap.parse_known_args()
    if a.shapes:
        from image_shapes import main as shapes_main

        raise SystemExit(shapes_main(rest))
    if rest:
        ap.error(f"unrecognized arguments: {' '.join(rest)}")
    torch.set_num_threads(a.threads)
    d = load_images("digits")
    x = d.normalize(d.x_train)
    sc = SpuriousChannels(x, d.y_train, 10, seed=0)
    static, _ = sc.batch(torch.arange(len(sc)), torch.Generator().manual_seed(0))
    spec = FitSpec(epochs=a.epochs, batch_size=a.batch_size, optimizer="adam", lr=1e-3)
    arms = {
        "plain": (lambda idx, g: (static[idx], d.y_train[idx]), erm_objective),
        "spurious+mixup": (sc.batch, mixup_objective(Mixup(1.0))),
    }
    times = {k: [] for k in arms}
    for r in range(a.repeats):
        for name, (batch_fn, obj) in arms.items():  # interleaved, so load changes hit both arms alike
            torch.manual_seed(r)
            model = SmallCNN(2, 10, a.width)
            t0 = time.perf_counter()
            fit(model, batch_fn, len(sc), spec, objective=obj, seed=r, device=torch.device("cpu"))
            times[name].append(time.perf_counter() - t0)
    n_img = a.epochs * len(sc)
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = statistics.median(s / p for s, p in zip(times["spurious+mixup"], times["plain"]))
    print(f"small CNN width {a.width}, batch {a.batch_size}, {a.epochs} epochs of {len(sc)} images, "
          f"{a.threads} thread(s), {a.repeats} repeats")
    for k in arms:
        print(f"  {k:15s} {med[k]:7.2f} s   {n_img / med[k]:8.0f} images/s")
    print(f"  overhead ratio  {ratio:.3f}  (target <= 1.10: {'met' if ratio <= 1.10 else 'NOT met'})")
    print(json.dumps({"ratio": round(ratio, 4), **{f"{k}.images_per_s": round(n_img / med[k], 1) for k in arms}}))


if __name__ == "__main__":
    main()
