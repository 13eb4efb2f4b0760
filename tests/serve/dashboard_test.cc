#include "serve/dashboard.h"

#include <chrono>
#include <future>

#include <gtest/gtest.h>
#include <httplib.h>

#include "core/files.h"
#include "report/bench_progress.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

class DashboardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = MakeTempDir(fs::temp_directory_path(), "kforge-dashboard-test-");
    ASSERT_TRUE(dir.ok());
    folder_ = *dir;
    auto store = Store::OpenInMemory();
    ASSERT_TRUE(store.ok());
    store_ = std::move(store).value();
    ASSERT_TRUE(store_->StartRun("llm-relu-1", "optimize --llm", {{"folder", (folder_ / "none").string()}}).ok());
    DashboardOptions options;
    options.bench_folders = {folder_};
    options.poll_s = 0.05;
    dashboard_ = std::make_unique<Dashboard>(store_.get(), options);
    ASSERT_TRUE(dashboard_->Start("127.0.0.1", 0).ok());
    client_ = std::make_unique<httplib::Client>("127.0.0.1", dashboard_->port());
    client_->set_read_timeout(10, 0);
  }
  void TearDown() override {
    dashboard_.reset();
    RemoveTreeQuietly(folder_);
  }

  void WriteTaskReport() {
    fs::create_directories(folder_ / "relu");
    Json report = {{"task", "level1/relu"},
                   {"level", "level1"},
                   {"evaluation", {{"verdict", "accepted"}, {"message", "correct"}}},
                   {"compile", {{"groups", Json::array()}}}};
    ASSERT_TRUE(WriteFile(folder_ / "relu" / "report.json", report.dump()).ok());
    ASSERT_TRUE(WriteFile(folder_ / "relu" / "model_new.py", "class ModelNew: pass  # <generated>\n").ok());
  }

  fs::path folder_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Dashboard> dashboard_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(DashboardTest, IndexListsBenchFoldersAndLlmRuns) {
  auto response = client_->Get("/");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_NE(response->body.find(folder_.string()), std::string::npos);
  EXPECT_NE(response->body.find("<a href=\"/run/llm-relu-1\">llm-relu-1</a>"), std::string::npos);
  EXPECT_NE(response->body.find("new EventSource"), std::string::npos);
}

TEST_F(DashboardTest, BenchPageShowsProgressThenTasksAndTheirPages) {
  BenchProgressWriter progress(folder_ / "progress.json", 2);
  progress.Started("level1/relu");
  auto page = client_->Get("/body?page=bench/0");
  ASSERT_TRUE(page);
  EXPECT_NE(page->body.find("now level1/relu"), std::string::npos);
  EXPECT_NE(page->body.find("No task has finished yet"), std::string::npos);
  WriteTaskReport();
  progress.Finished("level1/relu", "accepted", std::nullopt, false);
  page = client_->Get("/body?page=bench/0");
  EXPECT_NE(page->body.find("data-done=\"1\" data-total=\"2\""), std::string::npos);
  EXPECT_NE(page->body.find("<a href=\"/bench/0/task?name=level1%2Frelu\">level1/relu</a>"), std::string::npos);
  auto task = client_->Get("/bench/0/task?name=level1%2Frelu");
  ASSERT_TRUE(task);
  EXPECT_EQ(task->status, 200);
  EXPECT_NE(task->body.find("# &lt;generated&gt;"), std::string::npos);
}

TEST_F(DashboardTest, UnknownPagesAreNotFound) {
  for (const char* path : {"/bench/7", "/run/no-such-run", "/body?page=bench/1", "/body?page=../etc", "/bench/0/task?name=x"}) {
    auto response = client_->Get(path);
    ASSERT_TRUE(response) << path;
    EXPECT_EQ(response->status, 404) << path;
  }
}

TEST_F(DashboardTest, EventStreamSaysWhenTheBenchChanges) {
  BenchProgressWriter progress(folder_ / "progress.json", 2);
  std::promise<void> second_update;
  int updates = 0;
  std::thread reader([&] {
    client_->Get("/events?page=bench/0", [&](const char* data, size_t size) {
      const std::string chunk(data, size);
      for (size_t at = chunk.find("event: update"); at != std::string::npos; at = chunk.find("event: update", at + 1)) {
        if (++updates == 2) second_update.set_value();
      }
      return updates < 2;  // stop reading after the second update
    });
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the first update: the page as it is
  EXPECT_EQ(updates, 1);
  progress.Started("level1/relu");
  EXPECT_EQ(second_update.get_future().wait_for(std::chrono::seconds(5)), std::future_status::ready);
  reader.join();
}

}  // namespace
}  // namespace kforge
