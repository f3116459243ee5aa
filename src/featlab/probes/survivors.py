"""The survivor-attack loop, once: ascending radii, the certified skip, the attack on what is left, the scatter back.

Every robust-accuracy mask of featlab (dense and subspace PGD, APGD, Square, the minimum-norm attacks, the direction
attacks; both ensembles) is :func:`survivor_masks` of an *attack*: a callable ``attack(todo, r) → broken`` that
takes the points still to attack at radius r (a bool mask over the batch axes) and returns the ones it broke there
(a subset of ``todo``, each success already verified). An adversarial example within radius r is one within every
r' ≥ r, so only the points still robust at the previous radius are attacked again: the curve is monotone and the
attack's cost goes where it can still succeed (AutoAttack's order, Croce & Hein 2020). The one other order is the
ensemble's frontier (``ensemble._descend``), which walks each point's radii downwards from its break radius so far.

:func:`on_survivors` turns a point attack ``(xs, ys, r) → (x_adv, fooled)`` into such a mask attack: gather the
survivors per replica (padded to the largest count), attack them a chunk at a time, re-verify each claimed success
(``verify``), scatter the verified breaks back.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import torch

MaskAttack = Callable[[torch.Tensor, float], torch.Tensor]
PointAttack = Callable[[torch.Tensor, torch.Tensor, "float | torch.Tensor"], tuple[torch.Tensor, torch.Tensor]]
Verify = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, "float | torch.Tensor"], torch.Tensor]


def check_radii(radii: Sequence[float]) -> list[float]:
    """The radii as floats; a negative one is a user mistake."""
    out = [float(r) for r in radii]
    if any(r < 0 for r in out):
        raise ValueError(f"radii must be >= 0; got {next(r for r in out if r < 0)!r}")
    return out


def lift(fn: Callable[[torch.Tensor], torch.Tensor], single: bool, dtype) -> Callable[[torch.Tensor], torch.Tensor]:
    """``fn`` on replica-batched inputs (E, n, *event), cast to ``dtype``; ``single``: ``fn`` takes one batch
    (n, *event), given here with a replica axis of 1."""
    return (lambda z: fn(z[0]).to(dtype)[None]) if single else (lambda z: fn(z).to(dtype))


def survivor_masks(radii: Sequence[float], clean: torch.Tensor, attack: MaskAttack, *,
                   certified: torch.Tensor | None = None, start: Mapping[float, torch.Tensor] | None = None,
                   progress=None) -> tuple[torch.Tensor, torch.Tensor]:
    """Which points stay robust at each radius: ((R, *batch) bool in the order of ``radii``, the smallest radius at
    which ``attack`` broke each point (float64, inf: never)).

    ``clean``: the clean-correct mask (*batch). Each distinct radius is attacked once, in increasing order, on the
    points still robust: ``start[r]`` (when given: e.g. what earlier attacks of a cascade left at r) and not
    ``certified`` beyond r (a radius below which each point is provably robust, shaped like ``clean``: such points
    are skipped, the answer unchanged). Radius 0 is never attacked. ``progress.update(1)`` once per radius."""
    radii = check_radii(radii)
    alive = clean.clone()
    cert = None if certified is None else certified.reshape(alive.shape).to(alive.device)
    b_r = torch.full(alive.shape, math.inf, dtype=torch.float64, device=alive.device)
    per_r = {}
    for r in sorted(set(radii)):
        if start is not None:
            alive &= start[r]
        todo = alive if cert is None else alive & ~(cert > r)
        if r > 0 and todo.any():
            broken = attack(todo, r)
            alive = alive & ~broken
            b_r = torch.where(broken, r, b_r)
        per_r[r] = alive.clone()
        if progress is not None:
            progress.update(1)
    return torch.stack([per_r[r] for r in radii]), b_r


def within(dist: torch.Tensor) -> MaskAttack:
    """A minimum-norm attack (DDN, FMN, ALMA) as a radius attack: every radius at once, a point broken at r iff the
    distance of its verified adversarial point is ≤ r."""
    return lambda todo, r: todo & (dist <= r)


def on_survivors(attack: PointAttack, x: torch.Tensor, y: torch.Tensor, todo: torch.Tensor, r: float | torch.Tensor,
                 bs: int, *, verify: Verify | None = None, device=None) -> tuple[torch.Tensor, int]:
    """Run ``attack(xs, ys, r) → (x_adv, fooled)`` on the True entries of ``todo`` (E, n), gathered per replica
    (padded to the largest count: padding is attacked but ignored), ``bs`` per replica at a time, on ``device``
    (None: x's). ``r``: a radius or one per point (E, n). ``verify(xs, x_adv, ys, rs) → ok`` re-checks each claimed
    success (None: the attack's ``fooled`` is trusted). Returns (verified broken (E, n), count of unverified)."""
    cnt = todo.sum(1)
    n_s = int(cnt.max())
    if n_s == 0:
        return torch.zeros_like(todo), 0
    order = torch.argsort(todo.to(torch.int8), dim=1, descending=True, stable=True)[:, :n_s]
    valid = torch.arange(n_s, device=todo.device)[None, :] < cnt[:, None]
    rows = torch.arange(len(order), device=order.device)[:, None]
    claimed, ok = torch.zeros_like(valid), torch.ones_like(valid)
    for i in range(0, n_s, bs):
        o = order[:, i: i + bs]
        xs, ys = x[rows, o], y[rows, o]
        if device is not None:
            xs, ys = xs.to(device), ys.to(device)
        rs = r[rows, o] if isinstance(r, torch.Tensor) else r
        x_adv, fooled = attack(xs, ys, rs)
        claimed[:, i: i + bs] = fooled.to(todo.device) & valid[:, i: i + bs]
        if verify is not None:
            ok[:, i: i + bs] = verify(xs, x_adv.detach(), ys, rs).to(todo.device)
    broken = torch.zeros_like(todo).scatter(1, order, claimed & ok)
    return broken, int((claimed & ~ok).sum())
