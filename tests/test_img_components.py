"""SpuriousChannels, Mixup/Midpoint transforms on images, ResNet-18 / small CNN, the image trainer."""

import math
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F

from featlab.errors import ConfigError, FeatlabError, TrainingDiverged
from featlab.nn.resnet import Normalize, resnet18
from featlab.nn.smallcnn import SmallCNN
from featlab.papers.midpoint_mixup.spurious_data import SpuriousChannels, class_pairing
from featlab.runs.context import RunContext
from featlab.train.checkpoints import CheckpointError, fingerprint_of
from featlab.train.image_trainer import FitSpec, fit
from featlab.train.mixup import MidpointMixup, Mixup, mixup_cross_entropy, soft_target_cross_entropy
from featlab.train.objectives import erm_objective, mixup_objective

CPU = torch.device("cpu")  # fit takes the run's resolved device

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: one thread (tests/conftest.py)


def toy(n=60, k=6, c=1, hw=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % k
    x = torch.rand(n, c, hw, hw, generator=g) * 0.2 + y.reshape(-1, 1, 1, 1) / k
    return x, y


# ------------------------------------------------------------------------------------------ SpuriousChannels
@pytest.mark.parametrize("k", [2, 3, 5, 10, 11, 100])
def test_pairing_is_a_derangement_and_involution_when_even(k):
    s = class_pairing(k, torch.Generator().manual_seed(k))
    assert sorted(s.tolist()) == list(range(k))  # a bijection
    assert (s != torch.arange(k)).all()  # nobody paired with itself
    if k % 2 == 0:
        assert torch.equal(s[s], torch.arange(k))  # a perfect matching, as the code
    else:
        assert (s[s] != torch.arange(k)).sum() == 3  # exactly one 3-cycle


def test_spurious_batch_semantics():
    x, y = toy()
    sc = SpuriousChannels(x, y, 6, seed=1)
    idx = torch.arange(len(y))
    xb, yb = sc.batch(idx, torch.Generator().manual_seed(0))
    assert xb.shape == (60, 2, 6, 6) and torch.equal(yb, y)
    # first block = γ·x, second = (1−γ)·x_partner of class σ(y), same γ for both
    gamma = (xb[:, 0] / x[:, 0]).flatten(1).mean(1)
    assert torch.allclose(xb[:, 0], gamma.reshape(-1, 1, 1) * x[:, 0], atol=1e-6)
    assert torch.allclose(xb[:, 1], (1 - gamma).reshape(-1, 1, 1) * x[sc.partners, 0], atol=1e-5)
    assert torch.equal(y[sc.partners], sc.sigma[y])
    assert 0 <= gamma.min() and gamma.max() <= 1 and gamma.std() > 0.1
    # γ is redrawn at every access, the partner is not (partner="fixed")
    xb2, _ = sc.batch(idx, torch.Generator().manual_seed(1))
    assert not torch.allclose(xb, xb2)
    gamma2 = (xb2[:, 0] / x[:, 0]).flatten(1).mean(1)
    assert torch.allclose(xb2[:, 1], (1 - gamma2).reshape(-1, 1, 1) * x[sc.partners, 0], atol=1e-5)
    # resample mode: partners change, always from the paired class
    sr = SpuriousChannels(x, y, 6, seed=1, partner="resample")
    a = sr._draw_partners(idx, torch.Generator().manual_seed(0))
    b = sr._draw_partners(idx, torch.Generator().manual_seed(1))
    assert not torch.equal(a, b) and torch.equal(y[a], sr.sigma[y]) and torch.equal(y[b], sr.sigma[y])


def test_spurious_dataset_interface_and_test_view():
    x, y = toy(k=5)  # odd class count: a derangement, no crash
    sc = SpuriousChannels(x, y, seed=0)
    xi, yi = sc[3]
    assert xi.shape == (2, 6, 6) and yi == int(y[3]) and len(sc) == 60
    loader = torch.utils.data.DataLoader(sc, batch_size=16)
    xb, yb = next(iter(loader))
    assert xb.shape == (16, 2, 6, 6)
    t = SpuriousChannels.test_view(x)
    assert t.shape == (60, 2, 6, 6) and torch.equal(t[:, 0], x[:, 0]) and t[:, 1].abs().sum() == 0


def test_spurious_bad_input():
    x, y = toy()
    with pytest.raises(ConfigError, match="'partner'"):
        SpuriousChannels(x, y, partner="sometimes")
    with pytest.raises(ConfigError, match="images .N, C, H, W."):
        SpuriousChannels(x[:, 0], y)
    with pytest.raises(ConfigError, match="class 6 has no training image"):
        SpuriousChannels(x, y, num_classes=8, seed=0)  # y only holds classes 0..5


# ------------------------------------------------------------------------------------------ Mixup on images
def test_mixup_on_image_batches():
    x, y = toy(n=32)
    g = torch.Generator().manual_seed(0)
    mid = MidpointMixup(num_classes=6, generator=g)
    xm, ya, yb, lam = mid.pair(x, y)
    assert torch.all(lam == 0.5)
    # each mixed image is the midpoint of x_i and a partner x_j with label y_b
    rec = 2 * xm - x
    d = (rec.flatten(1)[:, None, :] - x.flatten(1)[None]).abs().amax(-1)
    assert d.min(1).values.max() < 1e-5
    assert torch.equal(y[d.argmin(1)], yb) and torch.equal(ya, y)
    logits = torch.randn(32, 6)
    # λ-weighted CE equals the soft-target CE
    mix = Mixup(1.0, num_classes=6, generator=torch.Generator().manual_seed(3))
    xm2, t = mix(x, y)
    mix.generator = torch.Generator().manual_seed(3)
    xm3, ya3, yb3, lam3 = mix.pair(x, y)
    assert torch.allclose(xm2, xm3)
    assert math.isclose(soft_target_cross_entropy(logits, t).item(), mixup_cross_entropy(logits, ya3, yb3, lam3).item(),
                        rel_tol=1e-5)
    # per-sample λ, derangement pairing
    ps = Mixup(1.0, per_sample=True, allow_self_pairs=False, generator=torch.Generator().manual_seed(0))
    _, ya, yb, lam = ps.pair(x, torch.arange(32))
    assert lam.unique().numel() == 32 and (ya != yb).all()


# ------------------------------------------------------------------------------------------ models
@pytest.mark.parametrize("cin,hw", [(1, 28), (6, 32), (2, 8)])
def test_resnet18_shapes(cin, hw):
    net = resnet18(cin, 7, width=8)
    assert net(torch.randn(2, cin, hw, hw)).shape == (2, 7)
    assert net.conv1.kernel_size == (3, 3) and net.conv1.stride == (1, 1)
    assert not any(isinstance(m, torch.nn.MaxPool2d) for m in net.modules())
    blocks = [m for m in net.modules() if m.__class__.__name__ == "BasicBlock"]
    assert len(blocks) == 8


def test_resnet18_full_width_parameter_count():
    # Kuang Liu's CIFAR ResNet-18 has 11,173,962 parameters (3 input channels, 10 classes)
    assert sum(p.numel() for p in resnet18(3, 10).parameters()) == 11_173_962


def test_smallcnn_and_normalize():
    net = torch.nn.Sequential(Normalize((0.5,), (0.25,)), SmallCNN(1, 10, 8))
    assert net(torch.rand(3, 1, 8, 8)).shape == (3, 10)
    assert torch.allclose(Normalize((0.5,), (0.25,))(torch.full((1, 1, 2, 2), 0.75)), torch.ones(1, 1, 2, 2))


# ------------------------------------------------------------------------------------------ trainer
def _setup(seed=0):
    x, y = toy(n=48, k=4)
    torch.manual_seed(seed)
    model = SmallCNN(1, 4, 4)
    return model, x, y


def _batch_fn(x, y):
    return lambda idx, g: (x[idx], y[idx])


def test_fit_learns_and_records_history():
    model, x, y = _setup()
    spec = FitSpec(epochs=15, batch_size=16, optimizer="adam", lr=1e-2)
    res = fit(model, _batch_fn(x, y), len(y), spec, evaluate=lambda m: {"acc": (m(x).argmax(-1) == y).float().mean()},
              device=CPU)
    assert res.status == "complete" and len(res.history) == 15
    assert res.history[-1]["train_loss"] < res.history[0]["train_loss"]
    assert res.history[-1]["acc"] > 0.5 and res.history[0]["images_per_s"] > 0


@pytest.mark.parametrize("autocast,channels_last", [("bf16", "on"), ("fp16", "off"), ("off", "on")])
def test_fit_mixed_precision_and_channels_last_run_on_the_cpu(autocast, channels_last):
    """Every precision and layout path of the GPU also runs here: bf16 / fp16 autocast (fp16 with its scaler) and
    NHWC activations train the tiny model to the same kind of result as full precision."""
    model, x, y = _setup()
    spec = FitSpec(epochs=15, batch_size=16, optimizer="adam", lr=1e-2, autocast=autocast,
                   channels_last=channels_last)
    assert spec.amp_dtype(CPU) == {"bf16": torch.bfloat16, "fp16": torch.float16, "off": None}[autocast]
    res = fit(model, _batch_fn(x, y), len(y), spec, evaluate=lambda m: {"acc": (m(x).argmax(-1) == y).float().mean()},
              device=CPU)
    assert res.status == "complete" and res.history[-1]["train_loss"] < res.history[0]["train_loss"]
    assert res.history[-1]["acc"] > 0.5
    cuda = torch.device("cuda")  # what "auto" means there, asked without a GPU
    assert FitSpec(1, 1).amp_dtype(cuda) == torch.bfloat16 and FitSpec(1, 1).amp_dtype(CPU) is None
    assert FitSpec(1, 1).memory_format(cuda) == torch.channels_last
    with pytest.raises(ConfigError, match="'autocast' field"):
        FitSpec(1, 1, autocast="half")


def test_fit_result_frame_is_the_trainers_protocol(tmp_path):
    """FitResult has status, message and frame() like the synthetic trainer's result, so ctx.trained takes it."""
    model, x, y = _setup()
    res = fit(model, _batch_fn(x, y), len(y), FitSpec(epochs=2, batch_size=16), device=CPU, seed=7, prefix="erm.",
              evaluate=lambda m: {"test_err": 0.5})
    df = res.frame()
    assert list(df.columns) == ["seed", "step", "metric", "value"] and set(df.seed) == {7}
    assert sorted(df.step.unique()) == [1, 2]
    assert set(df.metric) == {"erm.train_loss", "erm.lr", "erm.images_per_s", "erm.test_err"}
    assert df[(df.metric == "erm.train_loss") & (df.step == 2)].value.item() == res.history[1]["train_loss"]
    ctx = RunContext("x", SimpleNamespace(device="cpu"), tmp_path)  # the context resolves cfg.device
    assert ctx.trained(res) is res and len(ctx.frames[0]) == 8
    bad = fit(model, _batch_fn(x * float("nan"), y), len(y), FitSpec(epochs=2, batch_size=16), device=CPU)
    with pytest.raises(TrainingDiverged, match="non-finite"):
        ctx.trained(bad)


def test_fingerprint_leaves_out_the_fields_marked_not_training():
    import featlab.papers  # noqa: F401  (registers the experiments)
    from featlab.runs.runner import resolve_config

    _, cfg = resolve_config("fa-resnet-digits", "quick")
    fp = fingerprint_of("fa-resnet-digits", cfg, head="binary")
    assert fp["head"] == "binary" and fp["config"]["lr"] == cfg.lr
    assert not set(fp["config"]) & type(cfg).NOT_TRAINING
    for change in ({"radii": [0.0, 0.5]}, {"n_attack": 7}, {"seeds": 9}, {"checkpoint_dir": "elsewhere"}):
        assert fingerprint_of("fa-resnet-digits", resolve_config("fa-resnet-digits", "quick", overrides=change)[1]) \
            == fingerprint_of("fa-resnet-digits", cfg), change
    assert fingerprint_of("fa-resnet-digits", resolve_config("fa-resnet-digits", "quick", overrides={"lr": 0.01})[1]) \
        != fingerprint_of("fa-resnet-digits", cfg)


def test_cosine_schedule_and_sgd():
    spec = FitSpec(epochs=4, batch_size=8, optimizer="sgd", lr=0.1, momentum=0.9, weight_decay=5e-4, schedule="cosine")
    assert spec.lr_at(0) == 0.1 and math.isclose(spec.lr_at(2), 0.05) and spec.lr_at(3) < 0.02
    model, x, y = _setup()
    res = fit(model, _batch_fn(x, y), len(y), spec, device=CPU)
    assert [round(h["lr"], 6) for h in res.history] == [round(spec.lr_at(e), 6) for e in range(4)]


class Killed(Exception):
    pass


def test_resume_after_kill_is_identical(tmp_path):
    spec = FitSpec(epochs=4, batch_size=16, optimizer="sgd", lr=0.05, momentum=0.9, schedule="cosine")
    obj = mixup_objective(Mixup(1.0))
    model, x, y = _setup()
    ref = fit(model, _batch_fn(x, y), len(y), spec, objective=obj, device=CPU, seed=3)
    ref_w = [p.detach().clone() for p in model.parameters()]

    ck = tmp_path / "ck" / "m.pt"
    model2, _, _ = _setup()

    def kill(epoch, hist):
        if epoch == 2:
            raise Killed

    with pytest.raises(Killed):
        fit(model2, _batch_fn(x, y), len(y), spec, objective=obj, device=CPU, seed=3, checkpoint=ck,
            fingerprint={"cfg": 1}, on_epoch_end=kill)
    assert ck.is_file()
    model3, _, _ = _setup(seed=99)  # a fresh process: other weights, restored from the checkpoint
    res = fit(model3, _batch_fn(x, y), len(y), spec, objective=obj, device=CPU, seed=3, checkpoint=ck,
              fingerprint={"cfg": 1})
    assert res.resumed_from == 2 and len(res.history) == 4
    for a, b in zip(ref_w, model3.parameters()):
        assert torch.allclose(a, b, atol=1e-6)
    assert [h["train_loss"] for h in res.history] == pytest.approx([h["train_loss"] for h in ref.history], rel=1e-5)
    # a finished checkpoint: running again trains nothing
    res2 = fit(model3, _batch_fn(x, y), len(y), spec, objective=obj, device=CPU, seed=3, checkpoint=ck,
               fingerprint={"cfg": 1})
    assert res2.resumed_from == 4


def test_checkpoint_from_another_config_is_refused(tmp_path):
    ck = tmp_path / "m.pt"
    model, x, y = _setup()
    spec = FitSpec(epochs=1, batch_size=16)
    fit(model, _batch_fn(x, y), len(y), spec, device=CPU, checkpoint=ck, fingerprint={"lr": 0.1, "k": 4})
    before = ck.read_bytes()
    with pytest.raises(CheckpointError, match=r"refusing to resume .* another config \(field 'lr' is 0.1 "
                                              r"there and 0.2 here\)"):
        fit(model, _batch_fn(x, y), len(y), spec, device=CPU, checkpoint=ck, fingerprint={"lr": 0.2, "k": 4})
    assert ck.read_bytes() == before  # nothing lost
    assert issubclass(CheckpointError, FeatlabError)
    ck.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="unreadable"):
        fit(model, _batch_fn(x, y), len(y), spec, device=CPU, checkpoint=ck, fingerprint={})


