// The one typed verdict every evaluation ends in (ARCHITECTURE.md, "Verdict"). A failed
// candidate is data: only kInfraError means kforge itself failed.
#pragma once

#include <optional>
#include <string>

namespace kforge {

enum class VerdictKind {
  kAccepted,
  kCompileError,
  kRuntimeError,
  kTimeout,
  kCrashed,
  kWrongOutput,
  kRejectedHack,
  kInfraError,
};

const char* ToString(VerdictKind kind);
std::optional<VerdictKind> ParseVerdictKind(const std::string& text);

struct Verdict {
  VerdictKind kind = VerdictKind::kInfraError;
  std::string check;    // for kRejectedHack: which check fired; for kInfraError, optionally why ("does_not_fit")
  std::string message;  // what happened, in words a developer can act on

  // "accepted", "wrong_output", "rejected_hack(input_mutation)", "infra_error(does_not_fit)".
  std::string ToString() const;
  bool accepted() const { return kind == VerdictKind::kAccepted; }
};

Verdict MakeVerdict(VerdictKind kind, std::string message);
Verdict HackVerdict(std::string check, std::string message);

}  // namespace kforge
