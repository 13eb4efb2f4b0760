// Runs a CUDA kernel's source on the CPU: the source is compiled by the host compiler after a
// prelude that emulates what the project's kernels use of CUDA. A block's threads are
// std::threads; __syncthreads is a std::barrier; __syncthreads_or and __shfl_xor_sync exchange
// through slots between two barriers (so every thread of the block must reach them, as the
// kernels' uniform control flow ensures); dynamic shared memory is the global kf_smem4; cp.async
// copies (kf_copy4, kf_copy16) land when a kf_wait lets them. The
// program after the source launches the grid block by block and checks the outputs.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "core/files.h"

namespace kforge::codegen {

inline constexpr const char* kCudaEmulationPrelude = R"CC(#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>
using std::max;
using std::min;
struct Dim3 { unsigned x = 0, y = 0, z = 0; };
thread_local Dim3 threadIdx, blockIdx;
std::barrier<>* block_barrier;
void __syncthreads() { block_barrier->arrive_and_wait(); }
std::atomic<int> kf_votes[2];
thread_local int kf_vote_turn = 0;
int __syncthreads_or(int predicate) {
  const int turn = kf_vote_turn;
  kf_vote_turn ^= 1;
  if (predicate) kf_votes[turn] = 1;
  block_barrier->arrive_and_wait();
  const int result = kf_votes[turn];
  block_barrier->arrive_and_wait();
  if (threadIdx.x == 0) kf_votes[turn] = 0;
  return result;
}
float kf_lanes[1024];
float __shfl_xor_sync(unsigned, float value, int lane_mask) {
  kf_lanes[threadIdx.x] = value;
  block_barrier->arrive_and_wait();
  const float other = kf_lanes[threadIdx.x ^ lane_mask];
  block_barrier->arrive_and_wait();
  return other;
}
float __int_as_float(int bits) { float value; std::memcpy(&value, &bits, sizeof value); return value; }
struct alignas(16) float4 { float x, y, z, w; };
float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
alignas(16) float4 kf_smem4[1 << 16];
// cp.async as the hardware orders it: a thread's copies land only when a kf_wait<N> leaves at
// most N of its committed groups pending, so a kernel that reads shared memory before waiting for
// the copy reads what was there before.
struct KfCopy { float* dst; const float* src; int bytes; bool in; };
thread_local std::vector<KfCopy> kf_issued;
thread_local std::vector<std::vector<KfCopy>> kf_groups;
void kf_copy4(float* dst, const float* src, bool in) { kf_issued.push_back({dst, src, 4, in}); }
void kf_copy16(float* dst, const float* src) { kf_issued.push_back({dst, src, 16, true}); }
void kf_commit() {
  kf_groups.push_back(std::move(kf_issued));
  kf_issued.clear();
}
template <int N>
void kf_wait() {
  while (kf_groups.size() > static_cast<size_t>(N)) {
    for (const KfCopy& c : kf_groups.front()) {
      if (c.in) std::memcpy(c.dst, c.src, c.bytes);
      else std::memset(c.dst, 0, c.bytes);
    }
    kf_groups.erase(kf_groups.begin());
  }
}
#define __global__
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
// Runs kernel(args...) over a grid, `threads` std::threads a block.
template <typename Kernel>
void Launch(Dim3 grid, unsigned threads, Kernel kernel) {
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        std::barrier<> barrier(threads);
        block_barrier = &barrier;
        std::vector<std::thread> pool;
        for (unsigned tid = 0; tid < threads; ++tid)
          pool.emplace_back([&, tid] {
            threadIdx = {tid, 0, 0};
            blockIdx = {x, y, z};
            kernel();
          });
        for (std::thread& thread : pool) thread.join();
      }
}
)CC";

struct EmulatedRun {
  bool ok = false;
  std::string log;  // the compiler's and the program's output
};

// Compiles the prelude and `program` (the kernel's source, then main()) and runs it; ok when both
// succeed (main returns 0).
inline EmulatedRun RunUnderEmulation(const std::string& program) {
  EmulatedRun run;
  Result<std::filesystem::path> dir = MakeTempDir(std::filesystem::temp_directory_path(), "kforge_cuda_emulation");
  if (!dir.ok()) {
    run.log = dir.status().ToString();
    return run;
  }
  if (!WriteFile(*dir / "kernel.cc", std::string(kCudaEmulationPrelude) + program).ok()) {
    run.log = "cannot write the program";
    return run;
  }
  const std::string command = fmt::format(
      "cd '{}' && c++ -std=c++20 -O1 -pthread -ffp-contract=off kernel.cc -o kernel > log 2>&1 && ./kernel >> log 2>&1", dir->string());
  run.ok = std::system(command.c_str()) == 0;
  Result<std::string> log = ReadFile(*dir / "log");
  run.log = log.ok() ? *log : "";
  if (run.ok) RemoveTreeQuietly(*dir);
  return run;
}

}  // namespace kforge::codegen
