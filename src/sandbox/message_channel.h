// Length-prefixed JSON messages over a pair of pipe descriptors: a 4-byte big-endian length,
// then that many bytes of UTF-8 JSON. Does not own the descriptors. Not thread-safe.
#pragma once

#include <cstddef>

#include "core/json.h"
#include "core/status.h"

namespace kforge {

inline constexpr size_t kMaxMessageBytes = 64u << 20;

class MessageChannel {
 public:
  MessageChannel(int write_fd, int read_fd) : write_fd_(write_fd), read_fd_(read_fd) {}

  // Unavailable when the peer has gone.
  Status Send(const Json& message);
  // Timeout when nothing whole arrives in time; Unavailable when the peer closed the pipe;
  // InvalidArgument for a malformed frame.
  Result<Json> Receive(double timeout_s);

 private:
  Status ReadExactly(char* buffer, size_t count, double deadline_s);

  int write_fd_;
  int read_fd_;
};

}  // namespace kforge
