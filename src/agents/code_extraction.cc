#include "agents/code_extraction.h"

#include <fmt/format.h>

#include <sstream>
#include <vector>

namespace kforge {
namespace {

struct Block {
  std::string body;
  int opened_at = 0;  // 1-based line of the opening fence
  bool closed = false;
};

std::string Trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  size_t end = text.find_last_not_of(" \t\r");
  return text.substr(begin, end - begin + 1);
}

// The info string after an opening fence ("python" for "```python"), or nullopt when `line` is
// not a fence at all.
std::optional<std::string> FenceInfo(const std::string& line) {
  std::string trimmed = Trim(line);
  if (trimmed.rfind("```", 0) != 0) return std::nullopt;
  size_t ticks = trimmed.find_first_not_of('`');
  return ticks == std::string::npos ? "" : Trim(trimmed.substr(ticks));
}

bool IsPythonInfo(const std::string& info) {
  std::string word = info.substr(0, info.find_first_of(" \t{"));
  for (char& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return word.empty() || word == "python" || word == "py" || word == "python3";
}

// Every fenced block in order, Python or not; `python` tells which ones count.
std::vector<Block> FencedBlocks(const std::string& reply, std::vector<bool>& python) {
  std::vector<Block> blocks;
  std::istringstream in(reply);
  std::string line;
  bool inside = false;
  for (int number = 1; std::getline(in, line); ++number) {
    if (!inside) {
      auto info = FenceInfo(line);
      if (!info) continue;
      blocks.push_back({"", number, false});
      python.push_back(IsPythonInfo(*info));
      inside = true;
    } else if (Trim(line).find_first_not_of('`') == std::string::npos && Trim(line).size() >= 3) {
      blocks.back().closed = true;
      inside = false;
    } else {
      blocks.back().body += line + "\n";
    }
  }
  return blocks;
}

Extraction Fail(ExtractionFailure failure, std::string message, int blocks) {
  Extraction extraction;
  extraction.failure = failure;
  extraction.message = std::move(message);
  extraction.blocks = blocks;
  return extraction;
}

std::string FormatRule(const std::string& class_name) {
  return class_name == "ModelNew"
             ? "Reply with the complete program in one fenced block that starts with ```python and ends with ```, "
               "defining `class ModelNew(nn.Module)` and every kernel it launches."
             : fmt::format("Reply with the complete program in one fenced block that starts with ```python and ends "
                           "with ```, defining `class {}(nn.Module)` and everything it needs.", class_name);
}

}  // namespace

const char* ToString(ExtractionFailure failure) {
  switch (failure) {
    case ExtractionFailure::kNoCodeBlock: return "no_code_block";
    case ExtractionFailure::kNoModelNew: return "no_model_new";
    case ExtractionFailure::kUnterminatedFence: return "unterminated_fence";
  }
  return "unknown";
}

bool DefinesClass(const std::string& source, const std::string& class_name) {
  const std::string head = "class " + class_name;
  std::istringstream in(source);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(head, 0) != 0) continue;
    char next = line.size() > head.size() ? line[head.size()] : '\0';
    if (next == '(' || next == ':' || next == ' ') return true;
  }
  return false;
}

bool DefinesModelNew(const std::string& source) { return DefinesClass(source, "ModelNew"); }

Extraction ExtractCandidate(const std::string& reply) { return ExtractDefining(reply, "ModelNew"); }

Extraction ExtractDefining(const std::string& reply, const std::string& class_name) {
  const std::string format = FormatRule(class_name);
  std::vector<bool> python;
  std::vector<Block> blocks = FencedBlocks(reply, python);
  int complete = 0;
  const Block* chosen = nullptr;
  const Block* unterminated = nullptr;
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (!blocks[i].closed) {
      unterminated = &blocks[i];
      continue;
    }
    if (!python[i]) continue;
    ++complete;
    if (DefinesClass(blocks[i].body, class_name)) chosen = &blocks[i];
  }
  if (chosen) {
    Extraction extraction;
    extraction.source = chosen->body;
    extraction.blocks = complete;
    return extraction;
  }
  if (unterminated) {
    return Fail(ExtractionFailure::kUnterminatedFence,
                fmt::format("Your reply was cut off: the code block opened at line {} was never closed, so the "
                            "program is incomplete. Keep it shorter: no explanation outside the block, no unused "
                            "kernels or commented-out variants. {}", unterminated->opened_at, format),
                complete);
  }
  if (complete == 0) {
    return Fail(ExtractionFailure::kNoCodeBlock,
                "Your reply contained no fenced Python code block, so there was no program to evaluate. " + format,
                0);
  }
  return Fail(ExtractionFailure::kNoModelNew,
              fmt::format("Your reply had {} Python code block(s) but none defines `class {}` at the top level "
                          "(a fragment alone cannot be run). {}", complete, class_name, format),
              complete);
}

}  // namespace kforge
