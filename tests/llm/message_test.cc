#include "llm/message.h"

#include <gtest/gtest.h>

#include "llm/completion.h"

namespace kforge {
namespace {

CompletionRequest SampleRequest() {
  CompletionRequest request;
  request.model = "gpt-test";
  request.messages = {{Role::kSystem, "be brief"}, {Role::kUser, "write a kernel"}};
  return request;
}

TEST(RequestHashTest, IsStableAndIgnoresTheTimeout) {
  CompletionRequest request = SampleRequest();
  std::string hash = RequestHash(request);
  EXPECT_EQ(hash.size(), 64u);
  request.timeout_s = 5;
  EXPECT_EQ(RequestHash(request), hash);
}

TEST(RequestHashTest, ChangesWithEveryPartOfTheIdentity) {
  std::string base = RequestHash(SampleRequest());
  std::vector<std::function<void(CompletionRequest&)>> changes = {
      [](CompletionRequest& r) { r.model = "other"; },
      [](CompletionRequest& r) { r.messages[1].content += "!"; },
      [](CompletionRequest& r) { r.messages[0].role = Role::kUser; },
      [](CompletionRequest& r) { r.temperature = 0.2; },
      [](CompletionRequest& r) { r.max_tokens = 100; },
  };
  for (size_t i = 0; i < changes.size(); ++i) {
    CompletionRequest changed = SampleRequest();
    changes[i](changed);
    EXPECT_NE(RequestHash(changed), base) << "change " << i;
  }
}

TEST(MessageTest, MessagesRoundTripThroughJson) {
  std::vector<Message> messages = SampleRequest().messages;
  auto parsed = MessagesFromJson(MessagesToJson(messages));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(*parsed, messages);
}

TEST(MessageTest, BadMessagesNameTheElement) {
  auto parsed = MessagesFromJson(Json::parse(R"([{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}])"));
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("message 1"), std::string::npos) << parsed.status().message();
  EXPECT_NE(parsed.status().message().find("robot"), std::string::npos);
}

TEST(MessageTest, RenderPromptPutsEachMessageUnderItsRole) {
  EXPECT_EQ(RenderPrompt(SampleRequest().messages), "## system\n\nbe brief\n\n## user\n\nwrite a kernel\n");
}

TEST(MessageTest, LastUserMessageAndDefaultModel) {
  std::vector<Message> messages = {{Role::kUser, "first"}, {Role::kAssistant, "reply"}, {Role::kUser, "second"}};
  EXPECT_EQ(LastUserMessage(messages), "second");
  EXPECT_EQ(LastUserMessage({}), "");
  CompletionRequest request;
  EXPECT_EQ(WithDefaultModel(request, "m").model, "m");
  request.model = "own";
  EXPECT_EQ(WithDefaultModel(request, "m").model, "own");
}

TEST(CallOutcomeTest, EveryOutcomeRoundTripsThroughItsName) {
  for (int i = 0; i <= static_cast<int>(CallOutcome::kCommandFailed); ++i) {
    auto outcome = static_cast<CallOutcome>(i);
    auto parsed = ParseCallOutcome(ToString(outcome));
    ASSERT_TRUE(parsed.ok()) << ToString(outcome);
    EXPECT_EQ(*parsed, outcome);
  }
  EXPECT_STREQ(ToString(CallOutcome::kRateLimited), "rate_limited");
  EXPECT_FALSE(ParseCallOutcome("fine").ok());
}

TEST(CallOutcomeTest, ClassifyReplyText) {
  Completion truncated;
  truncated.text = "def kernel(";
  ClassifyReplyText(truncated, /*hit_token_limit=*/true);
  EXPECT_EQ(truncated.outcome, CallOutcome::kTruncatedReply);
  EXPECT_EQ(truncated.text, "def kernel(");

  Completion blank;
  blank.text = " \n\t";
  ClassifyReplyText(blank, false);
  EXPECT_EQ(blank.outcome, CallOutcome::kEmptyReply);

  Completion fine;
  fine.text = "ok";
  ClassifyReplyText(fine, false);
  EXPECT_TRUE(fine.ok());
}

}  // namespace
}  // namespace kforge
