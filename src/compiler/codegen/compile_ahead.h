// Compiling a generated file's Triton kernels all at once before the first call. Triton compiles
// a kernel at its first launch, and an autotuned kernel once per configuration as it measures
// them, one after another: minutes for a network of a hundred kernels. A ModelNew that declares
// `kf_compile_ahead` lets the evaluator's harness (python/kforge_worker/compile_ahead.py) run the
// named forward once with every launch replaced by a compile, all of them on a thread pool, before
// the first call. The compiler declares it only where that forward is safe to run with its
// kernels switched off.
#pragma once

#include <string>
#include <vector>

#include "compiler/codegen/source_writer.h"
#include "compiler/ir/op_registry.h"

namespace kforge::codegen {

// Whether an ATen call of kind `kind` is safe in a forward whose kernels are switched off, where
// every tensor a kernel computes holds whatever its memory held: no kind that reads such values
// as indices (a gather can fault the device) or that the compiler knows nothing about.
bool SafeOnUnwrittenTensors(ir::OpKind kind);

// Writes the class attribute: the method that launches the kernels (`forward`) and the parameters
// and buffers it updates in place (`restores`, state-dict names), which the harness puts back.
void EmitCompileAheadDeclaration(SourceWriter& out, const std::string& forward, const std::vector<std::string>& restores);

}  // namespace kforge::codegen
