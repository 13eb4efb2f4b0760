#!/usr/bin/env bash
# Bench run folders (bench/runs/<name>: reports and a workspace whose store holds the baselines)
# travel to the GPU machine packed, to fit the 64 MiB carry limit, and come back packed in $OUT.
#   bench/carry_runs.sh pack NAME...      bench/runs/NAME -> bench/runs/carry/NAME.tgz (carry bench/runs/carry)
#   bench/carry_runs.sh unpack TGZ...     a returned runs.tgz (gpu_checks.sh compiler writes one) -> bench/runs/
#   bench/carry_runs.sh forget NAME N...  drop the reports of KernelBench tasks N... so the next bench reruns them
# The workspace's compile caches stay behind: they are large and only save compile time.
set -euo pipefail
runs="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/runs"
mkdir -p "$runs/carry"
what="${1:-}"
[ "$#" -gt 0 ] && shift
case "$what" in
  pack)
    for name in "$@"; do
      tar czf "$runs/carry/$name.tgz" -C "$runs" --exclude=workspace/cache "$name"
      ls -l "$runs/carry/$name.tgz"
    done ;;
  unpack)
    for archive in "$@"; do
      name="$(tar tzf "$archive" | awk -F/ 'NR == 1 { print $1 }')"
      [ -n "$name" ] || { echo "carry_runs: $archive holds no run folder" >&2; exit 2; }
      rm -rf "${runs:?}/$name" && tar xzf "$archive" -C "$runs" && echo "$runs/$name"
    done ;;
  forget)
    [ "$#" -ge 1 ] || { echo "carry_runs: forget NAME N..." >&2; exit 2; }
    name="$1"
    shift
    for n in "$@"; do rm -rf "$runs/$name/${n}_"*/; done ;;
  *) sed -n '2,7p' "${BASH_SOURCE[0]}" >&2; exit 2 ;;
esac
