"""What the image experiments of every paper share: their config fields (:class:`ImageTrainFields`) and what is
built from them — the model (:func:`build_model`), the run's dataset (:func:`load_run_data`) and the trainer's
:class:`~.image_trainer.FitSpec`."""

from __future__ import annotations

import dataclasses
from typing import ClassVar, Literal

import torch
from pydantic import Field
from torch import nn

from ..config import ExperimentConfig
from ..data.images import ImageData, load_images, stratified_subset
from ..errors import DataError
from ..nn.resnet import Normalize, resnet18
from ..nn.smallcnn import SmallCNN
from ..utils import generator as make_generator
from .image_trainer import FitSpec


class ImageTrainFields(ExperimentConfig):
    """Config fields of every image experiment: data, model, optimiser, checkpoints."""

    NOT_TRAINING: ClassVar[frozenset[str]] = frozenset({  # left out of checkpoint fingerprints
        "seeds", "seed", "device", "data_root", "eval_batch", "checkpoint_dir", "keep_checkpoints", "cpu_threads",
        "checkpoint_every_s"})

    data_root: str = Field("data", description="folder holding the datasets in torchvision's layout")
    train_subset: int | None = Field(None, ge=1, description="train on this many training images, a class-"
                                     "stratified subset drawn once from seed 0 (the same for every run and seed); "
                                     "None: all of them (the papers)")
    model: Literal["smallcnn", "resnet18"] = Field("resnet18", description="CIFAR ResNet-18 or the small CPU CNN")
    width: int = Field(64, ge=1, description="channels of the first stage (64 = ResNet-18; 32 for the small CNN)")
    epochs: int = Field(100, ge=1, description="training epochs")
    batch_size: int = Field(128, ge=1, description="mini-batch size")
    optimizer: Literal["adam", "sgd"] = Field("sgd", description="Adam (β = 0.9, 0.999) or SGD")
    lr: float = Field(1e-3, gt=0, description="learning rate")
    momentum: float = Field(0.0, ge=0, lt=1, description="SGD momentum")
    weight_decay: float = Field(0.0, ge=0, description="L2 weight decay")
    schedule: Literal["none", "cosine"] = Field("none", description="learning-rate schedule (per epoch)")
    eval_batch: int = Field(1000, ge=1, description="batch size of evaluation and attacks")
    eval_every: int = Field(1, ge=1, description="test after every this many epochs and after the last (the curves' "
                            "points; 1: every epoch, as the papers' curves)")
    autocast: Literal["auto", "bf16", "fp16", "off"] = Field(
        "auto", description="mixed precision: auto = bfloat16 autocast on CUDA, full precision on the CPU; bf16 / "
        "fp16 (with a gradient scaler) on any device; off = full precision on every device (the GPU check compares "
        "CPU and CUDA arithmetic so)")
    channels_last: Literal["auto", "on", "off"] = Field("auto", description="NHWC activations (auto: on CUDA)")
    compile: bool = Field(False, description="torch.compile the model for training (tens of seconds to compile; "
                          "pays off on long GPU runs)")
    checkpoint_dir: str | None = Field(None, description="checkpoints go into its sub-folder featlab-<experiment>")
    keep_checkpoints: bool = Field(False, description="keep the final checkpoints (trained weights) after the run")
    checkpoint_every_s: float | None = Field(
        None, ge=0, description="write the resumable checkpoint after an epoch once this many seconds have passed "
        "since the last (always after the last epoch): a kill loses at most that much training; 0: after every "
        "epoch; None: after every epoch on the CPU, every 30 s on CUDA (a ResNet-18 checkpoint is 134 MB)")
    cpu_threads: int | None = Field(None, ge=1, description="torch CPU threads while this experiment runs (None: "
                                    "leave as is; 1 is fastest for the small CNN on a shared CPU)")
    smoke: bool = Field(False, description="pipeline smoke test (the quick preset of a real-data experiment runs "
                        "on digits for a few epochs): figures and metrics, no claims")

    def fit_spec(self) -> FitSpec:
        return FitSpec(self.epochs, self.batch_size, self.optimizer, self.lr, self.momentum, self.weight_decay,
                       self.schedule, autocast=self.autocast, channels_last=self.channels_last,
                       compile=self.compile, eval_every=self.eval_every, checkpoint_every_s=self.checkpoint_every_s)


def build_model(kind: str, in_channels: int, num_classes: int, width: int, seed: int,
                normalize: tuple | None = None) -> nn.Module:
    """A fresh model whose init comes from seed alone (the global RNG is forked, not touched). It is built on the
    CPU, from the CPU generator, so its weights are the same whatever device ``fit`` then moves it to."""
    with torch.random.fork_rng(devices=[]), torch.device("cpu"):
        torch.manual_seed(int(make_generator(seed, "init/image").initial_seed()) % (2**63))
        net = resnet18(in_channels, num_classes, width) if kind == "resnet18" else SmallCNN(in_channels, num_classes,
                                                                                            width)
        return nn.Sequential(Normalize(*normalize), net) if normalize is not None else net


def load_run_data(ctx) -> ImageData:
    """The run's dataset (``cfg.dataset`` under ``cfg.data_root``), its training set cut to ``cfg.train_subset``; a
    missing file's message names the experiment."""
    try:
        data = load_images(ctx.cfg.dataset, ctx.cfg.data_root)
    except DataError as e:
        raise DataError(f"{ctx.experiment_id}: {e}") from None
    n = ctx.cfg.train_subset
    if n is None or n == len(data.y_train):
        return data
    if n > len(data.y_train):
        raise DataError(f"{ctx.experiment_id}: train_subset={n} exceeds the {len(data.y_train)} training images of "
                        f"{data.name}; choose train_subset <= {len(data.y_train)} or null")
    keep = stratified_subset(data.y_train, n)
    return dataclasses.replace(data, x_train=data.x_train[keep], y_train=data.y_train[keep])
