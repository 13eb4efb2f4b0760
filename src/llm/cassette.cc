#include "llm/cassette.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/files.h"
#include "core/log.h"

namespace kforge {
namespace {

// A recorded call is served to a request with its tag whose prompt differs from the recorded one
// in only a few lines, and in at most a tenth of them, once numbers are masked: the lines
// where the evaluator describes what it measured on fresh inputs (which rows hold the bad
// elements, say) in words rather than numbers alone.
constexpr size_t kMaxDifferingLines = 16;  // counted both ways: eight lines replaced
constexpr size_t kMaxDifferingShare = 10;  // one line in ten at most

// Whether two conversations differ only in a few lines once numbers are masked (lines one holds
// and the other does not, counted both ways); never when their messages or roles differ.
bool DifferInFewLines(const std::vector<Message>& recorded, const std::vector<Message>& request) {
  if (recorded.size() != request.size()) return false;
  size_t differing = 0;
  size_t total = 0;
  for (size_t m = 0; m < recorded.size(); ++m) {
    if (recorded[m].role != request[m].role) return false;
    std::multiset<std::string> lines;
    std::istringstream recorded_text(MaskNumbers(recorded[m].content));
    for (std::string line; std::getline(recorded_text, line);) lines.insert(line);
    std::istringstream request_text(MaskNumbers(request[m].content));
    for (std::string line; std::getline(request_text, line);) {
      ++total;
      auto it = lines.find(line);
      if (it == lines.end()) ++differing;
      else lines.erase(it);
    }
    differing += lines.size();
  }
  return differing <= kMaxDifferingLines && differing * kMaxDifferingShare <= total;
}

const std::set<std::string> kEntryKeys = {"request_hash", "masked_hash", "tag",   "model", "messages",
                                          "temperature",  "max_tokens",  "match", "reply"};
const std::set<std::string> kReplyKeys = {"text", "outcome", "prompt_tokens", "completion_tokens", "finish_reason", "error"};

Status CheckKeys(const Json& object, const std::set<std::string>& known, const std::string& where) {
  for (const auto& [key, value] : object.items()) {
    if (known.count(key)) continue;
    std::string list;
    for (const std::string& name : known) list += (list.empty() ? "" : ", ") + name;
    return Status::InvalidArgument("unknown key \"" + key + "\" in " + where + "; expected " + list);
  }
  return Status::Ok();
}

Status ReadString(const Json& object, const char* key, std::string& out) {
  const Json& value = JsonField(object, key);
  if (value.is_null()) return Status::Ok();
  if (!value.is_string()) return Status::InvalidArgument(std::string("\"") + key + "\" must be a string");
  out = value.get<std::string>();
  return Status::Ok();
}

Status ReadCount(const Json& object, const char* key, int64_t& out) {
  const Json& value = JsonField(object, key);
  if (value.is_null()) return Status::Ok();
  if (!value.is_number_integer()) return Status::InvalidArgument(std::string("\"") + key + "\" must be an integer");
  out = value.get<int64_t>();
  return Status::Ok();
}

Result<std::vector<std::string>> ParseMatch(const Json& match) {
  if (match.is_null()) return std::vector<std::string>{};
  if (match.is_string()) return std::vector<std::string>{match.get<std::string>()};
  std::vector<std::string> substrings;
  if (!match.is_array()) return Status::InvalidArgument("\"match\" must be a string or an array of strings");
  for (const Json& item : match) {
    if (!item.is_string()) return Status::InvalidArgument("\"match\" must be a string or an array of strings");
    substrings.push_back(item.get<std::string>());
  }
  return substrings;
}

bool ContainsAll(const std::vector<Message>& messages, const std::vector<std::string>& substrings) {
  for (const std::string& substring : substrings) {
    bool found = false;
    for (const Message& message : messages) found = found || message.content.find(substring) != std::string::npos;
    if (!found) return false;
  }
  return true;
}

std::vector<std::string> SplitLines(const std::string& text, bool& last_line_torn) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    last_line_torn = end == std::string::npos;
    std::string line = text.substr(start, last_line_torn ? std::string::npos : end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    start = last_line_torn ? text.size() : end + 1;
  }
  return lines;
}

bool IsBlank(const std::string& line) { return line.find_first_not_of(" \t") == std::string::npos; }

// A last line without its newline is ended when it is a whole entry (a hand-written file) and
// cut off when it is not (a write that was interrupted), so that appended lines stay apart.
Status RepairUnfinishedLastLine(const std::filesystem::path& path) {
  auto existing = ReadFile(path);
  if (!existing.ok() || existing->empty() || existing->back() == '\n') return Status::Ok();
  size_t last_newline = existing->rfind('\n');
  size_t keep = last_newline == std::string::npos ? 0 : last_newline + 1;
  if (ParseCassetteLine(existing->substr(keep)).ok()) {
    std::ofstream out(path, std::ios::binary | std::ios::app);
    out << '\n';
    return out.flush() ? Status::Ok() : Status::IoError("cannot append to cassette " + path.string());
  }
  std::error_code ec;
  std::filesystem::resize_file(path, keep, ec);
  if (ec) return Status::IoError("cannot cut the unfinished last line of " + path.string() + ": " + ec.message());
  return Status::Ok();
}

}  // namespace

