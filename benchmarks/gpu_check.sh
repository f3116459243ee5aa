#!/usr/bin/env bash
# featlab's GPU check, for a machine with CUDA and PyTorch but no package index: one call of at most 10 minutes.
#
#   bash benchmarks/gpu_check.sh --prepare [NAME==VERSION ...]   # here, with the package index: wheels into .whl/
#   FEATLAB_DATA=DIR bash benchmarks/gpu_check.sh [OUT]          # there: install, test, measure (DIR: optional)
#
# --prepare downloads (for CPython 3.12 on manylinux x86-64, the CUDA images' Python; GPU_PY=3.11 etc. changes it)
# the wheels of featlab's dependencies that a stock CUDA PyTorch image lacks (pydantic and its helpers), the build
# backend that installs featlab itself, and torchattacks for its test; name more packages to carry them too. The
# check then installs whatever of featlab's requirements the machine lacks from .whl/ (nothing from the network) and,
# each phase inside a time budget (BUDGET, default 540 s): `pytest -m gpu`; ResNet-18 on the papers' shapes per
# configuration (bench_images.py --shapes); the all-pairs step at quick's N and 10x it (bench_pairs.py); with real
# FashionMNIST under FEATLAB_DATA, the estimate of Table 1's FashionMNIST row (mm-spurious-fmnist --preset paper)
# and a 2-epoch run of it against its own estimate; mm-multiview quick on CUDA; `featlab reproduce all` on CUDA at
# its defaults, its runs packed in OUT/runs.tgz to compare, where the check was prepared, against a CPU run of the
# same code: `python benchmarks/compare_runs.py CPU_RUNS CUDA_RUNS --table` (every verdict equal?). With PAPER_RUN
# (default mm-spurious-fmnist when FEATLAB_DATA is given; PAPER_RUN= turns it off) the check instead spends the rest
# of its budget advancing that experiment's resumable paper run (featlab run --budget, --workers chosen from the
# benchmark's pN rows unless WORKERS is set), resumed from PACK_IN (a pack an earlier call left; for the FMNIST row
# by default the committed docs/results/gpu-paper/mm-spurious-fmnist-paper.pack.tgz) and packed again in
# OUT/paper-pack.tgz: each lent call brings the row closer; `featlab unpack OUT/paper-pack.tgz runs` here, then
# `featlab run mm-spurious-fmnist --preset paper device=cuda` reads the finished record once every unit is done.
# GPU_TESTS=0 skips the GPU tests; PYTEST_K selects some; BENCH_PAIRS=0 skips the all-pairs benchmark. The CPU-vs-CUDA
# comparison at full precision on both (autocast=off, the same arithmetic) is `featlab reproduce all device=cpu`
# beside `device=cuda autocast=off`, compared the same way. Exit status: 0 when the GPU tests pass.
set -uo pipefail
cd "$(dirname "$0")/.."
WHL=.whl
PY=${PYTHON:-python3}

if [[ "${1:-}" == "--prepare" ]]; then
  shift
  mkdir -p "$WHL"
  plat=(--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
  want=(pydantic==2.14.3 pydantic-core annotated-types typing-inspection torchattacks==3.5.1
        "setuptools>=77" wheel packaging "$@")
  # pydantic-core must match pydantic's pin: resolve it with pip (deps on), then drop what the images already hold
  $PY -m pip download -q --only-binary=:all: --python-version "${GPU_PY:-3.12}" --implementation cp "${plat[@]}" \
      -d "$WHL" --no-deps "${want[@]}" || exit 2
  core=$(unzip -p "$WHL"/pydantic-2*.whl '*/METADATA' | sed -n 's/^Requires-Dist: pydantic-core==\([0-9.]*\).*/\1/p')
  [[ -n "$core" ]] && rm -f "$WHL"/pydantic_core-*.whl && $PY -m pip download -q --only-binary=:all: \
      --python-version "${GPU_PY:-3.12}" --implementation cp "${plat[@]}" -d "$WHL" --no-deps "pydantic-core==$core"
  ls "$WHL"; du -sh "$WHL"
  exit 0
fi

OUT=${1:-/tmp/featlab-gpu-check}
RTOL=${RTOL:-1e-3}
SITE=/tmp/featlab-site
mkdir -p "$OUT" "$SITE"
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 FEATLAB_PROGRESS=0 FEATLAB_PDF=0
t0=$(date +%s)
$PY - <<'EOF' || { echo "gpu_check: no CUDA device visible to torch"; exit 2; }
import torch
assert torch.cuda.is_available()
print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}, {torch.get_num_threads()} CPU threads")
EOF

