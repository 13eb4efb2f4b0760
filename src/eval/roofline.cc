#include "eval/roofline.h"

#include <algorithm>

namespace kforge {
namespace {

struct KnownGpu {
  const char* marker;
  double bandwidth;    // bytes/s, datasheet
  double tf32_flops;   // dense tensor-core TF32: bounds fp32-accurate emulations too
  double bf16_flops;   // dense tensor-core BF16
};

// Order matters: the first marker contained in the name wins.
constexpr KnownGpu kKnownGpus[] = {
    {"H200", 4.8e12, 495e12, 990e12},
    {"H100", 3.35e12, 495e12, 990e12},
    {"A100", 2.04e12, 156e12, 312e12},
    {"L40S", 0.864e12, 183e12, 366e12},
    {"B200", 8.0e12, 1100e12, 2250e12},
};

}  // namespace

std::optional<DevicePeaks> PeaksFor(const std::string& gpu_name, Precision precision) {
  for (const auto& gpu : kKnownGpus) {
    if (gpu_name.find(gpu.marker) == std::string::npos) continue;
    double flops = precision == Precision::kBf16 ? gpu.bf16_flops : gpu.tf32_flops;
    return DevicePeaks{gpu.marker, gpu.bandwidth, flops};
  }
  return std::nullopt;
}

double RooflineFloorSeconds(double bytes, double flops, const DevicePeaks& peaks) {
  double memory = peaks.bytes_per_s > 0 ? bytes / peaks.bytes_per_s : 0;
  double compute = peaks.flops_per_s > 0 ? flops / peaks.flops_per_s : 0;
  return std::max(memory, compute);
}

}  // namespace kforge
