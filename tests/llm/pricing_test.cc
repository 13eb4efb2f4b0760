#include "llm/pricing.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

Completion Used(const std::string& model, int64_t prompt, int64_t completion, int64_t cache_read = 0, int64_t cache_write = 0) {
  Completion used;
  used.model = model;
  used.prompt_tokens = prompt;
  used.completion_tokens = completion;
  used.cache_read_tokens = cache_read;
  used.cache_write_tokens = cache_write;
  return used;
}

TEST(PricingTest, BuiltInPricesFindSnapshotsByTheirBaseName) {
  const PriceTable& prices = BuiltInPrices();
  for (const char* model : {"gpt-4o", "gpt-4o-2024-08-06", "gpt-4o-mini-2024-07-18", "claude-sonnet-4-5-20250929",
                            "claude-3-5-haiku-latest"}) {
    ASSERT_TRUE(FindPrice(prices, model).has_value()) << model;
  }
  EXPECT_EQ(FindPrice(prices, "gpt-4o-2024-08-06")->input_usd_per_million, 2.50);
  EXPECT_EQ(FindPrice(prices, "gpt-4o-mini-2024-07-18")->input_usd_per_million, 0.15);  // not gpt-4o's
  EXPECT_EQ(FindPrice(prices, "claude-sonnet-4-5-20250929")->output_usd_per_million, 15.00);
  EXPECT_EQ(FindPrice(prices, "claude-3-5-haiku-latest")->input_usd_per_million, 0.80);
  EXPECT_FALSE(FindPrice(prices, "llama-3.1-70b").has_value());
  EXPECT_FALSE(FindPrice(prices, "gpt-4o-custom").has_value());
}

TEST(PricingTest, ConfiguredPricesWinOverBuiltInOnes) {
  PriceTable prices = WithBuiltInPrices({{"gpt-4o", {1.0, 2.0, {}, {}}}, {"local-coder", {0, 0, {}, {}}}});
  EXPECT_EQ(FindPrice(prices, "gpt-4o")->input_usd_per_million, 1.0);
  EXPECT_TRUE(FindPrice(prices, "local-coder").has_value());
  EXPECT_EQ(FindPrice(prices, "gpt-5")->output_usd_per_million, 10.00);
}

TEST(PricingTest, CostCountsCacheReadsAndWritesAtTheirOwnPrices) {
  // Anthropic: 1,000 uncached + 9,000 read from the cache + 0 written; 500 out, at $3 / $15.
  Completion call = Used("claude-sonnet-4-5", 10000, 500, 9000);
  ApplyPrice(BuiltInPrices(), call);
  EXPECT_TRUE(call.cost_known);
  EXPECT_NEAR(call.cost_usd, (1000 * 3.0 + 9000 * 0.3 + 500 * 15.0) / 1e6, 1e-12);
  // The first call writes the cache at 1.25x.
  Completion first = Used("claude-sonnet-4-5", 10000, 500, 0, 9000);
  ApplyPrice(BuiltInPrices(), first);
  EXPECT_NEAR(first.cost_usd, (1000 * 3.0 + 9000 * 3.75 + 500 * 15.0) / 1e6, 1e-12);
  // OpenAI's cached input of gpt-4o is half price.
  Completion openai = Used("gpt-4o", 2000, 100, 1024);
  ApplyPrice(BuiltInPrices(), openai);
  EXPECT_NEAR(openai.cost_usd, (976 * 2.5 + 1024 * 1.25 + 100 * 10.0) / 1e6, 1e-12);
}

TEST(PricingTest, AnUnpricedModelIsOfUnknownCostUnlessItSpentNothing) {
  Completion call = Used("llama-3.1-70b", 100, 10);
  ApplyPrice(BuiltInPrices(), call);
  EXPECT_FALSE(call.cost_known);
  EXPECT_EQ(call.cost_usd, 0);
  Completion nothing = Used("llama-3.1-70b", 0, 0);
  ApplyPrice(BuiltInPrices(), nothing);
  EXPECT_TRUE(nothing.cost_known);
}

TEST(PricingTest, HighestOutputPriceOfTheList) {
  EXPECT_EQ(HighestOutputPrice(BuiltInPrices()), 75.00);
  EXPECT_EQ(HighestOutputPrice({}), 0);
}

}  // namespace
}  // namespace kforge
