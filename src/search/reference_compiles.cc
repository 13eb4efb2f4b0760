#include "search/reference_compiles.h"

#include <atomic>
#include <mutex>
#include <thread>

namespace kforge {

std::vector<ReferenceCompile> CompileReferences(const std::vector<TaskFile>& tasks, const std::vector<WorkerSource*>& slots,
                                                const EvalOptions& options,
                                                const std::function<void(const ReferenceCompile&)>& done) {
  std::vector<ReferenceCompile> compiled(tasks.size());
  std::atomic<size_t> next{0};
  std::mutex reporting;
  auto work = [&](WorkerSource* slot) {
    Evaluator evaluator(*slot, options);
    for (size_t i = next++; i < tasks.size(); i = next++) {
      ReferenceCompile& entry = compiled[i];
      entry.task = tasks[i].name;
      Result<double> seconds = evaluator.CompileReference(tasks[i]);
      if (seconds.ok()) {
        entry.compile_s = *seconds;
      } else {
        entry.status = seconds.status();
      }
      if (done) {
        std::lock_guard<std::mutex> lock(reporting);
        done(entry);
      }
    }
  };
  std::vector<std::thread> threads;
  for (WorkerSource* slot : slots) threads.emplace_back(work, slot);
  for (std::thread& thread : threads) thread.join();
  return compiled;
}

}  // namespace kforge
