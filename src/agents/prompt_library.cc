#include "agents/prompt_library.h"

#include <cctype>

#include "core/files.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// A tag at `pos` ("{{name}}", "{{#name}}" or "{{/name}}"): its sigil ('\0', '#' or '/'), name
// and length. Anything else that starts with "{{" is plain text.
struct Tag {
  char sigil = '\0';
  std::string name;
  size_t length = 0;
};

std::optional<Tag> TagAt(const std::string& text, size_t pos) {
  if (text.compare(pos, 2, "{{") != 0) return std::nullopt;
  Tag tag;
  size_t i = pos + 2;
  if (i < text.size() && (text[i] == '#' || text[i] == '/')) tag.sigil = text[i++];
  size_t start = i;
  while (i < text.size() && IsNameChar(text[i])) ++i;
  if (i == start || text.compare(i, 2, "}}") != 0) return std::nullopt;
  tag.name = text.substr(start, i - start);
  tag.length = i + 2 - pos;
  return tag;
}

// A section tag alone on its line takes its line break with it, so that an omitted section
// leaves no blank line behind.
size_t SwallowLineBreak(const std::string& text, size_t tag_start, size_t after) {
  bool line_start = tag_start == 0 || text[tag_start - 1] == '\n';
  return line_start && after < text.size() && text[after] == '\n' ? after + 1 : after;
}

Result<std::string> Expand(const std::string& text, const PromptValues& values, const std::string& what) {
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t open = text.find("{{", pos);
    if (open == std::string::npos) break;
    auto tag = TagAt(text, open);
    if (!tag) {
      out.append(text, pos, open + 2 - pos);
      pos = open + 2;
      continue;
    }
    out.append(text, pos, open - pos);
    if (tag->sigil == '/') return Status::InvalidArgument(what + ": {{/" + tag->name + "}} closes no open section");
    auto value = values.find(tag->name);
    if (tag->sigil == '\0') {
      out += value->second;
      pos = open + tag->length;
      continue;
    }
    const std::string closing = "{{/" + tag->name + "}}";
    size_t close = text.find(closing, open + tag->length);
    if (close == std::string::npos) return Status::InvalidArgument(what + ": section {{#" + tag->name + "}} is never closed");
    size_t inner = SwallowLineBreak(text, open, open + tag->length);
    if (!value->second.empty()) {
      ASSIGN_OR_RETURN(std::string expanded, Expand(text.substr(inner, close - inner), values, what));
      out += expanded;
    }
    pos = SwallowLineBreak(text, close, close + closing.size());
  }
  if (pos < text.size()) out.append(text, pos, std::string::npos);
  return out;
}

// Every placeholder and section of `text` needs a value, including those inside sections that
// this particular filling leaves out, so that a template's mistakes show on every use.
Status CheckValues(const std::string& text, const PromptValues& values, const std::string& what) {
  for (size_t open = text.find("{{"); open != std::string::npos; open = text.find("{{", open + 2)) {
    auto tag = TagAt(text, open);
    if (tag && !values.count(tag->name)) {
      return Status::InvalidArgument(what + ": no value for {{" + tag->name + "}} (every placeholder must be filled)");
    }
  }
  return Status::Ok();
}

Status AddFolder(const fs::path& dir, std::map<std::string, std::string>& templates) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::NotFound("no prompt folder at " + dir.string());
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file() || it->path().extension() != ".md") continue;
    fs::path relative = fs::relative(it->path(), dir);
    ASSIGN_OR_RETURN(std::string text, ReadFile(it->path()));
    templates[relative.replace_extension().generic_string()] = std::move(text);
  }
  if (ec) return Status::IoError("cannot list the prompt folder " + dir.string() + ": " + ec.message());
  return Status::Ok();
}

}  // namespace

Result<PromptLibrary> PromptLibrary::Load(const fs::path& dir, const std::optional<fs::path>& overrides) {
  std::map<std::string, std::string> templates;
  RETURN_IF_ERROR(AddFolder(dir, templates));
  if (overrides) RETURN_IF_ERROR(AddFolder(*overrides, templates));
  return PromptLibrary(std::move(templates));
}

Result<std::string> PromptLibrary::Raw(const std::string& name) const {
  auto it = templates_.find(name);
  if (it == templates_.end()) return Status::InvalidArgument("no prompt template named '" + name + "' (" + name + ".md)");
  return it->second;
}

Result<std::string> PromptLibrary::Render(const std::string& name, const PromptValues& values) const {
  ASSIGN_OR_RETURN(std::string text, Raw(name));
  return FillTemplate(text, values, "prompt template '" + name + "'");
}

std::vector<std::string> PromptLibrary::NamesUnder(const std::string& prefix) const {
  std::vector<std::string> names;
  for (const auto& [name, text] : templates_) {
    if (name.rfind(prefix, 0) == 0) names.push_back(name);
  }
  return names;
}

Result<std::string> FillTemplate(const std::string& text, const PromptValues& values, const std::string& what) {
  RETURN_IF_ERROR(CheckValues(text, values, what));
  return Expand(text, values, what);
}

Result<fs::path> FindPromptDir(const std::map<std::string, std::string>& env) {
  std::vector<fs::path> candidates;
  if (auto it = env.find("KFORGE_PROMPTS"); it != env.end() && !it->second.empty()) candidates.emplace_back(it->second);
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(self.parent_path() / "prompts");
    candidates.push_back(self.parent_path().parent_path() / "prompts");
  }
  candidates.emplace_back(fs::path(KFORGE_SOURCE_DIR) / "prompts");
  for (const fs::path& dir : candidates) {
    if (fs::exists(dir / "system.md", ec)) return fs::absolute(dir, ec);
  }
  return Status::NotFound("cannot find kforge's prompt templates (system.md); set KFORGE_PROMPTS to the folder that "
                          "holds them (the repository's prompts/ folder)");
}

}  // namespace kforge
