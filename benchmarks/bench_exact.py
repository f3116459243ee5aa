"""Exact ℓ2 radii (probes/exact.py) and certified lower bounds (probes/certify.py) at Feature-Averaging shapes: time per
point against one dense PGD step on the same points (ratios measured in one run), how tight the interval is, and how
far the attacks' distances sit above the exact ones; for the k-class net the certified bound with and without the
joint read-out (probes/certify_dual.py). Asserts nothing.

The nets are trained here on the FA data model (k orthogonal clusters of norm √d, x = μ_j + ξ, J+ the first k/2) with
featlab's trainer (full-batch GD on the logistic / cross-entropy loss, FA's init scale and step), so the unstable-neuron
counts are those of trained nets; the paper packages are not imported.

    python benchmarks/bench_exact.py [--d 3072] [--k 10] [--m 5] [--h 5] [--seeds 2] [--n-test 200] [--T 100]
"""

from __future__ import annotations

import argparse
import time

import torch

from featlab.nn.twolayer import EnsembleTwoLayer, block_readout, logit_margin_readout, sign_prediction, signed_readout
from featlab.probes.certify import attack_distance, certified_lower_bound, robust_interval
from featlab.probes.exact import exact_min_distance
from featlab.probes.robustness import direction_masks, robust_masks, worst_case
from featlab.train.loop import train


