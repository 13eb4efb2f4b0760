#include "sandbox/message_channel.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "core/clock.h"

namespace kforge {

namespace {

// A write to a worker that has died must be an error for the caller, not SIGPIPE for kforge.
void IgnoreSigpipeOnce() {
  static std::once_flag once;
  std::call_once(once, [] { signal(SIGPIPE, SIG_IGN); });
}

}  // namespace

Status MessageChannel::Send(const Json& message) {
  IgnoreSigpipeOnce();
  std::string body = message.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (body.size() > kMaxMessageBytes) return Status::InvalidArgument("message too large to send");
  uint32_t length = static_cast<uint32_t>(body.size());
  std::string frame = {static_cast<char>(length >> 24), static_cast<char>(length >> 16),
                       static_cast<char>(length >> 8), static_cast<char>(length)};
  frame += body;
  size_t offset = 0;
  while (offset < frame.size()) {
    ssize_t written = write(write_fd_, frame.data() + offset, frame.size() - offset);
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) return Status::Unavailable(std::string("worker pipe closed: ") + std::strerror(errno));
    offset += static_cast<size_t>(written);
  }
  return Status::Ok();
}

Status MessageChannel::ReadExactly(char* buffer, size_t count, double deadline_s) {
  size_t done = 0;
  while (done < count) {
    double remaining = deadline_s - RealClock().NowSeconds();
    if (remaining <= 0) return Status::Timeout("no reply in time");
    pollfd descriptor{read_fd_, POLLIN, 0};
    int ready = poll(&descriptor, 1, static_cast<int>(remaining * 1000) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return Status::IoError(std::string("poll: ") + std::strerror(errno));
    if (ready == 0) continue;
    ssize_t got = read(read_fd_, buffer + done, count - done);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) return Status::Unavailable("the worker closed its pipe");
    done += static_cast<size_t>(got);
  }
  return Status::Ok();
}

Result<Json> MessageChannel::Receive(double timeout_s) {
  double deadline = RealClock().NowSeconds() + timeout_s;
  unsigned char header[4];
  RETURN_IF_ERROR(ReadExactly(reinterpret_cast<char*>(header), 4, deadline));
  uint32_t length = (uint32_t{header[0]} << 24) | (uint32_t{header[1]} << 16) | (uint32_t{header[2]} << 8) | header[3];
  if (length > kMaxMessageBytes) return Status::InvalidArgument("worker sent a frame of " + std::to_string(length) + " bytes");
  std::string body(length, '\0');
  RETURN_IF_ERROR(ReadExactly(body.data(), length, deadline));
  return ParseJson(body, "a worker message");
}

}  // namespace kforge
