// Pulls the candidate program out of a model's reply: the fenced Python block (```python, ```py
// or a bare ```) that defines `class ModelNew`, the last one when several do. A reply without
// one is a typed failure whose message is written to be fed back to the model. Pure functions.
#pragma once

#include <optional>
#include <string>

namespace kforge {

enum class ExtractionFailure {
  kNoCodeBlock,        // no fenced Python block at all
  kNoModelNew,         // blocks, but none defines class ModelNew (or the class asked for)
  kUnterminatedFence,  // a block was opened and never closed: the reply was cut off
};

// "no_code_block", "no_model_new", "unterminated_fence".
const char* ToString(ExtractionFailure failure);

struct Extraction {
  std::optional<ExtractionFailure> failure;
  std::string source;   // the program, ending in a newline; empty on failure
  std::string message;  // on failure: what went wrong and what to send instead, addressed to the model
  int blocks = 0;       // complete Python blocks found

  bool ok() const { return !failure.has_value(); }
};

Extraction ExtractCandidate(const std::string& reply);
// The same for a block that defines `class <class_name>` ("Model" for a task the model writes);
// kNoModelNew then means no block defines that class.
Extraction ExtractDefining(const std::string& reply, const std::string& class_name);

// Whether `source` defines `class <class_name>` (`class ModelNew`) at the top level.
bool DefinesClass(const std::string& source, const std::string& class_name);
bool DefinesModelNew(const std::string& source);

}  // namespace kforge
