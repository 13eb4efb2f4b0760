// Which CPU cores a worker may run on. Workers judging side by side (one per GPU) each get a
// disjoint share of the cores this process may use, so that one worker's compiling and launching
// does not slow another's launch-bound timings. Processes started from a pinned thread inherit
// its share.
#pragma once

#include <vector>

#include "core/status.h"

namespace kforge {

// The CPU cores this process may run on (its affinity mask), in increasing order.
std::vector<int> AllowedCores();

// `cores` dealt into `workers` disjoint runs of neighbouring cores, as even as they go (the first
// ones get one more). With fewer cores than workers, worker i gets core i mod the number of cores:
// then they cannot be kept apart.
std::vector<std::vector<int>> PartitionCores(const std::vector<int>& cores, int workers);

// Restricts the calling thread (and what it starts from now on) to `cpus`.
Status PinCurrentThread(const std::vector<int>& cpus);

}  // namespace kforge
