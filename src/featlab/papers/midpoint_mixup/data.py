"""Multi-view data of Midpoint Mixup (Chidambaram et al., ICML 2023): Def 3.1 (linear regime) and Def 4.1 (patches).

Every input is stored in the coordinates of the 2k orthonormal features (feature f = 2y + ℓ − 1 is v_{y,ℓ},
ℓ ∈ {1, 2}): there is no Gaussian noise, so every patch lies in span{v_{s,ℓ}} and these coordinates are exact.
``embed`` maps them to R^d with orthonormal features V (2k × d) for a full-dimensional simulation.

Open decisions of Def 4.1 ("via any method") are constructor arguments, each a config field of the experiment:
* ``positions``: "fixed" puts P_{y,1} = {1..C_P}, P_{y,2} = {C_P+1..2C_P} in every point (as the public code);
  "random" draws the 2C_P signal positions uniformly per point.
* ``bijection``: φ: P_{y,1} → P_{y,2}, "ordered" (i-th to i-th) or "random" (a random permutation per point).
* ``beta_law``: the symmetric law of β_{y,p} on [δ1, δ2 − δ1]: "uniform" (footnote 1's example) or "triangular"
  (mean of two uniforms).
* ``noise_classes``: the Q classes s_j of a point's feature noise: "random" (Q distinct classes ≠ y, uniformly per
  point; App. C.3 does so for Q = 1) or "next" (y+1, …, y+Q mod k, fixed per class).
* ``gamma_law``: γ_{j,ℓ} ~ U[δ3, δ4], "per-point" (one draw shared by all noise patches of a point: γ carries no
  patch index in Def 4.1) or "per-patch".
* labels are uniform on [k] (Def 4.1 step 1); ``sample(labels=...)`` fixes them (balanced test sets).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import overload

import torch

from ...config import Need
from ...data.base import Batch
from ...placement import to_host
from ...runs.resources import item, tensor, work
from ...utils import cpu_draws, generator, per_replica
from .pairs import default_chunk


@overload
def feature_index(y: torch.Tensor, ell: int) -> torch.Tensor: ...
@overload
def feature_index(y: int, ell: int) -> int: ...
def feature_index(y: torch.Tensor | int, ell: int) -> torch.Tensor | int:
    """Coordinate of v_{y,ℓ} (ℓ ∈ {1, 2})."""
    return 2 * y + (ell - 1)


def orthonormal_features(seeds: list[int], k: int, d: int, dtype=torch.float64, device=None) -> torch.Tensor:
    """(E, 2k, d): 2k orthonormal features per replica, rows of the QR of a Gaussian d × 2k matrix."""
    def draw(g):
        q, _ = torch.linalg.qr(torch.randn(d, 2 * k, generator=g, dtype=torch.float64, device="cpu"))
        return q.T.contiguous()

    return per_replica(seeds, "features", draw, device=device, dtype=dtype)


# ------------------------------------------------------------------------------------------ Def 3.1
@dataclass
class LinearMultiView:
    """Def 3.1: x = β v_{y,1} + (1 − β) v_{y,2}, β ~ U[beta_lo, beta_hi] (0.1, 0.9), y uniform on [k]."""

    k: int
    beta_lo: float = 0.1
    beta_hi: float = 0.9
    E: int = field(default=1, kw_only=True)  # replicas: the law is the same for all, each draws its own points

    @classmethod
    def create(cls, seeds: list[int], k: int, beta_lo: float = 0.1, beta_hi: float = 0.9) -> LinearMultiView:
        return cls(k, beta_lo, beta_hi, E=len(seeds))

    @property
    def d(self) -> int:
        """Inputs are in the coordinates of the 2k features."""
        return 2 * self.k

    def sample(self, n: int, seeds: list[int], role: str = "train", dtype=torch.float64,
               labels: torch.Tensor | None = None, device=None) -> Batch:
        k = self.k
        fixed = None if labels is None else to_host(labels)  # the caller's labels may be on the run device

        @cpu_draws
        def draw(g):
            y = torch.randint(k, (n,), generator=g) if fixed is None else fixed.clone()
            beta = self.beta_lo + (self.beta_hi - self.beta_lo) * torch.rand(n, generator=g, dtype=torch.float64)
            x = torch.zeros(n, 2 * k, dtype=torch.float64)
            x[torch.arange(n), 2 * y] = beta  # Eq. 3.2
            x[torch.arange(n), 2 * y + 1] = 1 - beta
            return torch.cat([x, y[:, None].double(), beta[:, None]], 1)

        out = per_replica(seeds, f"data/{role}", draw, device=device)
        return Batch(out[..., : 2 * k].to(dtype), out[..., 2 * k].long(), {"beta": out[..., 2 * k + 1].to(dtype)})


# ------------------------------------------------------------------------------------------ Def 4.1
@dataclass
class MultiViewDistribution:
    """Def 4.1 patch data in feature coordinates: x (E, n, P, 2k)."""

    k: int
    P: int
    C_P: int = 1
    delta1: float = 0.5
    delta2: float = 2.0
    delta3: float = 0.002
    delta4: float = 0.002
    Q: int = 2
    positions: str = "fixed"
    bijection: str = "ordered"
    beta_law: str = "uniform"
    noise_classes: str = "random"
    gamma_law: str = "per-point"
    E: int = field(default=1, kw_only=True)  # replicas: the law is the same for all, each draws its own points

    def __post_init__(self):
        assert self.P >= 2 * self.C_P and self.Q < self.k and self.delta1 <= self.delta2 / 2

    @staticmethod
    def training_needs(cfg) -> list[Need]:
        """Memory and work of mm-multiview's training on these data, before any is drawn (``multiview_needs``)."""
        return multiview_needs(cfg)

    @classmethod
    def create(cls, seeds: list[int], k: int, P: int, **params) -> MultiViewDistribution:
        """Def 4.1 for len(seeds) replicas; ``params``: the other fields (C_P, δ1..δ4, Q, the open decisions)."""
        return cls(k, P, **params, E=len(seeds))

    @property
    def d(self) -> int:
        """Patches are in the coordinates of the 2k features (``embed`` maps them to R^d)."""
        return 2 * self.k

    # ---------------------------------------------------------------- one replica
    @cpu_draws
    def _beta(self, g, shape):
        lo, hi = self.delta1, self.delta2 - self.delta1
        u = torch.rand(*shape, generator=g, dtype=torch.float64)
        if self.beta_law == "triangular":
            u = (u + torch.rand(*shape, generator=g, dtype=torch.float64)) / 2
        return lo + (hi - lo) * u

    @cpu_draws
    def _draw(self, g: torch.Generator, n: int, labels: torch.Tensor | None):
        k, P, C, Q = self.k, self.P, self.C_P, self.Q
        y = torch.randint(k, (n,), generator=g) if labels is None else labels.clone().long()
        beta = self._beta(g, (n, C))  # β_{y,p}, p ∈ P_{y,1}
        if self.positions == "fixed":
            pos = torch.arange(P).expand(n, P).clone()
        else:
            pos = torch.rand(n, P, generator=g).argsort(-1)
        p1, p2 = pos[:, :C], pos[:, C: 2 * C]
        if self.bijection == "random":  # φ(p1[:, c]) = p2[:, perm[c]]
            p2 = p2.gather(1, torch.rand(n, C, generator=g).argsort(-1))
        if self.noise_classes == "random":
            scores = torch.rand(n, k, generator=g)
            scores[torch.arange(n), y] = -1.0
            s = scores.topk(Q, -1).indices  # Q distinct classes ≠ y
        else:
            s = (y[:, None] + 1 + torch.arange(Q)) % k
        lo, hi = self.delta3, self.delta4
        if self.gamma_law == "per-point":
            gam = lo + (hi - lo) * torch.rand(n, 1, Q, 2, generator=g, dtype=torch.float64)
            gam = gam.expand(n, P, Q, 2)
        else:
            gam = lo + (hi - lo) * torch.rand(n, P, Q, 2, generator=g, dtype=torch.float64)
        x = torch.zeros(n, P, 2 * k, dtype=torch.float64)
        # feature noise on every patch: Σ_j Σ_ℓ γ_{j,ℓ} v_{s_j,ℓ}
        fidx = (2 * s[:, :, None] + torch.arange(2)).reshape(n, 1, 2 * Q).expand(n, P, 2 * Q)
        x.scatter_add_(2, fidx, gam.reshape(n, P, 2 * Q))
        sig = torch.zeros(n, P, dtype=torch.bool)
        sig.scatter_(1, torch.cat([p1, p2], 1), True)
        x[sig] = 0.0  # signal patches carry no noise
        rows = torch.arange(n)[:, None].expand(n, C)
        x[rows, p1, (2 * y)[:, None].expand(n, C)] = beta  # β_{y,p} v_{y,1}
        x[rows, p2, (2 * y + 1)[:, None].expand(n, C)] = self.delta2 - beta  # (δ2 − β_{y,p}) v_{y,2}
        return x, y, beta, s

    def sample(self, n: int, seeds: list[int], role: str = "train", dtype=torch.float64,
               labels: torch.Tensor | None = None, device=None) -> Batch:
        """N i.i.d. draws per replica from the (seed, data/role) stream (on the CPU, then moved to ``device``);
        ``labels`` (n,) fixes y."""
        labels = None if labels is None else to_host(labels)  # drawn beside the host's draws
        xs, ys, bs, ss = zip(*[self._draw(generator(s, f"data/{role}"), n, labels) for s in seeds])
        return Batch(torch.stack(xs).to(dtype), torch.stack(ys),
                     {"beta": torch.stack(bs).to(dtype), "noise_classes": torch.stack(ss)}).to(device)

    def sample_balanced(self, per_class: int, seeds: list[int], role: str = "test", dtype=torch.float64,
                        device=None) -> Batch:
        labels = torch.arange(self.k, device="cpu").repeat_interleave(per_class)
        return self.sample(len(labels), seeds, role, dtype, labels=labels, device=device)

    # ---------------------------------------------------------------- Def 4.5
    def single_view(self, x: torch.Tensor, y: torch.Tensor, ell: int) -> torch.Tensor:
        """Def 4.5: keep v_{y,ℓ}; replace every patch holding an instance of v_{y,3−ℓ} by the zero vector.

        x (E, n, P, 2k) in feature coordinates, y (E, n). Class-y features never appear in a class-y point's
        noise patches, so exactly the C_P patches P_{y,3−ℓ}(x) are zeroed.
        """
        other = feature_index(y, 3 - ell)  # (E, n)
        idx = other[..., None, None].expand(*x.shape[:-1], 1)
        holds = x.gather(-1, idx).squeeze(-1) != 0  # (E, n, P)
        return x.masked_fill(holds[..., None], 0.0)

    def linear_margin(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """min_i [h^{y_i} − max_{s≠y_i} h^s] of h^y = Σ_p <v_{y,1} + v_{y,2}, x^(p)> (Prop 4.4's model class).

        Positive: the data are linearly learnable (Prop 4.4's regime P·δ3 ≫ δ2 is *not* in force).
        """
        h = x.sum(-2).reshape(*x.shape[:-2], self.k, 2).sum(-1)  # (E, n, k)
        hy = h.gather(-1, y[..., None]).squeeze(-1)
        other = h.scatter(-1, y[..., None], float("-inf")).max(-1).values
        return (hy - other).min(-1).values


def embed(x: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
    """Feature coordinates (E, n, [P,] 2k) → R^d with features V (E, 2k, d)."""
    E = x.shape[0]
    return (x.reshape(E, -1, x.shape[-1]) @ V).reshape(*x.shape[:-1], V.shape[-1])


def compress_patches(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Merge patch positions whose contents agree for every replica and point: (x', multiplicity (P',)).

    Σ_p act(<w, x^(p)>) = Σ_{p'} mult_{p'} act(<w, x'^(p')>), and midpoints and mixes of two points keep the
    equality (they act patch-wise), so the merge is exact for every objective here. With fixed positions and
    per-point γ the P − 2C_P identical noise patches become one patch of multiplicity P − 2C_P.
    """
    P = x.shape[-2]
    keep, mult, taken = [], [], torch.zeros(P, dtype=torch.bool, device=x.device)
    flat = x.movedim(-2, 0).reshape(P, -1)
    for p in range(P):
        if taken[p]:
            continue
        same = (flat == flat[p]).all(-1) & ~taken
        taken |= same
        keep.append(p)
        mult.append(int(same.sum()))
    return x[..., keep, :].contiguous(), torch.tensor(mult, dtype=x.dtype, device=x.device)


# ------------------------------------------------------------------------------------------ memory and work
_PAIR_BLOCK = 1 << 17  # the all-pairs kernel's cap on one block's activations per replica (pairs.py)


def patch_net_needs(cfg, *, E: int, k: int, N: int, P: int, m: int, steps: dict[str, int], tag: str = "",
                    fields: tuple[str, ...] = ("seeds", "N"), shape: tuple[str, str] = ("P", "m")) -> list[Need]:
    """Memory and work of training the Def 4.2 patch CNN on E replicas of N Def 4.1 points (``steps``: GD steps of
    each method; methods train one after another). The reduced simulation holds points in the 2k feature
    coordinates (d is only a scale); ``simulation=full`` holds them, and W, in R^d. ``fields`` size E and N;
    ``shape`` names the fields setting P and m (none when they follow from k)."""
    it, M = item(cfg.dtype), k * m
    dim = 2 * k if getattr(cfg, "simulation", "reduced") == "reduced" else int(cfg.d)
    n_test = k * int(cfg.n_test_per_class)
    # training sees the merged patches (compress_patches): 2C_P signal patches and one of feature noise
    Pc = P if cfg.positions == "random" or cfg.gamma_law == "per-patch" else min(P, 2 * int(cfg.C_P) + 1)
    chunk = cfg.chunk or default_chunk("cuda" if str(cfg.device).startswith("cuda") else "cpu")
    pairs = min(int(chunk), N * N, max(1, _PAIR_BLOCK // (Pc * M)))  # one block of the pair grid
    mixing = [s for meth, s in steps.items() if meth != "erm"]
    needs = [
        tensor(f"{tag}{E} replicas × N={N} points × P={P} patches × {dim} coordinates (float64 draws and their "
               f"cast), and the test set's {n_test} points twice", fields + shape[:1], E, N + 2 * n_test, P, dim,
               itemsize=8 + it, host=True),
        tensor(f"{tag}pre-activations E×N×P'×km = {E}×{N}×{Pc}×{M}, with their gradient and autograd's saved values",
               fields + shape[1:], E, N, Pc, M, itemsize=it, copies=6),
        tensor(f"{tag}one block of the all-pairs grid: {E} × {pairs} pairs × {Pc}×{M} activations", ("chunk",),
               E, pairs, Pc, M, itemsize=it, copies=6 if mixing else 0)]
    if dim > 2 * k:
        needs.append(tensor(f"{tag}W ∈ R^(km×d) per replica, with its gradient", ("d", "m"), E, M, dim, itemsize=it,
                            copies=3))
    per_pt = 6.0 * Pc * dim * M + 20.0 * Pc * M  # GD step: the patch products forward and back, ReLU~ and its slope
    # a dozen elementwise passes over the mixed activations and the k read-outs, ≈ 200 flop-equivalents each at the
    # rate a matmul reaches (docs/performance.md: 10 ms per step for 1.5 M pair activations); pairs i ≤ j
    per_pair = Pc * M * (200.0 + 2 * k)
    flops = sum(s * E * (N * per_pt + (N * (N + 1) / 2 * per_pair * int(cfg.lam_draws) if meth != "erm" and
                                         cfg.pairs == "all" else N * per_pair)) for meth, s in steps.items())
    needs.append(work(f"{tag}{sum(steps.values())} GD steps of {', '.join(steps)} over {E} × N={N} (N² pairs)",
                      ("steps", *fields), flops, sum(steps.values())))
    return needs


def multiview_needs(cfg) -> list[Need]:
    """mm-multiview: its methods for ``steps`` (ERM and Midpoint on to ``long_steps``), and Prop 4.4's linear
    program over prop44_N points (App. C.3; scipy's sparse LP built from Python lists)."""
    extra = max(0, int(cfg.long_steps) - int(cfg.steps))
    steps = {m: int(cfg.steps) + (extra if m != "mixup" else 0) for m in cfg.methods}
    needs = patch_net_needs(cfg, E=int(cfg.seeds), k=int(cfg.k), N=int(cfg.N), P=int(cfg.P), m=int(cfg.m),
                            steps=steps)
    entries = float(cfg.prop44_N) * (cfg.k - 1) * (4 * cfg.k + 1)
    needs.append(Need(f"Prop 4.4's linear program: {entries:.3g} entries held as Python lists", ("prop44_N", "k"),
                      bytes=100 * entries, flops=1e3 * entries))
    return needs


# tiny instances of each data class, for the common checks of the distribution protocol (tests/test_common_checks.py)
EXAMPLES = {"MultiViewDistribution": lambda seeds: MultiViewDistribution.create(seeds, 4, 6),
            "LinearMultiView": lambda seeds: LinearMultiView.create(seeds, 5)}