# 1. what featlab needs and this machine lacks, from the prepared wheels only; then featlab itself
missing=$($PY - <<'EOF'
import importlib.util
need = {"numpy": "numpy", "pandas": "pandas", "pyarrow": "pyarrow", "matplotlib": "matplotlib",
        "pydantic": "pydantic", "yaml": "PyYAML", "tqdm": "tqdm", "sklearn": "scikit-learn", "scipy": "scipy",
        "numba": "numba", "pytest": "pytest", "xdist": "pytest-xdist", "torchattacks": "torchattacks"}
print(" ".join(dist for mod, dist in need.items() if importlib.util.find_spec(mod) is None))
EOF
)
if [[ -n "$missing" ]]; then
  echo "installing from $WHL: $missing"
  ls "$WHL"/*.whl >/dev/null 2>&1 || { echo "gpu_check: $WHL/ is empty; run 'bash benchmarks/gpu_check.sh --prepare' where pip reaches an index"; exit 2; }
  $PY -m pip install -q --no-index --no-deps --no-compile --target "$SITE" "$WHL"/*.whl || exit 2
fi
$PY -m pip install -q --no-index --find-links "$WHL" --no-deps --target "$SITE" . || exit 2
FEATLAB=("$PY" -m featlab.cli)

# every phase below has its own time limit and the whole check a budget (BUDGET seconds from the start, default
# 540: one call of a 10-minute command limit); a phase that would start past its gate is skipped and says so, and
# whatever finished is in $OUT. Real FashionMNIST, if FEATLAB_DATA names a copy, adds the paper-shaped run of 4.
BUDGET=${BUDGET:-540}
left() { echo $(( BUDGET - ($(date +%s) - t0) )); }
gate() {  # gate NAME SECONDS: run the phase only if that much of the budget is left
  if (( $(left) < $2 )); then echo "gpu_check: $1 skipped ($(left) s of the budget left, it needs $2)" | tee -a "$OUT/skipped.log"; return 1; fi
}

# 2. the GPU tests
if [[ "${GPU_TESTS:-1}" != 0 ]] && gate "pytest -m gpu" "${PYTEST_GATE:-120}"; then
  timeout "${PYTEST_TIMEOUT:-150}" $PY -m pytest -q -p no:cacheprovider -m "gpu and not network" -o addopts="" -n 6 \
    --dist loadscope ${PYTEST_K:+-k "$PYTEST_K"} tests 2>&1 | tee "$OUT/pytest-gpu.log" | tail -5
  gpu_tests=${PIPESTATUS[0]}
else gpu_tests=skipped; fi

# 3. speed: ResNet-18 on the papers' shapes per configuration; the all-pairs step at quick's N and 10x it
gate "bench_images" "${BENCH_GATE:-200}" && timeout "${BENCH_TIMEOUT:-150}" $PY benchmarks/bench_images.py --shapes \
  --configs "${BENCH_CONFIGS:-bf16+cl,bf16+cl+spur,bf16+cl+spur+fused,bf16+cl+spur+ro,bf16+cl+spur+p3}" ${BENCH_ARGS:-} \
  --json "$OUT/bench_images.json" 2>&1 | grep -v '^\s*$' | tee "$OUT/bench_images.md"
[[ "${BENCH_PAIRS:-1}" != 0 ]] && gate "bench_pairs" 150 && timeout 60 $PY benchmarks/bench_pairs.py --N 100,1000 --chunk 16384,262144 \
  --json "$OUT/bench_pairs.json" 2>&1 | tee "$OUT/bench_pairs.log"

# 3b. the resumable paper run: the rest of the budget advances it (whole units only), its pack left in OUT
PAPER_RUN=${PAPER_RUN-${FEATLAB_DATA:+mm-spurious-fmnist}}
if [[ -n "$PAPER_RUN" ]]; then
  PAPER_OUT=${PAPER_OUT:-/tmp/featlab-paper-runs}  # outside OUT: a warm machine's next call finds it as it was
  mkdir -p "$PAPER_OUT"
  [[ "$PAPER_RUN" == mm-spurious-fmnist ]] && PACK_IN=${PACK_IN-docs/results/gpu-paper/mm-spurious-fmnist-paper.pack.tgz}
  [[ -n "${PACK_IN:-}" && -f "$PACK_IN" ]] && "${FEATLAB[@]}" unpack "$PACK_IN" "$PAPER_OUT" 2>&1 | tee -a "$OUT/paper.log"
  workers=${WORKERS:-$($PY benchmarks/choose_workers.py "$OUT/bench_images.json" "$(( $(left) - 60 ))")}
  echo "gpu_check: $PAPER_RUN --preset paper, $workers worker(s), budget $(( $(left) - 60 )) s" | tee -a "$OUT/paper.log"
  timeout $(( $(left) - 20 )) "${FEATLAB[@]}" run "$PAPER_RUN" --preset paper --out "$PAPER_OUT" device=cuda \
    --budget "$(( $(left) - 60 ))s" --workers "$workers" >>"$OUT/paper.log" 2>&1
  echo "gpu_check: $PAPER_RUN paper run: exit $? (0: complete, 3: units left) after $(( $(date +%s) - t0 )) s" \
    | tee -a "$OUT/paper.log"
  "${FEATLAB[@]}" pack "$PAPER_OUT" "$OUT/paper-pack.tgz" 2>&1 | tee -a "$OUT/paper.log"
  $PY - "$PAPER_OUT" <<'PYEOF' 2>&1 | tee -a "$OUT/paper.log"
import json, pathlib, sys
for f in sorted(pathlib.Path(sys.argv[1]).rglob(".units/*/*.json")):
    u = json.loads(f.read_text())
    h = u["results"]["fit"]["history"] if u["results"].get("fit") else []
    ips = sorted(r["images_per_s"] for r in h)
    print(f"  unit {u['unit']}: {u['elapsed_s']:.0f} s, final test error {u['results']['curve'][-1]:.4f}, "
          f"images/s median {ips[len(ips) // 2] if ips else 0:,.0f}")
