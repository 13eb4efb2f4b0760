#include "core/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>

#include <unistd.h>

namespace kforge {
namespace {
std::atomic<LogLevel> g_level{LogLevel::kInfo};
std::mutex g_stderr_mutex;
std::string g_status;  // guarded by g_stderr_mutex

bool StderrIsTerminal() {
  static const bool terminal = ::isatty(STDERR_FILENO) == 1;
  return terminal;
}

void ClearStatusLocked() {
  if (!g_status.empty() && StderrIsTerminal()) std::fputs("\r\033[K", stderr);
}

void DrawStatusLocked() {
  if (!g_status.empty() && StderrIsTerminal()) {
    std::fprintf(stderr, "kforge: %s", g_status.c_str());
    std::fflush(stderr);
  }
}
}  // namespace

void SetLogLevel(LogLevel level) { g_level = level; }
LogLevel GetLogLevel() { return g_level; }

void LogLine(LogLevel level, const std::string& line) {
  if (static_cast<int>(level) > static_cast<int>(g_level.load())) return;
  std::lock_guard<std::mutex> lock(g_stderr_mutex);
  ClearStatusLocked();
  std::fprintf(stderr, "kforge: %s\n", line.c_str());
  DrawStatusLocked();
}

void SetStatusLine(const std::string& line, bool plain_elsewhere) {
  if (static_cast<int>(LogLevel::kInfo) > static_cast<int>(g_level.load())) return;
  std::lock_guard<std::mutex> lock(g_stderr_mutex);
  if (line == g_status) return;
  ClearStatusLocked();
  g_status = line;
  if (StderrIsTerminal()) {
    DrawStatusLocked();
  } else if (!line.empty() && plain_elsewhere) {
    std::fprintf(stderr, "kforge: %s\n", line.c_str());
  }
}

}  // namespace kforge
