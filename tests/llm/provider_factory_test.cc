#include "llm/provider_factory.h"

#include <gtest/gtest.h>

#include "core/files.h"
#include "llm/cassette.h"
#include "test_http_server.h"

namespace kforge {
namespace {

LlmConfig ConfigFromEnv(const std::map<std::string, std::string>& env) {
  LlmConfig config;
  OverlayEnvironment(env, config);
  return config;
}

TEST(ProviderSpecTest, SplitsAtTheFirstColon) {
  auto spec = ParseProviderSpec("command:python3 -c 'print(1)'");
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->kind, "command");
  EXPECT_EQ(spec->argument, "python3 -c 'print(1)'");
  auto replay = ParseProviderSpec("replay:/tmp/a:b.jsonl");
  ASSERT_TRUE(replay.ok());
  EXPECT_EQ(replay->argument, "/tmp/a:b.jsonl");
}

TEST(ProviderSpecTest, UnknownPrefixListsTheValidOnes) {
  for (std::string bad : {"gemini:pro", "gpt-4o", ""}) {
    auto spec = ParseProviderSpec(bad);
    ASSERT_FALSE(spec.ok()) << bad;
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(spec.status().message().find("openai:, anthropic:, compat:, command:, replay:"), std::string::npos)
        << spec.status().message();
  }
}

TEST(ProviderSpecTest, MissingArgumentSaysWhatIsNeeded) {
  auto spec = ParseProviderSpec("openai:");
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("needs a model"), std::string::npos) << spec.status().message();
  EXPECT_NE(ParseProviderSpec("command: ").status().message().find("a command line"), std::string::npos);
}

TEST(ProviderFactoryTest, BuildsEachKind) {
  LlmConfig config = ConfigFromEnv({{"OPENAI_API_KEY", "sk-o"},
                                    {"ANTHROPIC_API_KEY", "sk-a"},
                                    {"KFORGE_LLM_BASE_URL", "http://127.0.0.1:1/v1"}});
  for (auto [spec, name, model] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"openai:gpt-4o", "openai", "gpt-4o"},
           {"anthropic:claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5"},
           {"compat:qwen2.5-coder", "compat", "qwen2.5-coder"},
           {"command:cat", "command", ""}}) {
    auto provider = MakeProvider(spec, config);
    ASSERT_TRUE(provider.ok()) << spec << ": " << provider.status().ToString();
    EXPECT_EQ((*provider)->name(), name);
    EXPECT_EQ((*provider)->default_model(), model);
  }
}

TEST(ProviderFactoryTest, MissingKeySaysWhichVariableToSetWithoutLeakingAnything) {
  LlmConfig config;
  auto openai = MakeProvider("openai:gpt-4o", config);
  ASSERT_FALSE(openai.ok());
  EXPECT_EQ(openai.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(openai.status().message().find("set OPENAI_API_KEY"), std::string::npos) << openai.status().message();
  config.openai.api_key = "sk-o";
  auto anthropic = MakeProvider("anthropic:claude", config);
  ASSERT_FALSE(anthropic.ok());
  EXPECT_NE(anthropic.status().message().find("set ANTHROPIC_API_KEY"), std::string::npos);
  EXPECT_EQ(anthropic.status().message().find("sk-o"), std::string::npos);
}

TEST(ProviderFactoryTest, CompatNeedsABaseUrlButNoKey) {
  auto missing = MakeProvider("compat:llama", LlmConfig{});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("KFORGE_LLM_BASE_URL"), std::string::npos);
  LlmConfig config;
  config.compat.base_url = "http://localhost:8000/v1";
  EXPECT_TRUE(MakeProvider("compat:llama", config).ok());
}

