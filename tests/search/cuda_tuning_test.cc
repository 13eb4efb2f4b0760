// The tuner's answers read into tile choices, with the worker replaced by a function that records
// the request: only a tile the job offers, under the job's own key, is chosen.
#include "search/cuda_tuning.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace kforge {
namespace {

class FakeTuner : public WorkerClient {
 public:
  explicit FakeTuner(std::function<Result<Json>(const Json&)> answer) : answer_(std::move(answer)) {}
  Result<Json> Call(const std::string& op, const Json& fields, double) override {
    ops.push_back(op);
    request = fields;
    return answer_(fields);
  }
  std::vector<std::string> ops;
  Json request;

 private:
  std::function<Result<Json>(const Json&)> answer_;
};

codegen::CudaTuning Job(const std::string& key) {
  return codegen::CudaTuning{
      .kernel = "matmul_" + key, .key = key, .args = {{{8, 4}, {4, 1}}},
      .variants = {{.config = {.block_m = 128}, .source = "a", .grid = {1, 1, 1}}, {.config = {.block_m = 64}, .source = "b", .grid = {1, 2, 1}}}};
}

Json Answer(const std::string& key, Json chosen) { return {{"kernel", "matmul_" + key}, {"key", key}, {"chosen", chosen}, {"variants", Json::array()}}; }

TEST(CudaTuningTest, EachJobsChosenTileByItsKey) {
  FakeTuner tuner([](const Json&) -> Result<Json> {
    return Json{{"kernels", {Answer("k1", 1), Answer("k2", 0)}}, {"seconds", 4.5}};
  });
  Result<CudaTuningOutcome> outcome = TuneCudaKernels(tuner, {Job("k1"), Job("k2")}, 60);
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(tuner.ops, std::vector<std::string>{"tune_cuda"});
  ASSERT_EQ(tuner.request["jobs"].size(), 2u);
  EXPECT_EQ(tuner.request["jobs"][0]["variants"][1]["grid"], Json::array({1, 2, 1}));
  EXPECT_EQ(outcome->chosen.at("k1").block_m, 64);
  EXPECT_EQ(outcome->chosen.at("k2").block_m, 128);
  EXPECT_EQ(outcome->kernels.size(), 2u);
  EXPECT_EQ(outcome->seconds, 4.5);
}

TEST(CudaTuningTest, NoTileOneNotOfferedOrAnotherKeyChoosesNothing) {
  FakeTuner tuner([](const Json&) -> Result<Json> {
    return Json{{"kernels", {Answer("k1", nullptr), Answer("k2", 2), Answer("other", 0), Answer("k4", "1")}}};
  });
  Result<CudaTuningOutcome> outcome = TuneCudaKernels(tuner, {Job("k1"), Job("k2"), Job("k3"), Job("k4")}, 60);
  ASSERT_TRUE(outcome.ok());
  EXPECT_TRUE(outcome->chosen.empty());
  EXPECT_EQ(outcome->kernels.size(), 4u);  // every answer is kept for the report
}

TEST(CudaTuningTest, AnAnswerOfTheWrongLengthOrAFailedWorkerIsAnError) {
  FakeTuner short_answer([](const Json&) -> Result<Json> { return Json{{"kernels", {Answer("k1", 0)}}}; });
  EXPECT_EQ(TuneCudaKernels(short_answer, {Job("k1"), Job("k2")}, 60).status().code(), StatusCode::kInternal);
  FakeTuner dead([](const Json&) -> Result<Json> { return Status::Unavailable("the tuner worker died"); });
  EXPECT_EQ(TuneCudaKernels(dead, {Job("k1")}, 60).status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace kforge
