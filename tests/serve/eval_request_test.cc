#include "serve/eval_request.h"

#include <functional>

#include <gtest/gtest.h>

#include "serve/access_tokens.h"

namespace kforge {
namespace {

const std::string kHash(64, 'a');

Result<std::vector<EvalSubmission>> Parse(const Json& body, bool batch = false) {
  return ParseEvalSubmissions(body, batch, ServiceLimits{}, EvalJobOptions{});
}

std::string ErrorOf(const Json& body, bool batch = false) {
  auto parsed = Parse(body, batch);
  return parsed.ok() ? "" : parsed.status().message();
}

TEST(EvalRequestTest, ParsesOneEvaluationWithOptions) {
  auto parsed = Parse({{"task_hash", kHash}, {"candidate", "class ModelNew: pass"},
                       {"options", {{"seeds", 5}, {"timeout_s", 30}, {"mode", "partial"}, {"precision", "tf32"}, {"timing", false}}}});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->size(), 1u);
  const EvalSubmission& one = parsed->front();
  EXPECT_EQ(one.task_hash, kHash);
  EXPECT_FALSE(one.task.has_value());
  EXPECT_EQ(one.options.seeds, 5);
  EXPECT_EQ(one.options.timeout_s, 30);
  EXPECT_EQ(one.options.mode, "partial");
  EXPECT_EQ(one.options.precision, "tf32");
  EXPECT_FALSE(one.options.timing);
}

TEST(EvalRequestTest, RefusesWhatItDoesNotKnowOrCannotUse) {
  EXPECT_NE(ErrorOf({{"task_hash", kHash}, {"candidate", "x"}, {"option", Json::object()}}).find("unknown field 'option'"),
            std::string::npos);
  EXPECT_NE(ErrorOf({{"task_hash", kHash}, {"candidate", "x"}, {"options", {{"seed", 2}}}}).find("unknown field 'seed'"),
            std::string::npos);
  EXPECT_NE(ErrorOf({{"candidate", "x"}}).find("exactly one of 'task' and 'task_hash'"), std::string::npos);
  EXPECT_NE(ErrorOf({{"task_hash", "ABC"}, {"candidate", "x"}}).find("64 lowercase hex"), std::string::npos);
  EXPECT_NE(ErrorOf({{"task_hash", kHash}, {"candidate", 3}}).find("'candidate' must be a string"), std::string::npos);
  EXPECT_NE(ErrorOf({{"task_hash", kHash}, {"candidate", ""}}).find("is empty"), std::string::npos);
  EXPECT_NE(ErrorOf({{"task_hash", kHash}, {"candidate", "x"}, {"options", {{"seeds", 2.5}}}}).find("options.seeds"),
            std::string::npos);
  EXPECT_NE(ErrorOf({{"task_hash", kHash}, {"candidate", "x"}, {"options", {{"mode", "loose"}}}}).find("options.mode"),
            std::string::npos);
  EXPECT_NE(ErrorOf({{"task_hash", kHash}, {"candidate", std::string((1 << 20) + 1, 'x')}}).find("over the service's limit"),
            std::string::npos);
  EXPECT_NE(ErrorOf(Json::array()).find("must be a JSON object"), std::string::npos);
}

TEST(EvalRequestTest, ParsesBothBatchForms) {
  auto shared = Parse({{"task_hash", kHash}, {"candidates", {"a", "b"}}, {"options", {{"seeds", 2}}}}, true);
  ASSERT_TRUE(shared.ok()) << shared.status().ToString();
  ASSERT_EQ(shared->size(), 2u);
  EXPECT_EQ((*shared)[1].candidate, "b");
  EXPECT_EQ((*shared)[1].options.seeds, 2);
  auto jobs = Parse({{"jobs", {{{"task_hash", kHash}, {"candidate", "a"}},
                               {{"task", {{"source", "class Model: pass"}, {"name", "t1"}}}, {"candidate", "b"}}}}},
                    true);
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  EXPECT_EQ((*jobs)[1].task->name, "t1");
  EXPECT_NE(ErrorOf({{"jobs", {{{"task_hash", kHash}}}}}, true).find("jobs[0]"), std::string::npos);
  EXPECT_NE(ErrorOf({{"task_hash", kHash}, {"candidates", Json::array()}}, true).find("non-empty"), std::string::npos);
  EXPECT_NE(ErrorOf({{"task_hash", kHash}, {"candidates", {"a", 1}}}, true).find("candidates[1]"), std::string::npos);
}

TEST(EvalRequestTest, TaskNamesCannotLeaveTheirFolder) {
  EXPECT_FALSE(ParseTaskSubmission({{"source", "class Model: pass"}, {"name", "../x"}}, {}).ok());
  EXPECT_FALSE(ParseTaskSubmission({{"source", "def f(): pass"}}, {}).ok());
  auto task = ParseTaskSubmission({{"source", "class Model: pass"}}, {});
  ASSERT_TRUE(task.ok());
  EXPECT_EQ(task->name, "task");
}

TEST(EvalRequestTest, ResultsQueryIsBounded) {
  auto query = ParseResultsQuery({{"ids", {1, 2}}, {"wait_s", 5}, {"evidence", false}}, 10, 60);
  ASSERT_TRUE(query.ok());
  EXPECT_EQ(query->ids, (std::vector<int64_t>{1, 2}));
  EXPECT_FALSE(query->evidence);
  EXPECT_FALSE(ParseResultsQuery({{"ids", {1}}, {"wait_s", 61}}, 10, 60).ok());
  EXPECT_FALSE(ParseResultsQuery({{"ids", Json::array()}}, 10, 60).ok());
  EXPECT_FALSE(ParseResultsQuery({{"ids", {"1"}}}, 10, 60).ok());
}

TEST(LeasedJobTest, WhatTheServiceWritesTheWorkerReadsBack) {
  LeasedJob job{7, "alice", std::string(64, 'a'), {"tiny", "import torch\n"}, "print(1)\n", EvalJobOptions{}};
  job.options.seeds = 5;
  job.options.precision = "tf32";
  auto read = ParseLeasedJob(LeasedJobToJson(job), ServiceLimits{});
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->id, 7);
  EXPECT_EQ(read->client, "alice");
  EXPECT_EQ(read->task_hash, job.task_hash);
  EXPECT_EQ(read->task.name, "tiny");
  EXPECT_EQ(read->task.source, "import torch\n");
  EXPECT_EQ(read->candidate, "print(1)\n");
  EXPECT_EQ(read->options.seeds, 5);
  EXPECT_EQ(read->options.precision, "tf32");
}

