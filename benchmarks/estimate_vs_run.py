"""An estimate against the run it estimates, on this machine: ``featlab.runs.timing.estimate`` (a few of the run's
own steps timed, scaled to its step counts), then the run itself, timed end to end; prints both and their ratio.
``--estimate-only`` prints the estimate alone (a run too long to make here).

    python benchmarks/estimate_vs_run.py mm-spurious-fmnist --preset paper seeds=1 epochs=2 device=cuda
    python benchmarks/estimate_vs_run.py mm-spurious-fmnist --preset paper device=cuda --estimate-only

The run goes into a temporary folder and is kept only with ``--out``. Exit 0 unless the estimate or the run fails.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

import featlab
from featlab.config import parse_overrides
from featlab.runs.resources import duration
from featlab.runs.runner import resolve_config
from featlab.runs.timing import estimate


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("id")
    ap.add_argument("overrides", nargs="*", help="key=value config overrides")
    ap.add_argument("--preset", default="quick")
    ap.add_argument("--estimate-only", action="store_true")
    ap.add_argument("--out", default=None, help="keep the run here (default: a temporary folder)")
    ap.add_argument("--json", default=None, help="append one JSON line of the result here")
    a = ap.parse_intermixed_args(argv)  # key=value words before and after the options
    over = parse_overrides(a.overrides)
    exp, cfg = resolve_config(a.id, a.preset, overrides=over)
    t0 = time.perf_counter()
    est = estimate(exp, cfg, measure=True)
    timing_s = time.perf_counter() - t0
    row = {"id": a.id, "preset": a.preset, "overrides": over, "estimate_s": est.seconds, "how": est.how,
           "estimating_took_s": timing_s}
    print(f"{a.id} --preset {a.preset} {' '.join(a.overrides)}: estimated {duration(est.seconds)} ({est.how}); "
          f"estimating took {timing_s:.0f} s")
    rc = 0
    if not a.estimate_only:
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            rec = featlab.run(a.id, a.preset, out=a.out or tmp, quiet=True, **over)
            row["run_s"] = run_s = time.perf_counter() - t0
            row["status"] = rec.status
            rc = 0 if rec.status == "complete" else 1
        print(f"  run: {rec.status} in {duration(run_s)}; estimate / run = {est.seconds / run_s:.2f}")
    if a.json:
        with open(a.json, "a") as f:
            f.write(json.dumps(row, default=str) + "\n")
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
