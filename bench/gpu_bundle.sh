#!/usr/bin/env bash
# Builds a release kforge here and packs it for the GPU machine (Ubuntu 24.04, glibc 2.39, no
# dev headers there): bundle/kforge plus the shared libraries it needs beyond glibc and
# libstdc++ (both newer there, so a binary built on Debian 12 runs). The worker runtime travels
# as the repository's python/ folder. Usage: bench/gpu_bundle.sh, then carry bundle/.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$repo/build-release"
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKFORGE_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" --target kforge -- -j"$(nproc)" >/dev/null
rm -rf "$repo/bundle"
mkdir -p "$repo/bundle/lib"
strip -o "$repo/bundle/kforge" "$build/kforge"
ldd "$build/kforge" | awk '/=>/ {print $3}' | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|ld-linux*|libpthread.so*|libdl.so*|librt.so*|libresolv.so*|libanl.so*|libnss_*) ;;
    *) cp -L "$lib" "$repo/bundle/lib/" ;;
  esac
done
du -sh "$repo/bundle" | awk '{print "bundle: " $1}'
ls "$repo/bundle/lib"
