#include "search/reference_compiles.h"

#include <algorithm>
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

std::vector<ReferenceCompile> CompileAhead(
    const std::vector<TaskFile>& tasks, const Evaluator& evaluator, int jobs,
    const std::function<std::vector<std::unique_ptr<WorkerSource>>(int count)>& make_sets,
    const std::function<void(const ReferenceCompile&)>& done) {
  std::vector<TaskFile> to_compile;
  for (const TaskFile& task : tasks) {
    if (!evaluator.HasStoredTiming(task, "compile")) to_compile.push_back(task);
  }
  // One task, or one set, gains nothing over the timing compiling it.
  if (jobs < 2 || to_compile.size() < 2) return {};
  std::vector<std::unique_ptr<WorkerSource>> sets = make_sets(std::min<int>(jobs, static_cast<int>(to_compile.size())));
  std::vector<WorkerSource*> slots;
  for (const auto& set : sets) slots.push_back(set.get());
  std::vector<ReferenceCompile> compiled = CompileReferences(to_compile, slots, evaluator.options(), done);
  sets.clear();  // their processes end here, before anything is timed
  return compiled;
}

}  // namespace kforge
