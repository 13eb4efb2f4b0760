// CUDA C++ kernels in a generated module: the launcher class they share and how one is defined.
// A CUDA kernel is launched as a Triton kernel is, `name[grid](*tensors)`, so the model writer's
// launch counting, renaming and in-place rewriting treat both alike.
#pragma once

#include <cstdint>
#include <string>

#include "compiler/codegen/source_writer.h"

namespace kforge::codegen {

// The SMs a CUDA kernel's grid should fill when its tile is chosen (the H100's and H200's 132).
inline constexpr int64_t kCudaSms = 132;

// The helper name emitters record in EmittedKernel::helpers when they define a CUDA kernel.
inline constexpr const char* kCudaKernelHelper = "KfCudaKernel";

// Writes the KfCudaKernel class (once per file): compiles a kernel with NVRTC
// (torch.cuda._compile_kernel) on its first launch on each GPU, then launches it on the current
// stream with a fixed number of threads a block.
void EmitCudaKernelHelper(SourceWriter& out);

// The module-level Python definition of CUDA kernel `name` (an `extern "C" __global__` function
// of `cuda_source`) launched with `threads` threads a block and `shared_bytes` of dynamic shared
// memory.
std::string CudaKernelDefinition(const std::string& name, int threads, const std::string& cuda_source, int64_t shared_bytes = 0);

}  // namespace kforge::codegen
