// The fastest a task can possibly run on a device: bytes that must move over the memory
// bandwidth, or FLOPs over the peak rate, whichever is larger. Peaks are generous (datasheet
// rates, tensor-core rates for matmul-like work) so that no honest kernel falls below the floor.
#pragma once

#include <optional>
#include <string>

#include "eval/precision.h"

namespace kforge {

struct DevicePeaks {
  std::string name;
  double bytes_per_s = 0;
  double flops_per_s = 0;  // at the given precision, the most generous unit that can honestly serve it
};

// Known peaks for a GPU name as torch reports it ("NVIDIA H200"), or nullopt.
std::optional<DevicePeaks> PeaksFor(const std::string& gpu_name, Precision precision);

// Seconds; 0 when nothing is known.
double RooflineFloorSeconds(double bytes, double flops, const DevicePeaks& peaks);

}  // namespace kforge
