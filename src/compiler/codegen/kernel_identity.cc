#include "compiler/codegen/kernel_identity.h"

#include <cctype>
#include <map>
#include <set>
#include <sstream>
#include <vector>

namespace kforge::codegen {
namespace {

bool IsNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The line without its comment (a '#' outside string literals) and trailing spaces.
std::string WithoutComment(const std::string& line) {
  char quote = 0;
  size_t end = line.size();
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#') {
      end = i;
      break;
    }
  }
  while (end > 0 && std::isspace(static_cast<unsigned char>(line[end - 1]))) --end;
  return line.substr(0, end);
}

// The name a statement starts with when it binds one ("x = ...", "x += ...", "for x in ...").
std::string BoundName(const std::string& line) {
  size_t i = line.find_first_not_of(' ');
  if (i == std::string::npos) return "";
  if (line.compare(i, 4, "for ") == 0) i += 4;
  size_t start = i;
  while (i < line.size() && IsNameChar(line[i])) ++i;
  if (i == start || !IsNameStart(line[start])) return "";
  std::string name = line.substr(start, i - start);
  size_t next = line.find_first_not_of(' ', i);
  if (next == std::string::npos) return "";
  if (line.compare(next, 3, "in ") == 0 && line.compare(line.find_first_not_of(' '), 4, "for ") == 0) return name;
  if (line[next] == '=' && line.compare(next, 2, "==") != 0) return name;
  if (next + 1 < line.size() && line[next + 1] == '=' && std::string("+-*/%&|^").find(line[next]) != std::string::npos) {
    return name;
  }
  return "";
}

// The parameter names of "def name(a, b: tl.constexpr, ...):".
std::vector<std::string> Parameters(const std::string& def_line) {
  std::vector<std::string> names;
  size_t open = def_line.find('('), close = def_line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return names;
  std::stringstream list(def_line.substr(open + 1, close - open - 1));
  for (std::string item; std::getline(list, item, ',');) {
    size_t start = item.find_first_not_of(' ');
    if (start == std::string::npos) continue;
    size_t end = start;
    while (end < item.size() && IsNameChar(item[end])) ++end;
    names.push_back(item.substr(start, end - start));
  }
  return names;
}

}  // namespace

std::string CanonicalKernel(const std::string& source, const std::string& name) {
  std::vector<std::string> lines;
  std::set<std::string> bound = {name};
  std::istringstream in(source);
  for (std::string line; std::getline(in, line);) {
    line = WithoutComment(line);
    if (line.find_first_not_of(' ') == std::string::npos) continue;
    if (line.compare(0, 4 + name.size(), "def " + name) == 0) {
      for (const std::string& parameter : Parameters(line)) bound.insert(parameter);
    }
    if (std::string local = BoundName(line); !local.empty()) bound.insert(local);
    lines.push_back(line);
  }
  std::map<std::string, std::string> renamed;
  std::string out;
  for (const std::string& line : lines) {
    for (size_t i = 0; i < line.size();) {
      const bool after_dot = i > 0 && line[i - 1] == '.';
      if (!IsNameStart(line[i]) || (i > 0 && IsNameChar(line[i - 1]))) {
        out += line[i++];
        continue;
      }
      size_t end = i;
      while (end < line.size() && IsNameChar(line[end])) ++end;
      std::string word = line.substr(i, end - i);
      if (!after_dot && bound.count(word)) {
        auto [it, fresh] = renamed.emplace(word, "");
        if (fresh) it->second = "v" + std::to_string(renamed.size());
        out += it->second;
      } else {
        out += word;
      }
      i = end;
    }
    out += '\n';
  }
  return out;
}

}  // namespace kforge::codegen
