// A real evaluator on the CPU, set up the way `kforge --device cpu` sets one up: a trusted
// worker and a zygote running the repository's kforge_worker package under Triton's interpreter,
// with their scratch folders under one temporary root. Tests skip when no Python with torch is
// found (FindPython's rules: --python, $KFORGE_PYTHON, the bootstrap's venv).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "core/files.h"
#include "eval/evaluator.h"
#include "sandbox/device_workers.h"
#include "sandbox/environment.h"
#include "sandbox/syscall_filter.h"

namespace kforge {

class CpuEvaluator {
 public:
  // Null (with `why` set) when the machine cannot run the worker.
  static std::unique_ptr<CpuEvaluator> Make(const std::filesystem::path& root, std::string& why) {
    auto env = ProcessEnvironment();
    std::string python = FindPython("", env);
    if (python.find('/') == std::string::npos || access(python.c_str(), X_OK) != 0) {
      why = "no Python venv with torch and triton (run scripts/bootstrap or set KFORGE_PYTHON)";
      return nullptr;
    }
    auto package_dir = FindWorkerPackageDir(env);
    if (!package_dir.ok()) {
      why = package_dir.status().ToString();
      return nullptr;
    }
    WorkerSpec spec;
    spec.python = python;
    spec.python_path = *package_dir;
    spec.device = "cpu";
    spec.environment = WorkerEnvironment(env);
    spec.environment.push_back("TRITON_INTERPRET=1");
    // The trusted worker confines its filesystem: what it writes goes under the test's folder.
    spec.environment.push_back("KFORGE_WRITABLE=" + root.string());
    spec.environment.push_back("TMPDIR=" + root.string());

    SandboxSettings sandbox;
    sandbox.root = (root / "sandbox").string();
    std::filesystem::create_directories(root / "sandbox");
    std::filesystem::create_directories(root / "exchange");
    sandbox.readable = {(root / "exchange").string()};  // candidates read their exchange folder there
    sandbox.candidate_environment = CandidateEnvironment(env, "cpu");
    auto filter = BuildSyscallFilter({});
    if (!filter.ok()) {
      why = filter.status().ToString();
      return nullptr;
    }
    sandbox.syscall_filter = *filter;

    EvalOptions options;
    options.device = "cpu";
    options.seeds = 2;
    options.timeout_s = 60;
    options.budget = TimingBudgetFor("cpu");
    options.exchange_root = root / "exchange";
    std::filesystem::create_directories(options.exchange_root);
    return std::unique_ptr<CpuEvaluator>(new CpuEvaluator(std::move(spec), std::move(sandbox), std::move(options)));
  }

  Evaluator& evaluator() { return evaluator_; }

 private:
  CpuEvaluator(WorkerSpec spec, SandboxSettings sandbox, EvalOptions options)
      : workers_(std::move(spec), std::move(sandbox)), evaluator_(workers_, std::move(options)) {}

  DeviceWorkers workers_;
  Evaluator evaluator_;
};

}  // namespace kforge
