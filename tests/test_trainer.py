import torch

from featlab.train.loop import record, train
from featlab.utils import Replicas


def quadratic(E, lr):
    w = torch.ones(E, 3, requires_grad=True)
    return w, (lambda step: (w**2).sum(-1) * lr)


def test_divergence_marks_the_run_failed_with_the_step():
    w = torch.ones(2, 3, requires_grad=True)
    res = train([w], lambda step: (w**2).sum(-1), 50, seeds=[0, 1], lr=torch.tensor([0.1, 5.0]), probe_every=5)
    assert res.status == "failed"
    assert "seed 1" in res.message and "non-finite" in res.message
    assert res.steps_done < 50


def test_per_replica_learning_rates_equal_separate_runs():
    lrs = [0.01, 0.1, 0.3]
    w_all = torch.ones(3, 4, dtype=torch.float64, requires_grad=True)
    train([w_all], lambda s: (w_all**4).sum(-1), 20, seeds=[0, 1, 2], lr=torch.tensor(lrs), probe_every=100)
    for i, lr in enumerate(lrs):
        w = torch.ones(1, 4, dtype=torch.float64, requires_grad=True)
        train([w], lambda s, w=w: (w**4).sum(-1), 20, seeds=[0], lr=lr, probe_every=100)
        assert torch.allclose(w_all[i], w[0])


def test_adam_and_momentum_decrease_the_loss():
    for opt, kw in [("adam", {}), ("sgd", {"momentum": 0.9})]:
        w = torch.full((2, 5), 3.0, requires_grad=True)
        res = train([w], lambda s, w=w: ((w - 1) ** 2).sum(-1), 200, seeds=[0, 1], optimizer=opt, lr=0.05,
                    probe_every=50, **kw)
        loss = res.frame().query("metric == 'loss'")
        assert loss[loss.step == 200].value.max() < 0.05 * loss[loss.step == 0].value.min()


def test_probes_at_cadence_and_at_the_end():
    w = torch.ones(2, 2, requires_grad=True)
    res = train([w], lambda s: (w**2).sum(-1), 23, seeds=[5, 6], lr=0.1, probe_every=10,
                probe=lambda s: {"norm": w.detach().norm(dim=-1)}, prefix="x.")
    f = res.frame()
    assert sorted(f.step.unique()) == [0, 10, 20, 23]
    assert set(f.metric) == {"x.loss", "x.norm"} and set(f.seed) == {5, 6}


def test_replicas_name_their_rows_by_seed_and_label():
    reps = Replicas.grid([0.1, 0.3], [5, 6], label=lambda v: f"eta={v:g}.")  # (value, seed), value-major
    w = torch.ones(4, 2, dtype=torch.float64, requires_grad=True)
    res = train([w], lambda s: (w**2).sum(-1), 3, seeds=reps, lr=torch.tensor(reps.values), probe_every=10,
                prefix="x.")
    last = res.frame().query("step == 3")
    assert sorted(zip(last.seed, last.metric)) == [(5, "eta=0.1.x.loss"), (5, "eta=0.3.x.loss"),
                                                   (6, "eta=0.1.x.loss"), (6, "eta=0.3.x.loss")]
    rows = []  # the same naming for measurements taken outside the trainer
    record(rows, reps, 0, {"gap": torch.arange(4.0)})
    assert rows == [(5, 0, "eta=0.1.gap", 0.0), (6, 0, "eta=0.1.gap", 1.0), (5, 0, "eta=0.3.gap", 2.0),
                    (6, 0, "eta=0.3.gap", 3.0)]


def test_cudnn_autotuning_is_on_for_cuda_only_and_restored():
    """fit() asks cuDNN to time its convolution algorithms on CUDA (as the image benchmark measured), never on the
    CPU, and leaves the global flag as it found it (the flag alone is set: no GPU is needed to check it)."""
    from featlab.train.image_trainer import cudnn_autotuned

    old = torch.backends.cudnn.benchmark
    with cudnn_autotuned(torch.device("cuda")):
        assert torch.backends.cudnn.benchmark is True
    assert torch.backends.cudnn.benchmark == old
    with cudnn_autotuned(torch.device("cpu")):
        assert torch.backends.cudnn.benchmark == old


def test_fused_optimizer_lever_trains_as_the_plain_one():
    """FitSpec(fused=True) (a GPU lever of issue 48, measured there) keeps Adam's update rule: the same net after
    two epochs to float tolerance, on the CPU."""
    from torch import nn

    from featlab.train.image_trainer import FitSpec, fit

    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(64, 5, generator=g), torch.randint(3, (64,), generator=g)
    nets = []
    for fused in (False, True):
        torch.manual_seed(0)
        net = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3))
        fit(net, lambda idx, _g: (x[idx], y[idx]), 64, FitSpec(epochs=2, batch_size=16, fused=fused),
            device=torch.device("cpu"))
        nets.append(torch.cat([p.detach().flatten() for p in net.parameters()]))
    torch.testing.assert_close(nets[0], nets[1], rtol=1e-5, atol=1e-6)
