// A provider that is the user's own program: `command:PROGRAM ARGS...` runs through /bin/sh -c
// with the rendered prompt on stdin and its reply read from stdout. Each call runs in its own
// process group with a private temporary folder, an environment without secrets (API keys,
// tokens, passwords), and a timeout that kills the whole group. Thread-safe.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "llm/provider.h"

namespace kforge {

class Subprocess;

struct CommandOptions {
  std::string command;  // a shell command line
  std::map<std::string, std::string> environment;  // the parent's; secrets are dropped before the child sees it
  std::optional<double> timeout_s;  // overrides the request's timeout when set
  std::filesystem::path temp_parent = std::filesystem::temp_directory_path();
  size_t max_reply_bytes = 16 << 20;
};

class CommandProvider : public Provider {
 public:
  explicit CommandProvider(CommandOptions options);

  // kTimeout when the program outlives the timeout, kCommandFailed (with the end of its stderr)
  // when it exits nonzero or cannot run, kEmptyReply when it prints nothing.
  Completion Complete(const CompletionRequest& request) override;
  std::string name() const override { return "command"; }

 private:
  Completion Run(const std::filesystem::path& dir, const CompletionRequest& request) const;
  Result<std::unique_ptr<Subprocess>> Start(const std::filesystem::path& dir, const CompletionRequest& request) const;
  Completion ReadReply(const std::filesystem::path& reply_path) const;
  std::string Named() const;  // "the command `...`", for messages

  CommandOptions options_;
  std::vector<std::string> child_environment_;
};

}  // namespace kforge
