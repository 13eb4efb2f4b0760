#include "sandbox/cpu_affinity.h"

#include <pthread.h>
#include <sched.h>

#include <cstring>

namespace kforge {

std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

std::vector<int> CpuShare(int index, int count) {
  const std::vector<int> all = AllowedCpus();
  if (all.empty() || count < 1 || index < 0 || index >= count) return all;
  const int total = static_cast<int>(all.size());
  if (total < count) return {all[index % total]};
  const int begin = index * total / count;
  const int end = (index + 1) * total / count;
  return std::vector<int>(all.begin() + begin, all.begin() + end);
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
