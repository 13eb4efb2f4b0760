// Small filesystem helpers that report failures as Status instead of throwing.
#pragma once

#include <filesystem>
#include <string>

#include "core/status.h"

namespace kforge {

Result<std::string> ReadFile(const std::filesystem::path& path);
Status WriteFile(const std::filesystem::path& path, const std::string& contents);
// Writes a sibling temporary file and renames it over `path`, so that a reader sees the old
// contents or the new, never a half-written file.
Status WriteFileAtomically(const std::filesystem::path& path, const std::string& contents);
// Creates a fresh private (0700) directory under `parent` whose name starts with `prefix`.
Result<std::filesystem::path> MakeTempDir(const std::filesystem::path& parent, const std::string& prefix);
// Removes a tree, ignoring errors (used for cleanup paths where nothing can be done about them).
void RemoveTreeQuietly(const std::filesystem::path& path);

}  // namespace kforge
