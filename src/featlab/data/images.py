"""Image datasets read offline from their published files, verified before they are parsed.

    data = load_images("cifar10", root="data")      # ImageData: uint8 → float [0,1] tensors (N, C, H, W)
    data = load_images("digits")                    # scikit-learn's bundled 8×8 digits: no download

Where it looks, in order: ``root`` (the ``data_root`` field), each folder of ``$FEATLAB_DATA``, both in
torchvision's layout (an existing torchvision download works as is), then a package manager's copy
(``apt-get install dataset-fashion-mnist`` puts FashionMNIST under /usr/share/datasets/fashion-mnist)::

    <root>/MNIST/raw/train-images-idx3-ubyte(.gz), train-labels-idx1-ubyte(.gz), t10k-…(.gz)
    <root>/FashionMNIST/raw/…                       (same four names)
    <root>/cifar-10-batches-py/data_batch_1..5, test_batch, batches.meta   or <root>/cifar-10-python.tar.gz
    <root>/cifar-100-python/train, test, meta                              or <root>/cifar-100-python.tar.gz

Safety: every file's MD5 is compared with the published value (torchvision's constants, which are the
datasets' own) *before* it is parsed; a recompressed .gz (Debian's) is accepted by the MD5 of its contents. IDX
files are plain bytes; the CIFAR pickles are read with a restricted unpickler that can build only builtin
containers, bytes/str and numpy arrays, never call anything else. Archives are read in memory (no extraction to
disk, so no path traversal).
"""

from __future__ import annotations

import gzip
import io
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from ..errors import DataError
from . import image_files
from .cifar import RestrictedUnpickler, cifar_blobs, load_cifar, safe_unpickle
from .image_files import (
    _IDX_FILES,
    DATA_ENV,
    DATASETS,
    DIGITS_MEAN,
    DIGITS_STD,
    SPECS,
    CifarSpec,
    IdxSpec,
    ImageData,
    md5_bytes,
    to_float,
    where_to_get,
)

__all__ = ["DATASETS", "SPECS", "CifarSpec", "IdxSpec", "ImageData", "RestrictedUnpickler", "check_root",
           "data_roots", "load_images", "md5_bytes", "parse_idx", "safe_unpickle", "where_to_get"]
_MAX_IDX_BYTES = 64 << 20  # the largest IDX file (MNIST's train images) is 47 MB: a larger gzip is not one


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


def _gunzip(blob: bytes) -> bytes | None:
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(blob)) as f:
            out = f.read(_MAX_IDX_BYTES + 1)
    except (OSError, EOFError):
        return None
    return out if len(out) <= _MAX_IDX_BYTES else None


def _idx_file(spec: IdxSpec, folder: Path, stem: str) -> tuple[bytes | None, str]:
    """(verified bytes of the extracted IDX file or None, status text). A .gz is the published one (its own MD5)
    or a recompression of the published file (the MD5 of its contents, as Debian's package ships it)."""
    gz, raw = folder / f"{stem}.gz", folder / stem
    if gz.is_file():
        blob = gz.read_bytes()
        inner = _gunzip(blob)
        if md5_bytes(blob) == spec.gz_md5[stem] or (inner is not None and md5_bytes(inner) == spec.raw_md5[stem]):
            return (inner, f"{gz.name}: ok") if inner is not None else (None, f"{gz.name}: corrupt (not gzip)")
        if not raw.is_file():
            return None, f"{gz.name}: corrupt (MD5 mismatch)"
    if raw.is_file():
        blob = raw.read_bytes()
        if md5_bytes(blob) == spec.raw_md5[stem]:
            return blob, f"{raw.name}: ok"
        return None, f"{raw.name}: corrupt (MD5 mismatch)"
    return None, f"{stem}(.gz): missing"


def data_roots(root: str | Path) -> list[Path]:
    """The data roots searched, in order: ``root``, then each folder of ``$FEATLAB_DATA``."""
    roots = [Path(root).expanduser(), *(Path(r).expanduser() for r in os.environ.get(DATA_ENV, "").split(os.pathsep)
                                        if r)]
    return list(dict.fromkeys(roots))


def _idx_folders(spec: IdxSpec, root: str | Path) -> list[Path]:
    system = image_files.SYSTEM_COPIES.get(spec.name)
    return [r / spec.folder for r in data_roots(root)] + ([Path(system[1])] if system else [])


def _unreadable(folder: Path, names: list[str]) -> list[str]:
    """Entries named like a dataset file that are no regular file: a folder in its place, a broken or looping
    link (``is_file`` reads them as absent: they are damage, not a missing download)."""
    return [f"{n}: not a readable file (a folder, or a broken or looping link)" for n in names
            if os.path.lexists(folder / n) and not (folder / n).is_file()]


