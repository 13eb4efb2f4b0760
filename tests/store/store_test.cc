#include "store/store.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <thread>

#include "core/files.h"
#include "core/hash.h"
#include "store/schema.h"
#include "store/sqlite_db.h"
#include "store_fixture.h"

namespace kforge {
namespace {

// Quotes, SQL metacharacters, newlines, a NUL, multi-byte UTF-8 and a byte that is not UTF-8.
constexpr char kAwkwardBytes[] =
    "it's \"quoted\"; DROP TABLE candidates; --\n\tline two\r\n\0 \xC3\xBCn\xC3\xAF\x63\xC3\xB8\x64\xC3\xA9 "
    "\xF0\x9F\x9A\x80 \xff end";
const std::string kAwkwardText(kAwkwardBytes, sizeof(kAwkwardBytes) - 1);

Json Fingerprint(const std::string& gpu) {
  return {{"gpu", gpu}, {"driver", "570.86"}, {"cuda", "12.8"}, {"torch", "2.11.0"}, {"triton", "3.6.0"},
          {"python", "3.11.2"}, {"kforge", "0.1.0"}, {"host", "node-1"}};
}

using StoreTest = InMemoryStoreTest;

TEST_F(StoreTest, RecordCandidateIsIdempotentAndKeepsFirstOrigin) {
  clock_.SetIso8601("2026-03-01T10:00:00Z");
  auto first = store_->RecordCandidate("class ModelNew: pass\n", "file:a.py");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(*first, Sha256Hex("class ModelNew: pass\n"));
  clock_.SetIso8601("2026-03-02T10:00:00Z");
  auto second = store_->RecordCandidate("class ModelNew: pass\n", "llm:other");
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, *first);

  auto candidate = store_->GetCandidate(*first);
  ASSERT_TRUE(candidate.ok());
  EXPECT_EQ(candidate->origin, "file:a.py");
  EXPECT_EQ(candidate->first_seen, "2026-03-01T10:00:00Z");
  EXPECT_NE(*store_->RecordCandidate("class ModelNew: pass  \n", "file:a.py"), *first);
  EXPECT_EQ(store_->GetCandidate("0123").status().code(), StatusCode::kNotFound);
}

TEST_F(StoreTest, RecordEnvironmentIsIdempotentWhateverTheKeyOrder) {
  auto first = store_->RecordEnvironment(Fingerprint("H200"));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  Json reordered = Json::parse(R"({"host":"node-1","kforge":"0.1.0","python":"3.11.2","triton":"3.6.0",
      "torch":"2.11.0","cuda":"12.8","driver":"570.86","gpu":"H200"})");
  EXPECT_EQ(*store_->RecordEnvironment(reordered), *first);
  auto other = store_->RecordEnvironment(Fingerprint("A100"));
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*other, *first);

  auto environment = store_->GetEnvironment(*first);
  ASSERT_TRUE(environment.ok()) << environment.status().ToString();
  EXPECT_EQ(environment->json, Fingerprint("H200"));
  EXPECT_EQ(environment->fingerprint_hash, Sha256Hex(CanonicalJsonText(Fingerprint("H200"))));
  EXPECT_EQ(store_->GetEnvironment(12345).status().code(), StatusCode::kNotFound);
}

