#include "core/files.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include <stdlib.h>
#include <unistd.h>

namespace kforge {

Result<std::string> ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot read " + path.string() + ": " + std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

Status WriteFile(const std::filesystem::path& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status::IoError("cannot write " + path.string() + ": " + std::strerror(errno));
  out << contents;
  out.close();
  if (!out) return Status::IoError("short write to " + path.string());
  return Status::Ok();
}

Status WriteFileAtomically(const std::filesystem::path& path, const std::string& contents) {
  std::filesystem::path temporary = path;
  temporary += ".tmp" + std::to_string(::getpid());
  RETURN_IF_ERROR(WriteFile(temporary, contents));
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    std::filesystem::remove(temporary, ec);
    return Status::IoError("cannot replace " + path.string() + ": " + ec.message());
  }
  return Status::Ok();
}

Result<std::filesystem::path> MakeTempDir(const std::filesystem::path& parent, const std::string& prefix) {
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  if (ec) return Status::IoError("cannot create " + parent.string() + ": " + ec.message());
  std::string pattern = (parent / (prefix + "XXXXXX")).string();
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) {
    return Status::IoError("cannot create a temporary folder in " + parent.string() + ": " + std::strerror(errno));
  }
  return std::filesystem::path(buffer.data());
}

void RemoveTreeQuietly(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

}  // namespace kforge
