// Emitted source compared with tests/compiler/codegen/golden/NAME.py; KFORGE_UPDATE_GOLDEN=1
// rewrites the golden files instead.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "core/files.h"
#include "core/status.h"

namespace kforge::codegen::testing {

inline bool UpdateGolden() {
  const char* flag = std::getenv("KFORGE_UPDATE_GOLDEN");
  return flag != nullptr && std::string(flag) == "1";
}

inline void ExpectGoldenSource(const Result<std::string>& source, const std::string& name) {
  SCOPED_TRACE(name);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  std::filesystem::path golden = std::filesystem::path(KFORGE_CODEGEN_GOLDEN_DIR) / (name + ".py");
  if (UpdateGolden()) {
    ASSERT_TRUE(WriteFile(golden, *source).ok());
    return;
  }
  Result<std::string> expected = ReadFile(golden);
  ASSERT_TRUE(expected.ok()) << "missing " << golden << "; run with KFORGE_UPDATE_GOLDEN=1";
  EXPECT_EQ(*source, *expected);
}

}  // namespace kforge::codegen::testing
