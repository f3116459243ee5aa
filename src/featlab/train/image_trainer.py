"""Epoch-based training of one image model (ResNet-18, the small CNN, any ``nn.Module``), resumable after a kill.

    spec = FitSpec(epochs=100, batch_size=750, optimizer="adam", lr=1e-3)
    res = fit(model, batch_fn, n_train, spec, objective=mixup_objective(Mixup(1.0)), evaluate=ev, seed=0,
              device=ctx.device, checkpoint=Path("ckpt/mixup-seed0.pt"), fingerprint={"experiment": ..., ...})
    res.history   # one dict per epoch: epoch, train_loss, lr, images_per_s and whatever ``evaluate`` returns
    ctx.trained(res)  # like the synthetic trainer's result: status, message, frame() of (seed, step, metric, value)

* ``batch_fn(idx, generator) -> (x, y)`` builds the training batch of the example indices ``idx`` (so a dataset
  wrapper, e.g. Midpoint Mixup's spurious channels, draws its random mixing from the given generator); the batch
  is moved to ``device`` here.
* Every random draw of epoch e (order, γ, Mixup's pairing and λ, augmentation) comes from a generator keyed by
  (seed, role, e): a run resumed at epoch e is bit-identical to one never interrupted (on CPU).
* A checkpoint is written after every epoch (:mod:`.checkpoints`); running the same command again continues where
  it stopped.
* Precision (``FitSpec.autocast``): "auto" is bfloat16 autocast on CUDA and full precision on the CPU; "bf16" and
  "fp16" (with a gradient scaler) ask for one on any device; "off" is full precision everywhere. ``channels_last``
  ("auto": on CUDA) stores activations NHWC, the layout cuDNN's tensor-core convolutions read.
* The step loop never waits for the device: the loss is summed on the device and read once per epoch (a non-finite
  epoch loss ends the run as "failed" at that epoch).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import pandas as pd
import torch
from torch import nn

from .. import meter
from ..errors import ConfigError
from ..placement import to_host
from ..utils import generator as make_generator
from ..utils import progress_bar
from .checkpoints import CheckpointError, load_checkpoint, save_checkpoint
from .objectives import Objective, erm_objective

BatchFn = Callable[[torch.Tensor, torch.Generator], tuple[torch.Tensor, torch.Tensor]]


@dataclass
class FitSpec:
    epochs: int
    batch_size: int
    optimizer: str = "adam"  # "adam" | "sgd"
    lr: float = 1e-3
    momentum: float = 0.0
    weight_decay: float = 0.0
    schedule: str = "none"  # "none" | "cosine" (per epoch, to 0 at the last epoch)
    betas: tuple[float, float] = (0.9, 0.999)
    autocast: str = "auto"  # "auto": bf16 on CUDA, off on CPU | "bf16" | "fp16" | "off"
    channels_last: str = "auto"  # "auto": on CUDA | "on" | "off"
    compile: bool = False  # torch.compile the model (pays off on long GPU runs; compiling takes tens of seconds)
    compile_mode: str | None = None  # torch.compile's mode: None, "reduce-overhead" (CUDA graphs), "max-autotune"
    fused: bool = False  # the optimizer's fused kernel (one launch for every parameter; a GPU lever, issue 48)
    eval_every: int = 1  # ``evaluate`` after every this many epochs, and after the last
    checkpoint_every_s: float | None = None  # a checkpoint once this long since the last (and after the last epoch)

    def evaluates(self, epoch: int) -> bool:
        """Whether ``evaluate`` runs after (1-based) ``epoch``."""
        return epoch % self.eval_every == 0 or epoch == self.epochs

    def eval_epochs(self) -> list[int]:
        return [e for e in range(1, self.epochs + 1) if self.evaluates(e)]

    def __post_init__(self):
        if self.epochs < 1 or self.batch_size < 1 or not self.lr > 0 or self.eval_every < 1:
            raise ConfigError(f"epochs, batch_size, lr and eval_every must be positive; got {self.epochs}, "
                              f"{self.batch_size}, {self.lr}, {self.eval_every}")
        if self.optimizer not in ("adam", "sgd"):
            raise ConfigError(f"the 'optimizer' field must be 'adam' or 'sgd'; got {self.optimizer!r}")
        if self.schedule not in ("none", "cosine"):
            raise ConfigError(f"the 'schedule' field must be 'none' or 'cosine'; got {self.schedule!r}")
        if self.autocast not in ("auto", "bf16", "fp16", "off"):
            raise ConfigError(f"the 'autocast' field must be 'auto', 'bf16', 'fp16' or 'off'; got {self.autocast!r}")
        if self.checkpoint_every_s is not None and not self.checkpoint_every_s >= 0:
            raise ConfigError(f"the 'checkpoint_every_s' field must be >= 0 or null; got {self.checkpoint_every_s!r}")
        if self.channels_last not in ("auto", "on", "off"):
            raise ConfigError(f"the 'channels_last' field must be 'auto', 'on' or 'off'; got {self.channels_last!r}")

    def amp_dtype(self, device: torch.device) -> torch.dtype | None:
        """The autocast dtype on ``device`` (None: full precision)."""
        mode = ("bf16" if device.type == "cuda" else "off") if self.autocast == "auto" else self.autocast
        return {"bf16": torch.bfloat16, "fp16": torch.float16}.get(mode)

    def checkpoint_interval(self, device: torch.device) -> float:
        """Seconds of training between two checkpoints (0: after every epoch). None ("auto"): every epoch on the CPU,
        whose epochs are long beside a write; every 30 s on CUDA, where a ResNet-18 epoch takes about a second and
        its checkpoint (134 MB with Adam's state) a fifth of that to write."""
        if self.checkpoint_every_s is not None:
            return self.checkpoint_every_s
        return 30.0 if device.type == "cuda" else 0.0

    def memory_format(self, device: torch.device) -> torch.memory_format:
        on = self.channels_last == "on" or (self.channels_last == "auto" and device.type == "cuda")
        return torch.channels_last if on else torch.contiguous_format

    def lr_at(self, epoch: int) -> float:
        """Learning rate of (0-based) epoch ``epoch``."""
        if self.schedule == "cosine":
            return self.lr * 0.5 * (1 + math.cos(math.pi * epoch / self.epochs))
        return self.lr


@dataclass
class FitResult:
    """What :func:`fit` returns; shares the synthetic trainer's protocol (``status``, ``message``, ``frame()``)."""

    history: list[dict[str, float]] = field(default_factory=list)
    status: str = "complete"  # or "failed" (the loss became non-finite)
    message: str = ""
    resumed_from: int = 0  # epochs already done when this call started
    elapsed_s: float = 0.0
    seed: int = 0
    prefix: str = ""  # metric-name prefix of frame(), e.g. "erm."

    def series(self, key: str) -> list[float]:
        """``key`` at each epoch that measured it (every ``eval_every``-th and the last for ``evaluate``'s keys)."""
        return [h[key] for h in self.history if key in h]

    def to_dict(self) -> dict:
        """What a kept unit of a resumable run stores (:mod:`featlab.runs.units`): everything but the model."""
        return {k: getattr(self, k) for k in ("history", "status", "message", "resumed_from", "elapsed_s", "seed",
                                              "prefix")}

    @classmethod
    def from_dict(cls, d: dict) -> FitResult:
        return cls(**{k: d[k] for k in ("history", "status", "message", "resumed_from", "elapsed_s", "seed",
                                        "prefix") if k in d})

    def frame(self) -> pd.DataFrame:
        """Every measurement of the history as tidy rows (seed, step = epoch, prefix + metric, value)."""
        rows = [(self.seed, int(h["epoch"]), self.prefix + k, float(v)) for h in self.history for k, v in h.items()
                if k != "epoch"]
        return pd.DataFrame(rows, columns=["seed", "step", "metric", "value"])


@torch.no_grad()
def predict(model: nn.Module, x: torch.Tensor, batch_size: int = 1000, device=None) -> torch.Tensor:
    """Logits of x (on the host), in eval mode, batch by batch, computed on ``device`` (None: the model's)."""
    device = device or next(model.parameters()).device
    was = model.training
    model.eval()
    out = [to_host(model(x[i: i + batch_size].to(device)).float()) for i in range(0, len(x), batch_size)]
    model.train(was)
    return torch.cat(out)


def _batches(n: int, batch_size: int, g: torch.Generator) -> Iterator[torch.Tensor]:
    order = torch.randperm(n, generator=g, device="cpu")  # the order comes from a CPU generator on every device
    for i in range(0, n, batch_size):  # keeps the last partial batch, as the papers' DataLoaders
        yield order[i: i + batch_size]


@contextmanager
def cudnn_autotuned(device: torch.device) -> Iterator[None]:
    """On CUDA, cuDNN times its convolution algorithms once per input shape and keeps the fastest (a run's batches
    have at most two shapes), as benchmarks/bench_images.py measured; the global flag is restored after."""
    if device.type != "cuda":
        yield
        return
    old = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = True
    try:
        yield
    finally:
        torch.backends.cudnn.benchmark = old


def _optimizer(params: list[torch.Tensor], spec: FitSpec) -> torch.optim.Optimizer:
    fused = {"fused": True} if spec.fused else {}  # same update rule, one kernel for all parameters
    if spec.optimizer == "adam":
        return torch.optim.Adam(params, lr=spec.lr, betas=spec.betas, weight_decay=spec.weight_decay, **fused)
    return torch.optim.SGD(params, lr=spec.lr, momentum=spec.momentum, weight_decay=spec.weight_decay, **fused)


def _restore(ckpt: Path, state: dict, model: nn.Module, opt: torch.optim.Optimizer, scaler) -> None:
    """A checkpoint's tensors into the model, the optimizer and (float16) the gradient scaler."""
    try:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        if scaler is not None and state.get("scaler"):
            scaler.load_state_dict(state["scaler"])
    except Exception as e:  # tampered: its fingerprint matches, its tensors do not
        raise CheckpointError(f"checkpoint {str(ckpt)!r} does not fit this model ({type(e).__name__}); delete "
                              f"it to start this model afresh") from None


def _epoch(step_model: nn.Module, opt: torch.optim.Optimizer, scaler, objective: Objective, batch_fn: BatchFn,
           n_train: int, spec: FitSpec, device: torch.device, seed: int, epoch: int, bar) -> tuple[float, int]:
    """One epoch's steps (its draws from the generators of (seed, role, epoch)): (mean training loss, images)."""
    g_order = make_generator(seed, f"fit/order/{epoch}")
    g_data = make_generator(seed, f"fit/data/{epoch}")
    g_obj = make_generator(seed, f"fit/objective/{epoch}")
    amp, fmt = spec.amp_dtype(device), spec.memory_format(device)
    tot, cnt = torch.zeros((), device=device), 0
    for idx in meter.each(_batches(n_train, spec.batch_size, g_order), math.ceil(n_train / spec.batch_size)):
        x, y = batch_fn(idx, g_data)
        x = x.to(device, non_blocking=True).contiguous(memory_format=fmt)
        y = y.to(device, non_blocking=True)
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=amp or torch.float32, enabled=amp is not None):
            loss = objective(step_model, x, y, g_obj)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        tot += loss.detach().float() * len(idx)  # stays on the device: no wait per step
        cnt += len(idx)
        bar.update(1)
    return float(tot) / cnt, cnt  # the epoch's one read of the device