TEST(ProviderFactoryTest, ReplayOpensTheCassette) {
  auto dir = MakeTempDir(std::filesystem::temp_directory_path(), "kforge_llm_factory_test_");
  ASSERT_TRUE(dir.ok());
  std::filesystem::path cassette = *dir / "c.jsonl";
  EXPECT_EQ(MakeProvider("replay:" + cassette.string(), LlmConfig{}).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(WriteFile(cassette, R"({"reply": "hi"})" "\n").ok());
  auto replay = MakeProvider("replay:" + cassette.string(), LlmConfig{});
  ASSERT_TRUE(replay.ok()) << replay.status().ToString();
  CompletionRequest request;
  request.messages = {{Role::kUser, "hello"}};
  EXPECT_EQ((*replay)->Complete(request).text, "hi");
  RemoveTreeQuietly(*dir);
}

// An OpenAI-compatible server whose every reply names the model asked for, with the given usage.
void AnswerWithTheModelName(TestHttpServer& server, int prompt_tokens, int completion_tokens) {
  server.OnPost("/v1/chat/completions", [=](const httplib::Request& request, httplib::Response& response, int) {
    Json body = Json::parse(request.body);
    Json reply = {{"choices", {{{"message", {{"role", "assistant"}, {"content", "model was " + body["model"].get<std::string>()}}},
                                {"finish_reason", "stop"}}}},
                  {"usage", {{"prompt_tokens", prompt_tokens}, {"completion_tokens", completion_tokens}}}};
    response.set_content(reply.dump(), "application/json");
  });
}

TEST(ProviderFactoryTest, CompatProviderTalksToTheConfiguredServerWithTheSpecModel) {
  TestHttpServer server;
  AnswerWithTheModelName(server, 1, 2);
  LlmConfig config = ConfigFromEnv({{"KFORGE_LLM_BASE_URL", server.Start() + "/v1"}, {"KFORGE_LLM_API_KEY", "local-key"}});
  config.prices["qwen"] = {1, 1, {}, {}};
  auto provider = MakeLimitedProvider("compat:qwen", config, nullptr, std::nullopt);
  ASSERT_TRUE(provider.ok()) << provider.status().ToString();
  CompletionRequest request;
  request.messages = {{Role::kUser, "hello"}};
  Completion completion = (*provider)->Complete(request);
  ASSERT_TRUE(completion.ok()) << completion.error;
  EXPECT_EQ(completion.text, "model was qwen");
  EXPECT_EQ(server.received()[0].Header("Authorization"), "Bearer local-key");
  EXPECT_EQ((*provider)->pool().name(), "llm:compat");
  EXPECT_EQ((*provider)->pool().depth(), LlmConfig::kDefaultConcurrency);
  EXPECT_DOUBLE_EQ((*provider)->Totals().cost_usd, 3e-6);
}

TEST(ProviderFactoryTest, EachRoleCallGoesToItsModelAndAllAreRecordedAndAccounted) {
  TestHttpServer server;
  AnswerWithTheModelName(server, 10, 5);
  LlmConfig config = ConfigFromEnv({{"KFORGE_LLM_BASE_URL", server.Start() + "/v1"}, {"KFORGE_LLM_API_KEY", "local-key"}});
  config.prices["small"] = {1, 1, {}, {}};
  config.prices["large"] = {10, 10, {}, {}};
  auto dir = MakeTempDir(std::filesystem::temp_directory_path(), "kforge_routed_test_");
  ASSERT_TRUE(dir.ok());
  std::filesystem::path cassette = *dir / "calls.jsonl";
  auto routed = MakeRoutedProvider("compat:small", {{"speedup", "compat:large"}, {"recombine", "compat:large"}}, config,
                                   nullptr, std::nullopt, cassette);
  ASSERT_TRUE(routed.ok()) << routed.status().ToString();
  EXPECT_EQ((*routed)->size(), 2u);
  EXPECT_EQ((*routed)->SpecFor("recombine"), "compat:large");
  EXPECT_EQ((*routed)->SpecFor("write"), "compat:small");
  auto ask = [&](const std::string& kind) {
    CompletionRequest request;
    request.messages = {{Role::kUser, "hello"}};
    request.tag = {"writer", "whole", 1, 1, kind};
    return (*routed)->Complete(request).text;
  };
  EXPECT_EQ(ask("write"), "model was small");
  EXPECT_EQ(ask("repair"), "model was small");
  EXPECT_EQ(ask("speedup"), "model was large");
  EXPECT_EQ(ask("recombine"), "model was large");
  UsageTotals totals = (*routed)->Totals();
  EXPECT_EQ(totals.calls, 4);
  EXPECT_EQ(totals.prompt_tokens, 40);
  EXPECT_NEAR(totals.cost_usd, 2 * 15e-6 + 2 * 150e-6, 1e-12) << "each call at its own model's price";
  auto recorded = LoadCassette(cassette);
  ASSERT_TRUE(recorded.ok()) << recorded.status().ToString();
  EXPECT_EQ(recorded->size(), 4u) << "both models' calls in the one cassette";
  EXPECT_FALSE(MakeRoutedProvider("compat:small", {{"speedup", "nonsense"}}, config, nullptr, std::nullopt).ok());
  RemoveTreeQuietly(*dir);
}

class LlmConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = MakeTempDir(std::filesystem::temp_directory_path(), "kforge_llm_config_test_");
    ASSERT_TRUE(dir.ok());
    path_ = *dir / "llm.json";
  }
  void TearDown() override { RemoveTreeQuietly(path_.parent_path()); }

  Result<LlmConfig> Load(const std::string& text, const std::map<std::string, std::string>& env = {}) {
    EXPECT_TRUE(WriteFile(path_, text).ok());
    return LoadLlmConfig(path_, env);
  }

  std::filesystem::path path_;
};

