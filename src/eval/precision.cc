#include "eval/precision.h"

namespace kforge {

const char* ToString(Precision precision) {
  switch (precision) {
    case Precision::kFp32: return "fp32";
    case Precision::kTf32: return "tf32";
    case Precision::kBf16: return "bf16";
  }
  return "fp32";
}

std::optional<Precision> ParsePrecision(const std::string& text) {
  if (text == "fp32") return Precision::kFp32;
  if (text == "tf32") return Precision::kTf32;
  if (text == "bf16") return Precision::kBf16;
  return std::nullopt;
}

Tolerance ToleranceFor(Precision precision) {
  switch (precision) {
    // fp32 reorderings (blocked sums, fused multiply-adds) land near 1e-6 of the output's rms;
    // tf32 operands (10-bit mantissa) near 5e-4; bf16 operands (7-bit) near 4e-3.
    case Precision::kFp32: return {1e-4, 1e-4};
    case Precision::kTf32: return {2e-3, 5e-3};
    case Precision::kBf16: return {1.6e-2, 3e-2};
  }
  return {1e-4, 1e-4};
}

}  // namespace kforge
