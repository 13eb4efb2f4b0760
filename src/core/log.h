// Progress and diagnostics on stderr. Level set once at start-up; thread-safe.
#pragma once

#include <string>

#include <fmt/format.h>

namespace kforge {

enum class LogLevel { kQuiet, kInfo, kDebug };

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
void LogLine(LogLevel level, const std::string& line);
// A progress line kept under the log on a terminal: redrawn in place, cleared before each log line
// and drawn again after it; an empty line removes it. Where stderr is not a terminal it is written
// as a plain log line (once per change) when `plain_elsewhere`, else not at all. Shown at kInfo.
void SetStatusLine(const std::string& line, bool plain_elsewhere = true);

template <typename... Args>
void LogInfo(fmt::format_string<Args...> format, Args&&... args) {
  LogLine(LogLevel::kInfo, fmt::format(format, std::forward<Args>(args)...));
}

template <typename... Args>
void LogDebug(fmt::format_string<Args...> format, Args&&... args) {
  LogLine(LogLevel::kDebug, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace kforge
