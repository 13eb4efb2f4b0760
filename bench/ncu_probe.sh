#!/usr/bin/env bash
# What Nsight Compute can read on this GPU machine, and from where: as root, inside a user
# namespace (as kforge's sandbox runs a candidate) and as an unprivileged user; which metric
# names this ncu knows; a real CSV of the metrics kforge asks for, kept as test data.
# Usage (GPU machine): OUT=dir bench/ncu_probe.sh
set -uo pipefail
out="${OUT:-/tmp/ncu_probe}"; mkdir -p "$out"
ncu="$(command -v ncu || echo /usr/local/cuda/bin/ncu)"
py="$(command -v python3)"
{ "$ncu" --version; grep -i profil /proc/driver/nvidia/params; } > "$out/ncu_env.txt" 2>&1
"$ncu" --query-metrics --chip gh100 2>&1 | grep -E "stalled|warps_active|maximum_warps|registers|local_op|dram__throughput|sm__throughput|dram__bytes|pipe_tensor|occupancy_limit|gpu__time_duration|lts__throughput|l1tex__throughput|compute_memory" > "$out/metric_names.txt"
cat > /tmp/ncu_target.py <<'PY'
import torch, triton, triton.language as tl
@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)
x = torch.randn(1 << 24, device="cuda"); y = torch.empty_like(x)
a = torch.randn(2048, 2048, device="cuda")
for _ in range(3):
    scale_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024); a @ a
torch.cuda.synchronize()
torch.cuda.profiler.start()
scale_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024); a @ a
torch.cuda.synchronize()
torch.cuda.profiler.stop()
print("target done")
PY
metrics="gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,sm__maximum_warps_per_active_cycle_pct,launch__registers_per_thread,launch__grid_size,launch__block_size,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum,dram__bytes.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
run() { local name="$1"; shift; local started=$(date +%s.%N)
  "$@" "$ncu" --clock-control none --profile-from-start off --csv --page raw --metrics "$metrics" "$py" /tmp/ncu_target.py > "$out/$name.csv" 2> "$out/$name.err"
  echo "$name rc=$? seconds=$(echo "$(date +%s.%N) - $started" | bc)" >> "$out/summary.txt"; }
run root
run userns unshare -U -r
run userns_net unshare -U -r -n -p -f --mount-proc
chmod 755 /tmp; chmod 644 /tmp/ncu_target.py
run nobody setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/tmp
cat "$out/summary.txt"; head -c 600 "$out/root.csv"; echo; for f in userns userns_net nobody; do echo "== $f"; head -c 400 "$out/$f.csv"; tail -3 "$out/$f.err"; done
wc -l "$out/metric_names.txt"; cat "$out/ncu_env.txt"
