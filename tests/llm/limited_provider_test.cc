#include "llm/limited_provider.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <thread>

#include "core/clock.h"
#include "fakes.h"

namespace kforge {
namespace {

// A provider whose calls block until released, counting how many are inside at once.
class GatedProvider : public Provider {
 public:
  Completion Complete(const CompletionRequest&) override {
    std::unique_lock<std::mutex> lock(mutex_);
    ++inside_;
    max_inside_ = std::max(max_inside_, inside_);
    changed_.notify_all();
    changed_.wait(lock, [this] { return open_; });
    --inside_;
    return OkCompletion("done");
  }
  std::string name() const override { return "gated"; }

  // Whether `count` calls were inside at once within `timeout_s`.
  bool WaitForInside(int count, double timeout_s) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] { return inside_ >= count; });
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }
  int max_inside() {
    std::lock_guard<std::mutex> lock(mutex_);
    return max_inside_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int inside_ = 0;
  int max_inside_ = 0;
  bool open_ = false;
};

CompletionRequest Ask(const std::string& question) {
  CompletionRequest request;
  request.messages = {{Role::kUser, question}};
  return request;
}

TEST(LimitedProviderTest, ConcurrencyNeverExceedsThePoolDepth) {
  auto gated = std::make_unique<GatedProvider>();
  GatedProvider* inner = gated.get();
  LimitOptions options;
  options.pool = std::make_shared<ConcurrencyPool>("llm:gated", 3);
  LimitedProvider provider(std::move(gated), options);

  std::vector<std::thread> callers;
  for (int i = 0; i < 10; ++i) callers.emplace_back([&] { provider.Complete(Ask("go")); });
  ASSERT_TRUE(inner->WaitForInside(3, 5));
  EXPECT_FALSE(inner->WaitForInside(4, 0.1));  // the other seven wait for a slot
  EXPECT_EQ(provider.pool().in_use(), 3);
  inner->Open();
  for (auto& caller : callers) caller.join();
  EXPECT_EQ(inner->max_inside(), 3);
  EXPECT_EQ(provider.pool().in_use(), 0);
  EXPECT_EQ(provider.Totals().calls, 10);
}

TEST(LimitedProviderTest, NothingIsSentAfterAFatalFailure) {
  std::atomic<int> sent{0};
  auto inner = std::make_unique<FunctionProvider>([&](const CompletionRequest&) {
    ++sent;
    return FailedCompletion(CallOutcome::kAuthError, "HTTP 401: check OPENAI_API_KEY");
  });
  LimitedProvider limited(std::move(inner), {});
  EXPECT_EQ(limited.Complete(Ask("one")).outcome, CallOutcome::kAuthError);
  Completion second = limited.Complete(Ask("two"));
  EXPECT_EQ(second.outcome, CallOutcome::kAuthError);
  EXPECT_NE(second.error.find("not sent"), std::string::npos) << second.error;
  EXPECT_EQ(sent.load(), 1);
}

TEST(LimitedProviderTest, TransientFailuresDoNotStopLaterCalls) {
  std::atomic<int> sent{0};
  auto inner = std::make_unique<FunctionProvider>([&](const CompletionRequest&) {
    return ++sent == 1 ? FailedCompletion(CallOutcome::kServerError, "HTTP 503") : OkCompletion("ok");
  });
  LimitedProvider limited(std::move(inner), {});
  EXPECT_EQ(limited.Complete(Ask("one")).outcome, CallOutcome::kServerError);
  EXPECT_TRUE(limited.Complete(Ask("two")).ok());
  EXPECT_EQ(sent.load(), 2);
}

