#include "store/records.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

TEST(RecordsTest, EvaluationKindRoundTrips) {
  for (EvaluationKind kind : {EvaluationKind::kCandidate, EvaluationKind::kBaseline}) {
    auto parsed = ParseEvaluationKind(ToString(kind));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, kind);
  }
  EXPECT_EQ(ParseEvaluationKind("Candidate").status().code(), StatusCode::kInvalidArgument);
}

TEST(RecordsTest, CanonicalJsonTextIsCompactAndSorted) {
  Json a = {{"torch", "2.11.0"}, {"gpu", {{"name", "H200"}, {"count", 1}}}};
  Json b = Json::parse(R"({ "gpu": {"count": 1, "name": "H200"}, "torch": "2.11.0" })");
  EXPECT_EQ(CanonicalJsonText(a), R"({"gpu":{"count":1,"name":"H200"},"torch":"2.11.0"})");
  EXPECT_EQ(CanonicalJsonText(a), CanonicalJsonText(b));
}

TEST(RecordsTest, CanonicalJsonTextReplacesInvalidUtf8) {
  Json value = {{"stderr", std::string("bad \xff byte")}};
  EXPECT_EQ(CanonicalJsonText(value), "{\"stderr\":\"bad \xEF\xBF\xBD byte\"}");
}

}  // namespace
}  // namespace kforge
