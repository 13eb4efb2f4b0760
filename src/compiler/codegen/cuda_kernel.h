// CUDA C++ kernels in a generated module: the launcher class they share and how one is defined.
// A CUDA kernel is launched as a Triton kernel is, `name[grid](*tensors)`, so the model writer's
// launch counting, renaming and in-place rewriting treat both alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/codegen/emitted_kernel.h"
#include "compiler/codegen/source_writer.h"
#include "core/json.h"

namespace kforge::codegen {

// The SMs a CUDA kernel's grid should fill when its tile is chosen (the H100's and H200's 132).
inline constexpr int64_t kCudaSms = 132;

// The helper name emitters record in EmittedKernel::helpers when they define a CUDA kernel.
inline constexpr const char* kCudaKernelHelper = "KfCudaKernel";

// cp.async as device functions, for a kernel's source to start with: a 4-byte copy (zeros where
// `in` is false, reading nothing), a 16-byte one, and the group commit and wait. The CPU
// emulation of the tests defines its own.
inline constexpr const char* kCudaAsyncCopies = R"CU(#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
__device__ __forceinline__ void kf_copy4(float* dst, const float* src, bool in) {
  const unsigned at = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(at), "l"(src), "r"(in ? 4 : 0));
}
__device__ __forceinline__ void kf_copy16(float* dst, const float* src) {
  const unsigned at = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(at), "l"(src));
}
__device__ __forceinline__ void kf_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void kf_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }
#endif
)CU";

// Writes the KfCudaKernel class (once per file): compiles a kernel with NVRTC
// (torch.cuda._compile_kernel) on its first launch on each GPU, then launches it on the current
// stream with a fixed number of threads a block.
void EmitCudaKernelHelper(SourceWriter& out);

// The module-level Python definition of CUDA kernel `name` (an `extern "C" __global__` function
// of `cuda_source`) launched with `threads` threads a block and `shared_bytes` of dynamic shared
// memory.
std::string CudaKernelDefinition(const std::string& name, int threads, const std::string& cuda_source, int64_t shared_bytes = 0);

// The tuning key of CUDA kernel `name` offered in `variants`: the sha256 of their configurations
// and sources with the kernel's name replaced, so the same kernel in another group or task (a layer
// two networks share) finds the configuration measured for it.
std::string CudaTuningKey(const std::string& name, const std::vector<CudaVariant>& variants);

// A tuning job as the tuner worker reads it: {"kernel", "key", "args": [{"shape", "stride"}],
// "variants": [{"tile": [block_m, block_n, block_k], "threads", "shared_bytes", "grid", "source"}]}.
Json CudaTuningToJson(const CudaTuning& tuning);

// Finishes `kernel` (named) as one of `variants` (the first is the rules' choice; a later one of the
// same configuration is dropped): its source is
// `comment` and the variant's definition, and its launch `name[grid](args)` is appended. The
// variant options.tuned holds for their key is taken, and a comment says so; else the first, under
// a "# Tuning key of" comment, with kernel.cuda_tuning set (the tuner's job; `tensors` are the
// launch's arguments as it allocates them) when options.autotune and there is more than one.
void FinishCudaKernel(EmittedKernel& kernel, const std::string& comment, const std::vector<CudaVariant>& variants,
                      std::vector<CudaTensorArg> tensors, const std::vector<std::string>& args, const KernelOptions& options);

}  // namespace kforge::codegen
