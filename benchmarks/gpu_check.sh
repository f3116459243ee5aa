#!/usr/bin/env bash
# featlab's GPU check, for a machine with CUDA and PyTorch but no package index: one call, one table.
#
#   bash benchmarks/gpu_check.sh --prepare [NAME==VERSION ...]   # here, with the package index: wheels into .whl/
#   bash benchmarks/gpu_check.sh [OUT]                           # there: install, pytest -m gpu, CPU vs CUDA
#
# --prepare downloads (for CPython 3.12 on manylinux x86-64, the CUDA images' Python; GPU_PY=3.11 etc. changes it)
# the wheels of featlab's dependencies that a stock CUDA PyTorch image lacks (pydantic and its helpers), the build
# backend that installs featlab itself, and torchattacks for its test; name more packages to carry them too. The
# check then installs whatever of featlab's requirements the machine lacks from .whl/ (nothing from the network),
# runs `pytest -m gpu`, runs `featlab reproduce all` twice on the same code and machine, device=cuda and device=cpu,
# side by side (image training at full precision, autocast=off, so the arithmetic is the same), and compares every metric (relative tolerance RTOL, default 1e-3) and every verdict
# (benchmarks/compare_runs.py --table). Exit status: 0 when the GPU tests pass and every verdict is equal.
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

# 2. the GPU tests
$PY -m pytest -q -p no:cacheprovider -m "gpu and not network" -o addopts="" tests 2>&1 | tee "$OUT/pytest-gpu.log" | tail -5
gpu_tests=${PIPESTATUS[0]}

# 3. speed: ResNet-18 on the papers' shapes per configuration, and the all-pairs / PGD steps (alone on the machine)
timeout "${BENCH_TIMEOUT:-240}" $PY benchmarks/bench_images.py --shapes --json "$OUT/bench_images.json" 2>&1 \
  | grep -v '^\s*$' | tee "$OUT/bench_images.md"
timeout 60 $PY benchmarks/bench_gpu.py 2>&1 | tee "$OUT/bench_gpu.log"

# 4. the quick reproduction on both devices, side by side (the CPU run gets the cores, the CUDA run one);
#    REPRO_TIMEOUT bounds each, so a slow experiment costs its row, not the table
timeout "${REPRO_TIMEOUT:-600}" "${FEATLAB[@]}" reproduce all --out "$OUT/cuda" device=cuda autocast=off \
  >"$OUT/reproduce-cuda.log" 2>&1 &
cuda_pid=$!
timeout "${REPRO_TIMEOUT:-600}" "${FEATLAB[@]}" reproduce all --out "$OUT/cpu" device=cpu >"$OUT/reproduce-cpu.log" 2>&1
cpu_rc=$?
wait $cuda_pid
cuda_rc=$?
tail -3 "$OUT/reproduce-cuda.log"

# 5. mm-multiview quick alone on each device (the side-by-side times above share the machine), if time is left
(( $(date +%s) - t0 < ${MM_AFTER:-420} )) && for dev in cuda cpu; do
  s=$(date +%s)
  timeout "${MM_TIMEOUT:-120}" "${FEATLAB[@]}" run mm-multiview --out "$OUT/mm-$dev" device=$dev >/dev/null 2>&1
  echo "mm-multiview quick alone on $dev: exit $?, $(( $(date +%s) - s )) s" | tee -a "$OUT/mm-multiview.log"
done

# 6. one table
echo
echo "GPU check: $($PY -c 'import torch; print(torch.cuda.get_device_name(0), "· torch", torch.__version__)'), $(( $(date +%s) - t0 )) s"
echo "pytest -m gpu: exit $gpu_tests ($(tail -1 "$OUT/pytest-gpu.log")); reproduce all: cuda exit $cuda_rc, cpu exit $cpu_rc"
$PY benchmarks/compare_runs.py "$OUT/cpu" "$OUT/cuda" --rtol "$RTOL" --table | tee "$OUT/table.md"
cmp_rc=${PIPESTATUS[0]}
[[ $gpu_tests -eq 0 && $cuda_rc -eq 0 && $cmp_rc -eq 0 ]]