TEST_F(StoreTest, EnvironmentMustBeAnObject) {
  EXPECT_EQ(store_->RecordEnvironment(Json::array({1, 2})).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(StoreTest, RecordTaskIsIdempotent) {
  auto hash = store_->RecordTask("tasks/level1/1_matmul.py", "1_matmul", "class Model: pass\n");
  ASSERT_TRUE(hash.ok()) << hash.status().ToString();
  EXPECT_EQ(*store_->RecordTask("elsewhere/1_matmul.py", "copy", "class Model: pass\n"), *hash);
  auto task = store_->GetTask(*hash);
  ASSERT_TRUE(task.ok());
  EXPECT_EQ(task->path, "tasks/level1/1_matmul.py");
  EXPECT_EQ(task->name, "1_matmul");
  EXPECT_EQ(task->source, "class Model: pass\n");
}

TEST_F(StoreTest, RunStartsAndFinishes) {
  clock_.SetIso8601("2026-03-01T10:00:00Z");
  Json config = {{"strategy", "greedy"}, {"budget_gpu_s", 600}};
  ASSERT_TRUE(store_->StartRun("run-1", "kforge optimize task.py", config).ok());
  auto run = store_->GetRun("run-1");
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->status, "running");
  EXPECT_EQ(run->started_at, "2026-03-01T10:00:00Z");
  EXPECT_EQ(run->finished_at, std::nullopt);
  EXPECT_EQ(run->config, config);

  clock_.SetIso8601("2026-03-01T11:00:00Z");
  ASSERT_TRUE(store_->FinishRun("run-1", "succeeded").ok());
  run = store_->GetRun("run-1");
  EXPECT_EQ(run->status, "succeeded");
  EXPECT_EQ(run->finished_at, std::optional<std::string>("2026-03-01T11:00:00Z"));
}

TEST_F(StoreTest, RunErrors) {
  ASSERT_TRUE(store_->StartRun("run-1", "kforge optimize", Json::object()).ok());
  EXPECT_EQ(store_->StartRun("run-1", "again", Json::object()).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->FinishRun("no-such-run", "failed").code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->GetRun("no-such-run").status().code(), StatusCode::kNotFound);
}

TEST_F(StoreTest, LlmCallRoundTrips) {
  ASSERT_TRUE(store_->StartRun("run-1", "kforge optimize", Json::object()).ok());
  clock_.SetIso8601("2026-03-01T12:00:00Z");
  LlmCallRecord call;
  call.run_id = "run-1";
  call.provider = "anthropic";
  call.model = "claude";
  call.prompt = kAwkwardText;
  call.reply = "```python\nclass ModelNew: ...\n```";
  call.prompt_tokens = 1234;
  call.completion_tokens = 567;
  call.cost_usd = 0.0123;
  call.latency_s = 4.5;
  call.status = "ok";
  call.estimated_tokens = 9000;
  call.estimated_cost_usd = 0.02;
  call.attempts = {{1, 0, "timeout", 300.0, 1.5, true, "POST ... failed: Operation timed out"},
                   {2, 429, "rate_limited", 0.2, 20.0, false, ""},
                   {3, 200, "ok", 40.0, 0.0, false, ""}};
  auto id = store_->RecordLlmCall(call);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  auto stored = store_->GetLlmCall(*id);
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ(stored->created_at, "2026-03-01T12:00:00Z");
  EXPECT_EQ(stored->run_id, call.run_id);
  EXPECT_EQ(stored->prompt, call.prompt);
  EXPECT_EQ(stored->reply, call.reply);
  EXPECT_EQ(stored->prompt_tokens, 1234);
  EXPECT_EQ(stored->completion_tokens, 567);
  EXPECT_EQ(stored->cost_usd, 0.0123);
  EXPECT_EQ(stored->latency_s, 4.5);
  EXPECT_EQ(stored->status, "ok");
  EXPECT_EQ(stored->estimated_tokens, 9000);
  EXPECT_EQ(stored->estimated_cost_usd, 0.02);
  ASSERT_EQ(stored->attempts.size(), 3u);
  EXPECT_EQ(stored->attempts[0].outcome, "timeout");
  EXPECT_TRUE(stored->attempts[0].maybe_billed);
  EXPECT_EQ(stored->attempts[0].error, "POST ... failed: Operation timed out");
  EXPECT_EQ(stored->attempts[1].http_status, 429);
  EXPECT_EQ(stored->attempts[1].waited_s, 20.0);
  EXPECT_EQ(stored->attempts[2].attempt, 3);
  EXPECT_FALSE(stored->attempts[2].maybe_billed);

  call.run_id = "no-such-run";
  EXPECT_EQ(store_->RecordLlmCall(call).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(StoreTest, LlmCallsAreListedNewestFirstByRun) {
  ASSERT_TRUE(store_->StartRun("run-a", "kforge optimize", Json::object()).ok());
  ASSERT_TRUE(store_->StartRun("run-b", "kforge optimize", Json::object()).ok());
  for (const char* run : {"run-a", "run-b", "run-a"}) {
    LlmCallRecord call;
    call.run_id = run;
    call.provider = "openai";
    call.model = "m";
    call.status = "ok";
    ASSERT_TRUE(store_->RecordLlmCall(call).ok());
  }
  auto all = store_->ListLlmCalls("", 10);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), 3u);
  EXPECT_GT((*all)[0].id, (*all)[2].id);
  auto a = store_->ListLlmCalls("run-a", 10);
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->size(), 2u);
  EXPECT_EQ((*a)[0].run_id, std::optional<std::string>("run-a"));
  EXPECT_EQ(store_->ListLlmCalls("", 1)->size(), 1u);
  EXPECT_TRUE(store_->ListLlmCalls("no-such-run", 10)->empty());
}

