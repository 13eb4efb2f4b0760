// The graph JSON importer: any text the capture step hands over (it comes from a worker that
// imported a user's or a model's task) imports as a graph or fails with a Status.
#include <cstddef>
#include <cstdint>
#include <string>

#include "compiler/ir/import_graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto graph = kforge::ir::ImportGraphText(text, "fuzz");
  (void)graph;
  return 0;
}