def data(k: int, d: int, n: int, seeds: list[int], role: str):
    xs, js, mus = [], [], []
    for s in seeds:
        g = torch.Generator().manual_seed(s)
        mu = torch.linalg.qr(torch.randn(d, k, generator=g, device="cpu"))[0].T * d**0.5
        g.manual_seed(s * 1000 + (role == "test"))
        j = torch.randint(k, (n,), generator=g, device="cpu")
        xs.append(mu[j] + torch.randn(n, d, generator=g, device="cpu"))
        js.append(j)
        mus.append(mu)
    x, j = torch.stack(xs), torch.stack(js)
    return x, j, torch.where(j < k // 2, 1.0, -1.0), torch.stack(mus)


def timed(fn, reps: int = 1):
    fn()
    t = time.perf_counter()
    for _ in range(reps):
        out = fn()
    return out, (time.perf_counter() - t) / reps


def pgd_step(score, x, y):
    """One dense PGD step: a forward and a backward pass through the net on every point."""
    def step():
        delta = torch.zeros_like(x, requires_grad=True)
        (g,) = torch.autograd.grad((y * score(x + delta)).sum(), delta)
        return g
    return step


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--d", type=int, default=3072)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--m", type=int, default=5)
    ap.add_argument("--h", type=int, default=5)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--n-test", type=int, default=200)
    ap.add_argument("--T", type=int, default=100)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    k, d, seeds = args.k, args.d, list(range(args.seeds))
    x, j, y, mu = data(k, d, args.n, seeds, "train")
    xt, jt, yt, _ = data(k, d, args.n_test, seeds, "test")
    sgn = torch.where(torch.arange(k, device="cpu") < k // 2, 1.0, -1.0)
    avg = torch.einsum("k,ekd->ed", sgn, mu)
    avg = avg / avg.norm(dim=-1, keepdim=True)  # Thm 4.5 (3)'s averaged direction
    n = xt.shape[0] * xt.shape[1]

    bnet = EnsembleTwoLayer.init(seeds, d, signed_readout(args.m, args.m, 1 / args.m), sigma_w=1e-5, sigma_b=1e-5)
    train([bnet.W, bnet.b], lambda s: torch.nn.functional.softplus(-y * bnet(x)).mean(-1), args.T, seeds=seeds,
          lr=1e-3, probe_every=args.T)
    knet = EnsembleTwoLayer.init(seeds, d, block_readout(k, args.h, 1 / args.h), sigma_w=1e-5)
    train([knet.W], lambda s: torch.nn.functional.cross_entropy(knet(x).transpose(1, 2), j, reduction="none").mean(-1),
          args.T, seeds=seeds, lr=1e-3, probe_every=args.T)
    pos = torch.arange(k, device="cpu") < k // 2
    kscore = lambda z: logit_margin_readout(knet(z), pos)
    with torch.no_grad():
        print(f"clean accuracy: binary {(sign_prediction(bnet(xt)) == yt).float().mean():.3f}, "
              f"k-class {(sign_prediction(kscore(xt)) == yt).float().mean():.3f}")

    _, t_pgd = timed(pgd_step(lambda z: bnet(z), xt, yt), reps=3)
    ex, t_ex = timed(lambda: exact_min_distance(bnet.W, bnet.b, bnet.A, xt, yt))
    lo_b, t_lo_b = timed(lambda: certified_lower_bound(bnet.W, bnet.b, bnet.A, xt, yt))
    print(f"\nbinary net, M = {2 * args.m}, d = {d}, {n} points")
    print(f"  one dense PGD step            {1e6 * t_pgd / n:9.1f} µs/point")
    print(f"  exact distance                {1e6 * t_ex / n:9.1f} µs/point = {t_ex / t_pgd:7.1f} PGD steps")
    print(f"  certified lower bound         {1e6 * t_lo_b / n:9.1f} µs/point = {t_lo_b / t_pgd:7.1f} PGD steps")
    fin = torch.isfinite(ex.dist) & (ex.dist > 0)
    print(f"  unstable neurons: mean {ex.unstable.float().mean():.2f}, max {int(ex.unstable.max())}; "
          f"unresolved {int(torch.isnan(ex.dist).sum())}; verified {float(ex.verified.float().mean()):.3f}; "
          f"median exact distance {ex.dist[fin].median():.2f} (√(d/k) = {(d / k) ** 0.5:.2f}); "
          f"certified/exact median {(lo_b / ex.dist)[fin].median():.3f}")
    radii = [round(i * 2.0 * (d / 3072) ** 0.5, 3) for i in range(30)]
    masks, t_att = timed(lambda: robust_masks(lambda z: bnet(z), xt, yt, radii, steps=20,
                                              generator=torch.Generator().manual_seed(0)))
    dmask = direction_masks(lambda z: bnet(z), xt, yt, radii, lambda: iter([-yt[..., None] * avg[:, None]]))
    r_t = torch.tensor(radii, dtype=torch.float64, device="cpu")[:, None, None]
    for name, m in (("dense PGD (20 steps)", masks), ("averaged direction", dmask),
                    ("worst case of both", worst_case({"pgd": masks, "avgdir": dmask}))):
        above = (m & (ex.dist.double()[None] <= r_t)).any(0)  # called robust at a radius the exact solver breaks
        iv = robust_interval(radii, ex.dist.double(), attack_distance(radii, m))
        print(f"  {name:22s} leaves {int(above.sum()):4d}/{n} points robust beyond their exact radius "
              f"(largest accuracy gap {(iv.attacked - iv.certified).max():.3f}, critical radius "
              f"{iv.critical[:, 1].mean():.2f} vs exact {iv.critical[:, 0].mean():.2f})")
    print(f"  the dense PGD curve took {t_att / t_ex:.1f}× the exact solver's time")

    _, t_pgd_k = timed(pgd_step(kscore, xt, yt), reps=3)
    masks_k = robust_masks(kscore, xt, yt, radii, steps=20, generator=torch.Generator().manual_seed(0))
    att_k = attack_distance(radii, masks_k)
    print(f"\nk-class net, M = {k * args.h}, logit-margin read-out, {n} points")
    print(f"  one dense PGD step            {1e6 * t_pgd_k / n:9.1f} µs/point")
    fk = torch.isfinite(att_k) & (att_k > 0)
    for name, joint in (("pairs/aggregated bound", False), ("+ joint bound (default)", True)):
        lo_k, t_lo_k = timed(lambda joint=joint: certified_lower_bound(knet.W, None, knet.A, xt, yt, positive=pos,
                                                                       upper=att_k, joint=joint))
        ivk = robust_interval(radii, lo_k.double(), att_k)
        print(f"  {name:28s}  {1e6 * t_lo_k / n:9.1f} µs/point = {t_lo_k / t_pgd_k:7.1f} PGD steps; certified/PGD "
              f"distance median {(lo_k.double() / att_k)[fk].median():.3f}; interval width max "
              f"{(ivk.attacked - ivk.certified).max():.3f}; critical radius [{ivk.critical[:, 0].mean():.2f}, "
              f"{ivk.critical[:, 1].mean():.2f}] (√(d/2) = {(d / 2) ** 0.5:.2f})")


if __name__ == "__main__":
    main()
