#include "llm/openai_provider.h"

#include <gtest/gtest.h>

#include "fakes.h"
#include "llm/curl_transport.h"
#include "test_http_server.h"

namespace kforge {
namespace {

constexpr char kKey[] = "sk-test-0123456789";

std::string ChatReply(const std::string& content, const std::string& finish_reason = "stop") {
  Json reply = {{"id", "chatcmpl-1"},
                {"object", "chat.completion"},
                {"model", "gpt-test"},
                {"choices", {{{"index", 0},
                              {"message", {{"role", "assistant"}, {"content", content}}},
                              {"finish_reason", finish_reason}}}},
                {"usage", {{"prompt_tokens", 12}, {"completion_tokens", 34}, {"total_tokens", 46}}}};
  return reply.dump();
}

void Answer(httplib::Response& response, int status, const std::string& body) {
  response.status = status;
  response.set_content(body, "application/json");
}

class OpenAiProviderTest : public ::testing::Test {
 protected:
  // The server answers every chat completion with `handler`; starts it and builds the provider.
  void Serve(TestHttpServer::Handler handler, int max_attempts = 3, std::string key = kKey,
             TestHttpServer::Handler models = {}) {
    server_.OnPost("/v1/chat/completions", std::move(handler));
    if (models) server_.OnGet("/v1/models", std::move(models));
    ApiProviderOptions options;
    options.name = key.empty() ? "compat" : "openai";
    options.base_url = server_.Start() + "/v1/";
    options.api_key = key;
    options.key_variable = "OPENAI_API_KEY";
    options.url_variable = "OPENAI_BASE_URL";
    options.default_model = "gpt-test";
    options.prices["gpt-test"] = {1.0, 2.0, {}, {}};
    provider_ = std::make_unique<OpenAiProvider>(options, std::make_shared<CurlTransport>(), FastRetryPolicy(max_attempts));
  }

  CompletionRequest Request(double timeout_s = 10) {
    CompletionRequest request;
    request.messages = {{Role::kSystem, "be brief"}, {Role::kUser, "write a kernel"}};
    request.temperature = 0.2;
    request.max_tokens = 256;
    request.timeout_s = timeout_s;
    return request;
  }

  TestHttpServer server_;
  std::unique_ptr<OpenAiProvider> provider_;
};

TEST_F(OpenAiProviderTest, ReturnsTheReplyWithUsageAndCost) {
  Serve([](const auto&, auto& response, int) { Answer(response, 200, ChatReply("def kernel(): pass")); });
  Completion completion = provider_->Complete(Request());
  ASSERT_TRUE(completion.ok()) << completion.error;
  EXPECT_EQ(completion.text, "def kernel(): pass");
  EXPECT_EQ(completion.finish_reason, "stop");
  EXPECT_EQ(completion.prompt_tokens, 12);
  EXPECT_EQ(completion.completion_tokens, 34);
  EXPECT_EQ(completion.model, "gpt-test");
  EXPECT_DOUBLE_EQ(completion.cost_usd, (12 * 1.0 + 34 * 2.0) / 1e6);
  EXPECT_TRUE(completion.cost_known);
  EXPECT_EQ(completion.attempts, 1);
  EXPECT_GT(completion.latency_s, 0);
}

TEST_F(OpenAiProviderTest, SendsTheDocumentedRequest) {
  Serve([](const auto&, auto& response, int) { Answer(response, 200, ChatReply("ok")); });
  provider_->Complete(Request());
  std::vector<ReceivedRequest> received = server_.received();
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].Header("Authorization"), std::string("Bearer ") + kKey);
  EXPECT_EQ(received[0].Header("Content-Type"), "application/json");
  Json body = Json::parse(received[0].body);
  EXPECT_EQ(body["model"], "gpt-test");
  EXPECT_EQ(body["temperature"], 0.2);
  EXPECT_EQ(body["max_tokens"], 256);
  EXPECT_EQ(body["messages"], Json::parse(R"([{"role": "system", "content": "be brief"},
                                              {"role": "user", "content": "write a kernel"}])"));
}

