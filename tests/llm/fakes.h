// Fakes for the llm tests: an HTTP transport that answers from a script and remembers what it
// was sent, a sleeper that only records, a random source that returns scripted numbers, and a
// provider that answers from a function. All thread-safe.
#pragma once

#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "llm/http_transport.h"
#include "llm/provider.h"
#include "llm/random_source.h"
#include "llm/retry_policy.h"
#include "llm/sleeper.h"

namespace kforge {

class FakeTransport : public HttpTransport {
 public:
  // Queues the next reply.
  void Reply(int status, std::string body, std::vector<std::pair<std::string, std::string>> headers = {}) {
    HttpResponse response;
    response.status = status;
    response.body = std::move(body);
    response.headers = std::move(headers);
    Push(std::move(response));
  }
  // Queues a call that gets no reply.
  void Fail(CallOutcome failure, std::string error) {
    HttpResponse response;
    response.transport_failure = failure;
    response.transport_error = std::move(error);
    Push(std::move(response));
  }

  // A GET is answered from the same script; `gets()` counts them.
  HttpResponse Get(const HttpRequest& request) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++gets_;
    }
    return Post(request);
  }
  int gets() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return gets_;
  }

  HttpResponse Post(const HttpRequest& request) override {
    std::lock_guard<std::mutex> lock(mutex_);
    requests_.push_back(request);
    if (script_.empty()) {
      HttpResponse none;
      none.transport_failure = CallOutcome::kNetworkError;
      none.transport_error = "the fake transport has no scripted reply left";
      return none;
    }
    HttpResponse response = std::move(script_.front());
    script_.pop_front();
    return response;
  }

  std::vector<HttpRequest> requests() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return requests_;
  }

 private:
  void Push(HttpResponse response) {
    std::lock_guard<std::mutex> lock(mutex_);
    script_.push_back(std::move(response));
  }

  mutable std::mutex mutex_;
  std::deque<HttpResponse> script_;
  std::vector<HttpRequest> requests_;
  int gets_ = 0;
};

class FakeSleeper : public Sleeper {
 public:
  void Sleep(double seconds) override {
    std::lock_guard<std::mutex> lock(mutex_);
    sleeps_.push_back(seconds);
  }
  std::vector<double> sleeps() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return sleeps_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<double> sleeps_;
};

// Returns the scripted numbers in turn, the last one repeatedly once they run out.
class ScriptedRandom : public RandomSource {
 public:
  explicit ScriptedRandom(std::vector<double> values) : values_(std::move(values)) {}
  double Uniform01() override {
    std::lock_guard<std::mutex> lock(mutex_);
    double value = values_[std::min(next_, values_.size() - 1)];
    ++next_;
    return value;
  }

 private:
  std::mutex mutex_;
  std::vector<double> values_;
  size_t next_ = 0;
};

// Answers every request with `answer(request)` and counts the calls.
class FunctionProvider : public Provider {
 public:
  explicit FunctionProvider(std::function<Completion(const CompletionRequest&)> answer, std::string name = "fake",
                            std::string default_model = "")
      : answer_(std::move(answer)), name_(std::move(name)), default_model_(std::move(default_model)) {}

  Completion Complete(const CompletionRequest& request) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      requests_.push_back(request);
    }
    return answer_(request);
  }
  std::string name() const override { return name_; }
  std::string default_model() const override { return default_model_; }

  std::vector<CompletionRequest> requests() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return requests_;
  }

 private:
  std::function<Completion(const CompletionRequest&)> answer_;
  std::string name_;
  std::string default_model_;
  mutable std::mutex mutex_;
  std::vector<CompletionRequest> requests_;
};

// An OK completion with `text` and the given token counts.
inline Completion OkCompletion(std::string text, int64_t prompt_tokens = 0, int64_t completion_tokens = 0) {
  Completion completion;
  completion.text = std::move(text);
  completion.prompt_tokens = prompt_tokens;
  completion.completion_tokens = completion_tokens;
  completion.attempts = 1;
  return completion;
}

// A retry policy that really sleeps, but only milliseconds: for tests against a live server.
inline RetryPolicy FastRetryPolicy(int max_attempts = 3) {
  RetryOptions options;
  options.max_attempts = max_attempts;
  options.base_delay_s = 0.01;
  options.max_delay_s = 0.05;
  options.max_retry_after_s = 0.05;
  return RetryPolicy(options, MakeRealSleeper(), std::make_shared<SeededRandom>(1));
}

}  // namespace kforge
