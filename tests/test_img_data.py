"""Image dataset readers: real formats (IDX, CIFAR pickles and archive), checksums, restricted unpickling."""

import dataclasses
import gzip
import io
import pickle
import struct
import tarfile

import numpy as np
import pytest
import torch

from featlab.cli import main
from featlab.data import images
from featlab.data.images import load_images, md5_bytes, safe_unpickle
from featlab.errors import DataError


def idx_bytes(arr: np.ndarray) -> bytes:
    header = bytes([0, 0, 8, arr.ndim]) + b"".join(struct.pack(">I", s) for s in arr.shape)
    return header + arr.astype(np.uint8).tobytes()


def make_mnist(root, monkeypatch, name="mnist", gz=True, n=(12, 6)):
    spec = images.SPECS[name]
    folder = root / spec.folder
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    arrays = {"train-images-idx3-ubyte": rng.integers(0, 256, (n[0], 28, 28)),
              "train-labels-idx1-ubyte": np.arange(n[0]) % 10,
              "t10k-images-idx3-ubyte": rng.integers(0, 256, (n[1], 28, 28)),
              "t10k-labels-idx1-ubyte": np.arange(n[1]) % 10}
    gz_md5, raw_md5 = {}, {}
    for stem, a in arrays.items():
        raw = idx_bytes(a)
        raw_md5[stem] = md5_bytes(raw)
        if gz:
            blob = gzip.compress(raw)
            (folder / f"{stem}.gz").write_bytes(blob)
            gz_md5[stem] = md5_bytes(blob)
        else:
            (folder / stem).write_bytes(raw)
            gz_md5[stem] = "0" * 32
    monkeypatch.setitem(images.SPECS, name, dataclasses.replace(spec, gz_md5=gz_md5, raw_md5=raw_md5))
    return arrays


def cifar_pickle(n, label_key, seed):
    rng = np.random.default_rng(seed)
    d = {"batch_label": "testing batch", label_key: [(j + n * seed) % 10 for j in range(n)],  # every class
         "data": rng.integers(0, 256, (n, 3072)).astype(np.uint8), "filenames": [f"f{i}.png" for i in range(n)]}
    return pickle.dumps(d, protocol=2)


def make_cifar(root, monkeypatch, archive=False):
    spec = images.SPECS["cifar10"]
    blobs = {n: cifar_pickle(4, "labels", i) for i, n in enumerate([*spec.train, *spec.test])}
    blobs["batches.meta"] = pickle.dumps({"label_names": [f"c{i}" for i in range(10)]}, protocol=2)
    md5 = {n: md5_bytes(b) for n, b in blobs.items()}
    kw = dict(train={n: md5[n] for n in spec.train}, test={n: md5[n] for n in spec.test},
              meta=("batches.meta", md5["batches.meta"], "label_names"))
    if archive:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tf:
            for n, b in blobs.items():
                info = tarfile.TarInfo(f"{spec.folder}/{n}")
                info.size = len(b)
                tf.addfile(info, io.BytesIO(b))
        (root / spec.archive).write_bytes(buf.getvalue())
        kw["archive_md5"] = md5_bytes(buf.getvalue())
    else:
        (root / spec.folder).mkdir(parents=True)
        for n, b in blobs.items():
            (root / spec.folder / n).write_bytes(b)
    monkeypatch.setitem(images.SPECS, "cifar10", dataclasses.replace(spec, **kw))
    return blobs


def make_cifar100(root, monkeypatch, n=(200, 100)):
    """Tiny CIFAR-100 files in the real layout (cifar-100-python/train, test, meta), every class in both splits."""
    spec = images.SPECS["cifar100"]
    rng = np.random.default_rng(0)

    def split(m):
        return pickle.dumps({"fine_labels": [j % 100 for j in range(m)], "coarse_labels": [j % 20 for j in range(m)],
                             "data": rng.integers(0, 256, (m, 3072)).astype(np.uint8),
                             "filenames": [f"f{i}.png" for i in range(m)]}, protocol=2)

    blobs = {"train": split(n[0]), "test": split(n[1]),
             "meta": pickle.dumps({"fine_label_names": [f"c{i}" for i in range(100)]}, protocol=2)}
    md5 = {name: md5_bytes(b) for name, b in blobs.items()}
    (root / spec.folder).mkdir(parents=True)
    for name, b in blobs.items():
        (root / spec.folder / name).write_bytes(b)
    monkeypatch.setitem(images.SPECS, "cifar100", dataclasses.replace(
        spec, train={"train": md5["train"]}, test={"test": md5["test"]},
        meta=("meta", md5["meta"], "fine_label_names")))
    return blobs


