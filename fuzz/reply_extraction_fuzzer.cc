// The LLM reply extractor: any reply a model sends (garbage, unterminated fences, huge blocks)
// yields a candidate or a typed failure.
#include <cstddef>
#include <cstdint>
#include <string>

#include "agents/code_extraction.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string reply(reinterpret_cast<const char*>(data), size);
  (void)kforge::ExtractCandidate(reply);
  (void)kforge::ExtractDefining(reply, "Model");
  (void)kforge::DefinesClass(reply, "ModelNew");
  return 0;
}
