#!/usr/bin/env bash
# Runs on the GPU machine from the repository root, with bundle/ carried (bench/gpu_bundle.sh
# makes it): the evaluator's speed and timing stability, the corpus at real sizes with the
# GPU-only checks, and baselines. Logs and JSON go to $OUT. Usage:
#   bench/gpu_checks.sh [smoke|ipc|speed|corpus|service|baseline|compile-cache|compiler|tuning|graphs|kernels|probe|counters|strategies|all]
# (compiler: KFORGE_BENCH_SUITE, KFORGE_BENCH_TASKS, KFORGE_BENCH_MODE, KFORGE_BENCH_RUNS, KFORGE_BENCH_GPUS,
#  KFORGE_BENCH_SHARD, KFORGE_BENCH_LIMIT, KFORGE_BENCH_TIMEOUT, KFORGE_BENCH_BASELINES)
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
  # The evaluation service against the one-shot CLI on level-1 candidates (KFORGE_SERVICE_GPUS: "1 2").
  service|all)
    python3 bench/service_throughput.py --kforge "$kforge" --out "$out" --gpus ${KFORGE_SERVICE_GPUS:-1} \
      --cli-sample "${KFORGE_SERVICE_CLI_SAMPLE:-12}" 2>&1 | tee "$out/service_throughput.log" ;;
