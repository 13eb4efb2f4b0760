#include "compiler/codegen/cuda_kernel.h"

#include <fmt/format.h>

namespace kforge::codegen {

void EmitCudaKernelHelper(SourceWriter& out) {
  out.Lines(R"PY(class KfCudaKernel:
    """A CUDA C++ kernel launched as a Triton kernel is, `kernel[grid](*args)`: compiled by NVRTC
    (torch.cuda._compile_kernel) on its first launch on each GPU, then run on the current stream
    with `threads` threads a block and `shared` bytes of dynamic shared memory. Its tensors must be
    CUDA tensors on one device."""

    def __init__(self, name, threads, source, shared=0):
        self.name, self.threads, self.source, self.shared, self.compiled = name, threads, source, shared, {}

    def __getitem__(self, grid):
        return lambda *args: self.launch(tuple(grid) + (1,) * (3 - len(grid)), args)

    def compiled_for(self, device):
        kernel = self.compiled.get(device.index)
        if kernel is None:
            kernel = torch.cuda._compile_kernel(self.source, self.name)
            if self.shared:
                kernel.set_shared_memory_config(self.shared)
            self.compiled[device.index] = kernel
        return kernel

    def launch(self, grid, args):
        with torch.cuda.device(args[0].device):
            self.compiled_for(args[0].device)(grid=grid, block=(self.threads, 1, 1), args=list(args), shared_mem=self.shared)

    def warmup(self, *args, grid):
        """Compiles for the arguments' GPU without launching (kforge's compile-ahead run)."""
        with torch.cuda.device(args[0].device):
            self.compiled_for(args[0].device))PY");
  out.Blank();
  out.Blank();
}

std::string CudaKernelDefinition(const std::string& name, int threads, const std::string& cuda_source, int64_t shared_bytes) {
  return fmt::format("{} = KfCudaKernel(\"{}\", {}, r\"\"\"\n{}\"\"\"{})", name, name, threads, cuda_source,
                     shared_bytes ? fmt::format(", shared={}", shared_bytes) : "");
}

}  // namespace kforge::codegen
