// Canonicalization: composite ops rewritten into the primitive ops the kernel emitters know
// (reductions, pointwise ops, matmuls, metadata views), so that fusion sees through them.
//   softmax, log_softmax          -> amax, sub, exp, sum, div (log, sub)
//   layer, group, batch norm      -> sum, mul by 1/n, sub, rsqrt, mul, add (views for groups and channels);
//   (instance norm: batch norm without running statistics over x viewed [1, N * C, ...])
//                                    over rows the reduction splits, var_mean and one normalizing pass;
//                                    training batch norm, var_mean per (image, channel) merged over images,
//                                    and its running statistics: momentum * batch + (1 - momentum) * running,
//                                    the variance unbiased by n / (n - 1)
//   gather of a log_softmax       -> gather of its input minus max and log-sum (one index per row)
//   sum of a boolean tensor       -> an fp32 sum of it cast, cast back to int64 (fewer than 2^24 elements)
//   mean, vector 1/2/inf-norms    -> sum (abs, amax) and pointwise
//   min.dim, argmin               -> max.dim, argmax of the negation (values negated back)
//   3-D max and average pooling   -> a 2-D pooling over (H, W), then one over D with a (kd, 1) window
//   addmm                         -> mm plus a bias add (and the alpha/beta scales)
//   mm by a column vector         -> a row reduction of products
//   clone and same-type _to_copy  -> the input itself, unless the copy is a graph output that
//                                    would alias an input or another output
//   scalar_tensor                 -> its number, inlined into the pointwise ops that read it
// and one composition back:
//   a * tanh(softplus(a)) captured -> mish(a), whose kernel takes one exponential and one division
// An op whose form is not handled (a used statistics output, a half-precision softmax, an
// unsupported norm order) is kept unchanged.
#pragma once

#include "compiler/ir/graph.h"
#include "core/status.h"

namespace kforge::passes {

Result<ir::Graph> Decompose(const ir::Graph& graph);

}  // namespace kforge::passes
