#include "sandbox/environment.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

extern char** environ;

namespace kforge {
namespace {

bool StartsWith(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

std::string Upper(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::toupper(c); });
  return text;
}

const char* const kWorkerNames[] = {"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "LD_LIBRARY_PATH",
                                    "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "XDG_CACHE_HOME",
                                    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
                                    "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS",
                                    "KFORGE_OUTPUT_SAMPLE_COUNT"};
const char* const kWorkerPrefixes[] = {"TRITON_", "TORCH_", "TORCHINDUCTOR_", "CUDA_", "NVIDIA_", "PYTORCH_"};
const char* const kCandidateNames[] = {"PATH", "LANG", "LC_ALL", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES",
                                       "CUDA_HOME", "CUDA_PATH", "OMP_NUM_THREADS", "OPENBLAS_CORETYPE",
                                       "OPENBLAS_L2_SIZE", "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
                                       "NVSHMEM_DISABLE_NVLS"};

}  // namespace

bool LooksSecret(const std::string& name) {
  std::string upper = Upper(name);
  for (const char* marker : {"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE"}) {
    if (upper.find(marker) != std::string::npos) return true;
  }
  return false;
}

std::map<std::string, std::string> ProcessEnvironment() {
  std::map<std::string, std::string> env;
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string text = *entry;
    auto equals = text.find('=');
    if (equals != std::string::npos) env[text.substr(0, equals)] = text.substr(equals + 1);
  }
  return env;
}

std::vector<std::string> WorkerEnvironment(const std::map<std::string, std::string>& parent) {
  std::vector<std::string> result;
  for (const auto& [name, value] : parent) {
    if (LooksSecret(name)) continue;
    bool keep = std::find(std::begin(kWorkerNames), std::end(kWorkerNames), name) != std::end(kWorkerNames);
    for (const char* prefix : kWorkerPrefixes) keep = keep || StartsWith(name, prefix);
    if (keep) result.push_back(name + "=" + value);
  }
  if (!parent.count("PATH")) result.push_back("PATH=/usr/local/bin:/usr/bin:/bin");
  return result;
}

std::map<std::string, std::string> CandidateEnvironment(const std::map<std::string, std::string>& parent,
                                                        const std::string& device) {
  std::map<std::string, std::string> env;
  for (const char* name : kCandidateNames) {
    auto it = parent.find(name);
    if (it != parent.end() && !LooksSecret(name)) env[name] = it->second;
  }
  if (!env.count("PATH")) env["PATH"] = "/usr/local/bin:/usr/bin:/bin";
  if (!env.count("LANG")) env["LANG"] = "C.UTF-8";
  if (device == "cpu") env["TRITON_INTERPRET"] = "1";
  return env;
}

std::string FindPython(const std::string& requested, const std::map<std::string, std::string>& env) {
  if (!requested.empty()) return requested;
  if (auto it = env.find("KFORGE_PYTHON"); it != env.end() && !it->second.empty()) return it->second;
  std::vector<std::string> candidates;
  if (auto it = env.find("KFORGE_HOME"); it != env.end()) candidates.push_back(it->second + "/venv/bin/python");
  if (geteuid() == 0) candidates.push_back("/opt/kforge/venv/bin/python");
  if (auto it = env.find("HOME"); it != env.end()) candidates.push_back(it->second + "/.cache/kforge/venv/bin/python");
  for (const auto& path : candidates) {
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return "python3";
}

Result<std::string> FindWorkerPackageDir(const std::map<std::string, std::string>& env) {
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates;
  if (auto it = env.find("KFORGE_PYTHONPATH"); it != env.end()) candidates.emplace_back(it->second);
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(self.parent_path() / "python");
    candidates.push_back(self.parent_path().parent_path() / "python");
  }
  candidates.emplace_back(std::string(KFORGE_SOURCE_DIR) + "/python");
  for (const auto& dir : candidates) {
    if (fs::exists(dir / "kforge_worker" / "server.py", ec)) return fs::absolute(dir, ec).string();
  }
  return Status::NotFound("cannot find the kforge_worker Python package; set KFORGE_PYTHONPATH to the folder "
                          "that holds it (the repository's python/ folder)");
}

}  // namespace kforge
