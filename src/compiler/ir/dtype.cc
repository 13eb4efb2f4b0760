#include "compiler/ir/dtype.h"

namespace kforge::ir {
namespace {

struct DTypeFacts {
  DType dtype;
  const char* name;
  const char* short_name;
  int64_t size;
  bool floating;
};

constexpr DTypeFacts kDTypes[] = {
    {DType::kFloat32, "float32", "f32", 4, true},      {DType::kFloat64, "float64", "f64", 8, true},
    {DType::kFloat16, "float16", "f16", 2, true},      {DType::kBFloat16, "bfloat16", "bf16", 2, true},
    {DType::kInt64, "int64", "i64", 8, false},         {DType::kInt32, "int32", "i32", 4, false},
    {DType::kInt16, "int16", "i16", 2, false},         {DType::kInt8, "int8", "i8", 1, false},
    {DType::kUInt8, "uint8", "u8", 1, false},          {DType::kBool, "bool", "bool", 1, false},
    {DType::kComplex64, "complex64", "c64", 8, false},
};

const DTypeFacts& FactsOf(DType dtype) {
  for (const DTypeFacts& facts : kDTypes) {
    if (facts.dtype == dtype) return facts;
  }
  return kDTypes[0];  // unreachable: the table covers the enum
}

}  // namespace

const char* ToString(DType dtype) { return FactsOf(dtype).name; }
const char* ShortName(DType dtype) { return FactsOf(dtype).short_name; }
int64_t ElementSize(DType dtype) { return FactsOf(dtype).size; }
bool IsFloatingPoint(DType dtype) { return FactsOf(dtype).floating; }

std::optional<DType> ParseDType(std::string_view text) {
  for (const DTypeFacts& facts : kDTypes) {
    if (text == facts.name) return facts.dtype;
  }
  return std::nullopt;
}

}  // namespace kforge::ir