Result<Completion> ReplyFromJson(const Json& reply) {
  Completion completion;
  completion.attempts = 1;
  if (reply.is_string()) {
    // A hand-written reply is what the model said: a blank one is an empty reply, as from an API.
    completion.text = reply.get<std::string>();
    ClassifyReplyText(completion, /*hit_token_limit=*/false);
    return completion;
  }
  if (!reply.is_object()) return Status::InvalidArgument("\"reply\" must be a string or an object");
  RETURN_IF_ERROR(CheckKeys(reply, kReplyKeys, "\"reply\""));
  std::string outcome = "ok";
  RETURN_IF_ERROR(ReadString(reply, "outcome", outcome));
  ASSIGN_OR_RETURN(completion.outcome, ParseCallOutcome(outcome));
  RETURN_IF_ERROR(ReadString(reply, "text", completion.text));
  RETURN_IF_ERROR(ReadString(reply, "finish_reason", completion.finish_reason));
  RETURN_IF_ERROR(ReadString(reply, "error", completion.error));
  RETURN_IF_ERROR(ReadCount(reply, "prompt_tokens", completion.prompt_tokens));
  RETURN_IF_ERROR(ReadCount(reply, "completion_tokens", completion.completion_tokens));
  return completion;
}

Json ReplyToJson(const Completion& reply) {
  return {{"text", reply.text},
          {"outcome", ToString(reply.outcome)},
          {"prompt_tokens", reply.prompt_tokens},
          {"completion_tokens", reply.completion_tokens},
          {"finish_reason", reply.finish_reason},
          {"error", reply.error}};
}

Result<CassetteEntry> ParseCassetteLine(const std::string& line) {
  Json json = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) return Status::InvalidArgument("not a JSON object");
  RETURN_IF_ERROR(CheckKeys(json, kEntryKeys, "a cassette line"));
  CassetteEntry entry;
  RETURN_IF_ERROR(ReadString(json, "request_hash", entry.request_hash));
  RETURN_IF_ERROR(ReadString(json, "model", entry.model));
  RETURN_IF_ERROR(ReadString(json, "masked_hash", entry.masked_hash));
  if (!JsonField(json, "tag").is_null() && !json["tag"].is_object()) return Status::InvalidArgument("\"tag\" must be an object");
  entry.tag = CallTag::FromJson(JsonField(json, "tag"));
  if (!JsonField(json, "messages").is_null()) {
    ASSIGN_OR_RETURN(entry.messages, MessagesFromJson(json["messages"]));
  }
  ASSIGN_OR_RETURN(entry.match, ParseMatch(JsonField(json, "match")));
  if (!json.contains("reply")) return Status::InvalidArgument("no \"reply\"");
  ASSIGN_OR_RETURN(entry.reply, ReplyFromJson(json["reply"]));
  entry.reply.model = entry.model;
  return entry;
}

