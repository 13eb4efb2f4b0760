// The worker protocol as kforge reads it: whatever bytes a worker (or a candidate that took one
// over) writes to its reply pipe, MessageChannel::Receive returns messages or a clean error and
// never crashes, hangs or allocates past its frame limit.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

#include "sandbox/message_channel.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int fds[2];
  if (pipe(fds) != 0) return 0;
  fcntl(fds[1], F_SETPIPE_SZ, 1 << 20);
  size_t written = 0;
  while (written < size) {
    ssize_t n = write(fds[1], data + written, size - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  close(fds[1]);
  kforge::MessageChannel channel(-1, fds[0]);
  for (int i = 0; i < 64; ++i) {
    auto message = channel.Receive(0.05);
    if (!message.ok()) break;
  }
  close(fds[0]);
  return 0;
}