TEST_F(OpenAiProviderTest, CompatibleServerWithoutKeyGetsNoAuthorizationHeader) {
  Serve([](const auto&, auto& response, int) { Answer(response, 200, ChatReply("ok")); }, 3, "");
  CompletionRequest request = Request();
  request.model = "qwen-local";
  Completion completion = provider_->Complete(request);
  ASSERT_TRUE(completion.ok()) << completion.error;
  EXPECT_EQ(provider_->name(), "compat");
  EXPECT_EQ(server_.received()[0].Header("Authorization"), "");
  EXPECT_EQ(Json::parse(server_.received()[0].body)["model"], "qwen-local");
  EXPECT_FALSE(completion.cost_known);  // no price for qwen-local
}

TEST_F(OpenAiProviderTest, RateLimitIsRetriedAfterRetryAfter) {
  Serve([](const auto&, auto& response, int call) {
    if (call == 0) {
      response.set_header("Retry-After", "1");  // capped at 0.05 s by the test's policy
      Answer(response, 429, R"({"error": {"message": "Rate limit reached", "type": "requests"}})");
    } else {
      Answer(response, 200, ChatReply("after the wait"));
    }
  });
  Completion completion = provider_->Complete(Request());
  ASSERT_TRUE(completion.ok()) << completion.error;
  EXPECT_EQ(completion.text, "after the wait");
  EXPECT_EQ(completion.attempts, 2);
  EXPECT_GE(completion.latency_s, 0.05);
  ASSERT_EQ(completion.attempt_log.size(), 2u);
  EXPECT_EQ(completion.attempt_log[0].http_status, 429);
  EXPECT_EQ(completion.attempt_log[0].outcome, CallOutcome::kRateLimited);
  EXPECT_GT(completion.attempt_log[0].waited_s, 0);
  EXPECT_FALSE(completion.attempt_log[0].maybe_billed);  // a 429 generated nothing
  EXPECT_EQ(completion.attempt_log[1].outcome, CallOutcome::kOk);
  EXPECT_EQ(completion.estimated_tokens, 0);
}

TEST_F(OpenAiProviderTest, ServerErrorThenSuccess) {
  Serve([](const auto&, auto& response, int call) {
    Answer(response, call == 0 ? 500 : 200, call == 0 ? R"({"error": {"message": "boom"}})" : ChatReply("fine"));
  });
  Completion completion = provider_->Complete(Request());
  ASSERT_TRUE(completion.ok()) << completion.error;
  EXPECT_EQ(completion.attempts, 2);
}

TEST_F(OpenAiProviderTest, PersistentServerErrorsEndInServerError) {
  Serve([](const auto&, auto& response, int) { Answer(response, 503, R"({"error": {"message": "overloaded"}})"); });
  Completion completion = provider_->Complete(Request());
  EXPECT_EQ(completion.outcome, CallOutcome::kServerError);
  EXPECT_EQ(completion.attempts, 3);
  EXPECT_NE(completion.error.find("HTTP 503"), std::string::npos) << completion.error;
  EXPECT_NE(completion.error.find("overloaded"), std::string::npos) << completion.error;
}

TEST_F(OpenAiProviderTest, SlowReplyTimesOut) {
  Serve([this](const auto&, auto& response, int) {
    server_.SleepUnlessStopping(3);
    Answer(response, 200, ChatReply("too late"));
  }, /*max_attempts=*/2);
  Completion completion = provider_->Complete(Request(/*timeout_s=*/0.3));
  EXPECT_EQ(completion.outcome, CallOutcome::kTimeout) << completion.error;
  EXPECT_EQ(completion.attempts, 2);
  // Both attempts were sent and may have generated tokens the provider bills: estimated, at most
  // the prompt and the output limit each, at gpt-test's price ($1 in, $2 out per million).
  ASSERT_EQ(completion.attempt_log.size(), 2u);
  EXPECT_TRUE(completion.attempt_log[0].maybe_billed && completion.attempt_log[1].maybe_billed);
  int64_t prompt = EstimatePromptTokens(Request().messages);
  EXPECT_EQ(completion.estimated_tokens, 2 * (prompt + 256));
  EXPECT_NEAR(completion.estimated_cost_usd, 2 * (prompt * 1.0 + 256 * 2.0) / 1e6, 1e-12);
  EXPECT_EQ(completion.prompt_tokens + completion.completion_tokens, 0);  // nothing was reported
  EXPECT_LT(completion.latency_s, 2.5);
  EXPECT_NE(completion.error.find("timeout"), std::string::npos) << completion.error;
}