PYEOF
  SKIP_QUICK=1
fi

# 4. Table 1's FashionMNIST row on real data: the paper preset's estimate, and a 2-epoch run of every method
#    (its measured epochs against its own estimate)
if [[ -z "${SKIP_QUICK:-}" && -n "${FEATLAB_DATA:-}" ]] && gate "mm-spurious-fmnist paper" 200; then
  timeout 90 $PY benchmarks/estimate_vs_run.py mm-spurious-fmnist --preset paper device=cuda --estimate-only \
    --json "$OUT/estimates.jsonl" 2>&1 | tail -2 | tee -a "$OUT/estimates.log"
  timeout 90 $PY benchmarks/estimate_vs_run.py mm-spurious-fmnist --preset paper device=cuda seeds=1 epochs=2 \
    --out "$OUT/fmnist-runs" --json "$OUT/estimates.jsonl" 2>&1 | tail -3 | tee -a "$OUT/estimates.log"
  $PY - "$OUT/fmnist-runs" <<'PYEOF' 2>&1 | tee -a "$OUT/estimates.log"
import sys, pathlib, pandas as pd
for f in pathlib.Path(sys.argv[1]).rglob("metrics.parquet"):
    m = pd.read_parquet(f)
    ips = m[m.metric.str.endswith("images_per_s")]
    for name, v in ips.groupby("metric").value:
        print(f"  {name}: {', '.join(f'{x:,.0f}' for x in v)} images/s by epoch")
PYEOF
fi

# 5. mm-multiview quick alone on CUDA (the 2-core CPU's time is measured where the check is prepared)
if [[ -z "${SKIP_QUICK:-}" ]] && gate "mm-multiview on cuda" 100; then
  s=$(date +%s)
  timeout "${MM_TIMEOUT:-90}" "${FEATLAB[@]}" run mm-multiview --out "$OUT/cuda" device=cuda >"$OUT/mm-cuda.log" 2>&1
  echo "mm-multiview quick alone on cuda: exit $?, $(( $(date +%s) - s )) s" | tee -a "$OUT/mm-multiview.log"
fi

# 6. the quick image experiments on CUDA at their defaults (bf16 autocast), then the rest of the quick reproduction
#    in the time left (reusing those runs); compared where the check was prepared against a CPU run of the same code
#    (benchmarks/compare_runs.py --table)
for exp in mm-spurious-digits fa-resnet-digits; do
  [[ -n "${SKIP_QUICK:-}" ]] && break
  gate "$exp on cuda" 90 && timeout $(( $(left) - 10 )) "${FEATLAB[@]}" run $exp --out "$OUT/cuda" device=cuda >"$OUT/$exp-cuda.log" 2>&1
  echo "$exp quick on cuda: exit $?" | tee -a "$OUT/reproduce-cuda.log"
done
if [[ -z "${SKIP_QUICK:-}" ]] && gate "reproduce all on cuda" 60; then
  timeout $(( $(left) - 15 )) "${FEATLAB[@]}" reproduce all --out "$OUT/cuda" device=cuda >>"$OUT/reproduce-cuda.log" 2>&1
  echo "reproduce all device=cuda: exit $? after $(( $(date +%s) - t0 )) s of the check" | tee -a "$OUT/reproduce-cuda.log"
fi
[[ -z "${SKIP_QUICK:-}" ]] && tar czf "$OUT/runs.tgz" --exclude='*.png' -C "$OUT" $(cd "$OUT" && ls -d cuda fmnist-runs 2>/dev/null) 2>/dev/null
rm -rf "$OUT/cuda" "$OUT/fmnist-runs"

echo
echo "GPU check: $($PY -c 'import torch; print(torch.cuda.get_device_name(0), "· torch", torch.__version__)'), $(( $(date +%s) - t0 )) s"
echo "pytest -m gpu: exit $gpu_tests ($(tail -1 "$OUT/pytest-gpu.log" 2>/dev/null))"
[[ "$gpu_tests" == 0 ]]
