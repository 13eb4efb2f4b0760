// When two generated kernels are the same kernel: a network repeats its blocks, and each block's
// groups emit kernels that differ only in their names (the kernel's, its parameters' and locals',
// which come from IR node names) and comments. One of them serves every launch: Triton compiles
// and tunes it once.
#pragma once

#include <string>

namespace kforge::codegen {

// `source` (a kernel definition named `name`, with its decorators and leading comments) with
// comments dropped and the kernel's own names (the function, its parameters, names it assigns)
// renamed by order of first appearance. Names it does not bind (tl, attributes, globals such as
// helpers) are kept, so equal results mean the kernels compute the same thing from the same
// positional arguments.
std::string CanonicalKernel(const std::string& source, const std::string& name);

}  // namespace kforge::codegen
