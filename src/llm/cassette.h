// A cassette: a JSONL file of language model calls, one per line, recorded by RecordingProvider or
// written by hand, and served back by ReplayProvider and CachedProvider. A line is
//   {"request_hash": "...", "masked_hash": "...", "tag": {"agent", "scope", "writer", "round", "kind"},
//    "model": "...", "messages": [...], "match": ["substring", ...],
//    "reply": {"text", "outcome", "prompt_tokens", "completion_tokens", "finish_reason", "error"}}
// where a hand-written line may leave out everything but "reply", and "reply" may be a plain
// string (a reply with that text: OK, or empty_reply when it is blank).
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "llm/completion.h"
#include "llm/message.h"

namespace kforge {

struct CassetteEntry {
  std::string request_hash;  // empty for a hand-written entry, which is matched by `match`
  std::string masked_hash;   // MaskedRequestHash of the recorded request ("" in older cassettes)
  CallTag tag;               // the recorded request's tag (empty in older cassettes)
  std::string model;
  std::vector<Message> messages;
  std::vector<std::string> match;  // substrings that must all appear in the request's messages
  Completion reply;
};

// A reply as a cassette holds it: {"text", "outcome", "prompt_tokens", "completion_tokens",
// "finish_reason", "error"}; back from that, or from a plain string (a reply with that text: OK,
// or empty_reply when it is blank). InvalidArgument for anything else.
Json ReplyToJson(const Completion& reply);
Result<Completion> ReplyFromJson(const Json& reply);

// One cassette line; InvalidArgument saying what is wrong with it.
Result<CassetteEntry> ParseCassetteLine(const std::string& line);
// A call as one compact cassette line (no newline), with its request's hash.
std::string CassetteLine(const CompletionRequest& request, const Completion& reply);

// Every entry of the cassette at `path`, in file order. NotFound when there is no such file;
// InvalidArgument naming the path and line of the first malformed line. A last line without
// its newline is an interrupted write: skipped when it does not parse.
Result<std::vector<CassetteEntry>> LoadCassette(const std::filesystem::path& path);

// A cassette's entries, each handed out at most once, in file order. Thread-safe.
class CassetteEntries {
 public:
  explicit CassetteEntries(std::vector<CassetteEntry> entries) : entries_(std::move(entries)), used_(entries_.size()) {}

  // The first unused entry that matches `request`, now used. An entry with a hash matches a
  // request whose RequestHash equals it (the request's model filled in from the entry's when it
  // names none); one without matches a request whose messages contain every `match` substring
  // (no `match`: every request). When no entry matches so, a recorded entry with the request's
  // tag (the same pool, writer, round and prompt kind) and its MaskedRequestHash matches: the same
  // call of a run whose prompt quotes other measured numbers. With `recorded_ok_only`, only
  // entries with a hash and an OK reply are considered.
  std::optional<CassetteEntry> Take(const CompletionRequest& request, bool recorded_ok_only = false);
  size_t unused() const;

 private:
  mutable std::mutex mutex_;
  const std::vector<CassetteEntry> entries_;
  std::vector<bool> used_;  // guarded by mutex_
};

// Appends calls to a cassette file: one line per call, written with one write(2) to a file
// opened for appending, so a run that is interrupted keeps every call it finished. Thread-safe.
class CassetteWriter {
 public:
  // Creates the file and its folders when missing. A partial last line left by an interrupted
  // write is cut off first, so that the file stays valid.
  static Result<std::unique_ptr<CassetteWriter>> Open(const std::filesystem::path& path);
  ~CassetteWriter();
  CassetteWriter(const CassetteWriter&) = delete;
  CassetteWriter& operator=(const CassetteWriter&) = delete;

  Status Append(const CompletionRequest& request, const Completion& reply);
  const std::filesystem::path& path() const { return path_; }

 private:
  CassetteWriter(std::filesystem::path path, int fd) : path_(std::move(path)), fd_(fd) {}

  const std::filesystem::path path_;
  std::mutex mutex_;
  const int fd_;  // writes guarded by mutex_
};

}  // namespace kforge
