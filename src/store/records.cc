#include "store/records.h"

namespace kforge {

const char* ToString(EvaluationKind kind) {
  switch (kind) {
    case EvaluationKind::kCandidate: return "candidate";
    case EvaluationKind::kBaseline: return "baseline";
  }
  return "unknown";
}

Result<EvaluationKind> ParseEvaluationKind(const std::string& text) {
  for (EvaluationKind kind : {EvaluationKind::kCandidate, EvaluationKind::kBaseline}) {
    if (text == ToString(kind)) return kind;
  }
  return Status::InvalidArgument("unknown evaluation kind '" + text + "'; expected candidate or baseline");
}

std::string CanonicalJsonText(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace kforge
