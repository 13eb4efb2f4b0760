#include "eval/verdict.h"

#include <utility>

namespace kforge {

const char* ToString(VerdictKind kind) {
  switch (kind) {
    case VerdictKind::kAccepted: return "accepted";
    case VerdictKind::kCompileError: return "compile_error";
    case VerdictKind::kRuntimeError: return "runtime_error";
    case VerdictKind::kTimeout: return "timeout";
    case VerdictKind::kCrashed: return "crashed";
    case VerdictKind::kWrongOutput: return "wrong_output";
    case VerdictKind::kRejectedHack: return "rejected_hack";
    case VerdictKind::kInfraError: return "infra_error";
  }
  return "infra_error";
}

std::optional<VerdictKind> ParseVerdictKind(const std::string& text) {
  for (VerdictKind kind : {VerdictKind::kAccepted, VerdictKind::kCompileError, VerdictKind::kRuntimeError,
                           VerdictKind::kTimeout, VerdictKind::kCrashed, VerdictKind::kWrongOutput,
                           VerdictKind::kRejectedHack, VerdictKind::kInfraError}) {
    if (text == kforge::ToString(kind)) return kind;
  }
  return std::nullopt;
}

std::string Verdict::ToString() const {
  std::string text = kforge::ToString(kind);
  // A rejection names the check that fired; an infrastructure verdict may name its cause.
  if (kind == VerdictKind::kRejectedHack || (kind == VerdictKind::kInfraError && !check.empty())) {
    text += "(" + check + ")";
  }
  return text;
}

Verdict MakeVerdict(VerdictKind kind, std::string message) { return Verdict{kind, "", std::move(message)}; }

Verdict HackVerdict(std::string check, std::string message) {
  return Verdict{VerdictKind::kRejectedHack, std::move(check), std::move(message)};
}

}  // namespace kforge
