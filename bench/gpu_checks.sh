#!/usr/bin/env bash
# Runs on the GPU machine from the repository root, with bundle/ carried (bench/gpu_bundle.sh
# makes it): the evaluator's speed and timing stability, the corpus at real sizes with the
# GPU-only checks, and baselines. Logs and JSON go to $OUT. Usage:
#   bench/gpu_checks.sh [smoke|ipc|speed|corpus|baseline|compiler|probe|all]
set -uo pipefail
what="${1:-all}"
out="${OUT:-$PWD/gpu-out}"
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KFORGE_PYTHON="${KFORGE_PYTHON:-python3}" KFORGE_PYTHONPATH="$PWD/python" PYTHONUNBUFFERED=1
kforge="$PWD/bundle/kforge"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv,noheader | tee "$out/gpu.txt"
"$kforge" --version || exit 2
case "$what" in
  smoke|all)
    "$kforge" --workspace /tmp/kforge-smoke eval tasks/level1/01_relu.py tests/corpus/candidates/l1_01_relu/honest_relu.py \
      2>&1 | tee "$out/smoke.log" ;;
esac
case "$what" in
  ipc|all) python3 bench/ipc_probe.py 2>&1 | tee "$out/ipc_probe.log" ;;
esac
case "$what" in
  speed|all) python3 bench/eval_speed.py --kforge "$kforge" --out "$out" --repeats "${KFORGE_SPEED_REPEATS:-4}" 2>&1 | tee "$out/eval_speed.log" ;;
esac
case "$what" in
  corpus|all) python3 bench/corpus_gpu.py --kforge "$kforge" --out "$out" ${KFORGE_CORPUS_ONLY:+--only "$KFORGE_CORPUS_ONLY"} 2>&1 | tee "$out/corpus_gpu.log" ;;
esac
case "$what" in
  compiler|all)
    # kforge bench over the project's tasks (or KFORGE_BENCH_SUITE), resumable: the run folder
    # bench/runs/h200 is carried between calls, so a call cut by its time limit continues.
    suite="${KFORGE_BENCH_SUITE:-tasks}"
    mkdir -p bench/runs/h200
    timeout "${KFORGE_BENCH_LIMIT:-540}" "$kforge" --workspace /tmp/kforge-bench bench "$suite" --out bench/runs/h200 \
      --timeout "${KFORGE_BENCH_TIMEOUT:-300}" \
      2>&1 | tee "$out/bench.log"
    mkdir -p "$out/bench"
    cp bench/runs/h200/bench.json "$out/bench/" 2>/dev/null
    (cd bench/runs && tar czf "$out/bench/runs.tgz" h200) ;;
esac
case "$what" in
  probe)
    # First-call cost (compile, autotune) against steady state of generated candidates:
    # KFORGE_PROBE="TASK.py:MODEL_NEW.py ..."
    for pair in ${KFORGE_PROBE:-}; do
      echo "== ${pair}"
      TRITON_PRINT_AUTOTUNING=1 timeout 200 python3 bench/first_call_probe.py "${pair%%:*}" "${pair#*:}"
    done 2>&1 | tee "$out/probe.log" ;;
esac
case "$what" in
  baseline|all)
    "$kforge" --workspace /tmp/kforge-baseline baseline tasks/level1/01_relu.py tasks/level1/03_softmax.py \
      tasks/level1/02_matmul.py tasks/level2/01_linear_relu.py 2>&1 | tee "$out/baseline.log" ;;
esac
