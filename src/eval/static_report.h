// The trusted worker's reply to "static_check" (server.py, static_checks.py), parsed once at the
// boundary: a syntax error, or the findings of the static rules. A renamed or missing key is an
// error here, never an empty list of findings that lets every candidate through.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/status.h"

namespace kforge {

struct StaticFinding {
  std::string check;  // the rule that fired ("threads", "missing_model_new", ...)
  int line = 0;
  std::string message;
};

struct StaticReport {
  struct SyntaxError {
    int line = 0;
    std::string message;
  };
  std::optional<SyntaxError> syntax_error;
  std::vector<StaticFinding> findings;
};

Result<StaticReport> ParseStaticReport(const Json& reply);

}  // namespace kforge
