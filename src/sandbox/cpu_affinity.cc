#include "sandbox/cpu_affinity.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstring>

namespace kforge {

std::vector<int> AllowedCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cores;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cores;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cores.push_back(cpu);
  }
  return cores;
}

std::vector<std::vector<int>> PartitionCores(const std::vector<int>& cores, int workers) {
  std::vector<std::vector<int>> shares(std::max(workers, 0));
  if (cores.empty() || workers < 1) return shares;
  if (static_cast<int>(cores.size()) < workers) {
    for (int worker = 0; worker < workers; ++worker) shares[worker] = {cores[worker % cores.size()]};
    return shares;
  }
  const size_t base = cores.size() / workers, extra = cores.size() % workers;
  size_t next = 0;
  for (int worker = 0; worker < workers; ++worker) {
    const size_t count = base + (static_cast<size_t>(worker) < extra ? 1 : 0);
    shares[worker].assign(cores.begin() + next, cores.begin() + next + count);
    next += count;
  }
  return shares;
}

Status PinCurrentThread(const std::vector<int>& cpus) {
  if (cpus.empty()) return Status::InvalidArgument("no CPU to pin to");
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) CPU_SET(cpu, &set);
  if (int error = pthread_setaffinity_np(pthread_self(), sizeof(set), &set); error != 0) {
    return Status::Unavailable(std::string("cannot pin the thread to its cores: ") + std::strerror(error));
  }
  return Status::Ok();
}

}  // namespace kforge
