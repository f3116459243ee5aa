"""``featlab pack OUT FILE`` / ``featlab unpack FILE OUT``: carry finished records and the kept units of budgeted runs
(:mod:`featlab.runs.pack`) from one machine to another, a few MB, checked by hash."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..runs.pack import pack, unpack


def register(sub) -> None:
    p = sub.add_parser("pack", help="pack a runs folder's complete records and kept units into one file")
    p.add_argument("out", metavar="OUT", help="the runs folder (the --out of the runs)")
    p.add_argument("file", metavar="FILE", help="the pack to write, e.g. runs.tgz")
    p.set_defaults(handler=cmd_pack)
    u = sub.add_parser("unpack", help="add a pack's records and units to a runs folder (never overwrites)")
    u.add_argument("file", metavar="FILE", help="a pack written by 'featlab pack'")
    u.add_argument("out", metavar="OUT", help="the runs folder to add them to")
    u.set_defaults(handler=cmd_unpack)


def cmd_pack(a: argparse.Namespace) -> int:
    manifest = pack(a.out, a.file)
    n = len(manifest["files"])
    units = sum("/.units/" in f for f in manifest["files"])
    print(f"packed {n} files ({units} kept units) into {a.file} ({Path(a.file).stat().st_size / 2**20:.2f} MiB)")
    return 0


def cmd_unpack(a: argparse.Namespace) -> int:
    new, same = unpack(a.file, a.out)
    print(f"unpacked {a.file} into {a.out}: {new} files added, {same} already there")
    return 0