def test_batch_larger_than_dataset_and_bad_spec():
    model, x, y = _setup()
    with pytest.raises(ConfigError, match=r"'batch_size' field \(100\) is larger than the training set \(48"):
        fit(model, _batch_fn(x, y), len(y), FitSpec(epochs=1, batch_size=100), device=CPU)
    with pytest.raises(ConfigError, match="'optimizer'"):
        FitSpec(epochs=1, batch_size=1, optimizer="rmsprop")


def test_nonfinite_loss_fails_the_run():
    model, x, y = _setup()
    res = fit(model, _batch_fn(x * float("nan"), y), len(y), FitSpec(epochs=2, batch_size=16), device=CPU)
    assert res.status == "failed" and "non-finite" in res.message


def test_erm_objective_is_cross_entropy():
    model, x, y = _setup()
    assert torch.isclose(erm_objective(model, x, y, None), F.cross_entropy(model(x), y))


def test_checkpoints_at_their_cadence_and_after_the_last_epoch(tmp_path, monkeypatch):
    """checkpoint_every_s: 0 (and "auto" on the CPU) writes after every epoch; a long interval writes only after the
    last epoch; "auto" on CUDA is 30 s. The cadence is not in the fingerprint: a checkpoint resumes under another."""
    from featlab.train import image_trainer

    writes = []
    real = image_trainer.save_checkpoint
    monkeypatch.setattr(image_trainer, "save_checkpoint", lambda p, st: writes.append(st["epoch"]) or real(p, st))
    model, x, y = _setup()
    for every, epochs in ((0.0, [1, 2, 3]), (None, [1, 2, 3]), (3600.0, [3])):
        writes.clear()
        spec = FitSpec(epochs=3, batch_size=16, checkpoint_every_s=every)
        fit(model, _batch_fn(x, y), len(y), spec, device=CPU, checkpoint=tmp_path / f"{every}.pt", fingerprint={})
        assert writes == epochs, (every, writes)
    assert FitSpec(1, 1).checkpoint_interval(torch.device("cuda")) == 30.0
    assert FitSpec(1, 1, checkpoint_every_s=5.0).checkpoint_interval(torch.device("cuda")) == 5.0
    writes.clear()  # the finished run under another cadence: found and reused, nothing trained or written
    res = fit(model, _batch_fn(x, y), len(y), FitSpec(epochs=3, batch_size=16, checkpoint_every_s=0.0), device=CPU,
              checkpoint=tmp_path / "3600.0.pt", fingerprint={})
    assert res.resumed_from == 3 and writes == []
    with pytest.raises(ConfigError, match="checkpoint_every_s"):
        FitSpec(1, 1, checkpoint_every_s=-1.0)
