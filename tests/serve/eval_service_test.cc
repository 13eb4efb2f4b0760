#include "serve/eval_service.h"

#include <filesystem>

#include <gtest/gtest.h>
#include <httplib.h>

#include "serve/dashboard.h"
#include "store/store.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

const char kTask[] = "import torch\nclass Model(torch.nn.Module):\n    pass\n";

// A service over an in-memory store whose one slot "judges" by the candidate's text.
class EvalServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fs::temp_directory_path() / ("kforge_eval_service_" + std::to_string(::getpid()));
    store_ = std::move(Store::OpenInMemory()).value();
  }
  void TearDown() override {
    if (dashboard_) dashboard_->Stop();
    if (service_) service_->Shutdown();
    fs::remove_all(folder_);
  }
  void Start(const AccessTokens* tokens = nullptr, int max_pending = 100) {
    EvalServiceOptions options;
    options.task_folder = folder_;
    options.queue.max_pending_per_client = max_pending;
    EvalJobRunner runner = [](const EvalJob& job, const TaskFile& task) -> Json {
      return {{"verdict", job.spec.candidate == "good" ? "accepted" : "wrong_output"}, {"task_name", task.name},
              {"seeds", job.spec.options.seeds}};
    };
    service_ = std::make_unique<EvalService>(store_.get(), tokens, options, std::vector<EvalJobRunner>{runner});
    DashboardOptions dashboard;
    dashboard.tokens = tokens;
    dashboard.extend = [this](httplib::Server& server) { service_->Install(server); };
    dashboard_ = std::make_unique<Dashboard>(store_.get(), dashboard);
    ASSERT_TRUE(dashboard_->Start("127.0.0.1", 0).ok());
    service_->Start();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", dashboard_->port());
  }
  std::pair<int, Json> Post(const std::string& path, const Json& body, const std::string& token = "") {
    httplib::Headers headers;
    if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
    auto response = client_->Post(path.c_str(), headers, body.dump(), "application/json");
    if (!response) return {0, Json()};
    return {response->status, Json::parse(response->body)};
  }

  fs::path folder_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<EvalService> service_;
  std::unique_ptr<Dashboard> dashboard_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(EvalServiceTest, RegistersATaskJudgesABatchAndReturnsResults) {
  Start();
  auto [status, task] = Post("/v1/tasks", {{"source", kTask}, {"name", "tiny"}});
  ASSERT_EQ(status, 201) << task.dump();
  const std::string hash = task["task_hash"];
  EXPECT_EQ(store_->GetTask(hash)->name, "tiny");  // stored
  auto [queued, batch] = Post("/v1/batch", {{"task_hash", hash}, {"candidates", {"good", "bad"}}, {"options", {{"seeds", 4}}}});
  ASSERT_EQ(queued, 202) << batch.dump();
  auto [got, results] = Post("/v1/results", {{"ids", batch["ids"]}, {"wait_s", 30}});
  ASSERT_EQ(got, 200);
  ASSERT_EQ(results["results"].size(), 2u);
  EXPECT_EQ(results["results"][0]["status"], "done");
  EXPECT_EQ(results["results"][0]["verdict"], "accepted");
  EXPECT_EQ(results["results"][1]["verdict"], "wrong_output");
  EXPECT_EQ(results["results"][1]["task_name"], "tiny");
  EXPECT_EQ(results["results"][1]["seeds"], 4);
  auto one = client_->Get(("/v1/evaluations/" + std::to_string(batch["ids"][0].get<int>()) + "?wait_s=1").c_str());
  ASSERT_TRUE(one);
  EXPECT_EQ(Json::parse(one->body)["client"], "local");
}

TEST_F(EvalServiceTest, AnInlineTaskAndAnUnknownHash) {
  Start();
  auto [status, job] = Post("/v1/evaluations", {{"task", {{"source", kTask}}}, {"candidate", "good"}});
  ASSERT_EQ(status, 202) << job.dump();
  auto [missing, error] = Post("/v1/evaluations", {{"task_hash", std::string(64, 'b')}, {"candidate", "good"}});
  EXPECT_EQ(missing, 404);
  EXPECT_NE(error["error"].get<std::string>().find("POST /v1/tasks"), std::string::npos);
}

