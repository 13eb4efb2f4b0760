// The golden graphs under tests/compiler/ir/golden: each NAME.json has its printed IR in NAME.ir.txt.
#pragma once

#include <algorithm>
#include <filesystem>
#include <vector>

namespace kforge::ir::testing {

inline std::filesystem::path GoldenDir() { return KFORGE_IR_GOLDEN_DIR; }

// The golden JSON graphs, sorted by name.
inline std::vector<std::filesystem::path> GoldenGraphs() {
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(GoldenDir())) {
    if (entry.path().extension() == ".json") paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

}  // namespace kforge::ir::testing