# (spec, the stat of every file a copy may hold) -> its verdict: MD5s of an unchanged copy are computed once per process
_VERDICTS: dict[tuple, tuple[str, str]] = {}


def _cached(check, spec: IdxSpec | CifarSpec, place: Path, names: list[Path]) -> tuple[str, str]:
    """``check(spec, place)``, remembered while none of ``names`` changes (size, mtime, inode)."""
    def stat(p: Path):
        try:
            st = p.stat()
            return st.st_size, st.st_mtime_ns, st.st_ino
        except OSError as e:
            return e.errno
    key = (check.__name__, repr(spec), str(place), tuple(stat(p) for p in names))
    if key not in _VERDICTS:
        _VERDICTS[key] = check(spec, place)
    return _VERDICTS[key]


def _idx_copy(spec: IdxSpec, folder: Path) -> tuple[str, str]:
    """('ok' / 'missing' / 'corrupt', detail) of one folder's copy of an IDX dataset."""
    got = {stem: _idx_file(spec, folder, stem) for stem in _IDX_FILES}
    odd = _unreadable(folder, [n for stem in _IDX_FILES for n in (stem, f"{stem}.gz")])
    bad = [status for blob, status in got.values() if blob is None and not status.endswith("missing")] + odd
    if bad:
        return "corrupt", f"{'; '.join(bad)} in {folder}"
    if any(blob is None for blob, _ in got.values()):
        return "missing", f"{'; '.join(status for blob, status in got.values() if blob is None)} in {folder}"
    return "ok", str(folder)


def _cifar_copy(spec: CifarSpec, root: Path) -> tuple[str, str]:
    """('ok' / 'missing' / 'corrupt', detail) of one data root's copy of a CIFAR dataset."""
    names = [*spec.train, *spec.test, spec.meta[0]]
    odd = _unreadable(root / spec.folder, names) + _unreadable(root, [spec.archive])
    try:
        found = cifar_blobs(spec, root)[1]
    except DataError as e:
        msg = str(e).split("; download")[0].removeprefix(f"{spec.name}: ")
        if "missing" in msg and "corrupt" not in msg and not odd:
            return "missing", msg
        return "corrupt", "; ".join([*odd, msg])
    return ("corrupt", f"{'; '.join(odd)} in {root}") if odd else ("ok", found)


@dataclass
class Location:
    """Where a dataset is: ``found`` (the first verified copy on the search path, or None), ``bad`` (every corrupt
    or unreadable copy on the path, before or after the good one), ``missing`` (where it was looked for and not
    found), ``root`` (the data root or system folder holding the copy found)."""

    name: str
    found: str | None = None
    root: Path | None = None
    bad: list[str] = field(default_factory=list)
    missing: list[tuple[Path, str]] = field(default_factory=list)  # (place, what is missing there)

    @property
    def status(self) -> str:
        """'ok' (a verified copy; ``bad`` may still name others), 'corrupt' (none verified, one damaged), 'missing'."""
        return "ok" if self.found else "corrupt" if self.bad else "missing"

    def text(self, short: bool = False) -> str:
        """The one-line answer to "where is the dataset": the copy used, and every damaged copy beside it; when
        there is none, what is missing in the first place searched (``short``: only the places)."""
        if self.found:
            return self.found + (f" (also a damaged copy: {'; '.join(self.bad)})" if self.bad else "")
        if self.bad:
            return "; ".join(self.bad)
        if short:
            return f"not in {', '.join(str(p) for p, _ in self.missing)}"
        others = [str(p) for p, _ in self.missing[1:]]
        return self.missing[0][1] + (f" (also looked in {', '.join(others)})" if others else "")


def locate(name: str, root: str | Path = "data") -> Location:
    """THE answer to "where is dataset ``name``", searched as it is read (``root``, each ``$FEATLAB_DATA`` folder,
    a package manager's copy): every copy on the path is checked (MD5s), so a damaged one is reported even when a
    good one comes later. ``data check``, the loader, reproduce's plan, the report and the runs' estimates use it."""
    key = name.lower().replace("-", "").replace("_", "")
    loc = Location(key)
    if key == "digits":
        loc.found = "bundled with scikit-learn (no download)"
        return loc
    spec = SPECS[key]
    for place, state, detail in _copies(spec, root):
        if state == "ok" and loc.found is None:
            loc.found, loc.root = detail, place
        elif state == "corrupt":
            loc.bad.append(detail)
        elif state == "missing":
            loc.missing.append((place if isinstance(spec, IdxSpec) else place / spec.folder, detail))
    return loc