@pytest.mark.parametrize("gz", [True, False])
def test_mnist_idx_roundtrip(tmp_path, monkeypatch, gz):
    arrays = make_mnist(tmp_path, monkeypatch, gz=gz)
    d = load_images("mnist", tmp_path)
    assert d.x_train.shape == (12, 1, 28, 28) and d.x_test.shape == (6, 1, 28, 28)
    assert np.array_equal((d.x_train[:, 0] * 255).round().to(torch.uint8).numpy(),
                          arrays["train-images-idx3-ubyte"].astype(np.uint8))
    assert d.y_test.tolist() == list(range(6))
    assert 0 <= d.x_train.min() and d.x_train.max() <= 1


def test_fashionmnist_layout(tmp_path, monkeypatch):
    make_mnist(tmp_path, monkeypatch, name="fashionmnist")
    assert (tmp_path / "FashionMNIST" / "raw").is_dir()
    assert load_images("FashionMNIST", tmp_path).num_classes == 10


def test_corrupt_idx_refused_before_parsing(tmp_path, monkeypatch):
    make_mnist(tmp_path, monkeypatch)
    f = tmp_path / "MNIST" / "raw" / "t10k-images-idx3-ubyte.gz"
    blob = bytearray(f.read_bytes())
    blob[-5] ^= 0xFF
    f.write_bytes(bytes(blob))
    with pytest.raises(DataError, match=r"t10k-images-idx3-ubyte.gz: corrupt \(MD5 mismatch\).*MNIST.raw.*ossci"):
        load_images("mnist", tmp_path)


def test_missing_files_message_names_files_folder_and_source(tmp_path):
    with pytest.raises(DataError) as e:
        load_images("mnist", tmp_path)
    msg = str(e.value)
    assert "\n" not in msg
    assert "train-images-idx3-ubyte(.gz): missing" in msg and str(tmp_path / "MNIST" / "raw") in msg
    assert "https://" in msg
    with pytest.raises(DataError, match=r"missing data_batch_1.*cifar-10-python.tar.gz.*toronto"):
        load_images("cifar10", tmp_path)


def test_unknown_dataset():
    with pytest.raises(DataError, match=r"unknown dataset 'imagenet'; choose one of: digits, mnist"):
        load_images("imagenet")


def test_parse_idx_checks_header():
    good = idx_bytes(np.zeros((2, 3, 3)))
    assert images.parse_idx(good, "x").shape == (2, 3, 3)
    with pytest.raises(DataError, match="header announces"):
        images.parse_idx(good[:-1], "x")
    with pytest.raises(DataError, match="magic"):
        images.parse_idx(b"\x00\x00\x09\x03" + good[4:], "x")


@pytest.mark.parametrize("archive", [False, True])
def test_cifar_folder_and_archive(tmp_path, monkeypatch, archive):
    blobs = make_cifar(tmp_path, monkeypatch, archive=archive)
    d = load_images("cifar10", tmp_path)
    assert d.x_train.shape == (20, 3, 32, 32) and d.x_test.shape == (4, 3, 32, 32)
    ref = pickle.loads(blobs["data_batch_1"], encoding="latin1")
    assert torch.equal((d.x_train[:4] * 255).round().to(torch.uint8).reshape(4, -1), torch.from_numpy(ref["data"]))
    assert d.y_train[:4].tolist() == ref["labels"]
    assert d.classes[0] == "c0"


def test_cifar_corrupt_archive(tmp_path, monkeypatch):
    make_cifar(tmp_path, monkeypatch, archive=True)
    f = tmp_path / "cifar-10-python.tar.gz"
    f.write_bytes(f.read_bytes()[:-10])
    with pytest.raises(DataError, match=r"cifar-10-python.tar.gz is corrupt \(MD5 mismatch\)"):
        load_images("cifar10", tmp_path)


class Evil:
    def __reduce__(self):
        return (print, ("pwned",))


def test_restricted_unpickler_refuses_code():
    with pytest.raises(DataError, match="builtins.print is not allowed"):
        safe_unpickle(pickle.dumps({"data": Evil()}), "evil")
    arr = np.arange(6, dtype=np.uint8)
    out = safe_unpickle(pickle.dumps({"data": arr, "labels": [1, 2]}, protocol=2), "ok")
    assert np.array_equal(out["data"], arr)


