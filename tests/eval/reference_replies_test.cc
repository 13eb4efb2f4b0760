#include "eval/reference_replies.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

// A prepare reply as reference.py writes it for an evaluation that runs a candidate.
Json Reply() {
  return {{"outputs", {{{"shape", {4, 8}}, {"dtype", "torch.float32"}, {"dense", true}},
                       {{"shape", {4}}, {"dtype", "torch.float32"}, {"dense", false}}}},
          {"input_bytes", 128}, {"output_bytes", 144}, {"parameter_bytes", 0}, {"flops", 1024},
          {"mutated_buffers", Json::array()}, {"second_size", {{"grown_inputs", Json::array()}, {"leading_dim", nullptr}}},
          {"sets", Json::array({{{"name", "seed0"}}})}, {"cpu_sizes_applied", false},
          {"memory", {{"candidate_limit_bytes", 4096}, {"fits", true}}},
          {"state", Json::object()}, {"shared", {{"session", "s"}}}, {"prepare_s", 0.1}};
}

TEST(PreparedReferenceTest, TheFactsEveryCheckReadsAreTyped) {
  Result<PreparedReference> parsed = ParsePreparedReference(Reply(), true);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->input_bytes, 128);
  EXPECT_EQ(parsed->output_bytes, 144);
  EXPECT_EQ(parsed->flops, 1024);
  EXPECT_EQ(parsed->outputs_dense, (std::vector<bool>{true, false}));
  EXPECT_EQ(parsed->candidate_limit_bytes, 4096);
  EXPECT_FALSE(parsed->does_not_fit);
  EXPECT_EQ(parsed->shared, (Json{{"session", "s"}}));
}

// A renamed or mistyped key is an error naming it, not a default: a roofline floor computed from
// zero bytes, or a candidate given no memory limit, would switch a check off silently.
TEST(PreparedReferenceTest, ARenamedOrMistypedKeyIsAnError) {
  for (const char* key : {"input_bytes", "output_bytes", "parameter_bytes", "flops", "outputs", "sets", "memory", "shared"}) {
    Json reply = Reply();
    reply[std::string(key) + "_renamed"] = reply[key];
    reply.erase(key);
    Result<PreparedReference> parsed = ParsePreparedReference(reply, true);
    ASSERT_FALSE(parsed.ok()) << key;
    EXPECT_NE(parsed.status().message().find(key), std::string::npos) << parsed.status().ToString();
  }
  Json mistyped = Reply();
  mistyped["input_bytes"] = "128";
  EXPECT_FALSE(ParsePreparedReference(mistyped, true).ok());
  Json no_limit = Reply();
  no_limit["memory"].erase("candidate_limit_bytes");
  EXPECT_FALSE(ParsePreparedReference(no_limit, true).ok());
  Json no_density = Reply();
  no_density["outputs"][1].erase("dense");
  EXPECT_FALSE(ParsePreparedReference(no_density, true).ok());
  EXPECT_FALSE(ParsePreparedReference(Json::array(), true).ok());
}

// Without a candidate (the baseline command) there is no memory plan or session to read; an
// evaluation that does not fit has a plan and the refusal, but no session.
TEST(PreparedReferenceTest, WhatOnlyACandidatesSessionHasIsAskedOnlyThen) {
  Json baseline = Reply();
  for (const char* key : {"memory", "state", "shared"}) baseline.erase(key);
  EXPECT_TRUE(ParsePreparedReference(baseline, false).ok());
  EXPECT_FALSE(ParsePreparedReference(baseline, true).ok());
  Json refused = Reply();
  refused.erase("state");
  refused.erase("shared");
  refused["does_not_fit"] = "needs 90 GB";
  Result<PreparedReference> parsed = ParsePreparedReference(refused, true);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->does_not_fit, "needs 90 GB");
}

}  // namespace
}  // namespace kforge