TEST(LimitedProviderTest, PoolsCanBeSharedAcrossProviders) {
  auto pool = std::make_shared<ConcurrencyPool>("llm:shared", 1);
  LimitOptions options;
  options.pool = pool;
  auto first_gated = std::make_unique<GatedProvider>();
  GatedProvider* first_inner = first_gated.get();
  LimitedProvider first(std::move(first_gated), options);
  LimitedProvider second(std::make_unique<FunctionProvider>([](const CompletionRequest&) { return OkCompletion("x"); }),
                         options);
  std::thread blocked([&] { first.Complete(Ask("a")); });
  ASSERT_TRUE(first_inner->WaitForInside(1, 5));
  std::atomic<bool> second_done{false};
  std::thread waiting([&] {
    second.Complete(Ask("b"));
    second_done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(second_done);
  first_inner->Open();
  blocked.join();
  waiting.join();
  EXPECT_TRUE(second_done);
}

class LimitedProviderStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = Store::OpenInMemory(clock_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    ASSERT_TRUE(store_->StartRun("run-1", "kforge optimize", Json::object()).ok());
  }

  FakeClock clock_;
  std::unique_ptr<Store> store_;
};

TEST_F(LimitedProviderStoreTest, AccountsTotalsAndRecordsEveryCall) {
  int call = 0;
  auto inner = std::make_unique<FunctionProvider>(
      [&call](const CompletionRequest& request) {
        Completion completion = OkCompletion("reply " + std::to_string(call), 100, 20);
        completion.model = request.model;
        completion.cost_usd = 0.5;
        completion.latency_s = 1.5;
        if (call == 1) {
          completion = FailedCompletion(CallOutcome::kRateLimited, "HTTP 429 (gave up after 5 attempts)");
          completion.model = request.model;
        }
        if (call == 2) completion.cost_known = false, completion.cost_usd = 0;
        ++call;
        return completion;
      },
      "openai", "gpt-test");
  LimitOptions options;
  options.pool = std::make_shared<ConcurrencyPool>("llm:openai", 2);
  options.store = store_.get();
  options.run_id = "run-1";
  LimitedProvider provider(std::move(inner), options);
  CompletionRequest request;
  request.messages = {{Role::kSystem, "be brief"}, {Role::kUser, "add"}};
  for (int i = 0; i < 3; ++i) provider.Complete(request);

  UsageTotals totals = provider.Totals();
  EXPECT_EQ(totals.calls, 3);
  EXPECT_EQ(totals.failures, 1);
  EXPECT_EQ(totals.prompt_tokens, 200);
  EXPECT_EQ(totals.completion_tokens, 40);
  EXPECT_DOUBLE_EQ(totals.cost_usd, 0.5);
  EXPECT_EQ(totals.unpriced_calls, 1);

  auto first = store_->GetLlmCall(1);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->run_id, "run-1");
  EXPECT_EQ(first->provider, "openai");
  EXPECT_EQ(first->model, "gpt-test");
  EXPECT_EQ(first->prompt, "## system\n\nbe brief\n\n## user\n\nadd\n");
  EXPECT_EQ(first->reply, "reply 0");
  EXPECT_EQ(first->prompt_tokens, 100);
  EXPECT_EQ(first->completion_tokens, 20);
  EXPECT_DOUBLE_EQ(first->cost_usd, 0.5);
  EXPECT_DOUBLE_EQ(first->latency_s, 1.5);
  EXPECT_EQ(first->status, "ok");
  auto failed = store_->GetLlmCall(2);
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ(failed->status, "rate_limited");
  EXPECT_EQ(failed->reply, "HTTP 429 (gave up after 5 attempts)");
  EXPECT_TRUE(store_->GetLlmCall(3).ok());
}

TEST_F(LimitedProviderStoreTest, AStoreFailureDoesNotLoseTheReply) {
  LimitOptions options;
  options.store = store_.get();
  options.run_id = "no-such-run";  // violates the foreign key
  LimitedProvider provider(std::make_unique<FunctionProvider>([](const CompletionRequest&) { return OkCompletion("kept"); }),
                           options);
  Completion completion = provider.Complete(Ask("x"));
  EXPECT_TRUE(completion.ok());
  EXPECT_EQ(completion.text, "kept");
  EXPECT_EQ(provider.Totals().calls, 1);
}

}  // namespace
}  // namespace kforge
