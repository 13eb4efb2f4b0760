// Progress and diagnostics on stderr. Level set once at start-up; thread-safe.
#pragma once

#include <string>

#include <fmt/format.h>

namespace kforge {

enum class LogLevel { kQuiet, kInfo, kDebug };

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
void LogLine(LogLevel level, const std::string& line);

template <typename... Args>
void LogInfo(fmt::format_string<Args...> format, Args&&... args) {
  LogLine(LogLevel::kInfo, fmt::format(format, std::forward<Args>(args)...));
}

template <typename... Args>
void LogDebug(fmt::format_string<Args...> format, Args&&... args) {
  LogLine(LogLevel::kDebug, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace kforge
