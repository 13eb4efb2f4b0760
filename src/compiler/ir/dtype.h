// Element types of IR tensors: the closed set the capture emits, with their JSON names
// ("float32"), short printed names ("f32") and sizes.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kforge::ir {

enum class DType {
  kFloat32,
  kFloat64,
  kFloat16,
  kBFloat16,
  kInt64,
  kInt32,
  kInt16,
  kInt8,
  kUInt8,
  kBool,
  kComplex64,
};

// The capture's name: "float32", "bfloat16", "bool".
const char* ToString(DType dtype);
// The printer's name: "f32", "bf16", "bool".
const char* ShortName(DType dtype);
// Parses a capture name; nullopt for anything else.
std::optional<DType> ParseDType(std::string_view text);
int64_t ElementSize(DType dtype);
bool IsFloatingPoint(DType dtype);

}  // namespace kforge::ir
