// The declared precision policy: what arithmetic a candidate may use and how close its outputs
// must be. The same policy applies to the baseline's timing (tf32 flags, bf16 autocast).
#pragma once

#include <optional>
#include <string>

namespace kforge {

enum class Precision { kFp32, kTf32, kBf16 };

const char* ToString(Precision precision);
std::optional<Precision> ParsePrecision(const std::string& text);

// An element passes when |out - ref| <= rtol * |ref| + atol * rms(ref).
struct Tolerance {
  double rtol;
  double atol;
};

Tolerance ToleranceFor(Precision precision);

}  // namespace kforge
