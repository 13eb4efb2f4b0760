#include "compiler/codegen/cuda_kernel.h"

#include <fmt/format.h>

namespace kforge::codegen {

void EmitCudaKernelHelper(SourceWriter& out) {
  out.Lines(R"PY(class KfCudaKernel:
    """A CUDA C++ kernel launched as a Triton kernel is, `kernel[grid](*args)`: compiled by NVRTC
    (torch.cuda._compile_kernel) on its first launch on each GPU, then run on the current stream
    with `threads` threads a block. Its tensors must be CUDA tensors on one device."""

    def __init__(self, name, threads, source):
        self.name, self.threads, self.source, self.compiled = name, threads, source, {}

    def __getitem__(self, grid):
        return lambda *args: self.launch(tuple(grid) + (1,) * (3 - len(grid)), args)

    def compiled_for(self, device):
        kernel = self.compiled.get(device.index)
        if kernel is None:
            kernel = self.compiled[device.index] = torch.cuda._compile_kernel(self.source, self.name)
        return kernel

    def launch(self, grid, args):
        with torch.cuda.device(args[0].device):
            self.compiled_for(args[0].device)(grid=grid, block=(self.threads, 1, 1), args=list(args))

    def warmup(self, *args, grid):
        """Compiles for the arguments' GPU without launching (kforge's compile-ahead run)."""
        with torch.cuda.device(args[0].device):
            self.compiled_for(args[0].device))PY");
  out.Blank();
  out.Blank();
}

std::string CudaKernelDefinition(const std::string& name, int threads, const std::string& cuda_source) {
  return fmt::format("{} = KfCudaKernel(\"{}\", {}, r\"\"\"\n{}\"\"\")", name, name, threads, cuda_source);
}

}  // namespace kforge::codegen
