// Environments for worker and candidate processes. Workers get an allow-listed copy of kforge's
// environment with anything that looks like a secret removed; candidates get only what running
// kernels needs. Paths to Python and to the worker package are found here too.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace kforge {

// True for names that must never reach a worker or candidate (API keys, tokens, passwords).
bool LooksSecret(const std::string& name);

// NAME=value entries for a worker, from `parent` (normally the process environment).
std::vector<std::string> WorkerEnvironment(const std::map<std::string, std::string>& parent);

// The environment a candidate runs with: PATH, locale, CUDA/library paths (its compile caches
// are set in its own folder by the sandbox).
std::map<std::string, std::string> CandidateEnvironment(const std::map<std::string, std::string>& parent,
                                                        const std::string& device);

std::map<std::string, std::string> ProcessEnvironment();

// The Python interpreter: --python, else $KFORGE_PYTHON, else the bootstrap's venv, else python3.
std::string FindPython(const std::string& requested, const std::map<std::string, std::string>& env);

// The folder holding the kforge_worker package: $KFORGE_PYTHONPATH, next to the executable
// (bundles), or the source tree kforge was built from.
Result<std::string> FindWorkerPackageDir(const std::map<std::string, std::string>& env);

}  // namespace kforge
