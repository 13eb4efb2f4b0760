#include "llm/request_shape.h"

#include <gtest/gtest.h>

#include "fakes.h"
#include "llm/anthropic_provider.h"
#include "llm/openai_provider.h"

namespace kforge {
namespace {

std::string ChatReply() {
  return R"({"choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
             "usage": {"prompt_tokens": 10, "completion_tokens": 2}})";
}

std::string AnthropicReply() {
  return R"({"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
             "usage": {"input_tokens": 10, "output_tokens": 2}})";
}

CompletionRequest Ask(std::string prompt = "write a kernel") {
  CompletionRequest request;
  request.messages = {{Role::kSystem, "you write kernels"}, {Role::kUser, std::move(prompt)}};
  request.temperature = 0.4;
  return request;
}

struct Sent {
  Completion completion;
  Json body;  // null when nothing was sent
};

// What an OpenAI-format provider of `kind` sends for `request` to `model`, with `shapes` configured.
Sent SendOpenAi(const std::string& kind, const std::string& model, const ShapeTable& shapes,
                const CompletionRequest& request = Ask()) {
  auto transport = std::make_shared<FakeTransport>();
  transport->Reply(200, ChatReply());
  ApiProviderOptions options;
  options.name = kind;
  options.base_url = "http://127.0.0.1:1/v1";
  options.default_model = model;
  options.shapes = shapes;
  OpenAiProvider provider(options, transport, FastRetryPolicy(1));
  Sent sent{provider.Complete(request), Json()};
  if (!transport->requests().empty()) sent.body = Json::parse(transport->requests()[0].body);
  return sent;
}

Sent SendAnthropic(const ShapeTable& shapes) {
  auto transport = std::make_shared<FakeTransport>();
  transport->Reply(200, AnthropicReply());
  ApiProviderOptions options;
  options.name = "anthropic";
  options.base_url = "http://127.0.0.1:1";
  options.default_model = "claude-sonnet-4-5";
  options.shapes = shapes;
  AnthropicProvider provider(options, transport, FastRetryPolicy(1));
  Sent sent{provider.Complete(Ask()), Json()};
  if (!transport->requests().empty()) sent.body = Json::parse(transport->requests()[0].body);
  return sent;
}

ShapeSettings Parsed(const std::string& json) {
  auto settings = ParseShapeSettings(Json::parse(json), "models.test");
  EXPECT_TRUE(settings.ok()) << settings.status().ToString();
  return settings.ok() ? *settings : ShapeSettings{};
}

TEST(RequestShapeTest, AReasoningModelGetsNoTemperatureAndItsOwnOutputField) {
  for (const char* model : {"o3", "o4-mini", "gpt-5", "gpt-5-mini-2025-08-07"}) {
    Sent sent = SendOpenAi("openai", model, {});
    ASSERT_TRUE(sent.completion.ok()) << model << ": " << sent.completion.error;
    EXPECT_FALSE(sent.body.contains("temperature")) << model;
    EXPECT_FALSE(sent.body.contains("max_tokens")) << model;
    EXPECT_EQ(sent.body["max_completion_tokens"], 32768) << model;
    EXPECT_EQ(sent.completion.max_tokens, 32768);
  }
}

TEST(RequestShapeTest, AChatModelGetsTheRequestsTemperatureAndTheFamilyLimit) {
  Sent sent = SendOpenAi("openai", "gpt-4o", {});
  EXPECT_EQ(sent.body["temperature"], 0.4);
  EXPECT_EQ(sent.body["max_tokens"], 8192);
  CompletionRequest small = Ask();
  small.max_tokens = 300;  // a request's own limit is kept when the config sets none
  EXPECT_EQ(SendOpenAi("openai", "gpt-4o", {}, small).body["max_tokens"], 300);
}

TEST(RequestShapeTest, ConfiguredSettingsApplyMostSpecificLast) {
  ShapeTable shapes;
  shapes["gpt-5*"] = Parsed(R"({"max_output_tokens": 65536, "reasoning_effort": "high"})");
  shapes["gpt-5-mini"] = Parsed(R"({"reasoning_effort": "low", "extra_body": {"service_tier": "flex"}})");
  Sent mini = SendOpenAi("openai", "gpt-5-mini", shapes);
  EXPECT_EQ(mini.body["max_completion_tokens"], 65536);
  EXPECT_EQ(mini.body["reasoning_effort"], "low");
  EXPECT_EQ(mini.body["service_tier"], "flex");
  Sent full = SendOpenAi("openai", "gpt-5", shapes);
  EXPECT_EQ(full.body["reasoning_effort"], "high");
  EXPECT_FALSE(full.body.contains("service_tier"));
  CompletionRequest small = Ask();
  small.max_tokens = 300;  // a configured limit wins over the request's
  EXPECT_EQ(SendOpenAi("openai", "gpt-5", shapes, small).body["max_completion_tokens"], 65536);
}

