// The static type of one IR tensor: shape, element type and strides (in elements). Only static
// shapes exist; TensorType::Make is the validated way to build one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/dtype.h"
#include "core/status.h"

namespace kforge::ir {

using Shape = std::vector<int64_t>;

struct TensorType {
  Shape shape;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> stride;

  // Fails when a dimension or stride is negative, the stride's length is not the rank, or the
  // element count overflows int64.
  static Result<TensorType> Make(Shape shape, DType dtype, std::vector<int64_t> stride);
  // A row-major contiguous tensor.
  static Result<TensorType> Contiguous(Shape shape, DType dtype);
  // The checks Make applies, for a type built field by field.
  Status Validate() const;

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t numel() const;
  int64_t bytes() const { return numel() * ElementSize(dtype); }
  // PyTorch's rule: dimensions of size 1 may have any stride; an empty tensor is contiguous.
  bool is_contiguous() const;
  // "f32[8, 64]", with "{1, 64}" appended when the strides are not contiguous.
  std::string ToString() const;

  bool operator==(const TensorType&) const = default;
};

// Row-major strides for `shape`.
std::vector<int64_t> ContiguousStrides(const Shape& shape);
// `type`'s strides over the dims of `shape`, which it broadcasts to (aligned at the right): its own
// stride where it has the dim with a size other than 1, 0 where it broadcasts.
std::vector<int64_t> BroadcastStrides(const TensorType& type, const Shape& shape);
// The element count, or nullopt when it overflows int64 (shape must be non-negative).
std::optional<int64_t> CheckedNumel(const Shape& shape);
// NumPy broadcasting of two shapes; nullopt when they do not broadcast.
std::optional<Shape> BroadcastShapes(const Shape& a, const Shape& b);
// "[8, 64]".
std::string ShapeToString(const std::vector<int64_t>& dims);

}  // namespace kforge::ir
