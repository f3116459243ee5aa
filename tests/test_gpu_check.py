"""The GPU check's CPU half (benchmarks/gpu_check.sh): the script parses, refuses a machine without CUDA in one line,
and its table (benchmarks/compare_runs.py --table) passes equal runs and flags a changed verdict or metric."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import featlab

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_check.sh"


def test_the_script_parses_and_refuses_a_machine_without_cuda(tmp_path):
    assert subprocess.run(["bash", "-n", str(SCRIPT)]).returncode == 0
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the check would run")
    r = subprocess.run(["bash", str(SCRIPT), str(tmp_path / "out")], capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable})
    assert r.returncode == 2 and r.stdout.strip().splitlines()[-1] == "gpu_check: no CUDA device visible to torch"


def _compare(a: Path, b: Path) -> tuple[int, str]:
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "compare_runs.py"), str(a), str(b), "--rtol",
                        "1e-3", "--table"], capture_output=True, text=True)
    return r.returncode, r.stdout


def test_the_table_passes_equal_runs_and_flags_a_changed_verdict(tmp_path):
    tiny = dict(featlab.get_experiment("fa-ablation-n").tiny or {})
    rec = featlab.run("fa-ablation-n", out=tmp_path / "cpu", quiet=True, device="cpu", **tiny)
    shutil.copytree(tmp_path / "cpu", tmp_path / "cuda")
    rc, out = _compare(tmp_path / "cpu", tmp_path / "cuda")
    assert rc == 0 and "| fa-ablation-n |" in out and out.strip().endswith("✓ |"), out

    summary = tmp_path / "cuda" / "fa-ablation-n" / rec.dir.name / "summary.json"
    s = json.loads(summary.read_text())
    name = next(k for k, v in s["metrics"].items() if isinstance(v, float) and v != 0)
    s["metrics"][name] *= 1 + 5e-4  # within the tolerance: still equal
    summary.write_text(json.dumps(s))
    assert _compare(tmp_path / "cpu", tmp_path / "cuda")[0] == 0
    s["claims"][0]["status"] = "inconclusive" if s["claims"][0]["status"] != "inconclusive" else "held"
    summary.write_text(json.dumps(s))
    rc, out = _compare(tmp_path / "cpu", tmp_path / "cuda")
    assert rc == 1 and f"{s['claims'][0]['id']}: " in out and "✗" in out, out


def test_the_checks_benchmarks_run_on_the_cpu_at_tiny_size(tmp_path):
    """bench_pairs.py (the all-pairs step per N) and estimate_vs_run.py (an estimate beside the run it estimates)
    write their JSON on a machine without CUDA; the estimate is a positive time and the run completes."""
    out = tmp_path / "pairs.json"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_pairs.py"), "--device", "cpu", "--N", "12",
                        "--reps", "1", "--json", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rows = json.loads(out.read_text())["rows"]
    assert [row["N"] for row in rows] == [12] and rows[0]["ms_per_step"] > 0
    tiny = [f"{k}={v}" for k, v in (featlab.get_experiment("rfa-fig1").tiny or {}).items()]
    est = tmp_path / "est.jsonl"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "estimate_vs_run.py"), "rfa-fig1", *tiny,
                        "device=cpu", "--json", str(est)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    row = json.loads(est.read_text())
    assert row["estimate_s"] > 0 and row["run_s"] > 0 and row["status"] == "complete", row
