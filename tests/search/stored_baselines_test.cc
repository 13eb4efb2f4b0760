#include "search/stored_baselines.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

class StoredBaselinesTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = std::move(Store::OpenInMemory()).value(); }

  static BaselineKey Key(const std::string& mode, const std::string& precision = "fp32") {
    return {"task-hash", "{\"gpu\":\"NVIDIA H200\"}", precision, mode, Json{{"budget_ms", 200}}};
  }

  std::unique_ptr<Store> store_;
};

TEST_F(StoredBaselinesTest, AKeptTimingIsFoundByTheSameKeyOnly) {
  StoredBaselines baselines(store_.get(), /*reuse=*/true);
  EXPECT_FALSE(baselines.Find(Key("eager")).has_value());
  baselines.Keep(Key("eager"), Json{{"samples_ms", {1.0, 1.2}}, {"iteration_ms", {1.3, 1.4}}});
  auto found = baselines.Find(Key("eager"));
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ((*found)["samples_ms"], Json({1.0, 1.2}));
  EXPECT_FALSE(baselines.Find(Key("compile")).has_value());
  EXPECT_FALSE(baselines.Find(Key("eager", "tf32")).has_value());
  BaselineKey other_machine = Key("eager");
  other_machine.environment = "{\"gpu\":\"NVIDIA H100\"}";
  EXPECT_FALSE(baselines.Find(other_machine).has_value());
  BaselineKey other_budget = Key("eager");
  other_budget.budget = Json{{"budget_ms", 20}};
  EXPECT_FALSE(baselines.Find(other_budget).has_value());
}

TEST_F(StoredBaselinesTest, FreshBaselinesAreMeasuredAgainAndReplaceTheStoredOnes) {
  StoredBaselines(store_.get(), true).Keep(Key("eager"), Json{{"samples_ms", {1.0}}});
  StoredBaselines fresh(store_.get(), /*reuse=*/false);
  EXPECT_FALSE(fresh.Find(Key("eager")).has_value());
  fresh.Keep(Key("eager"), Json{{"samples_ms", {2.0}}});
  EXPECT_EQ((*StoredBaselines(store_.get(), true).Find(Key("eager")))["samples_ms"], Json({2.0}));
}

TEST_F(StoredBaselinesTest, WithoutAStoreNothingIsKeptOrFound) {
  StoredBaselines baselines(nullptr, true);
  baselines.Keep(Key("eager"), Json{{"samples_ms", {1.0}}});
  EXPECT_FALSE(baselines.Find(Key("eager")).has_value());
}

}  // namespace
}  // namespace kforge
