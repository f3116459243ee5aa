"""How many processes should advance a budgeted paper run side by side (``featlab run --workers``), from the
``pN`` rows of ``bench_images.py --shapes --json`` measured in the same call.

    python benchmarks/choose_workers.py BENCH.json BUDGET_S [--images 6000000]

Prints N: the process count with the most summed images/s on the FashionMNIST shape among those whose one unit
(``--images``: 100 epochs × 60,000 images, Table 1's) still ends inside the budget when N units run at once, since a
budgeted call starts every worker's first unit and never stops one half-way. 1 when nothing was measured.
"""

from __future__ import annotations

import argparse
import json
import re


def choose(rows: list[dict], budget_s: float, images: float, shape: str = "fmnist-spurious") -> int:
    best, best_ips = 1, 0.0
    for r in rows:
        if r.get("shape") != shape or "images_per_s" not in r:
            continue
        m = re.search(r"\+p(\d+)", r["config"])
        n = int(m.group(1)) if m else 1
        unit_s = n * images / r["images_per_s"] * 1.25  # 25 % more: each epoch's test, the training-accuracy pass
        if unit_s < budget_s and r["images_per_s"] > best_ips:
            best, best_ips = n, r["images_per_s"]
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bench_json")
    ap.add_argument("budget_s", type=float)
    ap.add_argument("--images", type=float, default=100 * 60_000)
    a = ap.parse_args()
    try:
        with open(a.bench_json) as f:
            rows = json.load(f)["rows"]
    except (OSError, ValueError, KeyError):
        rows = []
    print(choose(rows, a.budget_s, a.images))


if __name__ == "__main__":
    main()
