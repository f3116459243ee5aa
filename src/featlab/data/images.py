"""Image datasets read offline from their published files, verified before they are parsed.

    data = load_images("cifar10", root="data")      # ImageData: uint8 → float [0,1] tensors (N, C, H, W)
    data = load_images("digits")                    # scikit-learn's bundled 8×8 digits: no download

Folder layout is torchvision's, so an existing torchvision download works as is::

    <root>/MNIST/raw/train-images-idx3-ubyte(.gz), train-labels-idx1-ubyte(.gz), t10k-…(.gz)
    <root>/FashionMNIST/raw/…                       (same four names)
    <root>/cifar-10-batches-py/data_batch_1..5, test_batch, batches.meta   or <root>/cifar-10-python.tar.gz
    <root>/cifar-100-python/train, test, meta                              or <root>/cifar-100-python.tar.gz

Safety: every file's MD5 is compared with the published value (torchvision's constants, which are the
datasets' own) *before* it is parsed. IDX files are plain bytes; the CIFAR pickles are read with a restricted
unpickler that can build only builtin containers, bytes/str and numpy arrays, never call anything else.
Archives are read in memory (no extraction to disk, so no path traversal).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import pickle
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from ..errors import DataError


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


def where_to_get(spec: IdxSpec | CifarSpec, root: Path | str = "<root>") -> str:
    """Where to download a dataset's files and where to put them (the hint of every missing-file message)."""
    if isinstance(spec, IdxSpec):
        return (f"download the four .gz files from {spec.url} into {Path(root) / spec.folder} (an existing "
                f"torchvision download works as is)")
    return (f"download {spec.url} into {root} (keep the .tar.gz or extract it to {Path(root) / spec.folder}; an "
            f"existing torchvision download works as is)")


# ------------------------------------------------------------------------------------------ IDX (MNIST family)
def parse_idx(data: bytes, what: str) -> np.ndarray:
    """An IDX array of unsigned bytes (magic 0x0000 08 nd); checks the header against the payload size."""
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] != 0x08 or data[3] not in (1, 3):
        raise DataError(f"{what} is not an IDX file of unsigned bytes (bad magic number); replace it with the "
                        f"original file")
    nd = data[3]
    if len(data) < 4 + 4 * nd:
        raise DataError(f"{what} is truncated (IDX header incomplete); replace it with the original file")
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(nd)]
    size = int(np.prod(dims))
    off = 4 + 4 * nd
    if len(data) - off != size:
        raise DataError(f"{what} holds {len(data) - off} bytes of data but its header announces {dims} = {size}; "
                        f"replace it with the original file")
    return np.frombuffer(data, dtype=np.uint8, offset=off).reshape(dims)


def _idx_file(spec: IdxSpec, folder: Path, stem: str) -> tuple[bytes | None, str]:
    """(verified bytes of the extracted IDX file or None, status text)."""
    gz, raw = folder / f"{stem}.gz", folder / stem
    if gz.is_file():
        blob = gz.read_bytes()
        if md5_bytes(blob) == spec.gz_md5[stem]:
            try:
                return gzip.decompress(blob), f"{gz.name}: ok"
            except (OSError, EOFError):
                return None, f"{gz.name}: corrupt (not gzip)"
        if not raw.is_file():
            return None, f"{gz.name}: corrupt (MD5 mismatch)"
    if raw.is_file():
        blob = raw.read_bytes()
        if md5_bytes(blob) == spec.raw_md5[stem]:
            return blob, f"{raw.name}: ok"
        return None, f"{raw.name}: corrupt (MD5 mismatch)"
    return None, f"{stem}(.gz): missing"