TEST(RequestShapeTest, TemperatureNullIsNeverSentAndANumberIsFixed) {
  ShapeTable shapes;
  shapes["local-coder"] = Parsed(R"({"temperature": null})");
  EXPECT_FALSE(SendOpenAi("compat", "local-coder", shapes).body.contains("temperature"));
  shapes["local-coder"] = Parsed(R"({"temperature": 0})");
  EXPECT_EQ(SendOpenAi("compat", "local-coder", shapes).body["temperature"], 0.0);
}

TEST(RequestShapeTest, ASmallContextCutsTheOutputLimitToFit) {
  ShapeTable shapes;
  shapes["local-coder"] = Parsed(R"({"context_tokens": 8192})");
  CompletionRequest request = Ask(std::string(15000, 'x'));  // about 5,000 tokens
  Sent sent = SendOpenAi("compat", "local-coder", shapes, request);
  ASSERT_TRUE(sent.completion.ok()) << sent.completion.error;
  int64_t prompt = EstimatePromptTokens(request.messages);
  EXPECT_GE(prompt, 5000);
  EXPECT_EQ(sent.body["max_tokens"], 8192 - prompt - 256);
}

TEST(RequestShapeTest, APromptThatLeavesNoRoomIsNotSent) {
  ShapeTable shapes;
  shapes["local-coder"] = Parsed(R"({"context_tokens": 4096})");
  Sent sent = SendOpenAi("compat", "local-coder", shapes, Ask(std::string(15000, 'x')));
  EXPECT_EQ(sent.completion.outcome, CallOutcome::kPromptTooLong);
  EXPECT_TRUE(sent.body.is_null());  // nothing reached the server
  EXPECT_NE(sent.completion.error.find("models.local-coder.context_tokens"), std::string::npos) << sent.completion.error;
  EXPECT_FALSE(IsFatal(sent.completion.outcome));
}

TEST(RequestShapeTest, AnthropicCachesTheSystemPromptByDefault) {
  Sent sent = SendAnthropic({});
  ASSERT_TRUE(sent.completion.ok()) << sent.completion.error;
  ASSERT_TRUE(sent.body["system"].is_array());
  EXPECT_EQ(sent.body["system"][0]["text"], "you write kernels");
  EXPECT_EQ(sent.body["system"][0]["cache_control"]["type"], "ephemeral");
  EXPECT_EQ(sent.body["max_tokens"], 16384);
  ShapeTable shapes;
  shapes["claude*"] = Parsed(R"({"prompt_caching": false})");
  EXPECT_EQ(SendAnthropic(shapes).body["system"], "you write kernels");
}

TEST(RequestShapeTest, AnthropicThinkingTakesNoTemperatureAndFitsInTheLimit) {
  ShapeTable shapes;
  shapes["claude-sonnet-4-5"] = Parsed(R"({"thinking_tokens": 20000})");
  Sent sent = SendAnthropic(shapes);
  EXPECT_EQ(sent.body["thinking"]["type"], "enabled");
  EXPECT_EQ(sent.body["thinking"]["budget_tokens"], 20000);
  EXPECT_FALSE(sent.body.contains("temperature"));
  EXPECT_GT(sent.body["max_tokens"].get<int>(), 20000);
}

TEST(RequestShapeTest, BadSettingsAreNamed) {
  auto unknown = ParseShapeSettings(Json::parse(R"({"max_tokens": 5})"), "models.x");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown key \"max_tokens\" in models.x"), std::string::npos);
  auto effort = ParseShapeSettings(Json::parse(R"({"reasoning_effort": "extreme"})"), "models.x");
  ASSERT_FALSE(effort.ok());
  EXPECT_NE(effort.status().message().find("models.x.reasoning_effort"), std::string::npos);
  EXPECT_FALSE(ParseShapeSettings(Json::parse(R"({"temperature": 3})"), "models.x").ok());
  EXPECT_FALSE(ParseShapeSettings(Json::parse(R"({"extra_body": [1]})"), "models.x").ok());
}

}  // namespace
}  // namespace kforge