esac
case "$what" in
  compiler|all)
    # kforge bench over the project's tasks (or KFORGE_BENCH_SUITE, e.g. a carried copy of
    # KernelBench's level folders) in KFORGE_BENCH_MODE (strict by default), resumable: the run
    # folder (bench/runs/<card>, e.g. h200 or h100, <card>-partial for partial mode, or
    # KFORGE_BENCH_RUNS) holds the
    # reports and the workspace (its store keeps the measured baselines and tile configurations),
    # and is carried between calls, so a call cut by its time limit continues and a later bench
    # reuses every stored baseline. With KFORGE_BENCH_GPUS=N the suite is split with --shard into
    # N parts, one bench process per GPU, all writing into the same run folder; a last bench
    # --no-run summarizes them together. Each task's eager, torch.compile and candidate timings are
    # still measured side by side on one GPU, but the processes share the host's CPUs
    # (bench/RESULTS.md: launch-bound candidates timed while another process compiles are slowed).
    # KFORGE_BENCH_TASKS ("5 14 89": task numbers of a KernelBench level folder) benches those
    # tasks alone, copied into a folder named like the suite's (the report folders and the summary
    # keep its level). A run folder too large to carry (the 64 MiB limit) travels packed as
    # bench/runs/carry/<name>.tgz (bench/carry_runs.sh pack): it is unpacked when the folder is absent.
    suite="${KFORGE_BENCH_SUITE:-tasks}"
    gpus="${KFORGE_BENCH_GPUS:-1}"
    mode="${KFORGE_BENCH_MODE:-strict}"
    card="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 |
      grep -oE '[A-Z][0-9]{2,4}' | head -n 1 | tr 'A-Z' 'a-z')"
    runs="${KFORGE_BENCH_RUNS:-bench/runs/${card:-gpu}}"
    [ "$mode" = strict ] || [ -n "${KFORGE_BENCH_RUNS:-}" ] || runs="bench/runs/${card:-gpu}-$mode"
    if [ -n "${KFORGE_BENCH_TASKS:-}" ]; then
      chosen="/tmp/kforge-bench-tasks/$(basename "$suite")"
      rm -rf "$chosen" && mkdir -p "$chosen"
      for n in $KFORGE_BENCH_TASKS; do cp "$suite/${n}_"*.py "$chosen/" || exit 2; done
      suite="$chosen"
    fi
    packed="bench/runs/carry/$(basename "$runs").tgz"
    [ -d "$runs" ] || [ ! -f "$packed" ] || tar xzf "$packed" -C "$(dirname "$runs")"
    mkdir -p "$runs"
    # KFORGE_BENCH_BASELINES=1 first measures and stores each task's eager and torch.compile
    # timings alone (`kforge baseline --missing`: those the run's store lacks), then benches in
    # what is left of KFORGE_BENCH_LIMIT: the evaluator times the reference after the candidate,
    # so a network whose torch.compile takes minutes (16_DenseNet201) is otherwise cut by the
    # call's limit before either is stored.
    limit="${KFORGE_BENCH_LIMIT:-540}"
    deadline=$((SECONDS + limit))
    if [ -n "${KFORGE_BENCH_BASELINES:-}" ]; then
      timeout "$limit" "$kforge" --workspace "$runs/workspace" baseline --missing "$suite"/*.py >"$out/baselines.log" 2>&1
      echo "baselines: exit $? after ${SECONDS} s"
    fi
    bench_shard() {  # GPU index, shard (I/N or empty), log
      CUDA_VISIBLE_DEVICES="$1" timeout "$((deadline > SECONDS + 10 ? deadline - SECONDS : 10))" "$kforge" --workspace "$runs/workspace" \
        bench "$suite" --mode "$mode" --out "$runs" --timeout "${KFORGE_BENCH_TIMEOUT:-300}" ${2:+--shard "$2"} >"$3" 2>&1
    }
    if [ "$gpus" -le 1 ]; then
      bench_shard 0 "${KFORGE_BENCH_SHARD:-}" "$out/bench.log"
    else
      for ((g = 0; g < gpus; g++)); do bench_shard "$g" "$((g + 1))/$gpus" "$out/bench-gpu$g.log" & done
      wait
      tail -n 3 "$out"/bench-gpu*.log
    fi
    "$kforge" --workspace "$runs/workspace" bench "$suite" --mode "$mode" --out "$runs" --no-run >"$out/summary.log" 2>&1
    tail -n 60 "$out/summary.log"
    mkdir -p "$out/bench"
    cp "$runs/bench.json" "$out/bench/" 2>/dev/null
    # The workspace's compile caches stay behind: they are large and only save compile time.
    (cd "$(dirname "$runs")" && tar czf "$out/bench/runs.tgz" --exclude=workspace/cache "$(basename "$runs")") ;;
esac
case "$what" in
  kernels)
    # The CUDA C++ kernels' tiles side by side (bench/cuda_kernel_sweep.py) over the sources the
    # test build's cuda_kernel_variants wrote (KFORGE_SWEEP_VARIANTS, carried), then Nsight
    # Compute's view of each variant named in KFORGE_SWEEP_PROFILE ("shape tile" substrings, ";"
    # between them): throughput, occupancy, registers and where the warps stall.
    variants="${KFORGE_SWEEP_VARIANTS:-bench/runs/sweep/variants.json}"
    timeout 300 python3 bench/cuda_kernel_sweep.py "$variants" --out "$out" 2>&1 | grep -v '^{' | tee "$out/kernel_sweep.log"
    IFS=';' read -ra profiled <<< "${KFORGE_SWEEP_PROFILE:-minGPT qkv 256x128x8;ViT attention 128 queries x 64 keys mb2}"
    for one in "${profiled[@]}"; do
      echo "== ncu: $one"
      timeout 150 ncu --clock-control none --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
        --section SchedulerStats --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
        -k 'regex:^(gemm|attention)$' -c 1 \
        python3 bench/cuda_kernel_sweep.py "$variants" --only "$one" --repeats 1 --out /tmp/kforge-ncu-sweep 2>&1 |
        grep -iE "throughput|registers per|occupancy|block limit|warp cycles per issued|issue_stalled|issued warp|no eligible|duration"
    done 2>&1 | tee "$out/kernel_ncu.log" ;;
esac
case "$what" in
  graphs)
    # Graph replay against direct launches on the same tasks (KFORGE_GRAPH_TASKS, else a few
    # networks of the project's tasks and of a carried kernelbench/ copy).
    tasks="${KFORGE_GRAPH_TASKS:-tasks/level3/03_resnet_basic_block.py tasks/level3/05_mobilenet_v2_block.py}"
    python3 bench/graph_probe.py --kforge "$kforge" --out "$out" $tasks 2>&1 | tee "$out/graph_probe.log" ;;
esac
case "$what" in
  tuning)
    # Tuning is paid once: a few GEMM-shaped tasks compiled twice in one workspace. The first run
    # measures each kernel's tile configurations, bakes them in and stores them; the second takes
    # them all from the store (tuning.from_store) and measures none.
    suite=/tmp/kforge-tuning-suite
    rm -rf "$suite" /tmp/kforge-tuning-out && mkdir -p "$suite/level1" "$suite/level2" "$suite/level3"
    cp tasks/level1/02_matmul.py tasks/level1/12_conv2d.py tasks/level1/16_conv_transpose2d.py "$suite/level1/"
    cp tasks/level2/01_linear_relu.py tasks/level2/05_conv2d_batchnorm_scaling.py "$suite/level2/"
    cp tasks/level3/01_mlp.py "$suite/level3/"
    for pass in first second; do
      "$kforge" --workspace /tmp/kforge-tuning bench "$suite" --out /tmp/kforge-tuning-out --fresh 2>&1 | tee "$out/tuning-$pass.log"
      cp /tmp/kforge-tuning-out/bench.json "$out/tuning-$pass.json"
    done
    python3 bench/tuning_table.py "$out/tuning-first.json" "$out/tuning-second.json" | tee "$out/tuning.txt" ;;
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
  counters)
    # Hardware counters under the real sandbox: one evaluation with --kernel-counters (its
    # evidence.kernel_counters), then an LLM stage whose stand-in model answers a Triton ReLU and
    # then the same again: the second round's speed-up prompt must say what bounds the kernel.
    "$kforge" --workspace /tmp/kforge-counters eval tasks/level1/01_relu.py \
      tests/corpus/candidates/l1_01_relu/honest_relu.py --kernel-counters --json > "$out/counters_eval.json" 2> "$out/counters_eval.log"
    python3 -c "import json,sys; e=json.load(open(sys.argv[1])); c=e['evidence'].get('kernel_counters'); \
print(e['verdict_kind'], json.dumps(c)[:1500]); print('phase_s', e['evidence']['process']['phase_s'])" "$out/counters_eval.json"
    rm -rf /tmp/kforge-counters-out
    "$kforge" --workspace /tmp/kforge-counters optimize tasks/level1/01_relu.py --out /tmp/kforge-counters-out \
      --llm "command:sh $PWD/bench/fenced_reply.sh $PWD/tests/corpus/candidates/l1_01_relu/honest_relu.py" \
      --workers 1 --rounds 2 --patience 1 > "$out/counters_llm.log" 2>&1
    echo "optimize exit $?"
    prompt="$(find /tmp/kforge-counters-out -path '*round2*' -name prompt.md | head -1)"
    [ -n "$prompt" ] && cp "$prompt" "$out/counters_speedup_prompt.md"
    grep -n -A8 "What bounds the kernels\|Hardware counters were not read\|Bound by the host" "${prompt:-/dev/null}" | head -30
    tail -5 "$out/counters_llm.log" ;;
esac
case "$what" in
  strategies)
    # The search strategies side by side on one task of the suite (a carried kernelbench/ copy),
    # replaying hand-written replies (bench/strategy_cassette.py: no model is measured, the search
    # machinery is): 4 writers x KFORGE_STRATEGY_ROUNDS rounds each, every candidate judged for real,
    # without hardware counters unless KFORGE_STRATEGY_FLAGS says otherwise (on 6.4 GB rows Nsight
    # Compute's replays cost more than the evaluation; `counters` shows them in the prompt). One
    # workspace, so eager, torch.compile and the compiler's tuning are measured once per call.
    # KFORGE_STRATEGIES picks which (greedy beam evolve).
    task="${KFORGE_STRATEGY_TASK:-kernelbench/level1/23_Softmax.py}"
    python3 bench/strategy_cassette.py --out /tmp/kforge-strategies.jsonl
    for s in ${KFORGE_STRATEGIES:-greedy beam evolve}; do
      rm -rf "/tmp/kforge-strategies-out/$s"
      timeout "${KFORGE_STRATEGY_LIMIT:-280}" "$kforge" --workspace /tmp/kforge-strategies optimize "$task" \
        --out "/tmp/kforge-strategies-out/$s" --llm replay:/tmp/kforge-strategies.jsonl --strategy "$s" --workers 4 \
        --rounds "${KFORGE_STRATEGY_ROUNDS:-3}" --route whole ${KFORGE_STRATEGY_FLAGS---no-kernel-counters} --json \
        > "$out/strategy-$s.json" 2> "$out/strategy-$s.log"
      echo "$s: exit $?"
      tail -3 "$out/strategy-$s.log"
    done
    (cd /tmp/kforge-strategies-out && tar czf "$out/strategies-runs.tgz" .)
    python3 bench/strategy_table.py --json "$out/strategies.json" /tmp/kforge-strategies-out/* | tee "$out/strategies.txt" ;;
esac
case "$what" in
  compile-cache)
    # Does the workspace's compile cache change torch.compile's timing? The same networks'
    # baselines (KFORGE_CACHE_TASKS, default three level-3 networks of a carried kernelbench/ copy)
    # timed one process at a time: in a new workspace A, again in A, in a new workspace B. Each
    # timing compiles in caches of its own (reference.py), so all three should agree; before that,
    # A's second pass loaded every graph from A's cache. KFORGE_CACHE_PASSES ("NAME:WORKSPACE ...",
    # workspaces named by one letter and emptied first) picks and orders the passes.
    tasks="${KFORGE_CACHE_TASKS:-kernelbench/level3/10_ResNet101.py kernelbench/level3/23_EfficientNetB1.py kernelbench/level3/15_DenseNet121.py}"
    rm -rf /tmp/kforge-cache-?
    for pass in ${KFORGE_CACHE_PASSES:-a-fresh:a a-cached:a b-fresh:b}; do
      started=$SECONDS
      timeout 250 "$kforge" --workspace "/tmp/kforge-cache-${pass#*:}" baseline --json $tasks \
        > "$out/cache-${pass%%:*}.json" 2> "$out/cache-${pass%%:*}.log"
      echo "== ${pass%%:*}: exit $? after $((SECONDS - started)) s"
      python3 -c "import json,sys,statistics as st
for line in open(sys.argv[1]):
    e = json.loads(line) if line.startswith('{') else None
    if e: print(e.get('task'), *(f\"{m} {st.median(v['samples_ms']):.3f} ms {v.get('compile_s', 0):.1f} s {v.get('compile_cache', '')}\" for m, v in e['modes'].items() if v.get('samples_ms')))" \
        "$out/cache-${pass%%:*}.json" 2>&1 | cut -c1-300
    done 2>&1 | tee "$out/compile_cache.log" ;;
esac
case "$what" in
  baseline|all)
    "$kforge" --workspace /tmp/kforge-baseline baseline tasks/level1/01_relu.py tasks/level1/03_softmax.py \
      tasks/level1/02_matmul.py tasks/level2/01_linear_relu.py 2>&1 | tee "$out/baseline.log" ;;
esac
# At most 8 files come back from the device machine's $OUT: past that, everything but the run
# folder's archive, its bench.json and gpu.txt travels packed in one more.tgz.
if [ "$(find "$out" -type f | wc -l)" -gt 8 ]; then
  (cd "$out" && find . -type f ! -name runs.tgz ! -name bench.json ! -name gpu.txt ! -name more.tgz -print0 |
    tar czf more.tgz --null -T - --remove-files && find . -type d -empty -delete)
  echo "more than 8 files in \$OUT: packed into more.tgz"
fi
