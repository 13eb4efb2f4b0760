#include "llm/anthropic_provider.h"

#include <gtest/gtest.h>

#include "fakes.h"
#include "llm/curl_transport.h"
#include "test_http_server.h"

namespace kforge {
namespace {

constexpr char kKey[] = "sk-ant-test-abcdef";

std::string MessageReply(Json content, const std::string& stop_reason = "end_turn") {
  Json reply = {{"id", "msg_1"},
                {"type", "message"},
                {"role", "assistant"},
                {"model", "claude-test"},
                {"content", std::move(content)},
                {"stop_reason", stop_reason},
                {"usage", {{"input_tokens", 21}, {"output_tokens", 8}}}};
  return reply.dump();
}

Json TextBlocks(std::vector<std::string> texts) {
  Json blocks = Json::array();
  for (auto& text : texts) blocks.push_back({{"type", "text"}, {"text", text}});
  return blocks;
}

void Answer(httplib::Response& response, int status, const std::string& body) {
  response.status = status;
  response.set_content(body, "application/json");
}

class AnthropicProviderTest : public ::testing::Test {
 protected:
  void Serve(TestHttpServer::Handler handler, int max_attempts = 3) {
    server_.OnPost("/v1/messages", std::move(handler));
    ApiProviderOptions options;
    options.name = "anthropic";
    options.base_url = server_.Start();
    options.api_key = kKey;
    options.key_variable = "ANTHROPIC_API_KEY";
    options.default_model = "claude-test";
    provider_ = std::make_unique<AnthropicProvider>(options, std::make_shared<CurlTransport>(),
                                                    FastRetryPolicy(max_attempts));
  }

  CompletionRequest Request(double timeout_s = 10) {
    CompletionRequest request;
    request.messages = {{Role::kSystem, "you write kernels"},
                        {Role::kSystem, "answer in Python"},
                        {Role::kUser, "add two tensors"}};
    request.max_tokens = 512;
    request.temperature = 0.5;
    request.timeout_s = timeout_s;
    return request;
  }

  TestHttpServer server_;
  std::unique_ptr<AnthropicProvider> provider_;
};

TEST_F(AnthropicProviderTest, JoinsTextBlocksAndReadsUsage) {
  Serve([](const auto&, auto& response, int) {
    Json content = TextBlocks({"def add(a, b):", "\n    return a + b"});
    content.insert(content.begin(), Json{{"type", "thinking"}, {"thinking", "hmm"}});
    Answer(response, 200, MessageReply(content));
  });
  Completion completion = provider_->Complete(Request());
  ASSERT_TRUE(completion.ok()) << completion.error;
  EXPECT_EQ(completion.text, "def add(a, b):\n    return a + b");
  EXPECT_EQ(completion.finish_reason, "end_turn");
  EXPECT_EQ(completion.prompt_tokens, 21);
  EXPECT_EQ(completion.completion_tokens, 8);
  EXPECT_FALSE(completion.cost_known);  // no price configured
  EXPECT_EQ(completion.cost_usd, 0);
}

TEST_F(AnthropicProviderTest, SendsHeadersAndPutsSystemMessagesAtTheTop) {
  Serve([](const auto&, auto& response, int) { Answer(response, 200, MessageReply(TextBlocks({"ok"}))); });
  provider_->Complete(Request());
  std::vector<ReceivedRequest> received = server_.received();
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].Header("x-api-key"), kKey);
  EXPECT_EQ(received[0].Header("anthropic-version"), "2023-06-01");
  EXPECT_EQ(received[0].Header("Authorization"), "");
  Json body = Json::parse(received[0].body);
  EXPECT_EQ(body["model"], "claude-test");
  EXPECT_EQ(body["max_tokens"], 512);
  EXPECT_EQ(body["temperature"], 0.5);
  // Both system messages in one block, marked cacheable: it is the same in every call.
  EXPECT_EQ(body["system"], Json::parse(R"([{"type": "text", "text": "you write kernels\n\nanswer in Python",
                                             "cache_control": {"type": "ephemeral"}}])"));
  EXPECT_EQ(body["messages"], Json::parse(R"([{"role": "user", "content": "add two tensors"}])"));
}

TEST_F(AnthropicProviderTest, NoSystemFieldWithoutSystemMessages) {
  Serve([](const auto&, auto& response, int) { Answer(response, 200, MessageReply(TextBlocks({"ok"}))); });
  CompletionRequest request = Request();
  request.messages = {{Role::kUser, "hi"}, {Role::kAssistant, "hello"}, {Role::kUser, "go on"}};
  provider_->Complete(request);
  Json body = Json::parse(server_.received()[0].body);
  EXPECT_FALSE(body.contains("system"));
  EXPECT_EQ(body["messages"].size(), 3u);
}

TEST_F(AnthropicProviderTest, MaxTokensStopIsTruncated) {
  Serve([](const auto&, auto& response, int) { Answer(response, 200, MessageReply(TextBlocks({"def add("}), "max_tokens")); });
  Completion completion = provider_->Complete(Request());
  EXPECT_EQ(completion.outcome, CallOutcome::kTruncatedReply);
  EXPECT_EQ(completion.text, "def add(");
}

TEST_F(AnthropicProviderTest, OverloadedThenRateLimitedThenSuccess) {
  Serve([](const auto&, auto& response, int call) {
    if (call == 0) return Answer(response, 529, R"({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})");
    if (call == 1) {
      response.set_header("retry-after", "0");
      return Answer(response, 429, R"({"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}})");
    }
    Answer(response, 200, MessageReply(TextBlocks({"done"})));
  });
  Completion completion = provider_->Complete(Request());
  ASSERT_TRUE(completion.ok()) << completion.error;
  EXPECT_EQ(completion.attempts, 3);
}

TEST_F(AnthropicProviderTest, BadRequestIsNotRetriedAndQuotesTheApi) {
  Serve([](const auto&, auto& response, int) {
    Answer(response, 400, R"({"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: too large"}})");
  });
  Completion completion = provider_->Complete(Request());
  EXPECT_EQ(completion.outcome, CallOutcome::kClientError);
  EXPECT_EQ(completion.attempts, 1);
  EXPECT_NE(completion.error.find("max_tokens: too large"), std::string::npos) << completion.error;
}

TEST_F(AnthropicProviderTest, EmptyContentIsAnEmptyReply) {
  Serve([](const auto&, auto& response, int) { Answer(response, 200, MessageReply(Json::array())); });
  EXPECT_EQ(provider_->Complete(Request()).outcome, CallOutcome::kEmptyReply);
}

TEST_F(AnthropicProviderTest, NonJsonBodyIsMalformed) {
  Serve([](const auto&, auto& response, int) {
    response.status = 200;
    response.set_content("<html>gateway</html>", "text/html");
  });
  Completion completion = provider_->Complete(Request());
  EXPECT_EQ(completion.outcome, CallOutcome::kMalformedReply);
  EXPECT_NE(completion.error.find("<html>gateway"), std::string::npos) << completion.error;
}

TEST_F(AnthropicProviderTest, SlowReplyTimesOut) {
  Serve([this](const auto&, auto& response, int) {
    server_.SleepUnlessStopping(3);
    Answer(response, 200, MessageReply(TextBlocks({"late"})));
  }, /*max_attempts=*/1);
  Completion completion = provider_->Complete(Request(/*timeout_s=*/0.3));
  EXPECT_EQ(completion.outcome, CallOutcome::kTimeout) << completion.error;
  EXPECT_EQ(completion.attempts, 1);
}

}  // namespace
}  // namespace kforge