TEST_F(EvalServiceTest, AStoppedServiceRefusesNewJobs) {
  Start(nullptr, 1);
  service_->Shutdown();
  auto [status, error] = Post("/v1/evaluations", {{"task", {{"source", kTask}}}, {"candidate", "good"}});
  EXPECT_EQ(status, 503);
}

TEST_F(EvalServiceTest, TokensNameTheClientAndGuardEveryRoute) {
  auto tokens = AccessTokens::Parse("alice 0123456789abcdef-alice\n", "tokens");
  ASSERT_TRUE(tokens.ok());
  Start(&*tokens);
  EXPECT_EQ(Post("/v1/tasks", {{"source", kTask}}).first, 401);
  EXPECT_EQ(Post("/v1/tasks", {{"source", kTask}}, "0123456789abcdef-bob").first, 401);
  EXPECT_EQ(client_->Get("/")->status, 401);
  auto [status, job] = Post("/v1/evaluations", {{"task", {{"source", kTask}}}, {"candidate", "good"}}, "0123456789abcdef-alice");
  ASSERT_EQ(status, 202);
  auto [got, results] = Post("/v1/results", {{"ids", {job["id"]}}, {"wait_s", 30}}, "0123456789abcdef-alice");
  EXPECT_EQ(results["results"][0]["client"], "alice");
}

}  // namespace
}  // namespace kforge

namespace kforge {
namespace {

TEST(EvalServiceLeaseTest, ARemoteWorkersResultIsStoredAndALostLeaseEndsTheJob) {
  auto store = std::move(Store::OpenInMemory()).value();
  const fs::path folder = fs::temp_directory_path() / ("kforge_leases_" + std::to_string(::getpid()));
  std::vector<Json> fingerprints;
  EvalServiceOptions options;
  options.task_folder = folder;
  options.remote_workers = true;
  options.lease_margin_s = 0;
  options.record_remote = [&](const TaskFile&, const std::string& source, const std::string&, const Evaluation& evaluation,
                              const std::string&, const std::string&, const Json& fingerprint) -> Result<int64_t> {
    fingerprints.push_back(fingerprint);
    EXPECT_EQ(source, "good");
    EXPECT_EQ(evaluation.verdict.kind, VerdictKind::kAccepted);
    return 42;
  };
  EvalService service(store.get(), nullptr, options, {});
  service.Start();
  auto task = service.AddTask({"tiny", kTask});
  ASSERT_TRUE(task.ok());
  EvalSubmission good{std::nullopt, task->hash, "good", EvalJobOptions{}};
  EvalSubmission lost = good;
  lost.options.timeout_s = 0.5;
  auto ids = service.Submit("alice", {good, lost});
  ASSERT_TRUE(ids.ok());

  std::optional<Json> first = service.LeaseNext("node1", 5);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ((*first)["task"]["source"], kTask);
  EXPECT_EQ((*first)["candidate"], "good");
  Evaluation accepted;
  accepted.verdict.kind = VerdictKind::kAccepted;
  EXPECT_FALSE(service.CompleteLease((*first)["id"], {{"evaluation", 3}}).ok());  // malformed: the job ends in error
  ASSERT_TRUE(service.LeaseNext("node1", 5).has_value());  // the second job, never answered
  auto views = service.queue().WaitDone(*ids, 10);
  ASSERT_EQ(views.size(), 2u);
  EXPECT_NE(views[0].result["error"].get<std::string>().find("malformed evaluation"), std::string::npos);
  EXPECT_NE(views[1].result["error"].get<std::string>().find("did not answer within its lease"), std::string::npos);
  EXPECT_EQ(service.CompleteLease(views[1].id, {{"error", "late"}}).status().code(), StatusCode::kNotFound);

  auto third = service.Submit("alice", {good});
  std::optional<Json> leased = service.LeaseNext("node1", 5);
  ASSERT_TRUE(leased.has_value());
  auto stored = service.CompleteLease((*leased)["id"], {{"evaluation", accepted.ToJson()}, {"fingerprint", {{"gpu", "H200"}}}});
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ(*stored, 42);
  EXPECT_EQ(fingerprints, (std::vector<Json>{{{"gpu", "H200"}}}));
  auto done = service.queue().Get((*third)[0]);
  EXPECT_EQ(done->result["verdict"], "accepted");
  EXPECT_EQ(done->result["evaluation_id"], 42);
  EXPECT_EQ(done->result["worker"], "node1");
  service.Shutdown();
  fs::remove_all(folder);
}

}  // namespace
}  // namespace kforge
