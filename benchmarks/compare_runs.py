"""Compare the summary metrics and claims of two sets of run records, experiment by experiment.

    python benchmarks/compare_runs.py BEFORE_OUT AFTER_OUT [--rtol 0] [--table]

For every experiment present in both folders, the latest complete run of each is compared: every summary metric
(bit-identical unless --rtol is given), and every claim's measured value and verdict (claims are matched by
position, since the move renamed some ids; a claim value that the old code stored rounded — it judged the
unrounded one — counts as the same when the new value rounds to it). Written for the structure move (the numbers
must not change), kept for any refactoring, and the GPU check's comparison of a CPU and a CUDA run of the same code
(benchmarks/gpu_check.sh: ``--table`` prints one Markdown row per experiment). Verdicts are compared as the four
statuses (held / failed / inconclusive / unverified). Exit 1 when something differs.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from featlab.utils import json_loads


def latest(root: Path) -> dict[str, dict]:
    out = {}
    for summ in root.glob("*/*/summary.json"):
        s = json_loads(summ.read_text())  # non-finite values come back as floats (featlab's strict JSON)
        if s.get("status") != "complete":
            continue
        if s["experiment"] not in out or summ.stat().st_mtime > out[s["experiment"]][0]:
            out[s["experiment"]] = (summ.stat().st_mtime, s)
    return {k: v for k, (_, v) in out.items()}


def verdict(claim: dict) -> str:
    """The claim's verdict (held / failed / inconclusive / unverified); records before the four statuses: holds."""
    return claim.get("status") or ("held" if claim.get("holds") else "failed")


def rel_diff(a, b) -> float:
    """|a − b| relative to the larger magnitude (0 for equal values, NaNs and non-numbers compared as equal)."""
    if not isinstance(a, int | float) or not isinstance(b, int | float) or a == b or (math.isnan(a) and math.isnan(b)):
        return 0.0
    if not (math.isfinite(a) and math.isfinite(b)):
        return math.inf
    return abs(a - b) / max(abs(a), abs(b), 1e-12)


def same(a, b, rtol: float) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    if a is None or b is None:
        return a is b
    if math.isnan(a) and math.isnan(b):
        return True
    return a == b or (rtol > 0 and math.isclose(a, b, rel_tol=rtol, abs_tol=1e-12))


def rounded_same(a, b) -> bool:
    """``a`` was stored rounded (e.g. 12.37) and ``b`` is the value it was rounded from (12.3737...)."""
    if not isinstance(a, float) or not isinstance(b, float) or not math.isfinite(a):
        return False
    decimals = len(repr(a).partition(".")[2])
    return decimals <= 6 and round(b, decimals) == a


def compare(before: dict, after: dict, rtol: float) -> list[str]:
    diffs = []
    mb, ma = before["metrics"], after["metrics"]
    for k in sorted(set(mb) | set(ma)):
        if k not in ma or k not in mb:
            diffs.append(f"metric {k}: only in {'before' if k in mb else 'after'}")
        elif not same(mb[k], ma[k], rtol):
            diffs.append(f"metric {k}: {mb[k]!r} -> {ma[k]!r}")
    cb, ca = before["claims"], after["claims"]
    if len(cb) != len(ca):
        diffs.append(f"claims: {len(cb)} before, {len(ca)} after")
    for x, y in zip(cb, ca):
        value_ok = same(x["measured"], y["measured"], rtol) or rounded_same(x["measured"], y["measured"])
        if not value_ok or verdict(x) != verdict(y):
            diffs.append(f"claim {x['id']} / {y['id']}: {x['measured']!r} ({verdict(x)}) -> "
                         f"{y['measured']!r} ({verdict(y)})")
    return diffs


def table_row(exp: str, before: dict, after: dict, rtol: float) -> tuple[str, bool]:
    """One Markdown row: metrics within rtol, the largest relative difference, verdicts equal; and whether it passes."""
    mb, ma = before["metrics"], after["metrics"]
    common = sorted(set(mb) & set(ma))
    d = {k: rel_diff(mb[k], ma[k]) for k in common}
    within = sum(same(mb[k], ma[k], rtol) for k in common)
    worst = max(d, key=lambda k: d[k], default=None)
    cb, ca = before["claims"], after["claims"]
    equal = sum(verdict(x) == verdict(y) for x, y in zip(cb, ca))
    changed = [f"{x['id']}: {verdict(x)} → {verdict(y)}" for x, y in zip(cb, ca) if verdict(x) != verdict(y)]
    ok = within == len(common) == len(mb) == len(ma) and equal == len(cb) == len(ca)
    largest = "—" if worst is None else f"{d[worst]:.1e} ({worst})"
    secs = " / ".join(f"{r['elapsed_s']:.0f}" if isinstance(r.get("elapsed_s"), (int, float)) else "?"
                      for r in (before, after))
    return (f"| {exp} | {within}/{len(common)} | {largest} | {equal}/{len(cb)} | {secs} | "
            f"{'✓' if ok else '✗ ' + '; '.join(changed[:3])} |"), ok


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--rtol", type=float, default=0.0, help="relative tolerance (default 0: bit-identical)")
    p.add_argument("--only", default="", help="comma-separated experiment ids")
    p.add_argument("--table", action="store_true", help="one Markdown row per experiment (the GPU check's table)")
    a = p.parse_args(argv)
    b, c = latest(Path(a.before)), latest(Path(a.after))
    only = [x for x in a.only.split(",") if x]
    bad = 0
    if a.table:
        print(f"| experiment | metrics within rtol {a.rtol:g} | largest relative difference | verdicts equal | "
              f"seconds (first / second) | |")
        print("|---|---|---|---|---|---|")
        for exp in sorted(set(b) & set(c)):
            if not only or exp in only:
                row, ok = table_row(exp, b[exp], c[exp], a.rtol)
                print(row)
                bad += not ok
        for exp in sorted(set(b) ^ set(c)):
            print(f"| {exp} | only in {'the first' if exp in b else 'the second'} folder | | | | ✗ |")
        return 1 if bad or set(b) ^ set(c) else 0
    for exp in sorted(set(b) & set(c)):
        if only and exp not in only:
            continue
        diffs = compare(b[exp], c[exp], a.rtol)
        print(f"{exp}: {'identical' if not diffs else f'{len(diffs)} differences'} "
              f"({len(c[exp]['metrics'])} metrics, {len(c[exp]['claims'])} claims)")
        for line in diffs[:20]:
            print("    " + line)
        bad += bool(diffs)
    missing = sorted(set(b) ^ set(c))
    if missing:
        print(f"in one folder only: {', '.join(missing)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