def fit(model: nn.Module, batch_fn: BatchFn, n_train: int, spec: FitSpec, *, device: torch.device,
        objective: Objective = erm_objective, evaluate: Callable[[nn.Module], dict[str, float]] | None = None,
        seed: int = 0, checkpoint: str | Path | None = None, fingerprint: dict | None = None, desc: str = "train",
        on_epoch_end: Callable[[int, list], None] | None = None, prefix: str = "") -> FitResult:
    """Train ``model`` on ``device`` for ``spec.epochs`` epochs (resuming from ``checkpoint`` if it holds earlier
    epochs).

    ``prefix`` names the result's metrics in ``frame()`` (``prefix + "test_err"``), as the synthetic trainer's."""
    if spec.batch_size > n_train:
        raise ConfigError(f"the 'batch_size' field ({spec.batch_size}) is larger than the training set "
                          f"({n_train} images); choose batch_size <= {n_train}")
    amp = spec.amp_dtype(device)
    use_amp = amp == torch.float16  # a gradient scaler only for float16: bfloat16 has float32's range
    fmt = spec.memory_format(device)
    model.to(device, memory_format=fmt)  # type: ignore[call-overload]  # torch's stub lacks memory_format
    opt = _optimizer([p for p in model.parameters() if p.requires_grad], spec)
    scaler = torch.amp.GradScaler(device.type, enabled=use_amp)
    step_model = cast(nn.Module, torch.compile(model, mode=spec.compile_mode)) if spec.compile else model
    # the checkpoints' cadence changes no number: not in the fingerprint; nor do the levers at their defaults (a
    # checkpoint written before they existed still resumes)
    fp = {"fingerprint": fingerprint or {}, "seed": seed,
          "spec": {k: v for k, v in spec.__dict__.items() if k != "checkpoint_every_s"
                   and not (k in ("compile_mode", "fused") and not v)}}
    fp_json = json.dumps(fp, sort_keys=True, default=str)
    ckpt = Path(checkpoint) if checkpoint is not None else None
    res = FitResult(seed=seed, prefix=prefix)
    start = 0
    if ckpt is not None and (state := load_checkpoint(ckpt, json.loads(fp_json))) is not None:
        _restore(ckpt, state, model, opt, scaler if use_amp else None)
        res.history = list(state["history"])
        start = res.resumed_from = int(state["epoch"])
    steps_per_epoch = math.ceil(n_train / spec.batch_size)
    t0 = time.perf_counter()
    every, saved = spec.checkpoint_interval(device), t0  # a kill loses at most ``every`` seconds of training
    bar = progress_bar(spec.epochs * steps_per_epoch, desc)
    bar.update(start * steps_per_epoch)
    n_eval = sum(spec.evaluates(e) for e in range(start + 1, spec.epochs + 1))  # tests this call runs
    with ExitStack() as stack:
        stack.callback(bar.close)
        stack.enter_context(cudnn_autotuned(device))
        for epoch in meter.steps(spec.epochs, start):  # a few, timed, when an estimate is measured (featlab.meter)
            lr = spec.lr_at(epoch)
            for group in opt.param_groups:
                group["lr"] = lr
            model.train()
            te = time.perf_counter()
            train_loss, cnt = _epoch(step_model, opt, scaler, objective, batch_fn, n_train, spec, device, seed, epoch,
                                     bar)
            if not math.isfinite(train_loss):
                res.status = "failed"
                res.message = f"{desc}: loss became non-finite at epoch {epoch + 1}"
                return res
            ips = cnt / max(time.perf_counter() - te, 1e-9)
            bar.set_postfix(loss=f"{train_loss:.4f}", img_s=f"{ips:.0f}", epoch=epoch + 1)
            row = {"epoch": epoch + 1, "train_loss": train_loss, "lr": lr, "images_per_s": ips}
            # while an estimate is measured, every epoch the shortened loop may end at tests too: the test's cost
            # is timed (scaled to the n_eval tests of the run) and the history ends on a test, as a run's does
            timing = meter.metering_now() and epoch - start < meter.budget(spec.epochs - start)
            if evaluate is not None and (spec.evaluates(epoch + 1) or timing):
                model.eval()
                with torch.no_grad(), meter.every(n_eval):
                    row.update({k: float(v) for k, v in evaluate(model).items()})
                model.train()
            res.history.append(row)
            if ckpt is not None and (epoch + 1 == spec.epochs or time.perf_counter() - saved >= every):
                saved = time.perf_counter()
                save_checkpoint(ckpt, {"fingerprint": fp_json, "epoch": epoch + 1, "model": model.state_dict(),
                                       "optimizer": opt.state_dict(),
                                       "scaler": scaler.state_dict() if use_amp else {},
                                       "history": res.history})
            if on_epoch_end is not None:
                on_epoch_end(epoch + 1, res.history)
    res.elapsed_s = time.perf_counter() - t0
    model.eval()
    return res
