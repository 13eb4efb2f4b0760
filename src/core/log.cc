#include "core/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace kforge {
namespace {
std::atomic<LogLevel> g_level{LogLevel::kInfo};
std::mutex g_stderr_mutex;
}  // namespace

void SetLogLevel(LogLevel level) { g_level = level; }
LogLevel GetLogLevel() { return g_level; }

void LogLine(LogLevel level, const std::string& line) {
  if (static_cast<int>(level) > static_cast<int>(g_level.load())) return;
  std::lock_guard<std::mutex> lock(g_stderr_mutex);
  std::fprintf(stderr, "kforge: %s\n", line.c_str());
}

}  // namespace kforge
