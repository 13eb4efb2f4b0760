// The prompt templates kernel writers fill: Markdown files named by their path under a prompt
// folder without ".md" ("system", "write", "knowledge/2_row_softmax"). `{{name}}` is replaced by a
// value; `{{#name}} ... {{/name}}` keeps its text only when the value of `name` is not empty.
// Every placeholder must be given a value (possibly empty): a missing template or value is an
// InvalidArgument naming it. Values are inserted verbatim, never scanned again. Immutable once
// loaded, so one library serves many threads.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace kforge {

using PromptValues = std::map<std::string, std::string>;

class PromptLibrary {
 public:
  // Every *.md under `dir`, recursively; files under `overrides` (a user's folder) replace
  // those of the same name and may add new ones. NotFound when `dir` (or a given `overrides`)
  // is not a folder.
  static Result<PromptLibrary> Load(const std::filesystem::path& dir,
                                    const std::optional<std::filesystem::path>& overrides = std::nullopt);
  // A library from templates held in memory, by name.
  explicit PromptLibrary(std::map<std::string, std::string> templates) : templates_(std::move(templates)) {}

  bool Has(const std::string& name) const { return templates_.count(name) > 0; }
  // The template's text as written.
  Result<std::string> Raw(const std::string& name) const;
  // The template with its sections resolved and placeholders filled from `values`.
  Result<std::string> Render(const std::string& name, const PromptValues& values) const;
  // Names under a folder ("knowledge/"), sorted.
  std::vector<std::string> NamesUnder(const std::string& prefix) const;

 private:
  std::map<std::string, std::string> templates_;
};

// Fills `text` as Render does; `what` names the template in errors.
Result<std::string> FillTemplate(const std::string& text, const PromptValues& values, const std::string& what);

// The folder of built-in prompts: $KFORGE_PROMPTS, next to the executable (bundles), or the source
// tree kforge was built from. NotFound when none holds system.md.
Result<std::filesystem::path> FindPromptDir(const std::map<std::string, std::string>& env);

}  // namespace kforge