TEST_F(StoreTest, AwkwardTextRoundTripsExactly) {
  auto candidate = store_->RecordCandidate(kAwkwardText, kAwkwardText);
  ASSERT_TRUE(candidate.ok()) << candidate.status().ToString();
  EXPECT_EQ(store_->GetCandidate(*candidate)->source, kAwkwardText);
  EXPECT_EQ(store_->GetCandidate(*candidate)->origin, kAwkwardText);
  auto task = store_->RecordTask(kAwkwardText, kAwkwardText, kAwkwardText);
  ASSERT_TRUE(task.ok());
  EXPECT_EQ(store_->GetTask(*task)->name, kAwkwardText);
  ASSERT_TRUE(store_->StartRun(kAwkwardText, kAwkwardText, Json::object()).ok());
  EXPECT_EQ(store_->GetRun(kAwkwardText)->command, kAwkwardText);
}

TEST_F(StoreTest, ConcurrentWritersAreSerialized) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([this, t] {
      for (int i = 0; i < 50; ++i) {
        EXPECT_TRUE(store_->RecordCandidate(std::to_string(t) + "/" + std::to_string(i), "thread").ok());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) {
    for (int i = 0; i < 50; ++i) EXPECT_TRUE(store_->GetCandidate(Sha256Hex(std::to_string(t) + "/" + std::to_string(i))).ok());
  }
}

// ---- database files ----

Result<int> FileSchemaVersion(const std::filesystem::path& path) {
  ASSIGN_OR_RETURN(SqliteDb db, SqliteDb::Open(path.string()));
  return SchemaVersion(db);
}

TEST_F(StoreFileTest, OpenCreatesFoldersAndUsesWal) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(std::filesystem::exists(db_path_));
  auto db = SqliteDb::Open(db_path_.string());
  ASSERT_TRUE(db.ok());
  auto mode = db->Prepare("PRAGMA journal_mode");
  ASSERT_TRUE(mode.ok() && mode->Step().value());
  EXPECT_EQ(mode->ColumnText(0), "wal");
  EXPECT_EQ(FileSchemaVersion(db_path_).value(), LatestSchemaVersion());
}

// kforge processes started at once on a new workspace (the shards of a bench, baselines run side
// by side) all open its store: the first to switch it to WAL makes the others wait, not fail.
TEST_F(StoreFileTest, ProcessesOpeningANewStoreAtOnceAllSucceed) {
  constexpr int kRounds = 20;
  constexpr int kProcesses = 6;
  for (int round = 0; round < kRounds; ++round) {
    const std::filesystem::path path = dir_ / ("round" + std::to_string(round)) / "kforge.db";
    std::vector<pid_t> children;
    for (int i = 0; i < kProcesses; ++i) {
      const pid_t pid = fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        auto store = Store::Open(path, clock_);
        if (!store.ok()) std::fprintf(stderr, "%s\n", store.status().ToString().c_str());
        _exit(store.ok() && (*store)->RecordCandidate("from " + std::to_string(getpid()), "child").ok() ? 0 : 1);
      }
      children.push_back(pid);
    }
    int failed = 0;
    for (pid_t child : children) {
      int status = 0;
      ASSERT_EQ(waitpid(child, &status, 0), child);
      failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    EXPECT_EQ(failed, 0) << "round " << round;
    auto store = Store::Open(path, clock_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
  }
}

TEST_F(StoreFileTest, ReopenKeepsDataAndVersion) {
  std::string hash;
  {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    hash = store->RecordCandidate("kept source", "file:kept.py").value();
  }
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  auto candidate = store->GetCandidate(hash);
  ASSERT_TRUE(candidate.ok()) << candidate.status().ToString();
  EXPECT_EQ(candidate->source, "kept source");
  EXPECT_EQ(FileSchemaVersion(db_path_).value(), LatestSchemaVersion());
}

TEST_F(StoreFileTest, TwoConnectionsSeeEachOthersWrites) {
  auto first = OpenStore();
  auto second = OpenStore();
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  std::string a = first->RecordCandidate("a", "first").value();
  std::string b = second->RecordCandidate("b", "second").value();
  EXPECT_TRUE(second->GetCandidate(a).ok());
  EXPECT_TRUE(first->GetCandidate(b).ok());
}

TEST_F(StoreFileTest, DatabaseFromNewerKforgeIsRefused) {
  ASSERT_NE(OpenStore(), nullptr);
  {
    auto db = SqliteDb::Open(db_path_.string());
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->Execute("PRAGMA user_version = " + std::to_string(LatestSchemaVersion() + 1)).ok());
  }
  auto store = Store::Open(db_path_, clock_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(store.status().message().find("newer kforge"), std::string::npos) << store.status().ToString();
  EXPECT_NE(store.status().message().find(db_path_.string()), std::string::npos) << store.status().ToString();
}

TEST_F(StoreFileTest, FileThatIsNotSqliteIsAnError) {
  std::filesystem::create_directories(db_path_.parent_path());
  ASSERT_TRUE(WriteFile(db_path_, "this is not a database, just some text that is long enough\n").ok());
  auto store = Store::Open(db_path_, clock_);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find(db_path_.string()), std::string::npos) << store.status().ToString();
}

}  // namespace