TEST_F(LlmConfigTest, ReadsEveryKey) {
  auto config = Load(R"({
    "openai": {"base_url": "https://proxy.example/v1", "api_key": "sk-file"},
    "anthropic": {"api_key": "sk-ant-file"},
    "compat": {"base_url": "http://gpu-box:8000/v1"},
    "prices": {"gpt-4o": {"input_usd_per_million": 2.5, "output_usd_per_million": 10}},
    "max_concurrency": {"openai": 16, "command": 1},
    "timeout_s": 120, "max_attempts": 7,
    "retry_base_delay_s": 0.5, "retry_max_delay_s": 30, "max_retry_after_s": 90})");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->openai.base_url, "https://proxy.example/v1");
  EXPECT_EQ(config->openai.api_key, "sk-file");
  EXPECT_EQ(config->anthropic.base_url, "https://api.anthropic.com");
  EXPECT_EQ(config->anthropic.api_key, "sk-ant-file");
  EXPECT_EQ(config->compat.base_url, "http://gpu-box:8000/v1");
  EXPECT_DOUBLE_EQ(config->prices.at("gpt-4o").input_usd_per_million, 2.5);
  EXPECT_DOUBLE_EQ(config->prices.at("gpt-4o").output_usd_per_million, 10);
  EXPECT_EQ(config->ConcurrencyFor("openai"), 16);
  EXPECT_EQ(config->ConcurrencyFor("command"), 1);
  EXPECT_EQ(config->ConcurrencyFor("anthropic"), LlmConfig::kDefaultConcurrency);
  EXPECT_EQ(config->timeout_s, 120);
  EXPECT_EQ(config->retry.max_attempts, 7);
  EXPECT_DOUBLE_EQ(config->retry.base_delay_s, 0.5);
  EXPECT_DOUBLE_EQ(config->retry.max_delay_s, 30);
  EXPECT_DOUBLE_EQ(config->retry.max_retry_after_s, 90);
}

TEST_F(LlmConfigTest, EnvironmentOverridesTheFile) {
  auto config = Load(R"({"openai": {"base_url": "https://file/v1", "api_key": "sk-file"}})",
                     {{"OPENAI_API_KEY", "sk-env"},
                      {"OPENAI_BASE_URL", ""},  // empty: ignored
                      {"ANTHROPIC_BASE_URL", "https://anthropic-proxy"},
                      {"KFORGE_LLM_BASE_URL", "http://localhost:11434/v1"},
                      {"KFORGE_LLM_API_KEY", "ollama"}});
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->openai.api_key, "sk-env");
  EXPECT_EQ(config->openai.base_url, "https://file/v1");
  EXPECT_EQ(config->anthropic.base_url, "https://anthropic-proxy");
  EXPECT_EQ(config->compat.base_url, "http://localhost:11434/v1");
  EXPECT_EQ(config->compat.api_key, "ollama");
}

TEST_F(LlmConfigTest, NoFileMeansDefaultsAndTheEnvironment) {
  auto config = LoadLlmConfig("", {{"ANTHROPIC_API_KEY", "sk-a"}});
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->openai.base_url, "https://api.openai.com/v1");
  EXPECT_EQ(config->anthropic.api_key, "sk-a");
  EXPECT_TRUE(config->prices.empty());
  EXPECT_FALSE(config->timeout_s.has_value());
  EXPECT_EQ(LoadLlmConfig(path_, {}).status().code(), StatusCode::kNotFound);
}

TEST_F(LlmConfigTest, MistakesAreNamed) {
  struct Case {
    std::string text;
    std::string expected;
  };
  for (const Case& c : std::vector<Case>{
           {"{", "malformed JSON"},
           {R"({"max_atempts": 3})", "unknown key \"max_atempts\""},
           {R"({"openai": {"key": "x"}})", "unknown key \"key\" in openai"},
           {R"({"prices": {"m": {"input_usd_per_million": 1}}})", "prices.m needs output_usd_per_million"},
           {R"({"prices": {"m": {"input_usd_per_million": -1, "output_usd_per_million": 1}}})", "non-negative"},
           {R"({"max_concurrency": {"gemini": 2}})", "unknown key \"gemini\" in max_concurrency"},
           {R"({"max_concurrency": {"openai": 0}})", "max_concurrency.openai"},
           {R"({"timeout_s": "long"})", "timeout_s must be a positive number"},
       }) {
    auto config = Load(c.text);
    ASSERT_FALSE(config.ok()) << c.text;
    EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_NE(config.status().message().find(c.expected), std::string::npos) << config.status().message();
  }
}

}  // namespace
}  // namespace kforge
