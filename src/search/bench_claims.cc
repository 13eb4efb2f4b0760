#include "search/bench_claims.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>

#include <fmt/format.h>

#include "core/files.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

constexpr const char* kClaimSuffix = ".claim";
constexpr const char* kDoneSuffix = ".done";

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "?";
  return name;
}

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

fs::path ClaimsScope(const fs::path& out, int shard_index, int shard_count) {
  const fs::path claims = out / ".claims";
  if (shard_count <= 1) return claims / "all";
  return claims / fmt::format("shard-{}-of-{}", shard_index, shard_count);
}

std::string NewBenchRunId() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &utc);
  return fmt::format("{}-{}", stamp, getpid());
}

std::string ClaimFileStem(const std::string& task) {
  std::string stem;
  for (char c : task) {
    if (c == '%') {
      stem += "%25";
    } else if (c == '/') {
      stem += "%2F";
    } else {
      stem += c;
    }
  }
  return stem;
}

std::string TaskOfClaimFileStem(const std::string& stem) {
  std::string task;
  for (size_t i = 0; i < stem.size(); ++i) {
    if (stem.compare(i, 3, "%2F") == 0) {
      task += '/';
      i += 2;
    } else if (stem.compare(i, 3, "%25") == 0) {
      task += '%';
      i += 2;
    } else {
      task += stem[i];
    }
  }
  return task;
}

TaskClaims::TaskClaims(fs::path scope, std::string run_id) : folder_(scope / run_id), run_id_(std::move(run_id)) {}

Result<bool> TaskClaims::Claim(const std::string& task) {
  std::error_code ec;
  fs::create_directories(folder_, ec);
  const fs::path path = folder_ / (ClaimFileStem(task) + kClaimSuffix);
  // O_EXCL: of all the workers trying at once, exactly one creates the file.
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EEXIST) return false;
  if (fd < 0) return Status::IoError(fmt::format("cannot claim {} in {}: {}", task, folder_.string(), std::strerror(errno)));
  const std::string owner = fmt::format("run {} pid {} host {}\n", run_id_, getpid(), HostName());
  ssize_t written = write(fd, owner.data(), owner.size());
  (void)written;  // the file's existence is the claim; its words only help a reader
  close(fd);
  return true;
}

Status TaskClaims::MarkDone(const std::string& task) {
  return WriteFile(folder_ / (ClaimFileStem(task) + kDoneSuffix), "");
}

TaskClaims::Snapshot TaskClaims::Scan() const {
  Snapshot snapshot;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder_, ec)) {
    const std::string name = entry.path().filename().string();
    if (EndsWith(name, kClaimSuffix)) {
      snapshot.claimed.push_back(TaskOfClaimFileStem(name.substr(0, name.size() - std::strlen(kClaimSuffix))));
    } else if (EndsWith(name, kDoneSuffix)) {
      snapshot.done.push_back(TaskOfClaimFileStem(name.substr(0, name.size() - std::strlen(kDoneSuffix))));
    }
  }
  std::sort(snapshot.claimed.begin(), snapshot.claimed.end());
  std::sort(snapshot.done.begin(), snapshot.done.end());
  return snapshot;
}

Result<std::unique_ptr<ClaimsLock>> ClaimsLock::Acquire(const fs::path& scope, const std::string& run_id) {
  std::error_code ec;
  fs::create_directories(scope, ec);
  if (ec) return Status::IoError("cannot create " + scope.string() + ": " + ec.message());
  const fs::path lock_path = scope / "lock";
  int fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IoError("cannot open " + lock_path.string() + ": " + std::strerror(errno));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return Status::InvalidArgument(fmt::format(
        "another kforge bench with parallel workers is running on this folder ({} is locked); wait for it to end "
        "or use another --out", lock_path.string()));
  }
  for (const auto& entry : fs::directory_iterator(scope, ec)) {
    if (entry.is_directory() && entry.path().filename() != run_id) RemoveTreeQuietly(entry.path());
  }
  return std::unique_ptr<ClaimsLock>(new ClaimsLock(fd));
}

ClaimsLock::~ClaimsLock() { close(fd_); }

}  // namespace kforge
