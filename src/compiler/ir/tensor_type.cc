#include "compiler/ir/tensor_type.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

namespace kforge::ir {

Result<TensorType> TensorType::Make(Shape shape, DType dtype, std::vector<int64_t> stride) {
  TensorType type{std::move(shape), dtype, std::move(stride)};
  RETURN_IF_ERROR(type.Validate());
  return type;
}

Status TensorType::Validate() const {
  if (stride.size() != shape.size()) {
    return Status::InvalidArgument(
        fmt::format("stride has {} entries but the shape has rank {}", stride.size(), shape.size()));
  }
  for (int64_t dim : shape) {
    if (dim < 0) return Status::InvalidArgument("negative dimension in shape " + ShapeToString(shape));
  }
  for (int64_t step : stride) {
    if (step < 0) return Status::InvalidArgument("negative stride in " + ShapeToString(stride));
  }
  if (!CheckedNumel(shape)) return Status::InvalidArgument("element count of " + ShapeToString(shape) + " overflows");
  return Status::Ok();
}

Result<TensorType> TensorType::Contiguous(Shape shape, DType dtype) {
  std::vector<int64_t> stride = ContiguousStrides(shape);
  return Make(std::move(shape), dtype, std::move(stride));
}

int64_t TensorType::numel() const { return CheckedNumel(shape).value_or(0); }

bool TensorType::is_contiguous() const {
  if (numel() == 0) return true;
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 1) continue;
    if (stride[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

std::string TensorType::ToString() const {
  std::string text = std::string(ShortName(dtype)) + ShapeToString(shape);
  if (!is_contiguous()) text += "{" + fmt::format("{}", fmt::join(stride, ", ")) + "}";
  return text;
}

std::vector<int64_t> ContiguousStrides(const Shape& shape) {
  std::vector<int64_t> stride(shape.size(), 1);
  int64_t running = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    stride[i] = running;
    // An overflowing shape is rejected by Validate; the strides only need to stay defined.
    if (__builtin_mul_overflow(running, std::max<int64_t>(shape[i], 1), &running)) running = 1;
  }
  return stride;
}

std::vector<int64_t> BroadcastStrides(const TensorType& type, const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 0);
  size_t offset = shape.size() - type.shape.size();
  for (size_t d = 0; d < type.shape.size(); ++d) {
    if (type.shape[d] != 1) strides[offset + d] = type.stride[d];
  }
  return strides;
}

std::optional<int64_t> CheckedNumel(const Shape& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (__builtin_mul_overflow(count, dim, &count)) return std::nullopt;
  }
  return count;
}

std::optional<Shape> BroadcastShapes(const Shape& a, const Shape& b) {
  const Shape& longer = a.size() >= b.size() ? a : b;
  const Shape& shorter = a.size() >= b.size() ? b : a;
  Shape result = longer;
  size_t offset = longer.size() - shorter.size();
  for (size_t i = 0; i < shorter.size(); ++i) {
    int64_t x = longer[offset + i];
    int64_t y = shorter[i];
    if (x != y && x != 1 && y != 1) return std::nullopt;
    result[offset + i] = x == 1 ? y : x;
  }
  return result;
}

std::string ShapeToString(const std::vector<int64_t>& dims) { return fmt::format("[{}]", fmt::join(dims, ", ")); }

}  // namespace kforge::ir
