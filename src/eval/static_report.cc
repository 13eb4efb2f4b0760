#include "eval/static_report.h"

namespace kforge {

Result<StaticReport> ParseStaticReport(const Json& reply) {
  if (!reply.is_object()) return Status::Internal("the trusted worker's static checks are not a JSON object");
  JsonReader read(reply, "the trusted worker's static checks");
  StaticReport report;
  if (Json error = read.Loose("syntax_error"); !error.is_null()) {
    JsonReader fields(error, "the static checks' syntax error");
    StaticReport::SyntaxError syntax;
    ASSIGN_OR_RETURN(syntax.line, fields.Required<int>("line"));
    ASSIGN_OR_RETURN(syntax.message, fields.Required<std::string>("message"));
    report.syntax_error = std::move(syntax);
  }
  ASSIGN_OR_RETURN(Json findings, read.List("findings"));
  for (const Json& entry : findings) {
    JsonReader fields(entry, "a static finding");
    StaticFinding finding;
    ASSIGN_OR_RETURN(finding.check, fields.Required<std::string>("check"));
    ASSIGN_OR_RETURN(finding.line, fields.Required<int>("line"));
    ASSIGN_OR_RETURN(finding.message, fields.Required<std::string>("message"));
    report.findings.push_back(std::move(finding));
  }
  return report;
}

}  // namespace kforge