std::string CassetteLine(const CompletionRequest& request, const Completion& reply) {
  Json line = {{"request_hash", RequestHash(request)},
               {"masked_hash", MaskedRequestHash(request)},
               {"model", request.model},
               {"temperature", request.temperature},
               {"max_tokens", request.max_tokens},
               {"messages", MessagesToJson(request.messages)},
               {"reply", ReplyToJson(reply)}};
  if (!request.tag.empty()) line["tag"] = request.tag.ToJson();
  return line.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Result<std::vector<CassetteEntry>> LoadCassette(const std::filesystem::path& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  bool last_line_torn = false;
  std::vector<std::string> lines = SplitLines(text, last_line_torn);
  std::vector<CassetteEntry> entries;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (IsBlank(lines[i])) continue;
    auto entry = ParseCassetteLine(lines[i]);
    if (entry.ok()) {
      entries.push_back(std::move(entry).value());
    } else if (last_line_torn && i + 1 == lines.size()) {
      LogInfo("cassette {}: skipping its unfinished last line (an interrupted write)", path.string());
    } else {
      return Status::InvalidArgument("cassette " + path.string() + " line " + std::to_string(i + 1) + ": " +
                                     entry.status().message());
    }
  }
  return entries;
}

std::optional<CassetteEntry> CassetteEntries::Take(const CompletionRequest& request, bool recorded_ok_only) {
  // Hashes of the request with the model each entry names filled in when the request names none.
  std::map<std::string, std::pair<std::string, std::string>> hashes_by_model;  // model -> (exact, masked)
  auto hashes_for = [&](const std::string& entry_model) -> const std::pair<std::string, std::string>& {
    std::string model = request.model.empty() ? entry_model : request.model;
    auto it = hashes_by_model.find(model);
    if (it == hashes_by_model.end()) {
      CompletionRequest filled = WithDefaultModel(request, model);
      it = hashes_by_model.emplace(model, std::make_pair(RequestHash(filled), MaskedRequestHash(filled))).first;
    }
    return it->second;
  };
  std::lock_guard<std::mutex> lock(mutex_);
  auto take = [&](auto matches) -> std::optional<CassetteEntry> {
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (used_[i]) continue;
      const CassetteEntry& entry = entries_[i];
      if (recorded_ok_only && (entry.request_hash.empty() || !entry.reply.ok())) continue;
      if (!matches(entry)) continue;
      used_[i] = true;
      return entry;
    }
    return std::nullopt;
  };
  if (auto exact = take([&](const CassetteEntry& entry) {
        return entry.request_hash.empty() ? ContainsAll(request.messages, entry.match)
                                          : entry.request_hash == hashes_for(entry.model).first;
      })) {
    return exact;
  }
  if (request.tag.empty()) return std::nullopt;
  if (auto masked = take([&](const CassetteEntry& entry) {
        return !entry.masked_hash.empty() && entry.tag == request.tag &&
               entry.masked_hash == hashes_for(entry.model).second;
      })) {
    return masked;
  }
  return take([&](const CassetteEntry& entry) {
    return !entry.masked_hash.empty() && entry.tag == request.tag &&
           (request.model.empty() || entry.model == request.model) &&
           DifferInFewLines(entry.messages, request.messages);
  });
}

size_t CassetteEntries::unused() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t count = 0;
  for (bool used : used_) count += used ? 0 : 1;
  return count;
}

Result<std::unique_ptr<CassetteWriter>> CassetteWriter::Open(const std::filesystem::path& path) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  RETURN_IF_ERROR(RepairUnfinishedLastLine(path));
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IoError("cannot open cassette " + path.string() + ": " + std::strerror(errno));
  return std::unique_ptr<CassetteWriter>(new CassetteWriter(path, fd));
}

CassetteWriter::~CassetteWriter() { close(fd_); }

Status CassetteWriter::Append(const CompletionRequest& request, const Completion& reply) {
  std::string line = CassetteLine(request, reply) + "\n";
  std::lock_guard<std::mutex> lock(mutex_);
  size_t written = 0;
  while (written < line.size()) {
    ssize_t count = write(fd_, line.data() + written, line.size() - written);
    if (count < 0 && errno == EINTR) continue;
    if (count < 0) return Status::IoError("cannot append to cassette " + path_.string() + ": " + std::strerror(errno));
    written += static_cast<size_t>(count);
  }
  return Status::Ok();
}

}  // namespace kforge