TEST_F(OpenAiProviderTest, TruncatedJsonIsMalformed) {
  Serve([](const auto&, auto& response, int) { Answer(response, 200, ChatReply("cut").substr(0, 40)); });
  Completion completion = provider_->Complete(Request());
  EXPECT_EQ(completion.outcome, CallOutcome::kMalformedReply);
  EXPECT_EQ(completion.attempts, 1);
  EXPECT_NE(completion.error.find("not a JSON object"), std::string::npos) << completion.error;
}

TEST_F(OpenAiProviderTest, JsonWithoutChoicesIsMalformed) {
  Serve([](const auto&, auto& response, int) { Answer(response, 200, R"({"object": "list", "data": []})"); });
  EXPECT_EQ(provider_->Complete(Request()).outcome, CallOutcome::kMalformedReply);
}

TEST_F(OpenAiProviderTest, EmptyContentIsAnEmptyReply) {
  Serve([](const auto&, auto& response, int) { Answer(response, 200, ChatReply("")); });
  Completion completion = provider_->Complete(Request());
  EXPECT_EQ(completion.outcome, CallOutcome::kEmptyReply);
  EXPECT_EQ(completion.prompt_tokens, 12);  // the tokens were still spent
}

TEST_F(OpenAiProviderTest, FinishReasonLengthIsTruncatedAndKeepsThePartialText) {
  Serve([](const auto&, auto& response, int) { Answer(response, 200, ChatReply("def kernel(x):\n    return", "length")); });
  Completion completion = provider_->Complete(Request());
  EXPECT_EQ(completion.outcome, CallOutcome::kTruncatedReply);
  EXPECT_EQ(completion.text, "def kernel(x):\n    return");
  EXPECT_NE(completion.error.find("max_tokens"), std::string::npos);
}

TEST_F(OpenAiProviderTest, RefusedKeyIsAnAuthErrorThatNeverRepeatsTheKey) {
  Serve([](const httplib::Request& request, auto& response, int) {
    std::string echoed = request.get_header_value("Authorization").substr(7);
    Answer(response, 401, Json{{"error", {{"message", "Incorrect API key provided: " + echoed}}}}.dump());
  });
  Completion completion = provider_->Complete(Request());
  EXPECT_EQ(completion.outcome, CallOutcome::kAuthError);
  EXPECT_EQ(completion.attempts, 1);
  EXPECT_EQ(completion.error.find(kKey), std::string::npos) << completion.error;
  EXPECT_NE(completion.error.find("OPENAI_API_KEY"), std::string::npos) << completion.error;
}

TEST_F(OpenAiProviderTest, NoServerIsANetworkError) {
  Serve([](const auto&, auto& response, int) { Answer(response, 200, ChatReply("never")); });
  server_.Stop();
  Completion completion = provider_->Complete(Request());
  EXPECT_EQ(completion.outcome, CallOutcome::kNetworkError) << completion.error;
  EXPECT_EQ(completion.attempts, 3);
  EXPECT_EQ(completion.estimated_tokens, 0);  // never connected: nothing can be billed
}

TEST_F(OpenAiProviderTest, ExhaustedQuotaIsFatalAndNotRetried) {
  Serve([](const auto&, auto& response, int) {
    Answer(response, 429, R"({"error": {"message": "You exceeded your current quota", "type": "insufficient_quota",
                                       "code": "insufficient_quota"}})");
  });
  Completion completion = provider_->Complete(Request());
  EXPECT_EQ(completion.outcome, CallOutcome::kQuotaExceeded) << completion.error;
  EXPECT_EQ(completion.attempts, 1);
  EXPECT_TRUE(IsFatal(completion.outcome));
  EXPECT_NE(completion.error.find("add credit"), std::string::npos) << completion.error;
}