def _copies(spec: IdxSpec | CifarSpec, root: str | Path) -> list[tuple[Path, str, str]]:
    """(place, 'ok' / 'missing' / 'corrupt', detail) of every copy on the search path, in search order: an IDX
    dataset's folders (data roots, then a system copy), a CIFAR dataset's data roots."""
    if isinstance(spec, IdxSpec):
        return [(f, *_cached(_idx_copy, spec, f, [f / n for s in _IDX_FILES for n in (s, f"{s}.gz")]))
                for f in _idx_folders(spec, root)]
    names = [*spec.train, *spec.test, spec.meta[0]]
    return [(r, *_cached(_cifar_copy, spec, r, [*(r / spec.folder / n for n in names), r / spec.archive]))
            for r in data_roots(root)]


def _found(spec: IdxSpec | CifarSpec, root: str | Path) -> Path:
    """Where :func:`locate` found a verified copy (an IDX folder, a CIFAR data root); else its one-line reason."""
    loc = locate(spec.name, root)
    if loc.root is None:
        raise DataError(f"{spec.name}: {loc.text()}; {where_to_get(spec, root)}")
    return loc.root


def _load_idx(spec: IdxSpec, root: Path) -> ImageData:
    folder = _found(spec, root)
    got = {stem: _idx_file(spec, folder, stem) for stem in _IDX_FILES}
    arr = {s: parse_idx(blob, f"{folder / s}") for s, (blob, _) in got.items() if blob is not None}
    xtr, ytr, xte, yte = (arr[s] for s in _IDX_FILES)
    for x, y, split in ((xtr, ytr, "train"), (xte, yte, "t10k")):
        if x.ndim != 3 or y.ndim != 1 or len(x) != len(y):
            raise DataError(f"{spec.name}: {split} images {x.shape} and labels {y.shape} do not match in {folder}; "
                            f"replace them with the original files")
    return ImageData(spec.name, to_float(xtr[:, None]), torch.from_numpy(ytr.astype(np.int64)),
                     to_float(xte[:, None]), torch.from_numpy(yte.astype(np.int64)), list(spec.classes),
                     spec.mean, spec.std, [str(folder / s) for s in _IDX_FILES])


def _cifar_found(spec: CifarSpec, root: str | Path) -> tuple[dict[str, bytes], str]:
    """CIFAR's verified files from the copy :func:`locate` finds; else its one-line reason (damaged copies first)."""
    return cifar_blobs(spec, _found(spec, root))


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


def stratified_subset(y: torch.Tensor, n: int) -> torch.Tensor:
    """A fixed class-stratified subset of exactly ``n`` of the labels ``y`` (a boolean mask): each class keeps its
    share, n·n_c/N rounded down, and the ``n`` − Σ left go to the classes with the largest remainders (ties: the
    lower class); the examples are drawn from seed 0, so every run and every seed gets the same subset."""
    classes, counts = y.unique(return_counts=True)
    share = counts.double() * n / len(y)
    take = share.floor().long()
    order = sorted(range(len(classes)), key=lambda i: (-(share[i] - take[i]).item(), i))
    for i in order[: n - int(take.sum())]:
        take[i] += 1
    g = torch.Generator().manual_seed(0)
    keep = torch.zeros(len(y), dtype=torch.bool, device=y.device)
    for c, t in zip(classes.tolist(), take.tolist()):
        idx = (y == c).nonzero().flatten()
        keep[idx[torch.randperm(len(idx), generator=g, device="cpu")][:t]] = True
    return keep


def load_images(name: str, root: str | Path = "data") -> ImageData:
    """Load a dataset by name (digits, mnist, fashionmnist, cifar10, cifar100) from ``root``."""
    key = name.lower().replace("-", "").replace("_", "")
    if key not in DATASETS:
        raise DataError(f"unknown dataset {name!r}; choose one of: {', '.join(DATASETS)}")
    if key == "digits":
        return load_digits_split()
    spec = SPECS[key]
    return _load_idx(spec, Path(root)) if isinstance(spec, IdxSpec) else load_cifar(spec, _cifar_found(spec, root))


# ------------------------------------------------------------------------------------------ featlab data check
def check_root(root: str | Path, must_exist: bool = True) -> list[tuple[str, str, str]]:
    """(dataset, status 'ok'/'missing'/'corrupt', where it was found or what is wrong) for every dataset, searched
    as :func:`load_images` does (``root``, ``$FEATLAB_DATA``, a system copy); parses nothing. ``must_exist``: a
    ``root`` that is not a folder is an error (a mistyped --root must not read as "every dataset is missing")."""
    root = Path(root).expanduser()
    if must_exist and not root.is_dir():
        raise DataError(f"data root {str(root)!r} {'is not a folder' if root.exists() else 'does not exist'}; create "
                        f"it and run this again to see where each dataset goes, or pass --root DIR of an existing one")
    return [(name, (loc := locate(name, root)).status, loc.text(short=True)) for name in ("digits", *SPECS)]
