"""The image datasets' published files: what each one is (:data:`SPECS`, with the MD5 of every file), the
:class:`ImageData` the readers return, and the hint every missing-file message gives."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch


# ------------------------------------------------------------------------------------------ published files
@dataclass(frozen=True)
class IdxSpec:
    """MNIST-style dataset: four IDX files; MD5 of each .gz (published) and of the extracted file."""

    name: str
    folder: str  # below root, torchvision layout
    gz_md5: dict[str, str]
    raw_md5: dict[str, str]
    url: str
    classes: list[str]
    mean: tuple[float, ...]
    std: tuple[float, ...]


@dataclass(frozen=True)
class CifarSpec:
    name: str
    folder: str
    archive: str
    archive_md5: str
    train: dict[str, str]
    test: dict[str, str]
    meta: tuple[str, str, str]  # file, md5, key of the class names
    label_key: str
    url: str
    mean: tuple[float, ...]
    std: tuple[float, ...]


_IDX_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")

SPECS: dict[str, IdxSpec | CifarSpec] = {
    "mnist": IdxSpec(
        "mnist", "MNIST/raw",
        gz_md5=dict(zip(_IDX_FILES, ["f68b3c2dcbeaaa9fbdd348bbdeb94873", "d53e105ee54ea40749a09fcbcd1e9432",
                                     "9fb629c4189551a2d022fa330f9573f3", "ec29112dd5afa0611ce80d1b7f02629c"])),
        raw_md5=dict(zip(_IDX_FILES, ["6bbc9ace898e44ae57da46a324031adb", "a25bea736e30d166cdddb491f175f624",
                                      "2646ac647ad5339dbf082846283269ea", "27ae3e4e09519cfbb04c329615203637"])),
        url="https://ossci-datasets.s3.amazonaws.com/mnist/",
        classes=[str(i) for i in range(10)], mean=(0.1307,), std=(0.3081,)),
    "fashionmnist": IdxSpec(
        "fashionmnist", "FashionMNIST/raw",
        gz_md5=dict(zip(_IDX_FILES, ["8d4fb7e6c68d591d4c3dfef9ec88bf0d", "25c81989df183df01b3e8a0aad5dffbe",
                                     "bef4ecab320f06d8554ea6380940ec79", "bb300cfdad3c16e7a12a480ee83cd310"])),
        raw_md5=dict(zip(_IDX_FILES, ["f4a8712d7a061bf5bd6d2ca38dc4d50a", "9018921c3c673c538a1fc5bad174d6f9",
                                      "8181f5470baa50b63fa0f6fddb340f0a", "15d484375f8d13e6eb1aabb0c3f46965"])),
        url="http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
        classes=["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
                 "Ankle boot"],
        mean=(0.5,), std=(0.5,)),  # Midpoint Mixup's code normalises FMNIST with (0.5, 0.5)
    "cifar10": CifarSpec(
        "cifar10", "cifar-10-batches-py", "cifar-10-python.tar.gz", "c58f30108f718f92721af3b95e74349a",
        train={"data_batch_1": "c99cafc152244af753f735de768cd75f", "data_batch_2": "d4bba439e000b95fd0a9bffe97cbabec",
               "data_batch_3": "54ebc095f3ab1f0389bbae665268c751", "data_batch_4": "634d18415352ddfa80567beed471001a",
               "data_batch_5": "482c414d41f54cd18b22e5b47cb7c3cb"},
        test={"test_batch": "40351d587109b95175f43aff81a1287e"},
        meta=("batches.meta", "5ff9c542aee3614f3951f8cda6e48888", "label_names"), label_key="labels",
        url="https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
        mean=(0.4914, 0.4822, 0.4465), std=(0.2023, 0.1994, 0.2010)),
    "cifar100": CifarSpec(
        "cifar100", "cifar-100-python", "cifar-100-python.tar.gz", "eb9058c3a382ffc7106e4002c42a8d85",
        train={"train": "16019d7e3df5f24257cddd939b257f8d"}, test={"test": "f0ef6b0ae62326f3e7ffdfab6717acfc"},
        meta=("meta", "7973b15100ade9c7d40fb424638fde48", "fine_label_names"), label_key="fine_labels",
        url="https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz",
        mean=(0.5071, 0.4867, 0.4408), std=(0.2675, 0.2565, 0.2761)),
}
DATASETS = ("digits", *SPECS)
DIGITS_MEAN, DIGITS_STD = (0.3061,), (0.3763,)  # of the 1198 training images of the fixed split below


@dataclass
class ImageData:
    """Train/test images in [0, 1] as float32 (N, C, H, W) and int64 labels."""

    name: str
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    classes: list[str]
    mean: tuple[float, ...]
    std: tuple[float, ...]
    files: list[str] = field(default_factory=list)

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    @property
    def shape(self) -> tuple[int, int, int]:
        return tuple(self.x_train.shape[1:])  # type: ignore[return-value]

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        m = torch.tensor(self.mean, dtype=x.dtype, device=x.device).reshape(1, -1, 1, 1)
        s = torch.tensor(self.std, dtype=x.dtype, device=x.device).reshape(1, -1, 1, 1)
        return (x - m) / s


def md5_bytes(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


# A package manager's copy of a dataset, in the package's own flat layout (the four .gz files in one folder):
# Debian's and Ubuntu's `dataset-fashion-mnist` installs the original FashionMNIST files there, recompressed.
SYSTEM_COPIES: dict[str, tuple[str, str]] = {  # dataset -> (package, folder)
    "fashionmnist": ("dataset-fashion-mnist", "/usr/share/datasets/fashion-mnist")}
DATA_ENV = "FEATLAB_DATA"  # more data roots, in torchvision's layout, separated as PATH is


def where_to_get(spec: IdxSpec | CifarSpec, root: Path | str = "<root>") -> str:
    """Where to download a dataset's files and where to put them (the hint of every missing-file message)."""
    if isinstance(spec, IdxSpec):
        system = SYSTEM_COPIES.get(spec.name)
        return ((f"apt-get install {system[0]} (Debian/Ubuntu), or " if system else "")
                + f"download the four .gz files from {spec.url} into {Path(root) / spec.folder} (an existing "
                f"torchvision download works as is)")
    return (f"download {spec.url} into {root} (keep the .tar.gz or extract it to {Path(root) / spec.folder}; an "
            f"existing torchvision download works as is)")


def to_float(x: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.array(x, dtype=np.float32)).div_(255.0)