TEST(LeasedJobTest, ARenamedOrMistypedFieldIsRefusedByName) {
  const Json good = LeasedJobToJson(LeasedJob{7, "alice", std::string(64, 'a'), {"tiny", "x = 1\n"}, "y = 2\n", EvalJobOptions{}});
  auto refused = [&](const std::function<void(Json&)>& change, const std::string& naming) {
    Json body = good;
    change(body);
    auto read = ParseLeasedJob(body, ServiceLimits{});
    ASSERT_FALSE(read.ok()) << body.dump();
    EXPECT_NE(read.status().message().find(naming), std::string::npos) << read.status().message();
  };
  refused([](Json& b) { b["source"] = b["candidate"]; b.erase("candidate"); }, "'source'");
  refused([](Json& b) { b.erase("id"); }, "'id'");
  refused([](Json& b) { b["task"]["hash"] = "abc"; }, "'hash'");
  refused([](Json& b) { b["task"]["name"] = "../x"; }, "'name'");
  refused([](Json& b) { b["task"].erase("source"); }, "'source'");
  refused([](Json& b) { b["options"]["seeds"] = 0; }, "options.seeds");
  refused([](Json& b) { b["client"] = 3; }, "'client'");
}

TEST(LeaseResultTest, AnEvaluationOrAnErrorAndNothingElse) {
  Evaluation accepted;
  accepted.verdict.kind = VerdictKind::kAccepted;
  LeaseResult result;
  result.evaluation = accepted;
  result.fingerprint = {{"gpu", "H200"}};
  auto read = ParseLeaseResult(LeaseResultToJson(result));
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_TRUE(read->evaluation.has_value());
  EXPECT_EQ(read->evaluation->verdict.kind, VerdictKind::kAccepted);
  EXPECT_EQ(read->fingerprint, (Json{{"gpu", "H200"}}));
  auto error = ParseLeaseResult(LeaseResultToJson(LeaseResult{std::nullopt, Json(), "no GPU"}));
  ASSERT_TRUE(error.ok());
  EXPECT_FALSE(error->evaluation.has_value());
  EXPECT_EQ(error->error, "no GPU");

  EXPECT_FALSE(ParseLeaseResult(Json::object()).ok());
  EXPECT_FALSE(ParseLeaseResult({{"evaluation", accepted.ToJson()}, {"error", "both"}}).ok());
  EXPECT_FALSE(ParseLeaseResult({{"error", 5}}).ok());
  EXPECT_FALSE(ParseLeaseResult({{"evaluation", 3}}).ok());
  EXPECT_FALSE(ParseLeaseResult({{"evaluation", accepted.ToJson()}, {"fingerprint", "H200"}}).ok());
  EXPECT_FALSE(ParseLeaseResult({{"evaluation", accepted.ToJson()}, {"fingerprnt", Json::object()}}).ok());
}

TEST(AccessTokensTest, NamesTheClientOfAKnownBearerToken) {
  auto tokens = AccessTokens::Parse("# clients\n\nalice 0123456789abcdef-a\nbob 0123456789abcdef-b\n", "tokens");
  ASSERT_TRUE(tokens.ok()) << tokens.status().ToString();
  EXPECT_EQ(tokens->size(), 2u);
  EXPECT_EQ(tokens->ClientOf("Bearer 0123456789abcdef-b"), "bob");
  EXPECT_FALSE(tokens->ClientOf("Bearer 0123456789abcdef-c").has_value());
  EXPECT_FALSE(tokens->ClientOf("0123456789abcdef-a").has_value());
  EXPECT_FALSE(tokens->ClientOf("").has_value());
}

TEST(AccessTokensTest, RefusesMalformedFiles) {
  EXPECT_NE(AccessTokens::Parse("alice short\n", "f").status().message().find("f line 1: the token is shorter"),
            std::string::npos);
  EXPECT_NE(AccessTokens::Parse("alice\n", "f").status().message().find("expected"), std::string::npos);
  EXPECT_NE(AccessTokens::Parse("a 0123456789abcdef\nb 0123456789abcdef\n", "f").status().message().find("used twice"),
            std::string::npos);
  EXPECT_FALSE(AccessTokens::Parse("# nothing\n", "f").ok());
  EXPECT_TRUE(IsLoopback("127.0.0.1"));
  EXPECT_TRUE(IsLoopback("::1"));
  EXPECT_FALSE(IsLoopback("0.0.0.0"));
}

}  // namespace
}  // namespace kforge
