"""fa-synthetic's Gram simulation (papers/feature_averaging/gram.py): the cost of one GD step and of drawing the data
against d (flat: d is only a scale), beside the explicit run's where it fits, and the memory against N.

    python benchmarks/bench_gram.py [--n 200] [--steps 20]

Prints ratios measured in this run (time at d over time at d = 10^3); no absolute time is asserted anywhere.
"""

from __future__ import annotations

import argparse
import time

import torch

from featlab.papers.feature_averaging import gram
from featlab.papers.feature_averaging.common import FASyntheticConfig, binary_net, make_data
from featlab.train.objectives import logistic


def step_time(cfg: FASyntheticConfig, steps: int) -> tuple[float, float, int]:
    """(seconds to draw the data, seconds per GD step of the binary net, coordinates per vector)."""
    t0 = time.perf_counter()
    dist, tr, _ = make_data(cfg, [0], torch.float64)
    t_data = time.perf_counter() - t0
    net = binary_net(cfg, [0], torch.float64, dist=dist)
    t0 = time.perf_counter()
    for _ in range(steps):
        net.zero_grad()
        logistic(net(tr.x), tr.y).sum().backward()
        with torch.no_grad():
            net.W.sub_(cfg.eta * net.W.grad)
    return t_data, (time.perf_counter() - t0) / steps, tr.x.shape[-1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    torch.set_num_threads(1)
    base = dict(k=4, m=2, n=args.n, n_test=100, thm46_starts=4, seeds=1, eta=1e-12)
    print(f"n = {args.n}, n_test = 100, k = 4, m = 2, one seed, float64, one thread")
    print(f"{'d':>8} {'mode':>9} {'coords':>7} {'data s':>8} {'step ms':>8} {'step / step(d=1e3, gram)':>25}")
    ref = None
    for e in range(3, 10):
        d = 10**e
        for mode in ("gram", "explicit") if d <= 10**5 else ("gram",):
            cfg = FASyntheticConfig(**base, d=d, simulation=mode)
            t_data, t_step, D = step_time(cfg, args.steps)
            ref = t_step if ref is None else ref
            print(f"{f'1e{e}':>8} {mode:>9} {D:>7} {t_data:>8.3f} {1e3 * t_step:>8.2f} {t_step / ref:>25.2f}")
    print("\nmemory of the coordinates per seed: N Gaussian vectors × (k + N) coordinates")
    for n in (1000, 4096, 16384, 30000, 50000):
        N, D = gram.size(FASyntheticConfig(k=4, m=2, n=n, n_test=1000, d=10**9))
        print(f"  n = {n:>6}: N = {N:>6}, float32 {N * D * 4 / 2**30:6.2f} GiB, float64 {N * D * 8 / 2**30:6.2f} GiB "
              f"(+ the float64 Bartlett factor while drawing: {N * N * 8 / 2**30:.2f} GiB)")


if __name__ == "__main__":
    main()
