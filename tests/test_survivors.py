"""The survivor-attack primitive (probes/survivors.py): ascending radii, the certified skip, start masks, the
gather → attack → verify → scatter of a point attack."""

import math

import pytest
import torch

from featlab.probes.survivors import on_survivors, survivor_masks, within


def test_radii_ascend_on_survivors_and_the_certified_points_are_never_attacked():
    dist = torch.tensor([[0.5, 1.5, 3.0, 0.2]], dtype=torch.float64)  # each point's breaking distance
    clean = torch.tensor([[True, True, True, False]])
    certified = torch.tensor([[0.0, 2.0, 0.0, 0.0]], dtype=torch.float64)
    seen = []

    def attack(todo, r):
        seen.append((r, todo.clone()))
        return todo & (dist <= r)

    masks, b_r = survivor_masks([2.0, 0.0, 1.0, 2.0], clean, attack, certified=certified)
    assert [r for r, _ in seen] == [1.0, 2.0]  # radius 0 never attacked, each distinct radius once, ascending
    assert seen[0][1].tolist() == [[True, False, True, False]]  # point 1 certified beyond 1
    assert seen[1][1].tolist() == [[False, True, True, False]]  # point 0 broken at 1: not attacked again
    assert masks.tolist() == [[[False, False, True, False]], [[True, True, True, False]],
                              [[False, True, True, False]], [[False, False, True, False]]]
    assert b_r.tolist() == [[1.0, 2.0, math.inf, math.inf]]


def test_start_masks_and_within_give_dist_over_r():
    dist = torch.tensor([[0.5, 1.5, 3.0]], dtype=torch.float64)
    radii = [0.0, 1.0, 2.0]
    masks, _ = survivor_masks(radii, dist > 0, within(dist))
    assert torch.equal(masks, dist[None] > torch.tensor(radii, dtype=torch.float64)[:, None, None])
    start = {0.0: torch.tensor([[True, True, True]]), 1.0: torch.tensor([[True, True, False]]),
             2.0: torch.tensor([[True, True, False]])}
    masks, _ = survivor_masks(radii, dist > 0, within(dist), start=start)
    assert masks[:, 0, 2].tolist() == [True, False, False]
    with pytest.raises(ValueError, match="radii must be >= 0"):
        survivor_masks([1.0, -0.5], dist > 0, within(dist))


def test_on_survivors_gathers_per_replica_and_counts_what_fails_verification():
    x = torch.arange(8, dtype=torch.float64).reshape(2, 4, 1)
    y = torch.ones(2, 4)
    todo = torch.tensor([[True, False, True, True], [False, True, False, False]])
    calls = []

    def attack(xs, ys, r):
        calls.append(xs.shape)
        return xs + 1, torch.ones(xs.shape[:2], dtype=torch.bool)  # claims every point

    verify = lambda xs, xa, ys, rs: xs[..., 0] != 2  # the point at x = 2 is not adversarial
    broken, unverified = on_survivors(attack, x, y, todo, 1.0, 2, verify=verify)
    assert calls == [torch.Size([2, 2, 1]), torch.Size([2, 1, 1])]  # 3 survivors at most, 2 per replica at a time
    assert broken.tolist() == [[True, False, False, True], [False, True, False, False]]
    assert unverified == 1