def test_digits_split_fixed_and_stratified():
    a, b = load_images("digits"), load_images("digits")
    assert torch.equal(a.y_test, b.y_test)
    assert a.x_train.shape[1:] == (1, 8, 8) and len(a.y_train) + len(a.y_test) == 1797
    counts = a.y_test.bincount()
    assert counts.min() >= 55 and counts.max() <= 62
    assert abs(a.normalize(a.x_train).mean().item()) < 0.01


def test_data_check_command(tmp_path, monkeypatch, capsys):
    make_mnist(tmp_path, monkeypatch)
    assert main(["data", "check", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "mnist" in out and "ok" in out and "missing" in out and "toronto" in out
    f = tmp_path / "MNIST" / "raw" / "train-labels-idx1-ubyte.gz"
    f.write_bytes(b"garbage")
    assert main(["data", "check", "--root", str(tmp_path)]) == 2  # a damaged copy: exit 2
    assert "corrupt" in capsys.readouterr().out


def test_recompressed_gz_accepted_by_its_contents(tmp_path, monkeypatch):
    """Debian recompresses the .gz files: their own MD5 differs from the published one, their contents' does not."""
    make_mnist(tmp_path, monkeypatch, name="fashionmnist")
    spec = images.SPECS["fashionmnist"]
    folder = tmp_path / spec.folder
    for f in folder.glob("*.gz"):
        f.write_bytes(gzip.compress(gzip.decompress(f.read_bytes()), compresslevel=1, mtime=1))
    monkeypatch.setitem(images.SPECS, "fashionmnist", dataclasses.replace(spec, gz_md5=dict.fromkeys(spec.gz_md5,
                                                                                                     "0" * 32)))
    assert len(load_images("fashionmnist", tmp_path).y_train) == 12
    f = folder / "t10k-labels-idx1-ubyte.gz"  # a recompression of other contents is still refused
    f.write_bytes(gzip.compress(b"\0\0\x08\x01\0\0\0\x01\x07"))
    with pytest.raises(DataError, match=r"t10k-labels-idx1-ubyte.gz: corrupt \(MD5 mismatch\)"):
        load_images("fashionmnist", tmp_path)


def test_search_order_root_then_env_then_system_copy(tmp_path, monkeypatch, capsys):
    make_mnist(tmp_path / "env", monkeypatch, name="fashionmnist")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DataError, match=r"missing in .*empty.*apt-get install dataset-fashion-mnist"):
        monkeypatch.setattr(images.image_files, "SYSTEM_COPIES", {"fashionmnist": ("dataset-fashion-mnist",
                                                                                   str(tmp_path / "nowhere"))})
        load_images("fashionmnist", empty)
    monkeypatch.setenv("FEATLAB_DATA", str(tmp_path / "env"))
    d = load_images("fashionmnist", empty)
    assert d.files[0].startswith(str(tmp_path / "env" / "FashionMNIST" / "raw"))
    assert main(["data", "check", "--root", str(empty)]) == 0
    assert "fashionmnist   ok" in capsys.readouterr().out
    assert ("fashionmnist", "ok", str(tmp_path / "env" / "FashionMNIST" / "raw")) in images.check_root(empty)
    # a flat folder of the four .gz files, as a package installs them, is the last place searched
    monkeypatch.delenv("FEATLAB_DATA")
    monkeypatch.setattr(images.image_files, "SYSTEM_COPIES", {"fashionmnist": ("dataset-fashion-mnist",
                                                                               str(tmp_path / "env" / "FashionMNIST"
                                                                                   / "raw"))})
    assert load_images("fashionmnist", empty).files == d.files


def test_real_fashionmnist_from_the_system_copy(real_fmnist, capsys):
    """The real files (Debian's dataset-fashion-mnist): found without a data root, every file's contents checked
    against the published MD5, the published sizes and balanced classes."""
    d = load_images("fashionmnist", real_fmnist.parent / "no-such-root")
    assert [p.rsplit("/", 1)[0] for p in d.files] == [str(real_fmnist)] * 4
    spec = images.SPECS["fashionmnist"]
    for stem in spec.raw_md5:
        assert md5_bytes(gzip.decompress((real_fmnist / f"{stem}.gz").read_bytes())) == spec.raw_md5[stem]
    assert d.x_train.shape == (60_000, 1, 28, 28) and d.x_test.shape == (10_000, 1, 28, 28)
    assert d.y_train.bincount().tolist() == [6000] * 10 and d.y_test.bincount().tolist() == [1000] * 10
    assert d.classes[9] == "Ankle boot" and 0.25 < d.x_train[:2000].mean() < 0.32  # FashionMNIST's mean is 0.286
    assert main(["data", "check"]) == 0
    assert f"fashionmnist   ok        {real_fmnist}" in capsys.readouterr().out
