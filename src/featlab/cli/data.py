"""Image data: ``featlab data check`` (what is present and valid under a data root) and ``featlab embed`` (CLIP
embeddings of CIFAR-10 for fa-embeddings; needs the [clip] extra)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..data.embeddings import clip_embeddings, require_open_clip, save_embeddings
from ..data.images import SPECS, check_root, data_roots, load_images, where_to_get
from ..errors import DataError
from ..text import table
from ..utils import atomic_write, check_writable, writing


def register(sub) -> None:
    d = sub.add_parser("data", help="image datasets: 'featlab data check [--root DIR]' lists what is present and valid")
    dsub = d.add_subparsers(dest="data_cmd", required=True)
    dc = dsub.add_parser("check", help="verify every dataset file under the data root against its checksum (exit "
                         "0: every copy found is intact, missing ones listed; 2: a damaged copy, named)")
    dc.add_argument("--root", default=None, help="data root in torchvision's layout (default ./data); $FEATLAB_DATA "
                    "and a system copy (apt-get install dataset-fashion-mnist) are searched after it")
    dc.set_defaults(handler=cmd_data_check)

    em = sub.add_parser("embed", help="CLIP ViT-B-32 embeddings of CIFAR-10 for fa-embeddings (needs open_clip)")
    em.add_argument("--root", default="data", help="data root holding CIFAR-10 (default ./data)")
    em.add_argument("--out", default="cifar10_clip_vitb32.npz", help="output .npz or .parquet")
    em.add_argument("--pretrained", default="openai", help="open_clip pretrained tag or a local checkpoint file")
    em.add_argument("--device", default="auto", help="auto, cpu or cuda")
    em.add_argument("--batch-size", type=int, default=256)
    em.set_defaults(handler=cmd_embed)


def cmd_data_check(a: argparse.Namespace) -> int:
    root = Path(a.root or "data").expanduser()
    rows = check_root(root, must_exist=a.root is not None)  # the default ./data may be absent: others are searched
    print(f"searched: {', '.join(map(str, data_roots(root)))} (torchvision's layout), then system copies")
    print(table([list(r) for r in rows], ["dataset", "status", "found in / detail"], [13, 8, 80]))
    hints = [f"  {n}: {where_to_get(SPECS[n], root)}" for n, s, _ in rows if s != "ok"]
    if hints:
        print("\nwhere to get the others:")
        print("\n".join(hints))
    damaged = [n for n, s, detail in rows if s == "corrupt" or "damaged copy" in detail]
    if damaged:  # exit 2: a file to replace; a dataset merely missing is not an error (exit 0)
        raise DataError(f"damaged dataset files for {', '.join(damaged)} (named above); replace or delete them")
    return 0


def cmd_embed(a: argparse.Namespace) -> int:
    dest = check_writable(a.out, "--out", example="cifar10_clip_vitb32.npz")  # before the minutes of encoding
    require_open_clip()  # before reading the images
    z, y, is_test = clip_embeddings(load_images("cifar10", a.root), a.pretrained, a.device, a.batch_size)

    def save(tmp: Path) -> None:
        # save_embeddings picks the format by the suffix, and np.savez appends .npz to any other: a named part file
        part = tmp.with_name(tmp.name + (".parquet" if dest.suffix == ".parquet" else ".npz"))
        try:
            save_embeddings(part, z, y, is_test)
            os.replace(part, tmp)
        except OSError as e:
            if e.errno is None:
                raise
            raise OSError(e.errno, e.strerror, str(tmp)) from e  # as the temporary file: reported as ``dest``
        finally:
            part.unlink(missing_ok=True)

    with writing("--out"):  # whole or absent; a full disk or a read-only folder is one line
        atomic_write(dest, save)
    print(f"wrote {len(z)} CLIP ViT-B-32 embeddings ({z.shape[1]}-d) to {dest}")
    return 0
