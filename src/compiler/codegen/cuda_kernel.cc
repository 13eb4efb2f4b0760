#include "compiler/codegen/cuda_kernel.h"

#include <algorithm>
#include <regex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/hash.h"

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

std::string CudaTuningKey(const std::string& name, const std::vector<CudaVariant>& variants) {
  const std::regex own_name("\\b" + name + "\\b");
  std::string text;
  for (const CudaVariant& v : variants) {
    const TileChoice& c = v.config;
    text += fmt::format("variant {} {} {} {} {} threads {} shared {} grid {}\n", c.block_m, c.block_n, c.block_k, c.warps, c.stages,
                        v.threads, v.shared_bytes, fmt::join(v.grid, " "));
    text += std::regex_replace(v.source, own_name, "KERNEL");
  }
  return Sha256Hex(text);
}

Json CudaTuningToJson(const CudaTuning& tuning) {
  Json args = Json::array(), variants = Json::array();
  for (const CudaTensorArg& arg : tuning.args) args.push_back({{"shape", arg.shape}, {"stride", arg.stride}});
  for (const CudaVariant& v : tuning.variants) {
    variants.push_back({{"tile", {v.config.block_m, v.config.block_n, v.config.block_k}}, {"threads", v.threads},
                        {"shared_bytes", v.shared_bytes}, {"grid", v.grid}, {"source", v.source}});
  }
  return {{"kernel", tuning.kernel}, {"key", tuning.key}, {"args", args}, {"variants", variants}};
}

void FinishCudaKernel(EmittedKernel& kernel, const std::string& comment, const std::vector<CudaVariant>& offered,
                      std::vector<CudaTensorArg> tensors, const std::vector<std::string>& args, const KernelOptions& options) {
  std::vector<CudaVariant> variants;
  for (const CudaVariant& v : offered) {
    const auto same = [&](const CudaVariant& kept) { return kept.config == v.config; };
    if (std::none_of(variants.begin(), variants.end(), same)) variants.push_back(v);
  }
  const std::string key = CudaTuningKey(kernel.name, variants);
  const CudaVariant* chosen = nullptr;
  if (auto tuned = options.tuned.find(key); tuned != options.tuned.end()) {
    for (const CudaVariant& v : variants) {
      if (v.config == tuned->second) chosen = &v;
    }
  }
  std::string note;
  if (chosen != nullptr) {
    note = fmt::format("# {}: tile measured fastest of {} on this GPU (tuning key {}).\n", kernel.name, variants.size(), key);
  } else if (chosen = &variants.front(); options.autotune && variants.size() > 1) {
    note = fmt::format("# Tuning key of {}: {} (the tuner measures its {} tiles; the fastest is stored under it).\n", kernel.name, key,
                       variants.size());
    kernel.cuda_tuning = CudaTuning{.kernel = kernel.name, .key = key, .args = std::move(tensors), .variants = variants};
  }
  kernel.source = comment + note + CudaKernelDefinition(kernel.name, chosen->threads, chosen->source, chosen->shared_bytes);
  kernel.helpers.insert(kCudaKernelHelper);
  kernel.launch.push_back(fmt::format("{}[({})]({})", kernel.name, fmt::join(chosen->grid, ", "), fmt::join(args, ", ")));
}

}  // namespace kforge::codegen
