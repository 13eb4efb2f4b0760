// A task whose Model torch.export could not capture whole, as the worker captures it on request
// ("kforge-partial-1", python/kforge_worker/submodule_capture.py): why the Model did not export,
// the largest submodules that did (each a kforge-graph-1 graph), the parts that stay PyTorch with
// the reason, and the task's own code to run them. Malformed input is InvalidArgument naming the
// field; it never throws.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "core/json.h"

namespace kforge::ir {

inline constexpr const char* kPartialCaptureFormat = "kforge-partial-1";

struct CapturedSubmodule {
  std::string name;  // qualified, as in the Model's state dict ("layers.0")
  Graph graph;       // its parameters named relative to it ("0.weight")
};

struct KeptSubmodule {
  std::string name;
  std::string reason;  // why it stays PyTorch
};

// What stays PyTorch, and the code that runs it.
struct PyTorchRest {
  std::string export_error;  // "task.py:16: torch.export could not capture the Model (...)"
  std::vector<KeptSubmodule> kept;
  std::string forward_source;  // the task's code, every name it defines prefixed
  std::string forward_class;   // its copy of Model
};

struct PartialCapture {
  std::vector<CapturedSubmodule> submodules;  // in the Model's order; may be empty
  PyTorchRest rest;
};

bool IsPartialCapture(const Json& document);
// Imports every submodule's graph (ImportGraph); an error names the submodule.
Result<PartialCapture> ImportPartialCapture(const Json& document);

}  // namespace kforge::ir