def _load_idx(spec: IdxSpec, root: Path) -> ImageData:
    folder = root / spec.folder
    got = {stem: _idx_file(spec, folder, stem) for stem in _IDX_FILES}  # stem -> (bytes or None, status)
    if bad := [status for blob, status in got.values() if blob is None]:
        raise DataError(f"{spec.name}: {'; '.join(bad)} in {folder}; {where_to_get(spec, root)}")
    arr = {s: parse_idx(blob, f"{folder / s}") for s, (blob, _) in got.items() if blob is not None}
    xtr, ytr, xte, yte = (arr[s] for s in _IDX_FILES)
    for x, y, split in ((xtr, ytr, "train"), (xte, yte, "t10k")):
        if x.ndim != 3 or y.ndim != 1 or len(x) != len(y):
            raise DataError(f"{spec.name}: {split} images {x.shape} and labels {y.shape} do not match in {folder}; "
                            f"replace them with the original files")
    return ImageData(spec.name, _to_float(xtr[:, None]), torch.from_numpy(ytr.astype(np.int64)),
                     _to_float(xte[:, None]), torch.from_numpy(yte.astype(np.int64)), list(spec.classes),
                     spec.mean, spec.std, [str(folder / s) for s in _IDX_FILES])


def _to_float(x: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.array(x, dtype=np.float32)).div_(255.0)


# ------------------------------------------------------------------------------------------ CIFAR pickles
class RestrictedUnpickler(pickle.Unpickler):
    """Builds only builtin containers/scalars/bytes/str and numpy arrays; any other global is refused."""

    ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
        ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"), ("_codecs", "encode"),
    }

    def find_class(self, module, name):
        if (module, name) in self.ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"global {module}.{name} is not allowed")


def safe_unpickle(blob: bytes, what: str):
    try:
        return RestrictedUnpickler(io.BytesIO(blob), encoding="latin1").load()
    except Exception as e:  # any failure here is a bad file, reported in one line
        raise DataError(f"{what} could not be read as a CIFAR batch ({type(e).__name__}: {e}); replace it with the "
                        f"original file") from None


def _cifar_blobs(spec: CifarSpec, root: Path) -> tuple[dict[str, bytes], str]:
    """Verified bytes of every member (train, test, meta), from the folder or from the archive."""
    folder, archive = root / spec.folder, root / spec.archive
    names = {**spec.train, **spec.test, spec.meta[0]: spec.meta[1]}
    present = {n: folder / n for n in names if (folder / n).is_file()}
    if len(present) == len(names):
        blobs = {n: present[n].read_bytes() for n in names}
        bad = [f"{n}: corrupt (MD5 mismatch)" for n, md5 in names.items() if md5_bytes(blobs[n]) != md5]
        if not bad:
            return blobs, str(folder)
        if not archive.is_file():
            raise DataError(f"{spec.name}: {'; '.join(bad)} in {folder}; {where_to_get(spec, root)}")
    if archive.is_file():
        tgz = archive.read_bytes()
        if md5_bytes(tgz) != spec.archive_md5:
            raise DataError(f"{spec.name}: {archive.name} is corrupt (MD5 mismatch) in {root}; "
                            f"{where_to_get(spec, root)}")
        blobs = {}
        with tarfile.open(fileobj=io.BytesIO(tgz), mode="r:gz") as tf:
            for m in tf.getmembers():
                base = m.name.rsplit("/", 1)[-1]
                if m.isfile() and m.name == f"{spec.folder}/{base}" and base in names and (f := tf.extractfile(m)):
                    blobs[base] = f.read()
        missing = [n for n in names if n not in blobs]
        bad = [n for n in names if n in blobs and md5_bytes(blobs[n]) != names[n]]
        if missing or bad:
            raise DataError(f"{spec.name}: {archive.name} lacks {missing} or holds corrupt {bad}; "
                            f"{where_to_get(spec, root)}")
        return blobs, str(archive)
    missing = [n for n in names if n not in present]
    raise DataError(f"{spec.name}: missing {', '.join(missing)} in {folder} and no {spec.archive} in {root}; "
                    f"{where_to_get(spec, root)}")