TEST_F(OpenAiProviderTest, UnknownModelIsFatal) {
  Serve([](const auto&, auto& response, int) {
    Answer(response, 404, R"({"error": {"message": "The model `gpt-9` does not exist", "code": "model_not_found"}})");
  });
  Completion completion = provider_->Complete(Request());
  EXPECT_EQ(completion.outcome, CallOutcome::kUnknownModel) << completion.error;
  EXPECT_TRUE(IsFatal(completion.outcome));
}

TEST_F(OpenAiProviderTest, CheckListsModelsWithoutACompletion) {
  Serve([](const auto&, auto& response, int) { Answer(response, 200, ChatReply("never")); }, 3, kKey,
        [](const httplib::Request& request, auto& response, int) {
          EXPECT_EQ(request.get_header_value("Authorization"), std::string("Bearer ") + kKey);
          Answer(response, 200, R"({"object": "list", "data": [{"id": "gpt-test"}, {"id": "gpt-other"}]})");
        });
  ProviderCheck check = provider_->Check();
  EXPECT_TRUE(check.status.ok()) << check.status.ToString();
  EXPECT_TRUE(check.notes.empty());
  ASSERT_EQ(server_.received().size(), 1u);
  EXPECT_EQ(server_.received()[0].path, "/v1/models");
}

TEST_F(OpenAiProviderTest, CheckNotesAModelTheServerDoesNotList) {
  Serve([](const auto&, auto& response, int) { Answer(response, 200, ChatReply("never")); }, 3, kKey,
        [](const auto&, auto& response, int) { Answer(response, 200, R"({"data": [{"id": "llama-3"}]})"); });
  ProviderCheck check = provider_->Check();
  EXPECT_TRUE(check.status.ok());
  ASSERT_EQ(check.notes.size(), 1u);
  EXPECT_NE(check.notes[0].find("does not list the model \"gpt-test\""), std::string::npos) << check.notes[0];
  EXPECT_NE(check.notes[0].find("llama-3"), std::string::npos) << check.notes[0];
}

TEST_F(OpenAiProviderTest, CheckFailsOnARefusedKeyWithoutRepeatingIt) {
  Serve([](const auto&, auto& response, int) { Answer(response, 200, ChatReply("never")); }, 3, kKey,
        [](const httplib::Request& request, auto& response, int) {
          Answer(response, 401, Json{{"error", {{"message", "Incorrect API key provided: " +
                                                                request.get_header_value("Authorization")}}}}.dump());
        });
  ProviderCheck check = provider_->Check();
  ASSERT_FALSE(check.status.ok());
  EXPECT_EQ(check.status.message().find(kKey), std::string::npos) << check.status.message();
  EXPECT_NE(check.status.message().find("OPENAI_API_KEY"), std::string::npos) << check.status.message();
  EXPECT_NE(check.status.message().find("HTTP 401"), std::string::npos) << check.status.message();
}

TEST_F(OpenAiProviderTest, CheckFailsWhenTheServerCannotBeReached) {
  Serve([](const auto&, auto& response, int) { Answer(response, 200, ChatReply("never")); });
  server_.Stop();
  ProviderCheck check = provider_->Check();
  ASSERT_FALSE(check.status.ok());
  EXPECT_NE(check.status.message().find("cannot reach"), std::string::npos) << check.status.message();
  EXPECT_NE(check.status.message().find("OPENAI_BASE_URL"), std::string::npos) << check.status.message();
}

TEST_F(OpenAiProviderTest, CheckOfAServerWithoutAListingIsANote) {
  Serve([](const auto&, auto& response, int) { Answer(response, 200, ChatReply("never")); });  // GET /v1/models: 404
  ProviderCheck check = provider_->Check();
  EXPECT_TRUE(check.status.ok()) << check.status.ToString();
  ASSERT_EQ(check.notes.size(), 1u);
  EXPECT_NE(check.notes[0].find("no model listing"), std::string::npos) << check.notes[0];
}

}  // namespace
}  // namespace kforge