TEST_F(StoreTest, BaselinesAreKeptByKeyAndReplacedByALaterRecord) {
  auto missing = store_->GetBaseline("key-1");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  ASSERT_TRUE(store_->RecordBaseline("key-1", "task", "eager", Json{{"samples_ms", {1.0, 1.1}}}).ok());
  ASSERT_TRUE(store_->RecordBaseline("key-2", "task", "compile", Json{{"samples_ms", {0.5}}, {"compile_s", 12.0}}).ok());
  ASSERT_TRUE(store_->RecordBaseline("key-1", "task", "eager", Json{{"samples_ms", {0.9}}}).ok());
  auto eager = store_->GetBaseline("key-1");
  ASSERT_TRUE(eager.ok() && eager->has_value());
  EXPECT_EQ((**eager)["samples_ms"], Json({0.9}));
  EXPECT_TRUE((**eager).contains("recorded_at"));
  auto compiled = store_->GetBaseline("key-2");
  ASSERT_TRUE(compiled.ok() && compiled->has_value());
  EXPECT_EQ((**compiled)["compile_s"], 12.0);
  EXPECT_FALSE(store_->RecordBaseline("key-3", "task", "eager", Json::array()).ok());
}

TEST_F(StoreTest, ARunsLiveStatusIsReplacedAsItChanges) {
  ASSERT_TRUE(store_->StartRun("run-1", "optimize", Json::object()).ok());
  auto missing = store_->GetRunStatus("run-1");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  ASSERT_TRUE(store_->RecordRunStatus("run-1", Json{{"state", "running"}, {"in_flight", 3}}).ok());
  ASSERT_TRUE(store_->RecordRunStatus("run-1", Json{{"state", "finished"}, {"in_flight", 0}}).ok());
  auto status = store_->GetRunStatus("run-1");
  ASSERT_TRUE(status.ok() && status->has_value());
  EXPECT_EQ((**status)["state"], "finished");
  EXPECT_EQ((**status)["in_flight"], 0);
  EXPECT_TRUE((**status).contains("updated_at"));
  EXPECT_FALSE(store_->RecordRunStatus("run-1", Json::array()).ok());
}

TEST_F(StoreTest, TuningIsKeptPerKernelAndGpuAndReplacedByALaterRecord) {
  auto missing = store_->GetTuning("k1", "NVIDIA H200");
  ASSERT_TRUE(missing.ok()) << missing.status().ToString();
  EXPECT_FALSE(missing->has_value());

  const Json first = {{"kwargs", {{"BLOCK_M", 128}, {"BLOCK_N", 64}}}, {"num_warps", 4}, {"num_stages", 4}};
  const Json second = {{"kwargs", {{"BLOCK_M", 64}, {"BLOCK_N", 32}}}, {"num_warps", 4}, {"num_stages", 3}};
  ASSERT_TRUE(store_->RecordTuning("k1", "NVIDIA H200", first).ok());
  ASSERT_TRUE(store_->RecordTuning("k1", "NVIDIA H100", second).ok());
  EXPECT_EQ(store_->GetTuning("k1", "NVIDIA H200")->value(), first);
  EXPECT_EQ(store_->GetTuning("k1", "NVIDIA H100")->value(), second);
  EXPECT_FALSE(store_->GetTuning("k2", "NVIDIA H200")->has_value());

  ASSERT_TRUE(store_->RecordTuning("k1", "NVIDIA H200", second).ok());
  EXPECT_EQ(store_->GetTuning("k1", "NVIDIA H200")->value(), second);
  EXPECT_FALSE(store_->RecordTuning("k1", "NVIDIA H200", Json::array()).ok());
}

}  // namespace kforge