def _load_cifar(spec: CifarSpec, root: Path) -> ImageData:
    blobs, src = _cifar_blobs(spec, root)

    def batch(names):
        xs, ys = [], []
        for n in names:
            d = safe_unpickle(blobs[n], f"{src}:{n}")
            if not isinstance(d, dict) or "data" not in d or spec.label_key not in d:
                raise DataError(f"{src}:{n} lacks 'data' or {spec.label_key!r}; replace it with the original file")
            x = np.asarray(d["data"], dtype=np.uint8)
            y = np.asarray(d[spec.label_key], dtype=np.int64)
            if x.ndim != 2 or x.shape[1] != 3072 or len(x) != len(y):
                raise DataError(f"{src}:{n} holds data {x.shape} / labels {y.shape}, not (N, 3072) / (N,)")
            xs.append(x.reshape(-1, 3, 32, 32))
            ys.append(y)
        return _to_float(np.concatenate(xs)), torch.from_numpy(np.concatenate(ys))

    xtr, ytr = batch(spec.train)
    xte, yte = batch(spec.test)
    meta = safe_unpickle(blobs[spec.meta[0]], f"{src}:{spec.meta[0]}")
    classes = ([str(c) for c in meta.get(spec.meta[2], [])] if isinstance(meta, dict) else []) or [
        str(i) for i in range(int(ytr.max()) + 1)]
    return ImageData(spec.name, xtr, ytr, xte, yte, classes, spec.mean, spec.std, [src])


# ------------------------------------------------------------------------------------------ digits
def load_digits_split(test_fraction: float = 1 / 3) -> ImageData:
    """scikit-learn's bundled 8×8 digits (1797 images, 0..16 → [0,1]); a fixed stratified split.

    The split is drawn once from a fixed seed (0) per class, so every run and every seed uses the same test
    set: 1198 train / 599 test images.
    """
    from sklearn.datasets import load_digits

    d = load_digits()
    x = torch.from_numpy(d.images.astype(np.float32) / 16.0)[:, None]
    y = torch.from_numpy(d.target.astype(np.int64))
    te = stratified_test_mask(y, test_fraction)
    return ImageData("digits", x[~te], y[~te], x[te], y[te], [str(i) for i in range(10)], DIGITS_MEAN, DIGITS_STD,
                     ["sklearn.datasets.load_digits"])


def stratified_test_mask(y: torch.Tensor, test_fraction: float) -> torch.Tensor:
    """A fixed stratified split: True for round(n_c · test_fraction) examples of each class c, drawn from seed 0."""
    g = torch.Generator().manual_seed(0)
    is_test = torch.zeros(len(y), dtype=torch.bool, device=y.device)
    for c in y.unique():
        idx = (y == c).nonzero().flatten()
        is_test[idx[torch.randperm(len(idx), generator=g, device="cpu")][: round(len(idx) * test_fraction)]] = True
    return is_test


def load_images(name: str, root: str | Path = "data") -> ImageData:
    """Load a dataset by name (digits, mnist, fashionmnist, cifar10, cifar100) from ``root``."""
    key = name.lower().replace("-", "").replace("_", "")
    if key not in DATASETS:
        raise DataError(f"unknown dataset {name!r}; choose one of: {', '.join(DATASETS)}")
    if key == "digits":
        return load_digits_split()
    spec, folder = SPECS[key], Path(root).expanduser()
    return _load_idx(spec, folder) if isinstance(spec, IdxSpec) else _load_cifar(spec, folder)


# ------------------------------------------------------------------------------------------ featlab data check
def check_root(root: str | Path) -> list[tuple[str, str, str]]:
    """(dataset, status 'ok'/'missing'/'corrupt', detail) for every dataset under ``root``; parses nothing."""
    root = Path(root).expanduser()
    if not root.is_dir():  # a mistyped --root must not read as "every dataset is missing"
        raise DataError(f"data root {str(root)!r} {'is not a folder' if root.exists() else 'does not exist'}; create "
                        f"it and run this again to see where each dataset goes, or pass --root DIR of an existing one")
    rows = [("digits", "ok", "bundled with scikit-learn (no download)")]
    for name, spec in SPECS.items():
        if isinstance(spec, IdxSpec):
            statuses = [_idx_file(spec, root / spec.folder, s)[1] for s in _IDX_FILES]
            bad = [s for s in statuses if not s.endswith(": ok")]
            state = "ok" if not bad else "missing" if len(bad) == len(statuses) and all(
                s.endswith("missing") for s in bad) else "corrupt"
            detail = "; ".join(bad) or f"{root / spec.folder}"
        else:
            try:
                state, detail = "ok", _cifar_blobs(spec, root)[1]
            except DataError as e:
                msg = str(e)
                state = "missing" if "missing" in msg and "corrupt" not in msg else "corrupt"
                detail = msg.split("; download")[0].removeprefix(f"{name}: ")
        rows.append((name, state, detail))
    return rows

