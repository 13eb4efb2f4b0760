// Which CPU cores a worker may run on. Workers evaluating side by side (one per GPU) each get a
// disjoint share of the cores this process may use, so that one worker's compiling and launching
// does not slow another's launch-bound timings. Processes started from a pinned thread inherit
// its share.
#pragma once

#include <vector>

#include "core/status.h"

namespace kforge {

// The cores this process may run on, in order.
std::vector<int> AllowedCpus();
// The `index`-th (from 0) of `count` disjoint, contiguous, near-equal shares of AllowedCpus(); when
// there are fewer cores than shares, share i is core i modulo their number.
std::vector<int> CpuShare(int index, int count);
// Restricts the calling thread (and what it starts from now on) to `cpus`.
Status PinCurrentThread(const std::vector<int>& cpus);

}  // namespace kforge
