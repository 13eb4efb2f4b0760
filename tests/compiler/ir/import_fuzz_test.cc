// Fuzz-ish robustness: every golden graph, truncated or with any field replaced by a value of
// the wrong type, must import to a Status, never an exception or a crash.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/ir/import_graph.h"
#include "compiler/ir/printer.h"
#include "core/files.h"
#include "golden_files.h"

namespace kforge::ir {
namespace {

// JSON pointers to every element of `json`, containers included.
void CollectPointers(const Json& json, const Json::json_pointer& at, std::vector<Json::json_pointer>& out) {
  out.push_back(at);
  if (json.is_object()) {
    for (auto it = json.begin(); it != json.end(); ++it) CollectPointers(it.value(), at / it.key(), out);
  } else if (json.is_array()) {
    for (size_t i = 0; i < json.size(); ++i) CollectPointers(json[i], at / i, out);
  }
}

// Imports `document`; a success must print and a failure must be InvalidArgument.
void ExpectStatusNotCrash(const Json& document, const std::string& label) {
  Result<Graph> graph = ImportGraph(document);
  if (graph.ok()) {
    EXPECT_FALSE(PrintGraph(*graph).empty()) << label;
  } else {
    EXPECT_EQ(graph.status().code(), StatusCode::kInvalidArgument) << label << ": " << graph.status().ToString();
  }
}

std::vector<Json> WrongValues() {
  return {Json(),
          Json(7),
          Json(-1),
          Json(2.5),
          Json("s"),
          Json(true),
          Json::array(),
          Json::object(),
          Json::array({1, "a"}),
          Json(18446744073709551615ull),
          Json("\xff\xfe")};
}

TEST(ImportFuzzTest, EveryFieldReplacedByAWrongTypeIsAStatus) {
  for (const auto& path : testing::GoldenGraphs()) {
    Json document = ParseJson(ReadFile(path).value(), path.string()).value();
    std::vector<Json::json_pointer> pointers;
    CollectPointers(document, Json::json_pointer(), pointers);
    for (const Json::json_pointer& pointer : pointers) {
      for (const Json& wrong : WrongValues()) {
        Json mutated = document;
        mutated[pointer] = wrong;
        ExpectStatusNotCrash(mutated, path.filename().string() + " " + pointer.to_string());
      }
    }
  }
}

TEST(ImportFuzzTest, EveryObjectKeyRemovedIsAStatus) {
  for (const auto& path : testing::GoldenGraphs()) {
    Json document = ParseJson(ReadFile(path).value(), path.string()).value();
    std::vector<Json::json_pointer> pointers;
    CollectPointers(document, Json::json_pointer(), pointers);
    for (const Json::json_pointer& pointer : pointers) {
      if (pointer.empty()) continue;
      Json mutated = document;
      Json& parent = mutated[pointer.parent_pointer()];
      if (parent.is_object()) parent.erase(pointer.back());
      if (parent.is_array()) parent.erase(static_cast<size_t>(std::stoul(pointer.back())));
      ExpectStatusNotCrash(mutated, path.filename().string() + " without " + pointer.to_string());
    }
  }
}

TEST(ImportFuzzTest, TruncatedTextIsAnError) {
  for (const auto& path : testing::GoldenGraphs()) {
    std::string text = ReadFile(path).value();
    for (size_t length = 0; length + 1 < text.size(); length += 7) {
      Result<Graph> graph = ImportGraphText(text.substr(0, length), path.filename().string());
      EXPECT_FALSE(graph.ok()) << path << " cut at " << length;
    }
  }
}

}  // namespace
}  // namespace kforge::ir
